"""The ASGI app that ``critiquelab serve`` runs: the router script (``app.py``) under Streamlit's
documented ASGI entry point ``st.App``, with the login and logout endpoints beside it
(:mod:`annotate_app.session_routes`), so that the server, not a script in the page, sets the
session cookie.

``streamlit run annotate_app/asgi.py`` finds ``app`` and serves it with uvicorn, applying the
same ``--server.*`` flags as for a plain script (XSRF protection, CORS, allowed hosts, upload
cap). :class:`~annotate_app.host_guard.HostGuard` answers only requests that name a served host.
"""

from __future__ import annotations

import streamlit as st
from starlette.middleware import Middleware

from annotate_app.host_guard import HostGuard
from annotate_app.navigation import APP_DIR
from annotate_app.session_routes import session_routes

app = st.App(APP_DIR / "app.py", routes=session_routes(), middleware=[Middleware(HostGuard)])
