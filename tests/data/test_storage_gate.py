"""The SQLite writer gate: threads of one process take the write lock in arrival order, a wait
past the busy timeout is a plain DatabaseBusy, and every path gives the lock back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

import data.storage
from data.storage import DatabaseBusy, make_engine, session_scope


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

    threads = []
    for n in range(5):
        thread = threading.Thread(target=write, args=(n,))
        thread.start()
        threads.append(thread)
        time.sleep(0.05)  # arrive one after another
    holder.__exit__(None, None, None)
    for thread in threads:
        thread.join(10)
    assert order == [0, 1, 2, 3, 4]
    engine.dispose()


def test_a_wait_past_the_busy_timeout_is_database_busy_and_nothing_sticks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data.storage, "SQLITE_BUSY_TIMEOUT_MS", 300)
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
