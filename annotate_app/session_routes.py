"""The login and logout endpoints, served beside Streamlit by :mod:`annotate_app.asgi`.

The session cookie is set and cleared by the server only, never by a script in the page:

* ``POST /session/login`` with the JSON body ``{"name": ..., "password": ...}`` checks the
  password (:func:`data.services.auth.login`, with the client's address for the per-client limit)
  and
  answers ``{"ok": bool, "message": str}``. On success it sets :data:`COOKIE_NAME` with
  ``HttpOnly`` (no script can read it), ``SameSite=Strict``, ``Path=/``, the session's lifetime,
  and ``Secure`` when the request came over https (directly or through a trusted proxy's
  ``X-Forwarded-Proto``).
* ``POST /session/logout`` revokes the session of the cookie it carries and clears the cookie.

Both refuse a request that is not from the app's own origin (the ``Origin`` header must name the
host the request was sent to, and ``Sec-Fetch-Site``, when sent, must be ``same-origin``), so
another site cannot log a visitor in or out. The login body must be JSON (a cross-site HTML form
cannot send that) and at most :data:`MAX_BODY_BYTES`.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from annotate_app.db import get_engine
from data.services.auth import SESSION_LIFETIME, login, logout
from data.storage.engine import DatabaseProblem, session_scope

COOKIE_NAME = "critiquelab_session"
LOGIN_PATH = "/session/login"
LOGOUT_PATH = "/session/logout"
MAX_BODY_BYTES = 4096
_STATUS = {"ok": 200, "wrong_credentials": 401, "disabled": 403, "rate_limited": 429}


def _answer(ok: bool, message: str, status: int) -> JSONResponse:
    return JSONResponse(
        {"ok": ok, "message": message}, status_code=status, headers={"Cache-Control": "no-store"}
    )


def _same_origin(request: Request) -> bool:
    """Whether the browser says the request comes from a page of this server."""
    if request.headers.get("sec-fetch-site", "same-origin") != "same-origin":
        return False
    origin = request.headers.get("origin")
    return origin is not None and urlsplit(origin).netloc == request.headers.get("host")


def _is_https(request: Request) -> bool:
    return request.url.scheme == "https"


async def _json_body(request: Request) -> dict[str, object] | None:
    """The request's JSON object, or None when it is not one (or larger than allowed)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return None
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


async def login_endpoint(request: Request) -> Response:
    """``POST /session/login``: check the password and set the session cookie."""
    if not _same_origin(request):
        return _answer(False, "Log in from the app's own page.", 403)
    body = await _json_body(request)
    name, password = (body or {}).get("name"), (body or {}).get("password")
    if not isinstance(name, str) or not isinstance(password, str):
        return _answer(False, "Send a JSON object with a name and a password.", 400)
    if not name.strip() or not password:
        return _answer(False, "Enter your user name and password.", 400)
    client = request.client.host if request.client else None
    try:
        result = await run_in_threadpool(login, get_engine(), name.strip(), password, client=client)
    except DatabaseProblem as problem:
        return _answer(False, str(problem), 503)
    response = _answer(result.ok, result.message, _STATUS[result.outcome])
    if result.ok:
        assert result.token is not None
        response.set_cookie(
            COOKIE_NAME,
            result.token,
            max_age=int(SESSION_LIFETIME.total_seconds()),
            path="/",
            secure=_is_https(request),
            httponly=True,
            samesite="strict",
        )
    return response


def _revoke(token: str) -> None:
    with session_scope(get_engine()) as session:
        logout(session, token)


async def logout_endpoint(request: Request) -> Response:
    """``POST /session/logout``: revoke the cookie's session and clear the cookie."""
    if not _same_origin(request):
        return _answer(False, "Log out from the app's own page.", 403)
    token = request.cookies.get(COOKIE_NAME)
    if token:
        try:
            await run_in_threadpool(_revoke, token)
        except DatabaseProblem as problem:
            return _answer(False, str(problem), 503)
    response = _answer(True, "Logged out.", 200)
    response.delete_cookie(
        COOKIE_NAME, path="/", secure=_is_https(request), httponly=True, samesite="strict"
    )
    return response


def session_routes() -> list[Route]:
    """The endpoints to serve beside Streamlit (``st.App(..., routes=...)``)."""
    return [
        Route(LOGIN_PATH, login_endpoint, methods=["POST"]),
        Route(LOGOUT_PATH, logout_endpoint, methods=["POST"]),
    ]
