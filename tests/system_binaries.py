"""Find the system programs the tests and benchmarks drive: PostgreSQL's server and Chromium.

Nothing here assumes one distribution's install locations. Each finder tries, in order, an
environment variable, ``PATH``, the program's own query tool (``pg_config --bindir``), and then
the versioned folders Debian and Ubuntu use; it returns ``None`` when nothing is found, and
:func:`postgres_missing` / :func:`chromium_missing` say what to install or set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

POSTGRES_BINDIR_ENV = "CRITIQUELAB_PG_BINDIR"
CHROMIUM_ENV = "CRITIQUELAB_CHROMIUM"
_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome", "headless_shell")


def postgres_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None when no PostgreSQL server is found."""
    explicit = os.environ.get(POSTGRES_BINDIR_ENV)
    if explicit:
        folder = Path(explicit)
        return folder if _has_server(folder) else None
    on_path = shutil.which("initdb")
    if on_path and _has_server(Path(on_path).parent):
        return Path(on_path).parent
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            answer = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            answer = ""
        if answer and _has_server(Path(answer)):
            return Path(answer)
    # Debian and Ubuntu keep each major version's server outside PATH; take the newest.
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda folder: [int(part) for part in re.findall(r"\d+", folder.parent.name)],
    )
    return next((folder for folder in reversed(versions) if _has_server(folder)), None)


def postgres_missing() -> str:
    """One line: no PostgreSQL server binaries were found, and how to provide them."""
    return (
        "PostgreSQL server binaries (initdb, pg_ctl) not found on PATH, by pg_config --bindir or "
        f"in /usr/lib/postgresql/*/bin: install PostgreSQL or set ${POSTGRES_BINDIR_ENV}"
    )


def chromium_path() -> Path | None:
    """A Chromium (or Chrome) executable, or None when none is found."""
    explicit = os.environ.get(CHROMIUM_ENV)
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    for name in _CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


def chromium_missing() -> str:
    """One line: no Chromium was found, and how to provide one."""
    return (
        f"Chromium not found (looked for {', '.join(_CHROMIUM_NAMES)} on PATH): install "
        f"Debian's chromium or set ${CHROMIUM_ENV} to the browser's executable"
    )


def _has_server(folder: Path) -> bool:
    return (folder / "initdb").is_file() and (folder / "pg_ctl").is_file()
