"""Load test of the annotation queue: N simulated annotators on one big campaign.

Each annotator is a thread (as in ``streamlit run``, one server process serves every browser
session from its own thread) that calls the same service functions as the annotation page,
``data.queue.next_unit`` / ``save_draft`` / ``submit_and_next`` / ``skip``, each in its own
transaction, with no think time. A few submits are sent twice (a double click) and a few units
are skipped, so the slot bookkeeping is exercised under churn.

After the run the database is checked against what the annotators saw acknowledged: no answer
lost, no duplicate, overlap K never exceeded, unit counters equal to the rows they count. It
prints one JSON object: the integrity figures, throughput, and p50 / p95 / p99 latency per
operation, for the full load and for a single-annotator baseline measured first on the same
database (the comparison the figures are read against).

    python bench/load_test.py --backend sqlite --duration 120 --annotators 50 --units 100000
    python bench/load_test.py --backend postgresql --duration 120 --annotators 50 --units 100000
    python bench/load_test.py --url postgresql+psycopg://user@host/db ...   # an existing server

With ``--backend postgresql`` and no ``--url`` a throw-away PostgreSQL 15 cluster is started on
a free 127.0.0.1 port (as ``tests/conftest.py`` does) and removed afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent))
from system_binaries import postgres_bindir, postgres_missing  # noqa: E402

from data import queue
from data.campaigns import CampaignSpec, create_campaign
from data.storage import make_engine, session_scope, upgrade_database
from schemas.tables import Annotation, Assignment, Campaign, Dataset, Item, Response, Unit, User

RESPONSES_PER_ITEM = 4
T = TypeVar("T")
RATIONALE = "Simulated annotator {annotator}: the count matches the picture, unit {unit}."


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


def seed_campaign(
    engine: Engine, units: int, annotators: int, overlap: int
) -> tuple[int, list[int]]:
    """A dataset with ``units`` responses (4 per item), a pointwise campaign over all of them,
    and ``annotators`` annotator accounts; return the campaign id and the annotator ids."""
    items = -(-units // RESPONSES_PER_ITEM)
    with session_scope(engine) as session:
        dataset = Dataset(name="load", benchmark="alignmmbench", synthetic=True)
        session.add(dataset)
        session.flush()
        connection = session.connection()
        for start in range(0, items, 5000):
            stop = min(start + 5000, items)
            connection.execute(
                insert(Item),
                [{"dataset_id": dataset.id, "item_id": f"load-{n}", "benchmark": "alignmmbench",
                  "task": "Counting", "category": "Perception & Understanding",
                  "group": f"{n:08d}", "history": [], "question": f"How many apples? ({n})",
                  "reference": "Three.", "meta": {}, "content_sha256": f"{n:064x}"}
                 for n in range(start, stop)],
            )  # fmt: skip
        item_pks = list(
            session.exec(select(Item.id).where(Item.dataset_id == dataset.id).order_by(Item.id))
        )
        rows = [
            {"response_id": f"load-{n}/m{m}", "item_pk": item_pks[n][0], "model": f"m{m}",
             "content": f"There are {m + 1} apples.", "meta": {}, "content_sha256": f"{n}:{m}"}
            for n in range(items) for m in range(RESPONSES_PER_ITEM)
        ][:units]  # fmt: skip
        for start in range(0, len(rows), 5000):
            connection.execute(insert(Response), rows[start : start + 5000])
        session.add_all(
            User(name=f"annotator{a:03d}", password_hash="unused", role="annotator", synthetic=True)
            for a in range(annotators)
        )
        session.flush()
        campaign = create_campaign(
            session,
            CampaignSpec(name="load", dataset="load", protocol="alignmmbench", overlap=overlap),
        )
        annotator_ids = list(
            session.exec(select(User.id).where(User.name.like("annotator%")).order_by(User.id))
        )
    return campaign.id, [row[0] for row in annotator_ids]


def _timed(log: WorkerLog, engine: Engine, operation: Callable[..., T], *args: Any, **kw: Any) -> T:
    """Run ``operation(session, *args, **kw)`` in its own transaction and record its latency."""
    start = time.perf_counter()
    with session_scope(engine) as session:
        result = operation(session, *args, **kw)
    log.latencies[operation.__name__].append(time.perf_counter() - start)
    return result


def annotate(
    engine: Engine,
    campaign_id: int,
    annotator_id: int,
    stop_at: float,
    log: WorkerLog,
    seed: int,
    skip_rate: float = 0.03,
    double_submit_rate: float = 0.02,
) -> None:
    """One simulated annotator: draft, then submit and get the next unit in one transaction (or
    skip and ask for the next), as the annotation page does, until ``stop_at``."""
    rng = random.Random(seed)
    view: queue.UnitView | None = None
    while time.monotonic() < stop_at:
        try:
            if view is None:
                view = _timed(log, engine, queue.next_unit, campaign_id, annotator_id)
                if view is None:
                    break
            lease = view.assignment_id
            score = float(rng.randint(1, 10))
            rationale = RATIONALE.format(annotator=annotator_id, unit=view.unit_id)
            _timed(log, engine, queue.save_draft, lease, annotator_id, score=score,
                   rationale=rationale[:20], active_seconds=3.0)  # fmt: skip
            if rng.random() < skip_rate:
                _timed(log, engine, queue.skip, lease, annotator_id, "load test skip")
                log.skipped += 1
                view = None
                continue
            submits = 2 if rng.random() < double_submit_rate else 1
            for _ in range(submits):
                step = _timed(log, engine, queue.submit_and_next, lease, annotator_id,
                              score=score, rationale=rationale, seconds=12.5)  # fmt: skip
            log.double_submits += submits - 1
            log.acknowledged.append(Acknowledgement(view.unit_id, annotator_id, score, rationale))
            view = step.next_unit
            if view is None:
                break
        except Exception as error:  # noqa: BLE001 - counted and reported, the run goes on
            log.errors[f"{type(error).__name__}: {str(error)[:120]}"] += 1
            view = None
    log.finished = True


def check_integrity(engine: Engine, campaign_id: int, logs: list[WorkerLog]) -> Integrity:
    acknowledged = [ack for log in logs for ack in log.acknowledged]
    with session_scope(engine) as session:
        overlap = session.get(Campaign, campaign_id).overlap
        live = session.execute(
            select(Annotation.unit_id, Annotation.annotator_id, Annotation.score,
                   Annotation.rationale)
            .where(Annotation.campaign_id == campaign_id, Annotation.is_live)
        ).all()  # fmt: skip
        assignments = session.execute(
            select(Assignment.unit_id, Assignment.annotator_id, Assignment.status).where(
                Assignment.campaign_id == campaign_id
            )
        ).all()
        counters = session.execute(
            select(Unit.id, Unit.slots_taken, Unit.n_submitted).where(
                Unit.campaign_id == campaign_id, (Unit.slots_taken > 0) | (Unit.n_submitted > 0)
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


def run_annotators(
    engine: Engine,
    campaign_id: int,
    annotator_ids: list[int],
    duration: float,
    seed: int,
    skip_rate: float = 0.03,
) -> tuple[list[WorkerLog], float]:
    """One thread per annotator for ``duration`` seconds; return their logs and the wall time."""
    logs = [WorkerLog() for _ in annotator_ids]
    start = time.monotonic()
    threads = [
        threading.Thread(
            target=annotate,
            args=(
                engine,
                campaign_id,
                annotator_id,
                start + duration,
                log,
                seed * 1000 + n,
                skip_rate,
            ),
            name=f"annotator-{annotator_id}",
        )
        for n, (annotator_id, log) in enumerate(zip(annotator_ids, logs, strict=True))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return logs, time.monotonic() - start


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
        "errors": dict(errors),
        "latency": {name: percentiles(values) for name, values in sorted(merged.items())},
    }


def run_load(
    url: str,
    *,
    duration: float,
    annotators: int,
    units: int,
    overlap: int = 3,
    baseline_seconds: float = 10.0,
    seed: int = 0,
) -> dict[str, object]:
    """Seed a fresh database at ``url``, run the baseline and the load, check integrity."""
    engine = make_engine(url)
    try:
        upgrade_database(engine)
        started = time.monotonic()
        campaign_id, annotator_ids = seed_campaign(engine, units, annotators + 1, overlap)
        seed_seconds = time.monotonic() - started
        baseline_logs, baseline_wall = run_annotators(
            engine, campaign_id, annotator_ids[-1:], baseline_seconds, seed + 1
        )
        logs, wall = run_annotators(engine, campaign_id, annotator_ids[:-1], duration, seed)
        integrity = check_integrity(engine, campaign_id, [*baseline_logs, *logs])
        with session_scope(engine) as session:
            total_units = session.execute(
                select(func.count()).where(Unit.campaign_id == campaign_id)
            ).scalar_one()
    finally:
        engine.dispose()
    return {
        "backend": engine.dialect.name,
        "units": total_units,
        "overlap": overlap,
        "seed_seconds": round(seed_seconds, 2),
        "integrity": asdict(integrity) | {"ok": integrity.ok},
        "load": summarize(logs, wall),
        "baseline_single_annotator": summarize(baseline_logs, baseline_wall),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres(command: str) -> None:
    argv = ["su", "postgres", "-c", command] if os.geteuid() == 0 else ["sh", "-c", command]
    subprocess.run(argv, check=True, capture_output=True)


class PostgresCluster:
    """A PostgreSQL cluster of its own in a temp folder, on a free 127.0.0.1 port."""

    def __init__(self) -> None:
        bindir = postgres_bindir()
        if bindir is None:
            raise RuntimeError(postgres_missing())
        self.bin = bindir
        self.folder = Path(tempfile.mkdtemp(prefix="critiquelab-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self.data, self.port = self.folder / "data", _free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        _as_postgres(f"{self.bin}/initdb -A trust -U postgres -D {self.data} > /dev/null")

    def start(self) -> None:
        _as_postgres(
            f"{self.bin}/pg_ctl -D {self.data} -l {self.folder}/log -w -o '-p {self.port} "
            f"-k {self.folder} -c listen_addresses=127.0.0.1 -c max_connections=200' start"
            " > /dev/null"
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: end sessions cleanly; ``immediate``: like a crash)."""
        _as_postgres(f"{self.bin}/pg_ctl -D {self.data} -m {mode} -w stop > /dev/null")

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A started :class:`PostgresCluster`, removed afterwards; yields its URL."""
    cluster = PostgresCluster()
    try:
        cluster.start()
        yield cluster.url
    finally:
        cluster.remove()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--url", help="use this database (emptied schema expected) instead")
    parser.add_argument("--baseline-seconds", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    options = dict(
        duration=args.duration, annotators=args.annotators, units=args.units,
        overlap=args.overlap, baseline_seconds=args.baseline_seconds, seed=args.seed,
    )  # fmt: skip
    if args.url:
        report = run_load(args.url, **options)
    elif args.backend == "postgresql":
        with throwaway_postgres() as url:
            report = run_load(url, **options)
    else:
        with tempfile.TemporaryDirectory(prefix="critiquelab-load-") as folder:
            report = run_load(f"sqlite:///{folder}/load.db", **options)
    print(json.dumps(report, indent=2))
    return 0 if report["integrity"]["ok"] else 1  # type: ignore[index]


if __name__ == "__main__":
    sys.exit(main())
