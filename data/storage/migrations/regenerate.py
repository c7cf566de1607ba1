"""Regenerate the initial migration from the tables in schemas/tables/ (development only).

Until the first release, the schema lives in one migration, ``0001_initial``. Run
``python -m data.storage.migrations.regenerate`` after changing a table; after the first release,
add a
new revision with ``alembic revision --autogenerate`` instead, and set
``data.storage.engine.HEAD_REVISION`` to it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from alembic import command

from data.storage.engine import MIGRATIONS_DIR, alembic_config, make_engine

INITIAL = MIGRATIONS_DIR / "versions" / "0001_initial.py"


def main() -> None:
    INITIAL.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        engine = make_engine(f"sqlite:///{Path(folder) / 'empty.db'}")
        command.revision(
            alembic_config(engine),
            message="initial schema",
            autogenerate=True,
            rev_id="0001_initial",
        )
        engine.dispose()
    generated = MIGRATIONS_DIR / "versions" / "0001_initial_initial_schema.py"
    generated.rename(INITIAL)
    print(f"wrote {INITIAL}")


if __name__ == "__main__":
    main()
