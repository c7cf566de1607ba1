"""PostgreSQL: a unit that another transaction holds is waited for, not reported as "nothing".

Each test holds a unit's row with a real, uncommitted submit in one session (as an annotator's
submit in flight does) and asks for the next unit in another. Before the fix the lease skipped
the held unit (``SKIP LOCKED``) and answered "nothing" while it still had a free slot (issue 11).
The wait runs in a savepoint; these tests also hold the database to every acknowledged answer when
that wait ends badly (a deadlock, a timeout). SQLite has one writer at a time, so nothing there is
ever held by another transaction and it has no such case.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from data import queue
from data.queue import leases
from data.services.routing import set_routing
from data.storage.engine import session_scope
from schemas.tables import Annotation
from tests.data.test_queue import RATIONALE, _check_counters, _lease, build_campaign
from tests.data.test_queue_routing import _judge_pairs

_PATIENCE = 60.0
"""Seconds a test waits for a thread to reach its lock wait before it fails (never slept)."""


def _campaign(
    engine: Engine, units: int, routing: str = "least-annotated"
) -> tuple[int, list[int]]:
    """A pairwise campaign of ``units`` units, overlap 2, two annotators; routed if asked."""
    campaign_id, annotators = build_campaign(engine, items=units, protocol="pairwise", overlap=2)
    if routing != "least-annotated":
        _judge_pairs(engine, {"j1": {0: "A", 1: "A"}, "j2": {0: "B", 1: "A"}})
        with session_scope(engine) as session:
            set_routing(session, campaign_id, routing, ["j1", "j2"])
    return campaign_id, annotators


def _submit_uncommitted(engine: Engine, view: queue.UnitView, annotator: int) -> Session:
    """An open session whose submit of ``view`` holds the unit's row until it commits."""
    session = Session(engine)
    queue.submit(session, view.assignment_id, annotator, preference="A", rationale=RATIONALE)
    return session


def _lock_waiters(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(
            connection.execute(text("SELECT count(*) FROM pg_locks WHERE NOT granted")).one()[0]
        )


def _until_waiting(engine: Engine, threads: list[threading.Thread], waiters: int) -> None:
    """Return once ``waiters`` lock waits are seen, or once every thread is done (the old code
    never waits); join with a timeout is the poll, so nothing is slept."""
    deadline = time.monotonic() + _PATIENCE
    while _lock_waiters(engine) < waiters and any(thread.is_alive() for thread in threads):
        assert time.monotonic() < deadline, "no lock wait began"
        threads[0].join(timeout=0.02)


def _in_thread(call: Callable[[], Any], results: dict[str, Any], key: str) -> threading.Thread:
    def run() -> None:
        try:
            results[key] = call()
        except BaseException as error:  # reported by the test
            results[key] = error

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.parametrize("routing", ["least-annotated", "judge-disagreement"])
def test_a_unit_held_by_a_submit_in_flight_is_waited_for(pg_engine: Engine, routing: str) -> None:
    campaign_id, (alice, bob) = _campaign(pg_engine, units=1, routing=routing)
    held = _lease(pg_engine, campaign_id, alice)
    submitting = _submit_uncommitted(pg_engine, held, alice)  # the unit's row is now locked
    results: dict[str, Any] = {}

    def bob_leases() -> tuple[queue.UnitView | None, str]:
        with session_scope(pg_engine) as session:
            view = queue.next_unit(session, campaign_id, bob)
            timeout = session.connection().execute(text("SHOW lock_timeout")).scalar_one()
            return view, timeout

    thread = _in_thread(bob_leases, results, "bob")
    _until_waiting(pg_engine, [thread], waiters=1)
    submitting.commit()
    submitting.close()
    thread.join()
    view, timeout = results["bob"]
    assert view is not None and view.unit_id == held.unit_id  # the unit's second slot
    assert timeout == "0"  # the wait's lock_timeout did not outlive its savepoint
    with Session(pg_engine) as session:
        assert session.exec(select(Annotation.annotator_id)).all() == [alice]
        _check_counters(session, campaign_id)


def test_two_annotators_waiting_on_each_others_units_lose_nothing(pg_engine: Engine) -> None:
    """Each submits the unit that is the other's last one and asks for the next before either
    commits: a lock cycle. PostgreSQL cancels one wait (deadlock_detected), whose savepoint alone
    rolls back: that annotator hears "nothing now" and their submit commits; the other, waiting
    for that commit, gets the unit; the unit left over is leased when asked again."""
    campaign_id, (alice, bob) = _campaign(pg_engine, units=2)
    views = {alice: _lease(pg_engine, campaign_id, alice), bob: _lease(pg_engine, campaign_id, bob)}
    other = {alice: views[bob].unit_id, bob: views[alice].unit_id}
    assert other[alice] != other[bob]
    sessions = {who: _submit_uncommitted(pg_engine, views[who], who) for who in (alice, bob)}
    answered: list[int] = []
    commits = threading.Event()  # no commit before both have asked (the old code never waited)
    results: dict[str, Any] = {}

    def next_then_commit(who: int) -> queue.UnitView | None:
        view = queue.next_unit(sessions[who], campaign_id, who)
        answered.append(who)
        commits.wait()
        sessions[who].commit()  # acknowledged from here on
        sessions[who].close()
        return view

    threads = [_in_thread(lambda w=w: next_then_commit(w), results, str(w)) for w in (alice, bob)]
    deadline = time.monotonic() + _PATIENCE
    while len(answered) + _lock_waiters(pg_engine) < 2:  # both asked: answered, or waiting
        assert time.monotonic() < deadline, "the two leases neither answered nor waited"
        threads[0].join(timeout=0.02)
    commits.set()
    for thread in threads:
        thread.join()
    got = {who: results[str(who)] for who in (alice, bob)}
    assert not [r for r in got.values() if isinstance(r, BaseException)], got
    leased = {who: view.unit_id for who, view in got.items() if view is not None}
    assert len(leased) == 1  # the survivor of the cycle; the cancelled wait heard "nothing now"
    assert all(unit == other[who] for who, unit in leased.items())
    (cancelled,) = {alice, bob} - set(leased)
    again = _lease(pg_engine, campaign_id, cancelled)  # asked again, the unit is there
    assert again is not None and again.unit_id == other[cancelled]
    with Session(pg_engine) as session:
        stored = session.exec(select(Annotation.unit_id, Annotation.annotator_id)).all()
        assert sorted(stored) == sorted((views[who].unit_id, who) for who in (alice, bob))
        _check_counters(session, campaign_id)


def test_a_wait_that_times_out_keeps_the_submit_before_it(
    pg_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``submit_and_next`` whose next lease waits past its bound: "nothing now", and the answer
    stored before the wait commits (a rolled-back transaction would lose it while the caller
    reports it stored)."""
    monkeypatch.setattr(leases, "WAIT_SECONDS", 0.3)
    campaign_id, (alice, bob) = _campaign(pg_engine, units=2)
    alices, bobs = _lease(pg_engine, campaign_id, alice), _lease(pg_engine, campaign_id, bob)
    submitting = _submit_uncommitted(pg_engine, alices, alice)  # held past Bob's bound
    try:
        with session_scope(pg_engine) as session:
            step = queue.submit_and_next(
                session, bobs.assignment_id, bob, preference="B", rationale=RATIONALE
            )
            assert step.next_unit is None  # Alice's unit stayed held for longer than the bound
    finally:
        submitting.commit()
        submitting.close()
    with Session(pg_engine) as session:
        stored = session.exec(select(Annotation.unit_id, Annotation.annotator_id)).all()
        assert sorted(stored) == sorted([(alices.unit_id, alice), (bobs.unit_id, bob)])
        _check_counters(session, campaign_id)
    again = _lease(pg_engine, campaign_id, bob)  # no longer held: leased at once
    assert again is not None and again.unit_id == alices.unit_id


def test_two_annotators_submitting_each_others_next_unit_both_get_it(pg_engine: Engine) -> None:
    """``submit_and_next`` of two annotators, each submitting the unit that is the other's last
    one, both in flight before either looks for its next unit (each thread stops at its first
    ``SKIP LOCKED`` until the other is there too). When a submit locked its unit's row (counting
    the answer) before the lease, each lease waited for the other's unit: a cycle that
    PostgreSQL broke after deadlock_timeout by cancelling one wait, whose annotator heard
    "nothing now" while the unit remained. Now no wait closes a cycle: no deadlock is detected
    and both get the other's unit in the same step."""
    campaign_id, (alice, bob) = _campaign(pg_engine, units=2)
    views = {alice: _lease(pg_engine, campaign_id, alice), bob: _lease(pg_engine, campaign_id, bob)}
    other = {alice: views[bob].unit_id, bob: views[alice].unit_id}
    assert other[alice] != other[bob]
    both_there = threading.Barrier(2, timeout=_PATIENCE)
    stopped: set[int] = set()  # threads that passed the barrier (once each)
    lock_failures: list[str] = []

    def stop_at_first_skip_locked(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if "SKIP LOCKED" in statement and threading.get_ident() not in stopped:
            stopped.add(threading.get_ident())
            both_there.wait()

    def record_lock_failure(context: Any) -> None:
        sqlstate = getattr(context.original_exception, "sqlstate", None)
        if sqlstate in ("40P01", "55P03"):
            lock_failures.append(sqlstate)

    event.listen(pg_engine, "before_cursor_execute", stop_at_first_skip_locked)
    event.listen(pg_engine, "handle_error", record_lock_failure)
    results: dict[str, Any] = {}

    def submit_and_next(who: int) -> queue.SubmitStep:
        with session_scope(pg_engine) as session:
            return queue.submit_and_next(
                session, views[who].assignment_id, who, preference="A", rationale=RATIONALE
            )

    try:
        threads = [
            _in_thread(lambda w=w: submit_and_next(w), results, str(w)) for w in (alice, bob)
        ]
        for thread in threads:
            thread.join(timeout=_PATIENCE)
            assert not thread.is_alive(), "a submit_and_next did not finish"
    finally:
        event.remove(pg_engine, "before_cursor_execute", stop_at_first_skip_locked)
        event.remove(pg_engine, "handle_error", record_lock_failure)
    steps = {who: results[str(who)] for who in (alice, bob)}
    assert not [s for s in steps.values() if isinstance(s, BaseException)], steps
    assert lock_failures == []  # no wait was cancelled as a deadlock (nor timed out)
    for who, step in steps.items():
        assert step.unit_id == views[who].unit_id
        assert step.next_unit is not None and step.next_unit.unit_id == other[who]
    with Session(pg_engine) as session:
        stored = session.exec(select(Annotation.unit_id, Annotation.annotator_id)).all()
        assert sorted(stored) == sorted((views[who].unit_id, who) for who in (alice, bob))
        _check_counters(session, campaign_id)
