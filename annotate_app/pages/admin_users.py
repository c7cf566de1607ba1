"""Users: create accounts, change roles, disable or enable them, reset passwords (admins)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st
from sqlmodel import Session

from annotate_app.auth import require_role
from annotate_app.db import get_engine
from annotate_app.text import escape_markdown
from data.services.admin import add_account, change_active, change_password, change_role
from data.services.roles import PermissionDenied
from data.services.users import UserError, list_users
from data.storage.engine import session_scope
from schemas.tables import ROLES

user = require_role("admin")
engine = get_engine()

st.title("Users")
listing = st.container()


def _run(action: Callable[[Session], object], done: str) -> None:
    """Run ``action(session)`` in one transaction; say what happened under the buttons."""
    try:
        with session_scope(engine) as session:
            action(session)
    except (UserError, PermissionDenied) as error:
        outcome.error(escape_markdown(str(error)))
    else:
        outcome.success(escape_markdown(done))


_ADDED = "_add_account_outcome"


def _add_account() -> None:
    """The form's submit: a refused account keeps what was typed (but never the password); an
    added one empties the form for the next."""
    state = st.session_state
    name, role, password = state["new_name"].strip(), state["new_role"], state["new_pw"]
    state["new_pw"] = ""
    try:
        with session_scope(engine) as session:
            add_account(session, user.id, name, password, role)
    except (UserError, PermissionDenied) as error:
        state[_ADDED] = (False, str(error))
    else:
        state["new_name"] = ""
        state[_ADDED] = (True, f"Account {name} added as {role}.")


with st.expander("Add an account", expanded=False), st.form("add_account"):
    st.text_input("User name", key="new_name")
    st.selectbox("Role", ROLES, key="new_role")
    st.text_input("Password (at least 8 characters)", type="password", key="new_pw")
    st.form_submit_button("Add account", type="primary", on_click=_add_account)
if _ADDED in st.session_state:
    added, message = st.session_state.pop(_ADDED)
    (st.success if added else st.error)(escape_markdown(message))

with session_scope(engine) as session:
    names = [record.name for record in list_users(session)]

st.subheader("Change an account")
chosen = st.selectbox("Account", names, key="chosen_user")
role_column, active_column, password_column = st.columns(3)
outcome = st.empty()  # under the buttons, where the eyes are (not under the title)
with role_column:
    role = st.selectbox("New role", ROLES, key="chosen_role")
    if st.button("Change role", key="change_role"):
        _run(lambda s: change_role(s, user.id, chosen, role), f"{chosen} is now {role}.")
with active_column:
    if st.button("Disable account", key="disable"):
        _run(lambda s: change_active(s, user.id, chosen, False), f"{chosen} is disabled.")
    if st.button("Enable account", key="enable"):
        _run(lambda s: change_active(s, user.id, chosen, True), f"{chosen} is enabled.")
with password_column:
    password = st.text_input("New password", type="password", key="reset_pw")
    if st.button("Reset password", key="reset"):
        _run(
            lambda s: change_password(s, user.id, chosen, password),
            f"{chosen}'s password was reset; their open sessions ended and failed logins no "
            "longer lock the account.",
        )

with session_scope(engine) as session:
    people = list_users(session)
listing.dataframe(
    pd.DataFrame(
        {
            "Name": [person.name for person in people],
            "Role": [person.role for person in people],
            "Active": [person.active for person in people],
            "Demo account": [person.synthetic for person in people],
        }
    ),
    hide_index=True,
)
