"""The *importing* state (data.storage.campaign_imports): every reader of a campaign treats one that
an ``annotations import`` is still writing as absent, and a campaign left half-written by an
import process killed with SIGKILL is rolled back by the next command, on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from pairwise_import_items import pairwise_items, pairwise_labels, write_jsonl
from sqlalchemy import func
from sqlmodel import Session, select

from data import queue
from data.io.exporters.records import annotation_records
from data.io.importers import import_jsonl
from data.io.importers.annotations import import_annotations
from data.readmodels.campaign_input import read_calibration_input
from data.readmodels.frames import campaign_judgement_frame
from data.services.campaigns import CampaignSpec, create_campaign
from data.services.home import campaigns_for_user
from data.services.users import UserRecord, create_user
from data.storage.campaign_imports import STALE_AFTER, begin_import, is_abandoned
from data.storage.campaign_lookup import CampaignNotFound, get_campaign, list_campaigns
from data.storage.engine import (
    make_engine,
    roll_back_abandoned_imports,
    session_scope,
    upgrade_database,
)
from schemas.core import stored_id
from schemas.tables import (
    Annotation,
    Assignment,
    AuditEvent,
    Campaign,
    CampaignImport,
    Unit,
    User,
    utcnow,
)

REPO = Path(__file__).resolve().parents[2]
ITEMS = pairwise_items(6)
LABELS = pairwise_labels(6)
GUARD_SECONDS = 120  # only so a broken child cannot hang the run; no step relies on it

# The import as its own process, paused between two of its transactions (after the campaign
# row and one unit are committed) until the test kills it: it says "paused" on stdout and
# waits on stdin, which the test never writes to.
CHILD = """
import sys
from contextlib import contextmanager
from pathlib import Path
from data.io.importers import annotation_rows
from data.io.importers.annotations import import_annotations
from data.storage.engine import make_engine, session_scope

annotation_rows.ROWS_PER_TRANSACTION = 3
real_outside_turn = annotation_rows.outside_turn
gaps = {"n": 0}

@contextmanager
def outside_turn(session):
    with real_outside_turn(session):
        gaps["n"] += 1
        if gaps["n"] == 3:
            print("paused", flush=True)
            sys.stdin.readline()
        yield

annotation_rows.outside_turn = outside_turn
engine = make_engine(sys.argv[1])
with session_scope(engine) as session:
    import_annotations(session, Path(sys.argv[2]), campaign="ext")
print("finished", flush=True)
"""


def _counts(engine) -> dict[str, int]:
    with Session(engine) as session:
        return {
            table.__name__: session.exec(select(func.count()).select_from(table)).one()
            for table in (Campaign, CampaignImport, Unit, Assignment, Annotation, User)
        }


@pytest.fixture
def mid_import(any_engine, tmp_path) -> tuple[int, int]:
    """An active campaign ``live`` with an annotator, and the same campaign put in the importing
    state by a (live) import of this process: (campaign id, annotator id)."""
    with session_scope(any_engine) as session:
        import_jsonl(session, write_jsonl(tmp_path / "data.jsonl", ITEMS), dataset="d")
        annotator = create_user(session, "alice", "a long password 123", "annotator")
        campaign = create_campaign(
            session, CampaignSpec(name="live", dataset="d", protocol="pairwise", overlap=1)
        )
        view = queue.next_unit(session, stored_id(campaign), stored_id(annotator))
        assert view is not None  # the reader works before the campaign is importing
        begin_import(session, stored_id(campaign), [])
        return stored_id(campaign), stored_id(annotator)


def test_the_queue_serves_no_unit_of_a_campaign_being_imported(any_engine, mid_import):
    campaign_id, annotator_id = mid_import
    with session_scope(any_engine) as session:
        with pytest.raises(CampaignNotFound, match="still being imported"):
            queue.next_unit(session, campaign_id, annotator_id)
        assert queue.open_campaigns(session) == []
        assert queue.my_campaigns(session, annotator_id) == []


def test_campaign_listings_leave_out_a_campaign_being_imported(any_engine, mid_import):
    _campaign_id, annotator_id = mid_import
    with session_scope(any_engine) as session:
        assert list_campaigns(session) == []
        admin = UserRecord(id=annotator_id, name="root", role="admin", active=True, synthetic=False)
        assert campaigns_for_user(session, admin) == []
        with pytest.raises(CampaignNotFound, match="still being imported"):
            get_campaign(session, "live")


def test_calibration_and_export_readers_refuse_a_campaign_being_imported(any_engine, mid_import):
    campaign_id, _annotator_id = mid_import
    with session_scope(any_engine) as session:
        with pytest.raises(CampaignNotFound, match="still being imported"):
            campaign_judgement_frame(session, campaign_id)
        with pytest.raises(CampaignNotFound, match="still being imported"):
            read_calibration_input(session, "live")
        with pytest.raises(CampaignNotFound, match="still being imported"):
            annotation_records(session, "live")


def test_a_silent_import_on_another_host_is_abandoned_only_when_stale() -> None:
    now = utcnow()
    elsewhere = CampaignImport(
        campaign_id=1, host=f"not-{socket.gethostname()}", pid=os.getpid(), heartbeat_at=now
    )
    assert not is_abandoned(elsewhere, now + STALE_AFTER)
    assert is_abandoned(elsewhere, now + STALE_AFTER + timedelta(seconds=1))
    here = CampaignImport(
        campaign_id=1, host=socket.gethostname(), pid=os.getpid(), heartbeat_at=now
    )
    assert not is_abandoned(here, now)  # this process is alive


def _start_paused_import(engine, labels: Path) -> subprocess.Popen[str]:
    """The child import, once it has committed its campaign row and first unit and paused."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            engine.url.render_as_string(hide_password=False),
            str(labels),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()  # the state we wait on: the child says it is between commits
    if line.strip() != "paused":
        child.kill()
        _out, err = child.communicate(timeout=GUARD_SECONDS)
        pytest.fail(f"the import did not pause half-way: {line!r} {err[-2000:]}")
    return child


def _kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=GUARD_SECONDS)  # reaped: its pid is gone from this host
    assert child.returncode == -signal.SIGKILL


@pytest.mark.slow
def test_an_import_killed_half_way_is_rolled_back_by_the_next_command(any_engine, tmp_path):
    engine = any_engine
    with session_scope(engine) as session:
        import_jsonl(session, write_jsonl(tmp_path / "data.jsonl", ITEMS), dataset="d")
    before = _counts(engine)
    child = _start_paused_import(engine, write_jsonl(tmp_path / "h.jsonl", LABELS))
    half = _counts(engine)
    assert half["CampaignImport"] == 1 and half["Campaign"] == before["Campaign"] + 1
    assert 0 < half["Annotation"] - before["Annotation"] < len(LABELS)  # really half-way
    _kill(child)
    with Session(engine) as session:  # still there, and hidden, until a command runs
        assert _counts(engine) == half
        assert list_campaigns(session) == []

    upgrade_database(make_engine(engine.url.render_as_string(hide_password=False)))

    assert _counts(engine) == before  # the campaign, its rows and its 3 new accounts are gone
    with Session(engine) as session:
        event = session.exec(
            select(AuditEvent).where(AuditEvent.action == "campaign.import_rolled_back")
        ).one()
        assert event.detail["campaign"] == "ext"
        assert event.detail["accounts"] == 3
        assert event.detail["pid"] == child.pid
    with session_scope(engine) as session:  # and the same labels then import whole
        summary = import_annotations(session, tmp_path / "h.jsonl", campaign="ext")
    assert (summary.units, summary.annotations, summary.accounts_added) == (6, 18, 3)


@pytest.mark.slow
def test_importing_again_over_a_killed_import_replaces_it(any_engine, tmp_path):
    engine = any_engine
    with session_scope(engine) as session:
        import_jsonl(session, write_jsonl(tmp_path / "data.jsonl", ITEMS), dataset="d")
    labels = write_jsonl(tmp_path / "h.jsonl", LABELS)
    _kill(_start_paused_import(engine, labels))
    with session_scope(engine) as session:  # no command ran in between: the import rolls back
        summary = import_annotations(session, labels, campaign="ext")
    assert summary.created and summary.annotations == 18
    assert _counts(engine)["CampaignImport"] == 0
    assert roll_back_abandoned_imports(engine) == []
    with Session(engine) as session:
        assert [c.name for c in list_campaigns(session)] == ["ext"]
        assert len(annotation_records(session, "ext")) == 18


def test_the_checks_of_an_import_open_no_transaction_on_the_callers_session(
    engine, tmp_path, monkeypatch
):
    """On SQLite a transaction of the caller's session holds the write lock: the look-up for a
    killed import of the same name must not begin one before the checks (which take minutes on a
    large file and would stall every annotator meanwhile)."""
    from data.io.importers import annotations

    with session_scope(engine) as session:
        import_jsonl(session, write_jsonl(tmp_path / "data.jsonl", ITEMS), dataset="d")
    real_resolve_units = annotations.resolve_units
    seen = {}

    def resolve_units(reader, *args):
        seen["caller in a transaction"] = caller.in_transaction()
        return real_resolve_units(reader, *args)

    monkeypatch.setattr(annotations, "resolve_units", resolve_units)
    with session_scope(engine) as caller:
        import_annotations(caller, write_jsonl(tmp_path / "h.jsonl", LABELS), campaign="ext")
    assert seen == {"caller in a transaction": False}
