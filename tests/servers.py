"""Waiting for a server the tests (or a benchmark) started: the app, ``transformers serve``."""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

SERVER_START_TIMEOUT_S = 120


def wait_until_healthy(
    url: str,
    process: subprocess.Popen[bytes],
    log_path: Path,
    *,
    health_path: str = "/_stcore/health",
    ceiling_s: float = SERVER_START_TIMEOUT_S,
) -> None:
    """Wait until the server at ``url`` answers its health check (the app's by default); fail
    with its log when it exits first or never answers."""
    deadline = time.monotonic() + ceiling_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"the server exited with status {process.returncode}; log:\n"
                + log_path.read_text(errors="replace")[-4000:]
            )
        try:
            with urllib.request.urlopen(f"{url}{health_path}", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError(
        f"the server did not answer {url}{health_path} within {ceiling_s} s;"
        " log:\n" + log_path.read_text(errors="replace")[-4000:]
    )
