"""Where the database is when no ``--db`` names it; no database library imported (the
``critiquelab`` command reads it before every command, ``--help`` included)."""

from __future__ import annotations

import os

DEFAULT_DB_URL = "sqlite:///critiquelab.db"


def default_db_url() -> str:
    """``$CRITIQUELAB_DB`` if set, else ``sqlite:///critiquelab.db`` in the current folder."""
    return os.environ.get("CRITIQUELAB_DB") or DEFAULT_DB_URL
