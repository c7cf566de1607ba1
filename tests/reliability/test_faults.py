"""Faults under a running app: the server SIGKILLed mid-stream, PostgreSQL restarted under it,
SQLite locked by another program. Nothing the user saw acknowledged may be lost, and a failure
must reach the user as a plain, typed error, never a raw driver exception."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import select
from streamlit.testing.v1 import AppTest

import data.storage.engine
from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR
from data import queue
from data.services.users import UserRecord, to_record
from data.storage.engine import make_engine, session_scope, upgrade_database
from schemas.tables import Annotation, Draft, User
from tests.pg_cluster import PostgresCluster
from tests.skips import missing
from tests.system_binaries import postgres_bindir, postgres_missing

pytestmark = pytest.mark.slow  # each test starts processes (or trains models)

WORKER = Path(__file__).resolve().with_name("submit_worker.py")
ACKS_BEFORE_KILL = 60


def _read_until_killed(process: subprocess.Popen[str], acks_wanted: int) -> list[str]:
    """Collect the worker's lines; SIGKILL it once ``acks_wanted`` ACK lines and a few saved
    drafts of the typist were seen."""
    lines: list[str] = []
    killer = threading.Timer(60, lambda: os.kill(process.pid, signal.SIGKILL))
    killer.start()
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        acks = sum(1 for seen in lines if seen.startswith("ACK "))
        if acks >= acks_wanted and sum(1 for seen in lines if seen.startswith("TYPED ")) >= 3:
            os.kill(process.pid, signal.SIGKILL)
            break
    lines += [line.rstrip("\n") for line in process.stdout if line.endswith("\n")]
    killer.cancel()
    process.wait(timeout=30)
    return lines


def test_sigkill_mid_stream_loses_no_acknowledged_submit_and_no_draft(
    load_test: ModuleType, backend_url: str
) -> None:
    engine = make_engine(backend_url)
    upgrade_database(engine)
    campaign_id, annotators = load_test.seed_campaign(engine, units=400, annotators=5, overlap=2)
    engine.dispose()
    process = subprocess.Popen(
        [sys.executable, str(WORKER), backend_url, str(campaign_id),
         ",".join(map(str, annotators[:4])), str(annotators[4])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines = _read_until_killed(process, ACKS_BEFORE_KILL)
    assert process.returncode == -signal.SIGKILL, process.stderr.read()[-2000:]  # type: ignore[union-attr]
    records = [(line.split(" ", 1)[0], json.loads(line.split(" ", 1)[1])) for line in lines]
    acks = [fields for kind, fields in records if kind == "ACK"]
    typed = [fields for kind, fields in records if kind == "TYPED"]
    assert len(acks) >= ACKS_BEFORE_KILL and typed

    engine = make_engine(backend_url)  # "restart": a fresh process state
    with session_scope(engine) as session:
        if engine.dialect.name == "sqlite":
            assert session.execute(text("PRAGMA integrity_check")).scalar_one() == "ok"
        live = {
            (a.unit_id, a.annotator_id): (a.score, a.rationale)
            for a in session.exec(select(Annotation).where(Annotation.is_live))
        }
        lost = [
            a for a in acks if live.get((a["unit"], a["annotator"])) != (a["score"], a["rationale"])
        ]
        assert lost == [], f"{len(lost)} acknowledged submits are missing after SIGKILL: {lost[:3]}"
        last = typed[-1]
        draft = session.exec(
            select(Draft).where(
                Draft.unit_id == last["unit"], Draft.annotator_id == last["annotator"]
            )
        ).one()
        assert len(draft.rationale.split()) >= last["words"], "a saved draft went back in time"
        assert draft.rationale.startswith(last["rationale"])
        view = queue.next_unit(session, campaign_id, last["annotator"])
        assert view is not None and view.unit_id == last["unit"]
        assert view.draft is not None and view.draft.rationale == draft.rationale
        # Submits whose process died between commit and print are stored, never half-stored.
        drafts_left = {(d.unit_id, d.annotator_id) for d in session.exec(select(Draft))}
        assert not drafts_left & set(live), "a submitted unit still has a draft (half a submit)"
    integrity = load_test.check_integrity(engine, campaign_id, [])
    engine.dispose()
    assert integrity.duplicates == 0 and integrity.units_over_overlap == 0
    assert integrity.counter_mismatches == 0, "unit counters disagree with the assignment rows"


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[PostgresCluster]:
    """A PostgreSQL cluster of this module's own, so it can be stopped and restarted."""
    if postgres_bindir() is None:
        missing(postgres_missing())
    cluster = PostgresCluster()
    cluster.start()
    yield cluster
    cluster.remove()


@pytest.fixture
def own_pg_url(own_postgres: Any) -> str:
    """A fresh database on :func:`own_postgres` (which is running when the test starts)."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = own_postgres.url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return own_postgres.url.rsplit("/", 1)[0] + f"/{name}"


@pytest.mark.postgres
@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_postgres_restart_under_the_app_next_call_works(
    load_test: ModuleType, own_postgres: Any, own_pg_url: str, mode: str
) -> None:
    """Restart (``fast``) or crash-restart (``immediate``) the server between two calls of the
    same engine: the next call works (pool_pre_ping) and the draft saved before is there."""
    engine = make_engine(own_pg_url)
    upgrade_database(engine)
    campaign_id, (annotator,) = load_test.seed_campaign(engine, units=20, annotators=1, overlap=1)
    with session_scope(engine) as session:
        view = queue.next_unit(session, campaign_id, annotator)
        assert view is not None
        queue.save_draft(session, view.assignment_id, annotator, score=4.0, rationale="kept")
    own_postgres.stop(mode)
    own_postgres.start()
    with session_scope(engine) as session:
        again = queue.next_unit(session, campaign_id, annotator)
    engine.dispose()
    assert again is not None and again.assignment_id == view.assignment_id
    assert again.draft is not None and again.draft.rationale == "kept"


def _assert_plain_typed_error(error: BaseException, *words: str) -> None:
    """A CritiqueLab exception with one plain line, not a driver exception with SQL in it."""
    message = str(error)
    assert not isinstance(error, SQLAlchemyError | sqlite3.Error), (
        f"a raw driver exception reached the caller: {type(error).__module__}."
        f"{type(error).__name__}: {message[:300]!r}. Expected a typed CritiqueLab error "
        "(e.g. data.storage.engine.DatabaseBusy / DatabaseUnavailable) with a plain message."
    )
    assert type(error).__module__.split(".")[0] in ("data", "schemas"), type(error)
    assert "\n" not in message and "[SQL:" not in message and "sqlalche.me" not in message
    assert any(word in message.lower() for word in words), message


@pytest.mark.postgres
def test_postgres_down_raises_a_plain_typed_error(
    load_test: ModuleType, own_postgres: Any, own_pg_url: str
) -> None:
    engine = make_engine(own_pg_url)
    upgrade_database(engine)
    campaign_id, (annotator,) = load_test.seed_campaign(engine, units=5, annotators=1, overlap=1)
    own_postgres.stop("fast")
    # A hang instead of a failure is caught by the test timeout (pyproject), not by a clock here.
    with pytest.raises(Exception) as caught, session_scope(engine) as session:
        queue.next_unit(session, campaign_id, annotator)
    own_postgres.start()
    engine.dispose()
    _assert_plain_typed_error(caught.value, "database", "unavailable", "connect")


def test_locked_sqlite_waits_then_fails_plainly(
    load_test: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another program holds an exclusive lock: a submit waits the busy timeout, then fails with a
    plain typed error; the draft is kept; once the lock is gone the same submit works."""
    monkeypatch.setattr(data.storage.engine, "SQLITE_BUSY_TIMEOUT_MS", 1500)
    db_file = tmp_path / "critiquelab.db"
    engine = make_engine(f"sqlite:///{db_file}")
    upgrade_database(engine)
    campaign_id, (annotator,) = load_test.seed_campaign(engine, units=5, annotators=1, overlap=1)
    with session_scope(engine) as session:
        view = queue.next_unit(session, campaign_id, annotator)
        assert view is not None
        queue.save_draft(session, view.assignment_id, annotator, score=6.0, rationale="typed text")
    locker = sqlite3.connect(db_file, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    started = time.monotonic()
    try:
        with pytest.raises(Exception) as caught, session_scope(engine) as session:
            queue.submit(session, view.assignment_id, annotator, score=6.0,
                         rationale="the final answer, long enough")  # fmt: skip
        waited = time.monotonic() - started
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert waited >= 1.4, f"gave up after {waited:.2f} s, before the busy timeout"
    with session_scope(engine) as session:
        again = queue.next_unit(session, campaign_id, annotator)
        assert again is not None and again.draft is not None
        assert again.draft.rationale == "typed text"
        stored = queue.submit(session, again.assignment_id, annotator, score=6.0,
                              rationale="the final answer, long enough")  # fmt: skip
        assert stored.id is not None
    engine.dispose()
    _assert_plain_typed_error(caught.value, "busy", "locked")


def _app_as(annotator: UserRecord) -> AppTest:
    """A fresh run of the app through its router (as the server runs every page), logged in as
    ``annotator``: the router turns a database outage during any page into one plain message.
    (A fresh AppTest each time: AppTest reruns a page script without the router.)"""
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=90)
    at.session_state[USER_KEY] = annotator
    return at


def _campaign_listed(at: AppTest) -> bool:
    return len(at.table) == 1 and "load" in str(at.table[0].value)


def _shown_text(at: AppTest) -> str:
    return " ".join(
        str(e.value) for kind in ("error", "warning", "info") for e in getattr(at, kind)
    )


@pytest.mark.postgres
def test_annotate_page_survives_a_postgres_outage(
    load_test: ModuleType, own_postgres: Any, own_pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """UI level: the page shows a plain message while the server is down (no traceback), and
    the next run after it is back shows the campaigns again."""
    monkeypatch.setenv("CRITIQUELAB_DB", own_pg_url)
    engine = make_engine(own_pg_url)
    upgrade_database(engine)
    _, (annotator_id,) = load_test.seed_campaign(engine, units=5, annotators=1, overlap=1)
    with session_scope(engine) as session:
        annotator = to_record(session.get(User, annotator_id))
    engine.dispose()
    at = _app_as(annotator).run()
    assert not at.exception and _campaign_listed(at)
    own_postgres.stop("fast")
    try:
        at = _app_as(annotator).run()
        outage_exceptions = [e.value for e in at.exception]
        outage_text = _shown_text(at)
    finally:
        own_postgres.start()
    at = _app_as(annotator).run()
    assert not at.exception and _campaign_listed(at), "not recovered"
    assert outage_exceptions == [], f"a traceback reached the page: {outage_exceptions[:1]}"
    assert "database" in outage_text.lower(), (
        f"no plain message about the database: {outage_text!r}"
    )


def test_annotate_page_reports_a_locked_sqlite_database_plainly(
    load_test: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data.storage.engine, "SQLITE_BUSY_TIMEOUT_MS", 1000)
    db_file = tmp_path / "locked-ui.db"
    monkeypatch.setenv("CRITIQUELAB_DB", f"sqlite:///{db_file}")
    engine = make_engine(f"sqlite:///{db_file}")
    upgrade_database(engine)
    _, (annotator_id,) = load_test.seed_campaign(engine, units=5, annotators=1, overlap=1)
    with session_scope(engine) as session:
        annotator = to_record(session.get(User, annotator_id))
    engine.dispose()
    at = _app_as(annotator).run()
    assert not at.exception and _campaign_listed(at)
    locker = sqlite3.connect(db_file, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        at = _app_as(annotator).run()
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert [e.value for e in at.exception] == [], "a traceback reached the page"
    assert any(word in _shown_text(at).lower() for word in ("busy", "locked")), _shown_text(at)
