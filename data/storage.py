"""One engine factory, sessions, and schema upgrades for SQLite and PostgreSQL.

SQLite is the embedded default (``sqlite:///critiquelab.db``): WAL journal, a busy timeout so
that concurrent writers wait instead of failing, and foreign keys enforced. PostgreSQL is used
when the URL says so (``postgresql+psycopg://...``). The schema is managed by Alembic from the
first table: :func:`upgrade_database` brings any database to the newest revision and refuses one
written by a newer CritiqueLab.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, create_engine

import schemas.tables  # noqa: F401  (registers every table on SQLModel.metadata)

DEFAULT_DB_URL = "sqlite:///critiquelab.db"
SQLITE_BUSY_TIMEOUT_MS = 15_000
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


class DatabaseTooNew(RuntimeError):
    """The database was written by a newer CritiqueLab than this one."""


class DatabaseProblem(RuntimeError):
    """The database could not do the work right now; nothing of it was saved."""


class DatabaseBusy(DatabaseProblem):
    """SQLite stayed locked past the busy timeout, or every pooled connection stayed in use."""


class DatabaseUnavailable(DatabaseProblem):
    """The database server could not be reached (down, restarting, or the connection dropped)."""


def default_db_url() -> str:
    """``$CRITIQUELAB_DB`` if set, else ``sqlite:///critiquelab.db`` in the current folder."""
    return os.environ.get("CRITIQUELAB_DB") or DEFAULT_DB_URL


def data_dir(db_url: str | None = None) -> Path:
    """The folder where imported images and generated files live.

    ``$CRITIQUELAB_DATA_DIR`` if set; for a SQLite file, ``<db stem>_files`` beside it; otherwise
    ``critiquelab_files`` in the current folder.
    """
    configured = os.environ.get("CRITIQUELAB_DATA_DIR")
    if configured:
        return Path(configured).resolve()
    url = make_url(db_url or default_db_url())
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        db_path = Path(url.database).resolve()
        return db_path.with_name(f"{db_path.stem}_files")
    return Path("critiquelab_files").resolve()


def engine_data_dir(engine: Engine) -> Path:
    """The data folder that belongs to ``engine``'s database (see :func:`data_dir`)."""
    return data_dir(engine.url.render_as_string(hide_password=False))


def make_engine(url: str | None = None, *, echo: bool = False) -> Engine:
    """Create the engine for ``url`` (default :func:`default_db_url`)."""
    url = url or default_db_url()
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        # Writers queue on SQLite's own lock (busy timeout); the pool only has to be large enough
        # that waiting for a connection is never the bottleneck.
        engine = create_engine(
            url,
            echo=echo,
            pool_size=10,
            max_overflow=60,
            pool_timeout=SQLITE_BUSY_TIMEOUT_MS / 1000 * 4,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        )
        event.listen(engine, "connect", _configure_sqlite_connection)
        event.listen(engine, "begin", _begin_immediate_sqlite)
        return engine
    return create_engine(url, echo=echo, pool_pre_ping=True, pool_size=10, max_overflow=40)


def _configure_sqlite_connection(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _begin_immediate_sqlite(connection) -> None:  # type: ignore[no-untyped-def]
    # BEGIN IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout
    # instead of failing with "database is locked" when a read transaction upgrades to a write.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits when the block succeeds and rolls back when it raises.

    A locked SQLite database, an exhausted pool or an unreachable server surfaces as
    :class:`DatabaseBusy` / :class:`DatabaseUnavailable` with one plain line (the driver's error
    is kept as ``__cause__``); everything the block did is rolled back.
    """
    session = Session(engine, expire_on_commit=False)
    try:
        yield session
        session.commit()
    except BaseException as error:
        with suppress(sa_exc.SQLAlchemyError, OSError):  # a dead connection cannot roll back
            session.rollback()
        problem = database_problem(error, engine)
        if problem is not None:
            raise problem from error
        raise
    finally:
        with suppress(sa_exc.SQLAlchemyError, OSError):
            session.close()


_BUSY_WORDS = ("database is locked", "database table is locked", "busy")


def database_problem(error: BaseException, engine: Engine) -> DatabaseProblem | None:
    """The plain, typed version of a driver error about the database itself, else None."""
    where = engine.url.render_as_string(hide_password=True)
    if isinstance(error, sa_exc.TimeoutError):
        return DatabaseBusy(
            f"the database {where} is busy: every connection stayed in use; nothing was saved. "
            "Try again in a moment."
        )
    if not isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError):
        return None
    text = str(getattr(error, "orig", error)).lower()
    if engine.url.get_backend_name() == "sqlite" and any(w in text for w in _BUSY_WORDS):
        return DatabaseBusy(
            f"the database {where} is locked by another program and stayed locked for "
            f"{SQLITE_BUSY_TIMEOUT_MS / 1000:g} s; nothing was saved. Try again in a moment."
        )
    return DatabaseUnavailable(
        f"the database {where} is unavailable (could not connect or the connection dropped); "
        "nothing was saved. Check that the database server is running, then try again."
    )


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def head_revision() -> str:
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    head = script.get_current_head()
    if head is None:
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade_database(engine: Engine) -> str:
    """Upgrade the schema to the newest revision; return it.

    Raises :class:`DatabaseTooNew` when the database carries a revision this version does not
    know (it was written by a newer CritiqueLab): upgrade CritiqueLab instead.
    """
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    current = current_revision(engine)
    if current is not None:
        try:
            script.get_revision(current)
        except Exception:
            raise DatabaseTooNew(
                f"the database {engine.url.render_as_string(hide_password=True)} is at schema "
                f"revision {current}, which this CritiqueLab does not know: it was written by a "
                "newer version. Upgrade CritiqueLab (pip install -U critiquelab) to open it."
            ) from None
    command.upgrade(alembic_config(engine), "head")
    return head_revision()
