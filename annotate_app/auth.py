"""Who is logged in: the login form, logout, and the role check every page runs first.

Session state keys (server-side; the browser cannot set them):

* ``st.session_state["user"]`` (:data:`USER_KEY`): the logged-in :class:`data.users.UserRecord`.
  An AppTest test logs in by setting it to the record of an existing, active user:
  ``at.session_state["user"] = record``. The account is re-read on every run, so a disabled or
  deleted account is logged out at once.
* ``st.session_state["auth_token"]`` (:data:`TOKEN_KEY`): the session token of a login through
  the form, checked against the database on every run (expired or revoked = logged out).

The browser keeps the token in the cookie :data:`COOKIE_NAME` (``SameSite=Strict``, written by a
tiny inline component), so a page refresh, which starts a new Streamlit session, stays logged in.
Logging out revokes the token in the database and clears the cookie.
"""

from __future__ import annotations

import streamlit as st

from annotate_app.db import get_engine
from data.auth import SESSION_LIFETIME, active_user, login, logout, user_for_token
from data.storage import session_scope
from data.users import UserRecord

USER_KEY = "user"
TOKEN_KEY = "auth_token"
COOKIE_NAME = "critiquelab_session"
_ROUTED_KEY = "_routed_user"  # this run's router check, taken by the page

_COOKIE_JS = """
export default function ({ data }) {
  if (!data || !data.name) return;
  const secure = location.protocol === "https:" ? "; Secure" : "";
  const attributes = "; Path=/; SameSite=Strict" + secure;
  const current = document.cookie.split("; ").find((c) => c.startsWith(data.name + "="));
  if (data.token) {
    if (current !== data.name + "=" + data.token) {
      document.cookie = data.name + "=" + data.token + "; Max-Age=" + data.maxAge + attributes;
    }
  } else if (current !== undefined) {
    document.cookie = data.name + "=; Max-Age=0" + attributes;
  }
}
"""
_session_cookie = st.components.v2.component("critiquelab_session_cookie", js=_COOKIE_JS)


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
            f"{user.name} ({user.role})."
        )
        st.stop()
    return user


def login_page() -> None:
    """The login form; on success the session is stored and the app reruns logged in."""
    st.title("CritiqueLab")
    with st.form("login", width=480):
        name = st.text_input("User name", autocomplete="username")
        password = st.text_input("Password", type="password", autocomplete="current-password")
        submitted = st.form_submit_button("Log in", type="primary")
    if not submitted:
        return
    if not name.strip() or not password:
        st.error("Enter your user name and password.")
        return
    with session_scope(get_engine()) as session:
        result = login(session, name.strip(), password)
    if not result.ok:
        st.error(result.message)
        return
    st.session_state[TOKEN_KEY] = result.token
    st.session_state[USER_KEY] = result.user
    st.rerun()


def logout_button() -> None:
    st.button("Log out", icon=":material/logout:", on_click=_log_out, key="logout")


def sync_session_cookie() -> None:
    """Write the session token into the browser's cookie, or clear a stale one."""
    token = st.session_state.get(TOKEN_KEY)
    if token:
        data = {"name": COOKIE_NAME, "token": token, "maxAge": SESSION_LIFETIME.total_seconds()}
        _session_cookie(key="session_cookie_set", data=data)
    elif _cookie_token() is not None:
        _session_cookie(key="session_cookie_clear", data={"name": COOKIE_NAME, "token": None})


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
