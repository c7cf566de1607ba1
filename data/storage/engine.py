"""One engine factory, sessions, and schema upgrades for SQLite and PostgreSQL.

SQLite is the embedded default (``sqlite:///critiquelab.db``): WAL journal, a busy timeout so
that concurrent writers wait instead of failing (threads of one process wait their turn in
arrival order, see :class:`_WriterGate`), and foreign keys enforced. PostgreSQL is used
when the URL says so (``postgresql+psycopg://...``). The schema is managed by Alembic from the
first table: :func:`upgrade_database` brings any database to the newest revision and refuses one
written by a newer CritiqueLab. Alembic is imported only when a database is not at
:data:`HEAD_REVISION` (new, older, or newer): opening an up-to-date database costs two small
queries.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import event, inspect, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Engine, make_url
from sqlmodel import Session, create_engine, select

import schemas.tables  # noqa: F401  (registers every table on SQLModel.metadata)
from data.storage.campaign_imports import RolledBackImport, is_abandoned, roll_back_abandoned
from data.storage.urls import default_db_url
from schemas.tables import CampaignImport

if TYPE_CHECKING:
    from alembic.config import Config

SQLITE_BUSY_TIMEOUT_MS = 15_000
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
HEAD_REVISION = "0010_campaign_imports"
"""The newest revision in ``migrations/versions`` (tests/data/test_storage_migrations.py holds it
to :func:`head_revision`): a database at it is opened without Alembic. Change it with each new
migration."""


class DatabaseTooNew(RuntimeError):
    """The database was written by a newer CritiqueLab than this one."""


class DatabaseProblem(RuntimeError):
    """The database could not do the work right now; nothing of it was saved."""


class DatabaseBusy(DatabaseProblem):
    """SQLite stayed locked past the busy timeout, or every pooled connection stayed in use."""


class TransactionCancelled(DatabaseBusy):
    """PostgreSQL cancelled the transaction for its waits on other transactions (a deadlock, a
    serialization failure, a lock timeout): the server is up, and the same work may succeed when
    run again in a new transaction (:func:`in_transaction` does so for the first two)."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class DatabaseUnavailable(DatabaseProblem):
    """The database server could not be reached (down, restarting, or the connection dropped)."""


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
        # Writers of this process queue in arrival order on a per-file gate (see _WriterGate),
        # other processes on SQLite's own lock (busy timeout); the pool only has to be large
        # enough that waiting for a connection is never the bottleneck. It keeps up to 64 open
        # (opened on demand): a connection closed and reopened per transaction would parse the
        # schema and prepare every statement again, which with 20 busy annotators cost a
        # seventh of the throughput (bench/annotate_bench.py).
        engine = create_engine(
            url,
            echo=echo,
            pool_size=64,
            max_overflow=16,
            pool_timeout=SQLITE_BUSY_TIMEOUT_MS / 1000 * 4,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        )
        event.listen(engine, "connect", _configure_sqlite_connection)
        if parsed.database in (None, "", ":memory:") or parsed.database.startswith("file:"):
            event.listen(engine, "begin", _begin_immediate_sqlite)
        else:
            _install_writer_gate(engine, _writer_gate_for(parsed.database))
            _ENGINE_TURNS[engine] = _session_turn_for(parsed.database)
        return engine
    return create_engine(url, echo=echo, pool_pre_ping=True, pool_size=10, max_overflow=40)


def _configure_sqlite_connection(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _begin_immediate_sqlite(connection: Connection) -> None:
    # BEGIN IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout
    # instead of failing with "database is locked" when a read transaction upgrades to a write.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


class _WriterGate:
    """A first-come, first-served lock in front of SQLite's write lock, for one database file.

    Every transaction is ``BEGIN IMMEDIATE``, so they run one at a time anyway; left to SQLite's
    busy handler, waiters poll with a growing sleep (up to 100 ms) while newcomers take the lock
    first, and a few unlucky ones wait for seconds. Threads of this process instead queue here
    and are handed the lock in order the moment the holder commits or rolls back. Other
    processes still meet SQLite's busy timeout. Held by one owner at a time: a DBAPI connection
    for the write lock, a thread for the session turns of :func:`session_scope`.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._owner: object | None = None
        self._waiting: deque[tuple[object, threading.Event]] = deque()

    def acquire(self, owner: object, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the lock (in arrival order); True if held."""
        with self._mutex:
            if self._owner is None or self._owner is owner:
                self._owner = owner
                return True
            waiter = (owner, threading.Event())
            self._waiting.append(waiter)
        if waiter[1].wait(timeout):
            return True
        with self._mutex:
            if self._owner is owner:  # handed over just as the wait ran out
                return True
            self._waiting.remove(waiter)
            return False

    def release(self, owner: object) -> None:
        """Hand the lock to the next in line; a no-op unless ``owner`` holds it."""
        with self._mutex:
            if self._owner is not owner:
                return
            if self._waiting:
                self._owner, granted = self._waiting.popleft()
                granted.set()
            else:
                self._owner = None

    def held_by(self, owner: object) -> bool:
        """Whether ``owner`` holds the lock now."""
        return self._owner is owner

    @property
    def queued(self) -> int:
        """How many owners wait in line now."""
        with self._mutex:
            return len(self._waiting)


_WRITER_GATES: weakref.WeakValueDictionary[str, _WriterGate] = weakref.WeakValueDictionary()
_SESSION_TURNS: weakref.WeakValueDictionary[str, _WriterGate] = weakref.WeakValueDictionary()
_GATES_LOCK = threading.Lock()
_ENGINE_TURNS: weakref.WeakKeyDictionary[Engine, _WriterGate] = weakref.WeakKeyDictionary()
"""The session turn of each gated SQLite engine (see :func:`session_scope`)."""


def _writer_gate_for(database: str) -> _WriterGate:
    """The gate of one database file, shared by every engine of this process on it."""
    return _shared(_WRITER_GATES, database)


def _session_turn_for(database: str) -> _WriterGate:
    """The session turn of one database file, shared by every engine of this process on it."""
    return _shared(_SESSION_TURNS, database)


def _shared(gates: weakref.WeakValueDictionary[str, _WriterGate], database: str) -> _WriterGate:
    key = os.path.realpath(database)
    with _GATES_LOCK:
        gate = gates.get(key)
        if gate is None:
            gate = gates[key] = _WriterGate()
        return gate


_READ_ONLY = "critiquelab_read_only"
"""Execution option of the connections of :func:`read_scope`."""


class _WriterGateTimeout(Exception):
    """Other writers of this process held the gate for the whole busy timeout."""


def _install_writer_gate(engine: Engine, gate: _WriterGate) -> None:
    """Begin every transaction of ``engine`` with the gate, then ``BEGIN IMMEDIATE``.

    Only SQLAlchemy's documented events are used: the connection's ``begin`` event (the hook of
    SQLAlchemy's own pysqlite recipe for emitting BEGIN) takes the gate and emits
    ``BEGIN IMMEDIATE`` through the connection, so a failure there gets SQLAlchemy's error
    handling. The gate goes back when the connection returns to the pool (``checkin``, right
    after the commit or rollback that ended the transaction; a Session returns its connection
    then) and, as a safety net, when the connection is invalidated or closed: every path
    releases it, and only its holder can. A connection that keeps running transactions without
    going back to the pool keeps the gate meanwhile (the gate is re-entrant for its holder).
    """

    def begin(connection: Connection) -> None:
        if connection.get_execution_options().get(_READ_ONLY):
            # A reader in WAL mode sees the last commit and blocks no writer: no gate, no lock.
            connection.exec_driver_sql("BEGIN")
            return
        owner = connection.connection.dbapi_connection
        if not gate.acquire(owner, SQLITE_BUSY_TIMEOUT_MS / 1000):
            raise _WriterGateTimeout("database is locked (waited for other writers)")
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            gate.release(owner)
            raise

    def let_go(dbapi_connection: object, *_args: object) -> None:
        if dbapi_connection is not None:
            gate.release(dbapi_connection)

    event.listen(engine, "begin", begin)
    for name in ("checkin", "invalidate", "soft_invalidate", "close", "close_detached"):
        event.listen(engine, name, let_go)


SQLITE_LONGEST_BUSY_SLEEP_S = 0.1
"""The longest sleep of SQLite's busy handler between two tries at a lock held by another
process (``sqliteDefaultBusyCallback``: 1, 2, 5, 10, ... 50, 100, 100 ... ms)."""
BULK_WRITE_GAP_S = 1.5 * SQLITE_LONGEST_BUSY_SLEEP_S
"""How long a bulk writer leaves SQLite's write lock free between two of its transactions."""


def between_bulk_transactions(engine: Engine) -> None:
    """Let other writers in between two transactions of a bulk writer (a large import).

    On a SQLite file, a writer of another process that finds the write lock taken does not queue:
    its busy handler sleeps and tries again, every 100 ms once it has waited a while. A bulk
    writer that begins its next transaction right after its commit leaves a gap of a few
    milliseconds, which those tries mostly miss; an annotator's submit then waits for
    transaction after transaction until its busy timeout refuses it, while the import goes on
    (issue 25 A1: 0 to 8 refusals per 300,000-label import). So the lock stays free here for
    :data:`BULK_WRITE_GAP_S`, longer than the handler's longest sleep: every waiting process
    tries within the gap and gets the lock, and the threads queued behind it in that process
    follow through its writer gate. The gap also runs a passive WAL checkpoint, so that the
    next annotator's commit does not copy the bulk writer's pages while the others wait.
    Nothing on PostgreSQL, whose row locks let annotators write beside the import."""
    if engine.dialect.name != "sqlite":
        return
    started = time.monotonic()
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        # passive: it waits for no lock and holds none that writers need
        cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
        cursor.fetchall()
        cursor.close()
    finally:
        raw.close()
    rest = BULK_WRITE_GAP_S - (time.monotonic() - started)
    if rest > 0:
        time.sleep(rest)  # a pause for other processes' busy handlers, not a synchronisation


@contextmanager
def outside_turn(session: Session) -> Iterator[None]:
    """Run the block with this thread's session turn on the SQLite file handed to the sessions
    waiting for it (see :func:`session_scope`), and take it back after them.

    For a long block of short transactions (a large import): called between two of them, after a
    commit, it lets annotators' sessions of this process run instead of waiting for the whole
    block. Nothing changes on PostgreSQL, when the thread holds no turn, or while ``session`` is
    in a transaction (its lock must not be handed over). :class:`DatabaseBusy`
    when the turn does not come back within the busy timeout."""
    engine = session.get_bind()
    turn = _ENGINE_TURNS.get(engine) if isinstance(engine, Engine) else None
    me = threading.current_thread()
    if turn is None or not turn.held_by(me) or session.in_transaction():
        yield
        return
    turn.release(me)
    try:
        yield
    finally:
        if not turn.acquire(me, SQLITE_BUSY_TIMEOUT_MS / 1000):
            raise _busy(engine)  # type: ignore[arg-type]


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits when the block succeeds and rolls back when it raises.

    A locked SQLite database, an exhausted pool, a PostgreSQL transaction cancelled for its lock
    waits (a deadlock) or an unreachable server surfaces as :class:`DatabaseBusy` /
    :class:`DatabaseUnavailable` with one plain line (the driver's error is kept as
    ``__cause__``); everything the block did is rolled back.

    On a SQLite file, the sessions of this process take turns, in arrival order, for the whole
    block (a block nested in one of the same thread shares its turn). Their transactions run
    one at a time anyway (``BEGIN IMMEDIATE``); holding the turn from the session's start to its
    close, rather than from the first statement to the commit, keeps the thread that just
    committed from competing with the next one for Python's interpreter lock while the next
    one's SQLite calls run. With 20 annotators submitting back to back that raised throughput
    by a third to a half (``bench/annotate_bench.py``).
    """
    turn = _ENGINE_TURNS.get(engine)
    if turn is None:
        yield from _session(engine)
        return
    me = threading.current_thread()
    if turn.held_by(me):  # nested in a session of this thread: it already has the turn
        yield from _session(engine)
        return
    if not turn.acquire(me, SQLITE_BUSY_TIMEOUT_MS / 1000):
        raise _busy(engine)
    try:
        yield from _session(engine)
    finally:
        turn.release(me)


RUN_AGAIN_SQLSTATES = frozenset({"40P01", "40001"})
"""Cancellations after which :func:`in_transaction` runs the work again: ``deadlock_detected``
and ``serialization_failure``, the two that PostgreSQL's documentation says to handle by retrying
the whole transaction. A lock timeout is a wait that ran out, not a conflict resolved."""

Result = TypeVar("Result")


def in_transaction(
    engine: Engine, work: Callable[[Session], Result], *, attempts: int = 2
) -> Result:
    """``work`` in :func:`session_scope`, and its result; run again from the start when
    PostgreSQL cancelled the transaction to break a deadlock or a serialization conflict.

    The cancelled transaction was rolled back whole, so nothing of the first run stays; ``work``
    must do nothing outside the database that a second run would repeat. After ``attempts`` runs,
    or on any other error, the error is raised as :func:`session_scope` raises it.
    """
    if attempts < 1:
        raise ValueError(f"attempts is {attempts}; give 1 or more")
    for _ in range(attempts - 1):
        try:
            with session_scope(engine) as session:
                return work(session)
        except TransactionCancelled as cancelled:
            if cancelled.sqlstate not in RUN_AGAIN_SQLSTATES:
                raise
    with session_scope(engine) as session:  # the last run: whatever it raises is raised
        return work(session)


@contextmanager
def read_scope(engine: Engine) -> Iterator[Session]:
    """A session for reading only: it never waits for writers, and writers never wait for it.

    Use it for long reads (the calibration dashboard's frame of a large campaign, exports,
    monitors). On SQLite it skips the session turns and the writer gate of
    :func:`session_scope` and begins a plain deferred transaction, which in WAL mode reads a
    consistent snapshot while writers commit. It always rolls back: a write in it is a bug, and
    SQLite refuses one that would need the write lock held by another connection. Database
    problems surface as in :func:`session_scope`.
    """
    reader = engine.execution_options(**{_READ_ONLY: True})
    session = Session(reader, expire_on_commit=False)
    try:
        yield session
    except BaseException as error:
        problem = database_problem(error, engine)
        if problem is not None:
            raise problem from error
        raise
    finally:
        with suppress(sa_exc.SQLAlchemyError, OSError):
            session.rollback()
        with suppress(sa_exc.SQLAlchemyError, OSError):
            session.close()


def _session(engine: Engine) -> Iterator[Session]:
    """The body of :func:`session_scope`, once the session may start."""
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
_CANCELLED_WAITS = {
    "40P01": "a deadlock",
    "40001": "a serialization failure",
    "55P03": "a lock timeout",
}
"""PostgreSQL's SQLSTATEs of a transaction cancelled for its waits on others' (the server is up)."""


def database_problem(error: BaseException, engine: Engine) -> DatabaseProblem | None:
    """The plain, typed version of a driver error about the database itself, else None."""
    where = engine.url.render_as_string(hide_password=True)
    if isinstance(error, _WriterGateTimeout):
        return _busy(engine)
    if isinstance(error, sa_exc.TimeoutError):
        return DatabaseBusy(
            f"the database {where} is busy: every connection stayed in use; nothing was saved. "
            "Try again in a moment."
        )
    if not isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError):
        return None
    text = str(getattr(error, "orig", error)).lower()
    if engine.url.get_backend_name() == "sqlite" and any(w in text for w in _BUSY_WORDS):
        return _busy(engine)
    sqlstate = getattr(getattr(error, "orig", None), "sqlstate", None)
    if sqlstate in _CANCELLED_WAITS:
        return TransactionCancelled(
            f"the database {where} cancelled this change: it waited on another transaction "
            f"({_CANCELLED_WAITS[sqlstate]}); nothing was saved. Try again.",
            sqlstate,
        )
    return DatabaseUnavailable(
        f"the database {where} is unavailable (could not connect or the connection dropped); "
        "nothing was saved. Check that the database server is running, then try again."
    )


def _busy(engine: Engine) -> DatabaseBusy:
    where = engine.url.render_as_string(hide_password=True)
    return DatabaseBusy(
        f"the database {where} is locked by other writers (another program or a long "
        f"transaction) and stayed locked for {SQLITE_BUSY_TIMEOUT_MS / 1000:g} s; nothing was "
        "saved. Try again in a moment."
    )


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def head_revision() -> str:
    """The newest revision as Alembic reads it from the migrations folder."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    head = script.get_current_head()
    if head is None:
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


def current_revision(engine: Engine) -> str | None:
    """The schema revision the database carries (None: no schema yet), read without the write
    lock: a command that opens an up-to-date database does not wait for, or hold up, writers."""
    from alembic.runtime.migration import MigrationContext

    with engine.execution_options(**{_READ_ONLY: True}).connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def _at_head(engine: Engine) -> bool:
    """Whether the database's one stored revision is :data:`HEAD_REVISION`, read as
    :func:`current_revision` reads it (no write lock) but with one query and no Alembic."""
    with engine.execution_options(**{_READ_ONLY: True}).connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return False
        stored = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    return [row[0] for row in stored] == [HEAD_REVISION]


def upgrade_database(engine: Engine) -> str:
    """Upgrade the schema to the newest revision; return it.

    Raises :class:`DatabaseTooNew` when the database carries a revision this version does not
    know (it was written by a newer CritiqueLab): upgrade CritiqueLab instead. Then rolls back the
    campaigns of imports killed half-way (:mod:`data.storage.campaign_imports`).
    """
    if _at_head(engine):  # the common case: no Alembic, no write transaction
        roll_back_abandoned_imports(engine)
        return HEAD_REVISION
    from alembic import command
    from alembic.script import ScriptDirectory

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
    head = head_revision()
    if current != head:  # an up-to-date database is left alone: no write transaction at all
        command.upgrade(alembic_config(engine), "head")
    roll_back_abandoned_imports(engine)
    return head


def roll_back_abandoned_imports(
    engine: Engine, now: datetime | None = None
) -> list[RolledBackImport]:
    """Roll back every campaign whose import died half-way, each in its own transaction; the
    common case (no importing campaign) costs one read that takes no write lock."""
    with read_scope(engine) as reader:
        candidates = [
            state.campaign_id
            for state in reader.exec(select(CampaignImport))
            if is_abandoned(state, now)
        ]
    done = []
    for campaign_id in candidates:
        with session_scope(engine) as session:
            rolled = roll_back_abandoned(session, campaign_id, now)
        if rolled is not None:
            done.append(rolled)
    return done
