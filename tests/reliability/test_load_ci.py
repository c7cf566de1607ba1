"""Short CI variant of ``bench/load_test.py``: concurrent annotators lose nothing, duplicate
nothing and never exceed the overlap, on SQLite and on PostgreSQL.

Each run is a fixed amount of work (``units_each`` submits per annotator), not a number of
seconds: what a test asserts must not depend on how fast the machine is. The durations passed
are ceilings for a run that never ends, far above what the work takes on a loaded machine.

The full runs (50 annotators in one process; 200 annotators over 4 processes with think time and
without, 2 minutes, 100k units) are ``bench/load_test.py``; their figures are in
docs/RELIABILITY.md.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from sqlalchemy import func, select

from data.storage.engine import make_engine, session_scope, upgrade_database
from schemas.tables import Annotation, Unit

pytestmark = pytest.mark.slow  # each test starts processes (or trains models)

CEILING_S = 600  # bounds a run that would never end; the work ends each run long before
UNITS_EACH = 6


def test_twenty_annotators_racing(load_test: ModuleType, backend_url: str) -> None:
    """Twenty annotators with no think time, a tenth of the units skipped and a tenth of the
    submits sent twice, six acknowledged submits each."""
    report = load_test.run_load(
        backend_url, duration=CEILING_S, annotators=20, units=2000, baseline_seconds=CEILING_S,
        units_each=UNITS_EACH, skip_rate=0.1, double_submit_rate=0.1,
    )  # fmt: skip
    integrity, load = report["integrity"], report["load"]
    assert load["errors"] == {}
    assert load["submits_acknowledged"] == 20 * UNITS_EACH, load
    assert load["double_submits"] > 0 and load["skips"] > 0, "the churn paths were not exercised"
    assert integrity["acknowledged"] == integrity["live_annotations"]
    assert integrity["lost"] == 0
    assert integrity["duplicates"] == 0
    assert integrity["unacknowledged_stored"] == 0
    assert integrity["units_over_overlap"] == 0
    assert integrity["counter_mismatches"] == 0
    assert set(load["latency"]) >= {"next_unit", "save_draft", "submit_and_next"}


def test_queue_drained_to_exactly_overlap(load_test: ModuleType, backend_url: str) -> None:
    """More annotators than a unit needs, racing until the queue is empty: every unit ends with
    exactly K live answers (never K + 1), and every annotator stops because nothing is left."""
    engine = make_engine(backend_url)
    upgrade_database(engine)
    campaign_id, annotators = load_test.seed_campaign(engine, units=60, annotators=12, overlap=3)
    # No skips here: a unit skipped after everyone else was told "nothing left" stays short.
    logs, _ = load_test.run_annotators(
        engine, campaign_id, annotators, duration=CEILING_S, seed=7, skip_rate=0.0
    )
    integrity = load_test.check_integrity(engine, campaign_id, logs)
    with session_scope(engine) as session:
        per_unit = session.execute(
            select(Unit.id, func.count(Annotation.id))
            .outerjoin(Annotation, (Annotation.unit_id == Unit.id) & Annotation.is_live)
            .where(Unit.campaign_id == campaign_id)
            .group_by(Unit.id)
        ).all()
    engine.dispose()
    assert [log.errors for log in logs if log.errors] == []
    assert all(log.finished for log in logs)
    assert {count for _, count in per_unit} == {3}, sorted({c for _, c in per_unit})
    assert integrity.ok and integrity.lost == 0 and integrity.max_annotations_per_unit == 3


def test_annotators_over_two_processes(load_test: ModuleType, backend_url: str) -> None:
    """The annotators split over two OS processes, each with its own engine (as two ``serve``
    processes on one database): the same integrity holds across processes."""
    report = load_test.run_load(
        backend_url, duration=CEILING_S, annotators=10, units=1000, baseline_seconds=CEILING_S,
        processes=2, units_each=UNITS_EACH, skip_rate=0.1, double_submit_rate=0.1,
    )  # fmt: skip
    integrity, load = report["integrity"], report["load"]
    assert report["processes"] == 2 and load["annotators"] == 10
    assert load["errors"] == {}
    assert load["submits_acknowledged"] == 10 * UNITS_EACH, load
    assert load["double_submits"] > 0 and load["skips"] > 0, "the churn paths were not exercised"
    assert integrity["acknowledged"] == integrity["live_annotations"]
    assert integrity["lost"] == 0 and integrity["duplicates"] == 0
    assert integrity["unacknowledged_stored"] == 0
    assert integrity["units_over_overlap"] == 0 and integrity["counter_mismatches"] == 0


def test_think_time_paces_each_annotator(load_test: ModuleType, tmp_path: Path) -> None:
    """With a think time of 0.4-0.6 s per unit an annotator works at least 0.4 s on each unit,
    saves drafts while thinking (two per unit at one per 0.2 s), and the answers all land."""
    engine = make_engine(f"sqlite:///{tmp_path / 'think.db'}")
    upgrade_database(engine)
    campaign_id, annotators = load_test.seed_campaign(engine, units=200, annotators=4, overlap=2)
    think = load_test.ThinkTime(0.4, 0.6, draft_every=0.2)
    logs, wall = load_test.run_annotators(
        engine, campaign_id, annotators, duration=CEILING_S, seed=3, skip_rate=0.0, think=think,
        units_each=2,
    )  # fmt: skip
    integrity = load_test.check_integrity(engine, campaign_id, logs)
    engine.dispose()
    assert [log.errors for log in logs if log.errors] == []
    for log in logs:
        submits = len(log.latencies["submit_and_next"])
        assert submits >= 2, submits  # a double submit sends one more
        assert len(log.latencies["save_draft"]) >= 2 * 2  # 0.4 s / 0.2 s: two per unit
    # Sleeping never ends early: two units of at least 0.4 s each take at least 0.8 s. (A lower
    # bound that a slow machine only makes truer.)
    assert wall >= 2 * 0.4
    assert integrity.ok and integrity.acknowledged == integrity.live_annotations == 4 * 2


def test_routing_churn_cancels_nothing_and_hides_no_unit(
    load_test: ModuleType, pg_url: str
) -> None:
    """PostgreSQL, issue 25 A2: the campaign's routing changed back to back (judge-ranked, then
    least-annotated, in turn) while twelve annotators submit and take the next unit. A routing
    change re-ranks every unit of the campaign in one transaction; it used to lock the units in
    whatever order its update met them while annotators' steps held one unit and waited for the
    next: deadlocks cancelled submits ("nothing was saved"), and leases that met units held by the
    change answered "no unit" with work left. Now no call is cancelled (this also covers the lease
    whose guessed slot made its insert wait on another step), every annotator does all its work,
    and no "no unit" is given (the campaign is far from drained). The annotators start once a
    first change has committed; the churn goes on until they are done, so at least one more
    change runs while they work."""
    engine = make_engine(pg_url)
    upgrade_database(engine)
    campaign_id, annotators = load_test.seed_campaign(engine, units=2000, annotators=12, overlap=3)
    load_test.judge_campaign(engine, campaign_id)
    with load_test.routing_churn(engine, campaign_id, every=0.0) as churn:
        assert churn.changed.wait(timeout=CEILING_S), churn.errors
        logs, _ = load_test.run_annotators(
            engine, campaign_id, annotators, duration=CEILING_S, seed=5, skip_rate=0.1,
            units_each=2 * UNITS_EACH, double_submit_rate=0.1,
        )  # fmt: skip
    integrity = load_test.check_integrity(engine, campaign_id, logs)
    engine.dispose()
    assert churn.errors == {} and churn.changes >= 2
    assert [log.cancelled for log in logs] == [0] * 12, [dict(log.errors) for log in logs]
    assert [log.false_no_unit for log in logs] == [0] * 12
    assert [dict(log.errors) for log in logs if log.errors] == []
    assert [len(log.acknowledged) for log in logs] == [2 * UNITS_EACH] * 12
    assert integrity.ok and integrity.acknowledged == integrity.live_annotations
