"""Users (admin): accounts, roles, locks, and the audit log. The same functions as `python -m core users ...`."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from core.access import Role
from core.data.showtext import markdown_literal
from core.team import users
from core.team.db import read_audit
from ui import actor, get_workspace, run_guarded

st.title("Users")
ws, me = get_workspace(), actor()
people = users.list_users(ws)
if not people:
    st.info("No accounts: the app is single-user on this machine. Adding the first user turns sign-in on for everyone; "
            "add an admin first.")
st.dataframe(pd.DataFrame([{"name": u.name, "role": u.role.value, "e-mail": u.email or "",
                            "state": "disabled" if u.disabled else "locked" if u.locked else "active"} for u in people]),
             hide_index=True, key="users_table")

with st.expander("Add a user", expanded=not people):
    with st.form("user_add"):
        c = st.columns(3)
        name = c[0].text_input("User name")
        role = c[1].selectbox("Role", [r.value for r in Role], index=2)
        email = c[2].text_input("E-mail (for OIDC sign-in)")
        password = st.text_input("Password", type="password", help=f"At least {users.MIN_PASSWORD} characters")
        if st.form_submit_button("Add", type="primary"):
            if run_guarded(lambda: users.add_user(ws, name, role, password or None, email or None, actor=me), "Could not add"):
                st.rerun()

if people:
    with st.expander("Change a user"):
        who = st.selectbox("User", [u.name for u in people], key="users_pick")
        c = st.columns(4)
        new_role = c[0].selectbox("Role", [r.value for r in Role], key="users_role")
        changes = ((c[0], "Set role", "users_set_role", lambda: users.set_role(ws, who, new_role, actor=me)),
                   (c[1], "Disable", "users_disable", lambda: users.set_disabled(ws, who, True, actor=me)),
                   (c[2], "Enable", "users_enable", lambda: users.set_disabled(ws, who, False, actor=me)),
                   (c[3], "Unlock", "users_unlock", lambda: users.unlock(ws, who, actor=me)))
        for where, label, key, change in changes:
            # a refused change keeps its error on the page: a rerun would wipe it and the click seem to do nothing
            if where.button(label, key=key) and run_guarded(change, f"Could not {label.lower()}") is not None:
                st.rerun()
        with st.form("users_password", clear_on_submit=True):  # an admin's reset, as `users set-password` does
            new_password = st.text_input(f"New password for {who}", type="password", key="users_new_password",
                                         help=f"At least {users.MIN_PASSWORD} characters; it also lifts a lock")
            if st.form_submit_button("Set password") and run_guarded(
                    lambda: users.set_password(ws, who, new_password, actor=me), "Could not set the password"):
                st.success(f"Password of {markdown_literal(who)} changed.")

st.subheader("Audit log")
log = read_audit(ws, 200, actor=me)
st.dataframe(pd.DataFrame([{"when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["at"])), "who": r["actor"],
                            "what": r["action"], "on": r["target"]} for r in log]), hide_index=True, key="users_audit")
