"""Alembic environment: runs migrations on the engine handed over by data.storage.engine.

On SQLite, foreign keys are turned off while the migrations run (outside the transaction, where
SQLite's ``PRAGMA foreign_keys`` takes effect), as SQLite's own procedure for changing a table
asks: a batch migration rebuilds a table (a copy, then ``DROP`` and rename), and dropping a table
that other rows refer to would fail with foreign keys on. Before the commit every foreign key is
checked (``PRAGMA foreign_key_check``); any row left dangling rolls the whole upgrade back.
"""

from alembic import context
from sqlalchemy import text
from sqlmodel import SQLModel

import schemas.tables  # noqa: F401

target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    engine = context.config.attributes["engine"]
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        raw = connection.connection.driver_connection if sqlite else None
        if raw is not None:
            raw.execute("PRAGMA foreign_keys=OFF")  # autocommit mode: outside any transaction
        try:
            context.configure(
                connection=connection,
                target_metadata=target_metadata,
                render_as_batch=sqlite,
                compare_type=True,
            )
            with context.begin_transaction():
                context.run_migrations()
                if sqlite:
                    dangling = connection.execute(text("PRAGMA foreign_key_check")).all()
                    if dangling:
                        raise RuntimeError(
                            f"the migration left {len(dangling)} rows whose foreign keys point "
                            f"nowhere (first: {tuple(dangling[0])}); nothing was changed"
                        )
            connection.commit()
        finally:
            if raw is not None:
                connection.rollback()
                raw.execute("PRAGMA foreign_keys=ON")


run_migrations_online()
