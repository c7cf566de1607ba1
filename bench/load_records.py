"""What the simulated annotators of ``bench/load_test.py`` did, and what the database holds
afterwards: their logs (also carried between processes as JSON), the integrity check held against
the acknowledgements, and the latency summary.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlmodel import col

from data.storage.engine import session_scope
from schemas.tables import Annotation, Assignment, Campaign, Unit


@dataclass
class Acknowledgement:
    """A submit that returned without error: what the annotator was told is stored."""

    unit_id: int
    annotator_id: int
    score: float
    rationale: str


@dataclass
class WorkerLog:
    """What one simulated annotator did, and how long each call took (seconds)."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    acknowledged: list[Acknowledgement] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)
    skipped: int = 0
    double_submits: int = 0
    cancelled: int = 0
    """calls the database cancelled (a deadlock, a lock timeout): "nothing was saved" shown"""
    false_no_unit: int = 0
    """"no unit" answers while a unit this annotator never had still had a free slot"""
    finished: bool = False


@dataclass
class Integrity:
    """The database after the run, held against the acknowledgements."""

    acknowledged: int
    live_annotations: int
    lost: int
    """acknowledged answers with no live annotation of that score and rationale"""
    duplicates: int
    """(unit, annotator) pairs with more than one live annotation, or a second assignment"""
    unacknowledged_stored: int
    """live annotations nobody was told about (a commit whose acknowledgement failed)"""
    overlap: int
    max_live_assignments_per_unit: int
    max_annotations_per_unit: int
    units_over_overlap: int
    counter_mismatches: int
    """units whose slots_taken / n_submitted differ from their assignment rows"""

    @property
    def ok(self) -> bool:
        return (
            self.lost == 0
            and self.duplicates == 0
            and self.units_over_overlap == 0
            and self.counter_mismatches == 0
        )


def log_to_json(log: WorkerLog) -> dict[str, Any]:
    """``log`` as plain JSON (a worker process hands its logs to the parent this way)."""
    return {
        "latencies": dict(log.latencies),
        "acknowledged": [asdict(ack) for ack in log.acknowledged],
        "errors": dict(log.errors),
        "skipped": log.skipped,
        "double_submits": log.double_submits,
        "cancelled": log.cancelled,
        "false_no_unit": log.false_no_unit,
        "finished": log.finished,
    }


def log_from_json(data: dict[str, Any]) -> WorkerLog:
    """The inverse of :func:`log_to_json`."""
    log = WorkerLog(
        acknowledged=[Acknowledgement(**ack) for ack in data["acknowledged"]],
        errors=Counter(data["errors"]),
        skipped=data["skipped"],
        double_submits=data["double_submits"],
        cancelled=data["cancelled"],
        false_no_unit=data["false_no_unit"],
        finished=data["finished"],
    )
    log.latencies.update(data["latencies"])
    return log


def check_integrity(engine: Engine, campaign_id: int, logs: list[WorkerLog]) -> Integrity:
    acknowledged = [ack for log in logs for ack in log.acknowledged]
    with session_scope(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        assert campaign is not None  # the campaign the run seeded
        overlap = campaign.overlap
        live = session.execute(
            select(col(Annotation.unit_id), col(Annotation.annotator_id), col(Annotation.score),
                   col(Annotation.rationale))
            .where(col(Annotation.campaign_id) == campaign_id, col(Annotation.is_live))
        ).all()  # fmt: skip
        assignments = session.execute(
            select(
                col(Assignment.unit_id), col(Assignment.annotator_id), col(Assignment.status)
            ).where(col(Assignment.campaign_id) == campaign_id)
        ).all()
        counters = session.execute(
            select(col(Unit.id), col(Unit.slots_taken), col(Unit.n_submitted)).where(
                col(Unit.campaign_id) == campaign_id,
                (col(Unit.slots_taken) > 0) | (col(Unit.n_submitted) > 0),
            )
        ).all()
    stored = Counter((row.unit_id, row.annotator_id) for row in live)
    by_key = {(row.unit_id, row.annotator_id): (row.score, row.rationale) for row in live}
    acked_keys = {(a.unit_id, a.annotator_id) for a in acknowledged}
    lost = sum(
        1 for a in acknowledged if by_key.get((a.unit_id, a.annotator_id)) != (a.score, a.rationale)
    )
    assignment_pairs = Counter((row.unit_id, row.annotator_id) for row in assignments)
    live_slots: Counter = Counter()
    submitted: Counter = Counter()
    for row in assignments:
        if row.status in ("leased", "submitted"):
            live_slots[row.unit_id] += 1
        if row.status == "submitted":
            submitted[row.unit_id] += 1
    per_unit = Counter(unit for unit, _ in stored.elements())
    mismatches = sum(
        1 for unit_id, slots, n_submitted in counters
        if slots != live_slots[unit_id] or n_submitted != submitted[unit_id]
    ) + sum(1 for unit_id in live_slots if unit_id not in {c[0] for c in counters})  # fmt: skip
    return Integrity(
        acknowledged=len(acknowledged),
        live_annotations=len(live),
        lost=lost,
        duplicates=sum(n - 1 for n in stored.values() if n > 1)
        + sum(n - 1 for n in assignment_pairs.values() if n > 1)
        + (len(acknowledged) - len(acked_keys)),
        unacknowledged_stored=len(set(stored) - acked_keys),
        overlap=overlap,
        max_live_assignments_per_unit=max(live_slots.values(), default=0),
        max_annotations_per_unit=max(per_unit.values(), default=0),
        units_over_overlap=sum(1 for n in live_slots.values() if n > overlap)
        + sum(1 for n in per_unit.values() if n > overlap),
        counter_mismatches=mismatches,
    )


def percentiles(values: list[float]) -> dict[str, float]:
    """Count, p50 / p95 / p99 and max of ``values`` in milliseconds (inclusive quantiles)."""
    if len(values) < 2:
        return {"count": len(values)}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {
        "count": len(values),
        "p50_ms": round(cuts[49] * 1000, 2),
        "p95_ms": round(cuts[94] * 1000, 2),
        "p99_ms": round(cuts[98] * 1000, 2),
        "max_ms": round(max(values) * 1000, 2),
    }


def summarize(logs: list[WorkerLog], wall: float) -> dict[str, object]:
    merged: dict[str, list[float]] = defaultdict(list)
    errors: Counter = Counter()
    for log in logs:
        for name, values in log.latencies.items():
            merged[name].extend(values)
        errors.update(log.errors)
    submits = sum(len(log.acknowledged) for log in logs)
    return {
        "annotators": len(logs),
        "seconds": round(wall, 2),
        "submits_acknowledged": submits,
        "submits_per_second": round(submits / wall, 2),
        "transactions_per_second": round(sum(len(v) for v in merged.values()) / wall, 2),
        "skips": sum(log.skipped for log in logs),
        "double_submits": sum(log.double_submits for log in logs),
        "cancelled": sum(log.cancelled for log in logs),
        "false_no_unit": sum(log.false_no_unit for log in logs),
        "errors": dict(errors),
        "latency": {name: percentiles(values) for name, values in sorted(merged.items())},
    }
