"""``critiquelab serve``: run the Streamlit app on the database, with locked-down server flags.

The flags are passed on the command line, which outranks any ``.streamlit/config.toml`` in the
current folder or the home folder, so the app always runs with:

* the address given (default ``127.0.0.1``: reachable from this machine only);
* XSRF protection on and CORS protection on (no cross-origin access: Streamlit's
  ``server.enableCORS=true`` means "protect", the browser-level CORS headers stay off);
* only the served host names accepted as ``Host`` on every request (no DNS rebinding,
  :mod:`annotate_app.host_guard`): the bound address and the loopback names, plus
  ``--allowed-host`` names (for ``0.0.0.0`` also this machine's host name);
* ``X-Forwarded-For`` / ``X-Forwarded-Proto`` believed only from a ``--trusted-proxy`` address
  (uvicorn's ``FORWARDED_ALLOW_IPS``; none by default, so a local client cannot pose as another
  address to the per-address login limit);
* uploads capped at :data:`MAX_UPLOAD_MB`; headless, no usage statistics, minimal toolbar, no
  file watcher.

Streamlit is started through :mod:`annotate_app.launch`, which keeps the router the only way
into the pages, on :mod:`annotate_app.asgi` (Streamlit's ``st.App`` under uvicorn, with the login
and logout endpoints that set the HttpOnly session cookie).

Stopping: SIGINT (Ctrl+C) or SIGTERM to ``critiquelab serve`` stops the server process too
(SIGTERM, then SIGKILL after :data:`STOP_TIMEOUT_S`) and exits 0.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import NoReturn

import typer

from annotate_app.cli.context import bounded, state
from annotate_app.host_guard import ALLOWED_HOSTS_ENV, LOOPBACK_NAMES
from schemas.bounds import PORT

APP_SCRIPT = Path(__file__).resolve().parents[1] / "asgi.py"
MAX_UPLOAD_MB = 200
ANY_ADDRESS: tuple[str, ...] = ("0.0.0.0", "::", "")
"""Bind addresses that mean every interface: the names users type are this machine's."""
STOP_TIMEOUT_S = 4.0
"""How long the server process has to exit after SIGTERM before it is killed."""
_STOP_SIGNALLED = threading.Event()  # this process was asked to stop (SIGINT or SIGTERM)


def served_hosts(host: str = "127.0.0.1", extra: Sequence[str] = ()) -> list[str]:
    """The host names the app answers to when bound to ``host``: the loopback names, ``host``
    itself (or, on every interface, this machine's names), then ``extra``."""
    names = list(LOOPBACK_NAMES)
    if host in ANY_ADDRESS:
        names += [socket.gethostname(), socket.getfqdn()]
    else:
        names.append(host)
    names += extra
    return list(dict.fromkeys(name.strip().lower() for name in names if name.strip()))


def server_flags(
    host: str = "127.0.0.1", port: int = 8501, allowed_hosts: Sequence[str] = ()
) -> dict[str, str | list[str]]:
    """Streamlit config options for serving on ``host:port`` (option name → value or values)."""
    flags: dict[str, str | list[str]] = {
        "server.address": host,
        "server.port": str(port),
        "server.headless": "true",
        "server.enableXsrfProtection": "true",
        "server.enableCORS": "true",
        "server.maxUploadSize": str(MAX_UPLOAD_MB),
        "server.fileWatcherType": "none",
        "server.runOnSave": "false",
        "browser.gatherUsageStats": "false",
        "client.toolbarMode": "minimal",
        # An unexpected error shows a plain notice; its traceback goes to the server log only.
        "client.showErrorDetails": "none",
        "global.developmentMode": "false",
        # Streamlit checks the websocket's Host; annotate_app.host_guard checks every request
        "server.allowedHosts": served_hosts(host, allowed_hosts),
    }
    return flags


def streamlit_command(
    host: str = "127.0.0.1", port: int = 8501, allowed_hosts: Sequence[str] = ()
) -> list[str]:
    """The ``streamlit run`` command line that serves the app on ``host:port``."""
    command = [sys.executable, "-m", "annotate_app.launch", "run", str(APP_SCRIPT)]
    for option, value in server_flags(host, port, allowed_hosts).items():
        for one in [value] if isinstance(value, str) else value:
            command.append(f"--{option}={one}")
    return command


def serve_app(
    db_url: str,
    host: str = "127.0.0.1",
    port: int = 8501,
    *,
    allowed_hosts: Sequence[str] = (),
    trusted_proxies: Sequence[str] = (),
) -> int:
    """Upgrade the database schema, then serve the app on it until stopped; the exit status.

    The app process finds the database in ``$CRITIQUELAB_DB``, the served host names in
    ``$CRITIQUELAB_ALLOWED_HOSTS`` and the proxies whose ``X-Forwarded-*`` headers it believes in
    uvicorn's ``$FORWARDED_ALLOW_IPS`` (empty: none); ``$CRITIQUELAB_DATA_DIR`` passes through
    unchanged.
    """
    from data.storage.engine import make_engine, upgrade_database

    engine = make_engine(db_url)
    try:
        upgrade_database(engine)
    finally:
        engine.dispose()
    environment = {
        **os.environ,
        "CRITIQUELAB_DB": db_url,
        ALLOWED_HOSTS_ENV: ",".join(served_hosts(host, allowed_hosts)),
        "FORWARDED_ALLOW_IPS": ",".join(trusted_proxies),
    }
    process = subprocess.Popen(streamlit_command(host, port, allowed_hosts), env=environment)
    return wait_for_server(process)


def wait_for_server(process: subprocess.Popen[bytes]) -> int:
    """Wait for the server process; on SIGINT or SIGTERM stop it and return 0.

    The signal is passed on as SIGTERM (the server exits at once, and an open transaction rolls
    back); a server still running :data:`STOP_TIMEOUT_S` later is killed. Without a signal, the
    server's own exit status is returned.
    """
    stop_requested: list[float] = []

    def request_stop(signum: int, frame: FrameType | None) -> None:
        _STOP_SIGNALLED.set()
        if not stop_requested:
            stop_requested.append(time.monotonic())
        if process.poll() is None:
            process.terminate()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                status = process.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                if stop_requested and time.monotonic() - stop_requested[0] > STOP_TIMEOUT_S:
                    process.kill()
                continue
            return 0 if stop_requested else status
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        ctx: typer.Context,
        host: str = typer.Option(
            "127.0.0.1", "--host", help="Address to listen on (0.0.0.0 for every interface)."
        ),
        port: int = typer.Option(
            8501, "--port", help="Port to listen on, 1–65,535.", **bounded(PORT)
        ),
        allowed_host: list[str] = typer.Option(
            None,
            "--allowed-host",
            help="Also answer requests naming this host (repeatable; e.g. the name users type, "
            "annotate.example.org, or *.example.org). Served by default: the bound address, "
            "localhost, 127.0.0.1, ::1 (on 0.0.0.0 also this machine's name); other Host "
            "headers are refused (DNS rebinding).",
        ),
        trusted_proxy: list[str] = typer.Option(
            None,
            "--trusted-proxy",
            help="Address (or network, 10.0.0.0/8) of a reverse proxy whose X-Forwarded-For and "
            "X-Forwarded-Proto headers are believed (repeatable). Default: none, so the "
            "per-address login limit counts the connecting address.",
        ),
    ) -> None:
        """Serve the annotation app on the database (open the printed URL in a browser)."""
        exit_after_serving(
            serve_app(
                state(ctx).db_url,
                host=host,
                port=port,
                allowed_hosts=allowed_host or (),
                trusted_proxies=trusted_proxy or (),
            )
        )


def exit_after_serving(status: int) -> NoReturn:
    """End the ``critiquelab`` command with ``status`` once the server has stopped.

    After a stop signal the process ends at once: nothing is left to clean up (the engine was
    disposed before the server started), and the interpreter's teardown of the command line's
    imports (numpy, pandas, scipy...) takes about 2 s, over 5 s on a busy machine, which would
    hold up a Ctrl+C or SIGTERM.
    """
    if _STOP_SIGNALLED.is_set():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    raise typer.Exit(status)
