"""The served host names: every request (pages, the session endpoints, the websocket) must name
one of them in its ``Host`` header, so that a page on another site cannot reach the app through
a DNS name that resolves to this machine (DNS rebinding).

``critiquelab serve`` passes the names in ``$CRITIQUELAB_ALLOWED_HOSTS`` (comma-separated; default
the bound address and the loopback names, plus ``--allowed-host`` values); a name is matched
without its port and case-insensitively, ``*.example.org`` matches any subdomain, ``*`` any name
(the check off). Streamlit's own ``server.allowedHosts`` checks only the websocket; this
middleware checks every request first.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

ALLOWED_HOSTS_ENV = "CRITIQUELAB_ALLOWED_HOSTS"
LOOPBACK_NAMES: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")


def allowed_hosts_from_env() -> tuple[str, ...]:
    """The names in :data:`ALLOWED_HOSTS_ENV`, or the loopback names when it is not set."""
    value = os.environ.get(ALLOWED_HOSTS_ENV)
    if value is None:
        return LOOPBACK_NAMES
    return tuple(name.strip() for name in value.split(",") if name.strip())


def host_name(header: str) -> str:
    """The name of a ``Host`` header without its port: ``[::1]:8501`` → ``::1``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    if header.count(":") == 1:
        return header.partition(":")[0]
    return header


def host_allowed(header: str | None, allowed: Iterable[str]) -> bool:
    """Whether the ``Host`` header names one of ``allowed`` (see the module's rules)."""
    if not header:
        return False
    name = host_name(header)
    for pattern in allowed:
        pattern = pattern.strip().lower()
        if pattern == "*" or pattern == name:
            return True
        if pattern.startswith("*.") and name.endswith(pattern[1:]):
            return True
    return False


class HostGuard:
    """ASGI middleware: a request whose ``Host`` is not a served name is answered 400 (an HTTP
    request) or closed (a websocket) before the app sees it."""

    def __init__(self, app: ASGIApp, allowed: Sequence[str] | None = None) -> None:
        self.app = app
        self.allowed = tuple(allowed) if allowed is not None else allowed_hosts_from_env()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        header = next(
            (value.decode("latin-1") for key, value in scope["headers"] if key == b"host"), None
        )
        if host_allowed(header, self.allowed):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = (
            b"This server does not answer to that host name. Open it by one of its served "
            b"names, or start it with `critiquelab serve --allowed-host NAME`.\n"
        )
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
