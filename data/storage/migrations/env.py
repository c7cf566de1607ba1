"""Alembic environment: runs migrations on the engine handed over by data.storage.engine."""

from alembic import context
from sqlmodel import SQLModel

import schemas.tables  # noqa: F401

target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    engine = context.config.attributes["engine"]
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
