"""Who is logged in: the login form, logout, and the role check every page runs first.

Session state keys (server-side; the browser cannot set them):

* ``st.session_state["user"]`` (:data:`USER_KEY`): the logged-in
  :class:`data.services.users.UserRecord`.
  An AppTest test logs in by setting it to the record of an existing, active user:
  ``at.session_state["user"] = record``. The account is re-read on every run, so a disabled or
  deleted account is logged out at once.
* ``st.session_state["auth_token"]`` (:data:`TOKEN_KEY`): the session token from the browser's
  cookie, checked against the database on every run (expired or revoked = logged out).

The session cookie :data:`COOKIE_NAME` is set and cleared by the server only
(:mod:`annotate_app.session_routes`: ``HttpOnly``, ``SameSite=Strict``, ``Secure`` over https).
The login form posts the password to that endpoint, never to the Streamlit session, and then
reloads the page at the same URL, so a deep link (``/annotate?campaign=X``) opens after login.
The app reads the cookie from the request that opened the session (``st.context.cookies``).
Logging out revokes the token in the database at once; the form then clears the cookie.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from annotate_app.db import get_engine
from annotate_app.session_routes import COOKIE_NAME, LOGIN_PATH, LOGOUT_PATH
from annotate_app.text import escape_markdown
from data.services.auth import active_user, logout, user_for_token
from data.services.users import UserRecord
from data.storage.engine import session_scope

__all__ = ["COOKIE_NAME", "TOKEN_KEY", "USER_KEY", "current_user", "login_page", "require_role"]

USER_KEY = "user"
TOKEN_KEY = "auth_token"
_ROUTED_KEY = "_routed_user"  # this run's router check, taken by the page

_COMPONENTS = Path(__file__).resolve().parent / "components"
_login_form = st.components.v2.component(
    "critiquelab_login_form",
    js=(_COMPONENTS / "login_form.js").read_text(encoding="utf-8"),
    css=(_COMPONENTS / "login_form.css").read_text(encoding="utf-8"),
)


def current_user() -> UserRecord | None:
    """The logged-in user, re-checked against the database; None when logged out."""
    state = st.session_state
    token = state.get(TOKEN_KEY)
    with session_scope(get_engine()) as session:
        if token:
            user = user_for_token(session, token)
        elif USER_KEY in state:
            user = active_user(session, state[USER_KEY].id)
        else:
            token = _cookie_token()
            user = user_for_token(session, token) if token else None
            if user is not None:
                state[TOKEN_KEY] = token
    if user is None:
        _forget_login()
    else:
        state[USER_KEY] = user
    return user


def routed_user() -> UserRecord | None:
    """:func:`current_user` for the router, which runs before the page in the same script run:
    the page's :func:`require_role` takes this check instead of querying the database again."""
    user = current_user()
    st.session_state[_ROUTED_KEY] = user
    return user


def require_role(*roles: str) -> UserRecord:
    """The logged-in user if their role is one of ``roles`` (any role when none are given).

    Otherwise the page stops here, showing the login form to a visitor who is not logged in and
    a refusal to a user of another role: pages call this before anything else. The account is
    checked once per run: by the router when it ran first, else here.
    """
    user = st.session_state.pop(_ROUTED_KEY, None) or current_user()
    if user is None:
        login_page()
        st.stop()
    if roles and user.role not in roles:
        st.error(
            f"This page is for {' or '.join(roles)} accounts; you are logged in as "
            f"{escape_markdown(user.name)} ({user.role})."
        )
        st.stop()
    return user


def login_page() -> None:
    """The login form (see the module docstring): a successful login reloads the page."""
    st.title("CritiqueLab")
    data = {
        "login_url": LOGIN_PATH,
        "logout_url": LOGOUT_PATH,
        # The browser sent a cookie, yet nobody is logged in: it is stale; have it cleared.
        "clear_stale_cookie": _cookie_token() is not None,
    }
    _login_form(key="login_form", data=data)


def logout_button() -> None:
    st.button("Log out", icon=":material/logout:", on_click=_log_out, key="logout")


def _cookie_token() -> str | None:
    # Cookies come from the browser's request; a test runner without one has no string here.
    token = st.context.cookies.get(COOKIE_NAME)
    return token if isinstance(token, str) and token else None


def _log_out() -> None:
    token = st.session_state.get(TOKEN_KEY)
    if token:
        with session_scope(get_engine()) as session:
            logout(session, token)
    _forget_login()


def _forget_login() -> None:
    st.session_state.pop(TOKEN_KEY, None)
    st.session_state.pop(USER_KEY, None)
