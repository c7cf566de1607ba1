"""``critiquelab serve``: run the Streamlit app on the database, with locked-down server flags.

The flags are passed on the command line, which outranks any ``.streamlit/config.toml`` in the
current folder or the home folder, so the app always runs with:

* the address given (default ``127.0.0.1``: reachable from this machine only);
* XSRF protection on and CORS protection on (no cross-origin access: Streamlit's
  ``server.enableCORS=true`` means "protect", the browser-level CORS headers stay off);
* on a loopback address, only ``localhost`` / ``127.0.0.1`` accepted as Host (no DNS rebinding);
* uploads capped at :data:`MAX_UPLOAD_MB`; headless, no usage statistics, minimal toolbar, no
  file watcher.

Streamlit is started through :mod:`annotate_app.launch`, which keeps the router the only way
into the pages.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer

from annotate_app.cli.context import state
from data.storage import make_engine, upgrade_database

APP_SCRIPT = Path(__file__).resolve().parents[1] / "app.py"
MAX_UPLOAD_MB = 200
LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")


def server_flags(host: str = "127.0.0.1", port: int = 8501) -> dict[str, str | list[str]]:
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
    }
    if host in LOOPBACK_HOSTS:
        flags["server.allowedHosts"] = ["localhost", "127.0.0.1"]
    return flags


def streamlit_command(host: str = "127.0.0.1", port: int = 8501) -> list[str]:
    """The ``streamlit run`` command line that serves the app on ``host:port``."""
    command = [sys.executable, "-m", "annotate_app.launch", "run", str(APP_SCRIPT)]
    for option, value in server_flags(host, port).items():
        for one in [value] if isinstance(value, str) else value:
            command.append(f"--{option}={one}")
    return command


def serve_app(db_url: str, host: str = "127.0.0.1", port: int = 8501) -> int:
    """Upgrade the database schema, then serve the app on it until stopped; the exit status.

    The app process finds the database in ``$CRITIQUELAB_DB``; ``$CRITIQUELAB_DATA_DIR`` passes
    through unchanged.
    """
    engine = make_engine(db_url)
    try:
        upgrade_database(engine)
    finally:
        engine.dispose()
    environment = {**os.environ, "CRITIQUELAB_DB": db_url}
    process = subprocess.Popen(streamlit_command(host, port), env=environment)
    try:
        return process.wait()
    except KeyboardInterrupt:
        # Ctrl+C reached Streamlit too (same process group): let it shut down cleanly.
        return process.wait(timeout=30)


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        ctx: typer.Context,
        host: str = typer.Option(
            "127.0.0.1", "--host", help="Address to listen on (0.0.0.0 for every interface)."
        ),
        port: int = typer.Option(8501, "--port", help="Port to listen on."),
    ) -> None:
        """Serve the annotation app on the database (open the printed URL in a browser)."""
        raise typer.Exit(serve_app(state(ctx).db_url, host=host, port=port))
