"""The app's entry script: log in, then route to the pages of the user's role."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from annotate_app.auth import login_page, logout_button, routed_user, sync_session_cookie
from annotate_app.navigation import HOME, pages_for
from data.storage import DatabaseProblem

# A bundled icon: a :material/...: page icon makes the browser fetch it from an outside host.
FAVICON = Path(__file__).resolve().parent / "static" / "favicon.png"
st.set_page_config(page_title="CritiqueLab", page_icon=str(FAVICON), layout="wide")


def _route() -> None:
    user = routed_user()
    if user is None:
        # Logged out, no page script runs at all, whatever page the URL names: only the login form.
        st.navigation(
            [st.Page(login_page, title="Log in", icon=":material/login:")], position="hidden"
        )
        sync_session_cookie()
        login_page()
    else:
        sections: dict[str, list[st.Page]] = {}
        for spec in pages_for(user.role):
            page = st.Page(spec.path, title=spec.title, icon=spec.icon, default=spec is HOME)
            sections.setdefault(spec.section, []).append(page)
        with st.sidebar:
            st.caption(f"Logged in as {user.name} ({user.role})")
            logout_button()
            sync_session_cookie()
        st.navigation(sections).run()


try:
    _route()
except DatabaseProblem as problem:
    # The database is locked or unreachable: say so plainly; the next action retries it.
    st.error(f"{problem}")
