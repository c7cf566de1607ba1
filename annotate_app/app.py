"""The app's entry script: log in, then route to the pages of the user's role."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

from annotate_app.auth import login_page, logout_button, routed_user
from annotate_app.navigation import HOME, PAGES, PageSpec, pages_for
from annotate_app.text import escape_markdown
from data.services.users import UserRecord
from data.storage.engine import DatabaseProblem

# A bundled icon: a :material/...: page icon makes the browser fetch it from an outside host.
FAVICON = Path(__file__).resolve().parent / "static" / "favicon.png"
st.set_page_config(page_title="CritiqueLab", page_icon=str(FAVICON), layout="wide")


def _url_path(spec: PageSpec) -> str:
    # The path Streamlit gives the page file, so that a stand-in answers the same URL.
    return st.Page(spec.path).url_path


def _login_stand_ins() -> list[st.Page]:
    """The login form under every page's URL: a link to a page opens the form there, and the
    reload after login opens that page with its query (no page script runs before login)."""
    return [
        st.Page(login_page, title="Log in", url_path=_url_path(spec), default=spec is HOME)
        for spec in PAGES
    ]


def _refusal(spec: PageSpec, user: UserRecord, home: st.Page) -> Callable[[], None]:
    def refuse() -> None:
        st.title(spec.title)
        roles = " or ".join(spec.roles)
        st.warning(
            f"The {spec.title} page is for {roles} accounts; you are logged in as "
            f"{escape_markdown(user.name)} ({user.role}). Ask an admin if you need access.",
            icon=":material/lock:",
        )
        st.page_link(home, label="Go to Home", icon=":material/home:")

    return refuse


def _pages_of(user: UserRecord) -> dict[str, list[st.Page]]:
    """The user's menu; the pages of other roles under their URLs, hidden, saying so (their
    scripts never run for this user)."""
    sections: dict[str, list[st.Page]] = {}
    home = st.Page(HOME.path, title=HOME.title, icon=HOME.icon, default=True)
    allowed = pages_for(user.role)
    for spec in PAGES:
        if spec is HOME:
            page = home
        elif spec in allowed:
            page = st.Page(spec.path, title=spec.title, icon=spec.icon)
        else:
            page = st.Page(
                _refusal(spec, user, home),
                title=spec.title,
                icon=spec.icon,
                url_path=_url_path(spec),
                visibility="hidden",
            )
        sections.setdefault(spec.section, []).append(page)
    return sections


def _route() -> None:
    user = routed_user()
    if user is None:
        st.navigation(_login_stand_ins(), position="hidden").run()
        return
    with st.sidebar:
        st.caption(f"Logged in as {escape_markdown(user.name)} ({user.role})")
        logout_button()
    # Every page of the menu shown: collapsed, Streamlit hides all past the tenth behind
    # "View more", and an admin has thirteen.
    st.navigation(_pages_of(user), expanded=True).run()


try:
    _route()
except DatabaseProblem as problem:
    # The database is locked or unreachable: say so plainly; the next action retries it.
    st.error(escape_markdown(str(problem)))
