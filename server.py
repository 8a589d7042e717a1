"""The app as a server: `streamlit run server.py` (what scripts/app.sh starts) serves app.py through `st.App`, with
the two routes that keep a signed-in browser's session in an HttpOnly cookie (core.team.websession)."""

from pathlib import Path

import streamlit as st

from core.data.workspace import Workspace, default_root
from core.team.serving import auth_mode
from core.team.websession import routes

ROOT = Path(__file__).resolve().parent
# before anything listens, however the address was given (a flag, STREAMLIT_SERVER_ADDRESS, a config.toml that
# scripts/app.sh does not read): beyond loopback with no accounts the server stops here (the page refused each run,
# but the port was open); a UserError says why
auth_mode(Workspace(default_root(ROOT / "workspace")), st.get_option("server.address"), ROOT)
app = st.App(ROOT / "app.py", routes=routes())
