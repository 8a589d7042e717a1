"""The app as a server: `streamlit run server.py` (what scripts/app.sh starts) serves app.py through `st.App`, with
the two routes that keep a signed-in browser's session in an HttpOnly cookie (core.team.websession)."""

from pathlib import Path

import streamlit as st

from core.team.websession import routes

app = st.App(Path(__file__).resolve().parent / "app.py", routes=routes())
