"""The SQLite writer gate: threads of one process take the write lock in arrival order, a wait
past the busy timeout is a plain DatabaseBusy, and every path gives the lock back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

import data.storage.engine
from data.storage.engine import (
    DatabaseBusy,
    TransactionCancelled,
    in_transaction,
    make_engine,
    read_scope,
    session_scope,
)
from tests.browser_fixtures import wait_until


def test_writers_are_served_in_arrival_order(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'gate.db'}")
    with session_scope(engine) as session:
        session.execute(text("CREATE TABLE log (n INTEGER)"))
    order: list[int] = []
    holder = session_scope(engine)
    session = holder.__enter__()
    session.execute(text("INSERT INTO log VALUES (-1)"))  # holds the gate

    def write(n: int) -> None:
        with session_scope(engine) as own:
            own.execute(text("INSERT INTO log VALUES (:n)"), {"n": n})
            order.append(n)

    turn = data.storage.engine._ENGINE_TURNS[engine]
    threads = []
    for n in range(5):
        thread = threading.Thread(target=write, args=(n,))
        thread.start()
        threads.append(thread)
        wait_until(lambda n=n: turn.queued == n + 1, f"writer {n} in line")  # before the next
    holder.__exit__(None, None, None)
    for thread in threads:
        thread.join(10)
    assert order == [0, 1, 2, 3, 4]
    engine.dispose()


def test_a_wait_past_the_busy_timeout_is_database_busy_and_nothing_sticks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data.storage.engine, "SQLITE_BUSY_TIMEOUT_MS", 300)
    engine = make_engine(f"sqlite:///{tmp_path / 'gate.db'}")
    holder = session_scope(engine)
    session = holder.__enter__()
    session.execute(text("CREATE TABLE t (n INTEGER)"))
    failure: list[BaseException] = []

    def write() -> None:
        try:
            with session_scope(engine) as own:
                own.execute(text("SELECT 1"))
        except BaseException as error:  # noqa: BLE001 - the test inspects it
            failure.append(error)

    thread = threading.Thread(target=write)
    thread.start()
    thread.join(10)
    assert len(failure) == 1 and isinstance(failure[0], DatabaseBusy)
    assert "locked" in str(failure[0]) and "\n" not in str(failure[0])
    holder.__exit__(ValueError, ValueError("rolled back"), None)  # a rollback releases too
    with session_scope(engine) as again:  # the gate is free again
        again.execute(text("CREATE TABLE u (n INTEGER)"))
    engine.dispose()


def _time_inside(engine, entered: list[float], left: list[float], hold: float) -> None:  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        entered.append(time.monotonic())
        time.sleep(hold)  # no statement at all: the turn is held for the block, not the SQL
        session.execute(text("SELECT 1"))
        left.append(time.monotonic())


def test_sessions_of_one_sqlite_file_take_turns_for_the_whole_block(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'gate.db'}")
    other_engine = make_engine(f"sqlite:///{tmp_path / 'gate.db'}")  # same file, same turn
    entered: list[float] = []
    left: list[float] = []
    threads = [
        threading.Thread(target=_time_inside, args=(each, entered, left, 0.2))
        for each in (engine, other_engine, engine)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(entered) == len(left) == 3
    spans = sorted(zip(entered, left, strict=True))
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:], strict=False))
    engine.dispose()
    other_engine.dispose()


def test_a_session_nested_in_one_of_the_same_thread_shares_its_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # waiting for the outer turn would end in DatabaseBusy after the busy timeout
    monkeypatch.setattr(data.storage.engine, "SQLITE_BUSY_TIMEOUT_MS", 300)
    engine = make_engine(f"sqlite:///{tmp_path / 'gate.db'}")
    with session_scope(engine):
        with session_scope(engine) as inner:
            inner.execute(text("CREATE TABLE t (n INTEGER)"))
        with session_scope(engine) as inner:  # the turn is still held after the inner close
            inner.execute(text("INSERT INTO t VALUES (1)"))
    entered: list[float] = []
    _time_inside(engine, entered, [], 0)  # and given back after the outer close
    assert entered
    engine.dispose()


def test_a_block_that_raises_gives_the_turn_back(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'gate.db'}")
    with pytest.raises(ZeroDivisionError), session_scope(engine):
        1 / 0  # noqa: B018
    done: list[float] = []
    thread = threading.Thread(target=_time_inside, args=(engine, done, [], 0))
    thread.start()
    thread.join(5)
    assert done  # another thread got its turn at once
    engine.dispose()


def test_postgresql_sessions_do_not_take_turns(pg_url: str) -> None:
    engine = make_engine(pg_url)
    together = threading.Barrier(2, timeout=5)
    broken: list[BaseException] = []

    def inside() -> None:
        try:
            with session_scope(engine) as session:
                together.wait()  # both blocks open at the same time
                session.execute(text("SELECT 1"))
        except BaseException as error:  # noqa: BLE001 - reported below
            broken.append(error)

    threads = [threading.Thread(target=inside) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert broken == []
    engine.dispose()


def test_a_reader_neither_waits_for_a_writer_nor_holds_one_up(tmp_path: Path) -> None:
    """read_scope skips the turns and the gate: it reads the last commit while a writer holds
    both, and a writer commits while a reader's snapshot is open."""
    engine = make_engine(f"sqlite:///{tmp_path / 'gate.db'}")
    with session_scope(engine) as session:
        session.execute(text("CREATE TABLE t (n INTEGER)"))
        session.execute(text("INSERT INTO t VALUES (1)"))
    writer = session_scope(engine)
    written = writer.__enter__()
    written.execute(text("INSERT INTO t VALUES (2)"))  # uncommitted; holds turn and gate
    seen: list[int] = []

    def read() -> None:
        with read_scope(engine) as reader:
            seen.append(reader.execute(text("SELECT count(*) FROM t")).scalar_one())

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(5)  # a reader queued behind the writer would wait the 15 s busy timeout
    assert seen == [1]
    writer.__exit__(None, None, None)

    with read_scope(engine) as reader:
        assert reader.execute(text("SELECT count(*) FROM t")).scalar_one() == 2
        committed: list[bool] = []

        def write() -> None:
            with session_scope(engine) as own:
                own.execute(text("INSERT INTO t VALUES (3)"))
            committed.append(True)

        thread = threading.Thread(target=write)
        thread.start()
        thread.join(5)
        assert committed == [True]
        assert reader.execute(text("SELECT count(*) FROM t")).scalar_one() == 2  # its snapshot
    with read_scope(engine) as reader:
        assert reader.execute(text("SELECT count(*) FROM t")).scalar_one() == 3
    engine.dispose()


def test_a_read_scope_never_writes(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'gate.db'}")
    with session_scope(engine) as session:
        session.execute(text("CREATE TABLE t (n INTEGER)"))
    with read_scope(engine) as reader:
        reader.execute(text("INSERT INTO t VALUES (1)"))
    with read_scope(engine) as reader:
        assert reader.execute(text("SELECT count(*) FROM t")).scalar_one() == 0
    engine.dispose()


def _crossed_table(pg_url: str, name: str) -> Engine:
    engine = make_engine(pg_url)
    with engine.begin() as connection:
        connection.execute(text(f"CREATE TABLE {name} (id int PRIMARY KEY, touched int)"))
        connection.execute(text(f"INSERT INTO {name} VALUES (1, 0), (2, 0)"))
    return engine


def _crossing(
    engine: Engine, table: str, run: Callable[[Callable[[Session], None]], None]
) -> tuple[dict[int, BaseException | None], dict[int, int]]:
    """Two threads update rows 1 then 2, and 2 then 1, each ``run``-ning its block; a barrier
    lets the second updates start only once both first rows are held (on a block's first run),
    so the two cross: PostgreSQL cancels the block that started on row 1. A second run of that
    block starts once the other block has ended: run at once, it could take row 1 back before
    the other block (waiting for row 1 since the crossing) got it, and cross it again, which a
    loaded machine saw once. Each thread's outcome, and its block's runs."""
    first_rows_held = threading.Barrier(2, timeout=30)
    other_block_ended = threading.Event()
    runs = {1: 0, 2: 0}
    outcomes: dict[int, BaseException | None] = {}

    def cross(first: int, second: int) -> None:
        touch = text(f"UPDATE {table} SET touched = touched + 1 WHERE id = :id")

        def block(session: Session) -> None:
            runs[first] += 1
            # Only the block that starts on row 1 looks for deadlocks soon (PostgreSQL's default
            # is after 1 s of waiting); the other looks after 60 s. The victim is then always the
            # same block: with both at 1 s, a loaded CI machine once saw the block that ran again
            # cancelled a second time.
            check_after = "100ms" if first == 1 else "60s"
            session.execute(text(f"SET LOCAL deadlock_timeout = '{check_after}'"))
            session.execute(touch, {"id": first})
            if runs[first] == 1:
                first_rows_held.wait()
            session.execute(touch, {"id": second})

        def block_that_waits_to_run_again(session: Session) -> None:
            if runs[first] == 1:  # this is its second run
                assert other_block_ended.wait(30), "the block that won the crossing never ended"
            block(session)

        try:
            run(block_that_waits_to_run_again if first == 1 else block)
            outcomes[first] = None
        except BaseException as error:  # noqa: BLE001 - checked by the tests
            outcomes[first] = error
        finally:
            if first == 2:
                other_block_ended.set()

    threads = [threading.Thread(target=cross, args=rows) for rows in ((1, 2), (2, 1))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return outcomes, runs


def _touched(engine: Engine, table: str) -> int:
    with engine.connect() as connection:
        return int(connection.execute(text(f"SELECT sum(touched) FROM {table}")).scalar_one())


def test_a_postgresql_deadlock_is_database_busy_not_an_unreachable_server(pg_url: str) -> None:
    """Two blocks update two rows in opposite orders: PostgreSQL cancels one (deadlock_detected).
    That block's error says the change was cancelled, and nothing of it stays; it used to say
    the server was unreachable."""
    engine = _crossed_table(pg_url, "crossed")

    def in_session_scope(block: Callable[[Session], None]) -> None:
        with session_scope(engine) as session:
            block(session)

    outcomes, _ = _crossing(engine, "crossed", in_session_scope)
    cancelled = [error for error in outcomes.values() if error is not None]
    assert len(outcomes) == 2 and len(cancelled) == 1 and outcomes[2] is None, outcomes
    assert isinstance(cancelled[0], DatabaseBusy), repr(cancelled[0])
    assert isinstance(cancelled[0], TransactionCancelled) and cancelled[0].sqlstate == "40P01"
    assert "cancelled this change" in str(cancelled[0]) and "deadlock" in str(cancelled[0])
    assert _touched(engine, "crossed") == 2  # the surviving block's two updates only
    engine.dispose()


def test_in_transaction_runs_a_step_that_a_deadlock_cancelled_once_more(pg_url: str) -> None:
    """The crossing blocks above, run by :func:`in_transaction` (as the annotation page runs its
    submit): the cancelled one runs again from the start, and both blocks' updates stay."""
    engine = _crossed_table(pg_url, "crossed_again")
    outcomes, runs = _crossing(engine, "crossed_again", lambda block: in_transaction(engine, block))
    assert outcomes == {1: None, 2: None}
    assert runs == {1: 2, 2: 1}  # the block that started on row 1 was cancelled and ran again
    assert _touched(engine, "crossed_again") == 4  # all four updates: none lost, none doubled
    engine.dispose()


def test_in_transaction_does_not_run_again_after_a_lock_timeout(pg_url: str) -> None:
    """A wait that ran out is not a conflict that PostgreSQL resolved: it is refused at once."""
    engine = _crossed_table(pg_url, "held")
    runs = []

    def work(session: Session) -> None:
        runs.append(1)
        session.execute(text("SET LOCAL lock_timeout = '50ms'"))
        session.execute(text("UPDATE held SET touched = 1 WHERE id = 1"))

    with engine.connect() as holder, holder.begin():
        holder.execute(text("UPDATE held SET touched = 2 WHERE id = 1"))  # holds the row
        with pytest.raises(TransactionCancelled) as refused:
            in_transaction(engine, work)
    assert refused.value.sqlstate == "55P03" and len(runs) == 1
    engine.dispose()
