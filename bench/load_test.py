"""Load test of the annotation queue: N simulated annotators on one big campaign.

Each annotator is a thread (as in ``streamlit run``, one server process serves every browser
session from its own thread) that calls the same service functions as the annotation page,
``data.queue.next_unit`` / ``save_draft`` / ``submit_and_next`` / ``skip``, each in its own
transaction. A few submits are sent twice (a double click) and a few units are skipped, so the
slot bookkeeping is exercised under churn. With ``--processes P`` the annotators are spread over
P OS processes, each with its own engine, as P ``critiquelab serve`` processes behind a reverse
proxy would be. With ``--think LOW:HIGH`` every annotator works LOW to HIGH seconds on a unit
(:class:`ThinkTime`: drafts saved meanwhile, arrivals spread); without it the calls follow each
other at once (the stress run). With ``--routing-churn SECONDS`` two judges' scores are stored and
the campaign's routing alternates (judge-disagreement, least-annotated) every SECONDS while the
annotators work; calls the database cancelled ("nothing was saved") and false "no unit" answers
(given while a unit the annotator never had still had a free slot) are counted (issue 25).

After the run the database is checked against what the annotators saw acknowledged: no answer
lost, no duplicate, overlap K never exceeded, unit counters equal to the rows they count
(``load_records.py``). It prints one JSON object: the integrity figures, throughput, and
p50 / p95 / p99 latency per operation, for the full load and for a single-annotator baseline
measured first on the same database (the comparison the figures are read against).

    python bench/load_test.py --backend sqlite --duration 120 --annotators 50 --units 100000
    python bench/load_test.py --backend postgresql --duration 120 --annotators 200 \
        --processes 4 --think 10:30 --units 100000
    python bench/load_test.py --url postgresql+psycopg://user@host/db ...   # an existing server

With ``--backend postgresql`` and no ``--url`` a throw-away PostgreSQL 15 cluster is started on
a free 127.0.0.1 port (``tests/pg_cluster.py``, shared with the tests) and removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import event, exists, func, insert, select
from sqlalchemy.engine import Engine
from sqlmodel import col

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests/
sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_records import (  # noqa: E402,F401 - check_integrity and the records are used by tests
    Acknowledgement,
    Integrity,
    WorkerLog,
    check_integrity,
    log_from_json,
    log_to_json,
    percentiles,
    summarize,
)

from data import queue  # noqa: E402
from data.services.campaigns import CampaignSpec, create_campaign  # noqa: E402
from data.services.routing import set_routing  # noqa: E402
from data.storage.engine import (  # noqa: E402
    TransactionCancelled,
    make_engine,
    session_scope,
    upgrade_database,
)
from schemas.core import stored_id  # noqa: E402
from schemas.tables import (  # noqa: E402
    Assignment,
    Campaign,
    Dataset,
    Item,
    Judgement,
    Response,
    Unit,
    User,
    utcnow,
)
from tests.pg_cluster import throwaway_postgres  # noqa: E402

LOAD_AVERAGE_BEFORE = os.getloadavg()

RESPONSES_PER_ITEM = 4
T = TypeVar("T")
RATIONALE = "Simulated annotator {annotator}: the count matches the picture, unit {unit}."


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
            session.execute(
                select(col(Item.id))
                .where(col(Item.dataset_id) == dataset.id)
                .order_by(col(Item.id))
            )
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
            session.execute(
                select(col(User.id)).where(col(User.name).like("annotator%")).order_by(col(User.id))
            )
        )
    return stored_id(campaign), [row[0] for row in annotator_ids]


def _timed(log: WorkerLog, engine: Engine, operation: Callable[..., T], *args: Any, **kw: Any) -> T:
    """Run ``operation(session, *args, **kw)`` in its own transaction and record its latency."""
    start = time.perf_counter()
    try:
        with session_scope(engine) as session:
            result = operation(session, *args, **kw)
    except Exception as error:
        error.add_note(operation.__name__)  # which call failed, for the log's error counts
        raise
    log.latencies[operation.__name__].append(time.perf_counter() - start)
    return result


@dataclass(frozen=True)
class ThinkTime:
    """How long a simulated person works on one unit, in seconds: uniform on [low, high].

    While working, the page saves the draft as the person types: one ``save_draft`` every
    ``draft_every`` seconds (at least one per unit); then ``submit_and_next``. A person who
    skips gives up after a third of the think time. Arrivals are spread uniformly over the first
    ``low`` seconds of the run, as people do not all open the page in the same instant."""

    low: float
    high: float
    draft_every: float = 5.0

    @classmethod
    def parse(cls, text: str) -> ThinkTime | None:
        """``"10:30"`` -> ThinkTime(10, 30); ``"0"`` -> None (no think time: the stress run)."""
        low, _, high = text.partition(":")
        think = cls(float(low), float(high or low))
        if think.low < 0 or think.high < think.low:
            raise ValueError(
                f"think time {text!r}: expected LOW:HIGH seconds with 0 <= LOW <= HIGH"
            )
        return None if think.high == 0 else think


def _pause(seconds: float, stop_at: float) -> bool:
    """Sleep ``seconds`` of simulated thinking, not past ``stop_at``; False when time is up."""
    time.sleep(max(0.0, min(seconds, stop_at - time.monotonic())))
    return time.monotonic() < stop_at


def annotate(
    engine: Engine,
    campaign_id: int,
    annotator_id: int,
    stop_at: float,
    log: WorkerLog,
    seed: int,
    skip_rate: float = 0.03,
    double_submit_rate: float = 0.02,
    think: ThinkTime | None = None,
    units_each: int | None = None,
) -> None:
    """One simulated annotator: draft, then submit and get the next unit in one transaction (or
    skip and ask for the next), as the annotation page does, until ``stop_at`` or, with
    ``units_each``, until that many submits were acknowledged (a fixed amount of work, which is
    what a test needs: how much is done in a given time depends on the machine). With ``think``
    the person works on each unit for a think time (drafts saved meanwhile); without, the calls
    follow each other at once."""
    rng = random.Random(seed)
    view: queue.UnitView | None = None
    if think is not None and not _pause(rng.uniform(0, think.low), stop_at):
        log.finished = True
        return
    while time.monotonic() < stop_at:
        if units_each is not None and len(log.acknowledged) >= units_each:
            break
        try:
            if view is None:
                view = _timed(log, engine, queue.next_unit, campaign_id, annotator_id)
                if view is None:
                    log.false_no_unit += _work_left(engine, campaign_id, annotator_id)
                    break
            lease = view.assignment_id
            score = float(rng.randint(1, 10))
            rationale = RATIONALE.format(annotator=annotator_id, unit=view.unit_id)
            skipping = rng.random() < skip_rate
            working = 0.0 if think is None else rng.uniform(think.low, think.high)
            if skipping:
                working /= 3
            drafts = 1 if think is None else max(1, int(working // think.draft_every))
            for n in range(drafts):
                if not _pause(working / (drafts + 1), stop_at):
                    break
                _timed(log, engine, queue.save_draft, lease, annotator_id, score=score,
                       rationale=rationale[: 20 + n], active_seconds=3.0)  # fmt: skip
            if not _pause(working / (drafts + 1), stop_at):
                break
            if skipping:
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
                log.false_no_unit += _work_left(engine, campaign_id, annotator_id)
                break
        except TransactionCancelled as error:  # "nothing was saved": the person tries again
            log.cancelled += 1
            log.errors[_error_key(error)] += 1
            view = None
        except Exception as error:  # noqa: BLE001 - counted and reported, the run goes on
            log.errors[_error_key(error)] += 1
            view = None
    log.finished = True


def _error_key(error: Exception) -> str:
    """The call that failed, the error's type and its text (the cause named at its end)."""
    call = "; ".join(getattr(error, "__notes__", ())) or "?"
    text = str(error)
    return (
        f"{call}: {type(error).__name__}: {text[:80]} … {text[-40:]}"
        if len(text) > 120
        else (f"{call}: {type(error).__name__}: {text}")
    )


def _work_left(engine: Engine, campaign_id: int, annotator_id: int) -> bool:
    """Whether a unit this annotator never had still has a free slot (read just after they were
    told "no unit": True makes that answer a false one). A person told "no unit" leaves, as the
    simulated one does."""
    with session_scope(engine) as session:
        overlap = (
            select(col(Campaign.overlap)).where(col(Campaign.id) == campaign_id).scalar_subquery()
        )
        had = exists().where(
            col(Assignment.unit_id) == Unit.id, col(Assignment.annotator_id) == annotator_id
        )
        free = select(col(Unit.id)).where(
            col(Unit.campaign_id) == campaign_id,
            col(Unit.slots_taken) < overlap,
            ~col(Unit.flagged),
            ~col(Unit.gold),
            ~had,
        )
        return session.execute(free.limit(1)).first() is not None


ROUTING_JUDGES = ("j1", "j2")
CHURN_SETTINGS = (("judge-disagreement", list(ROUTING_JUDGES)), ("least-annotated", None))
"""What :func:`churn_routing` alternates between: judge-ranked units, then no ranks."""


def judge_campaign(engine: Engine, campaign_id: int, seed: int = 0) -> int:
    """Store the scores of two judges (``j1``, ``j2``, 1–10, drawn at random) on every response
    of the campaign, so that judge-disagreement routing ranks its units; return how many."""
    rng, now = random.Random(seed), utcnow()
    with session_scope(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        assert campaign is not None  # seeded by seed_campaign
        responses = session.execute(
            select(col(Response.id), col(Response.response_id))
            .join(Unit, col(Unit.response_pk) == Response.id)
            .where(col(Unit.campaign_id) == campaign_id)
        ).all()
        rows = [
            {"judge": judge, "protocol": campaign.protocol, "unit_key": f"r:{response_id}",
             "response_pk": pk, "score": float(rng.randint(1, 10)), "meta": {}, "usage": {},
             "created_at": now}
            for pk, response_id in responses for judge in ROUTING_JUDGES
        ]  # fmt: skip
        for start in range(0, len(rows), 5000):
            session.connection().execute(insert(Judgement), rows[start : start + 5000])
    return len(rows)


@dataclass
class ChurnLog:
    """What the routing churn did: changes committed, their latencies (s), errors; ``changed``
    is set once a first change has committed."""

    changes: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)
    changed: threading.Event = field(default_factory=threading.Event)


def churn_routing(
    engine: Engine, campaign_id: int, every: float, stop: threading.Event, log: ChurnLog
) -> None:
    """Change the campaign's routing (:data:`CHURN_SETTINGS` in turn, each its own transaction,
    as the Campaigns page does) every ``every`` seconds until ``stop`` is set; a churn with
    ``every`` 0 changes it back to back."""
    turn = 0
    while not stop.wait(every):
        routing, judges = CHURN_SETTINGS[turn % len(CHURN_SETTINGS)]
        turn += 1
        start = time.perf_counter()
        try:
            with session_scope(engine) as session:
                set_routing(session, campaign_id, routing, judges)
        except Exception as error:  # noqa: BLE001 - counted and reported, the churn goes on
            log.errors[f"{type(error).__name__}: {str(error)[:120]}"] += 1
            continue
        log.latencies.append(time.perf_counter() - start)
        log.changes += 1
        log.changed.set()


@contextmanager
def routing_churn(engine: Engine, campaign_id: int, every: float | None) -> Iterator[ChurnLog]:
    """:func:`churn_routing` in a thread for the block's duration (nothing with ``every`` None);
    the log is complete once the block has ended."""
    log, stop = ChurnLog(), threading.Event()
    if every is None:
        yield log
        return
    thread = threading.Thread(
        target=churn_routing, args=(engine, campaign_id, every, stop, log), name="routing-churn"
    )
    thread.start()
    try:
        yield log
    finally:
        stop.set()
        thread.join()


def run_annotators(
    engine: Engine,
    campaign_id: int,
    annotator_ids: list[int],
    duration: float,
    seed: int,
    skip_rate: float = 0.03,
    think: ThinkTime | None = None,
    units_each: int | None = None,
    double_submit_rate: float = 0.02,
) -> tuple[list[WorkerLog], float]:
    """One thread per annotator for ``duration`` seconds (or until each has ``units_each``
    submits acknowledged, when given); return their logs and the wall time."""
    logs = [WorkerLog() for _ in annotator_ids]
    start = time.monotonic()
    threads = [
        threading.Thread(
            target=annotate,
            args=(engine, campaign_id, annotator_id, start + duration, log, seed * 1000 + n),
            kwargs={
                "skip_rate": skip_rate,
                "think": think,
                "units_each": units_each,
                "double_submit_rate": double_submit_rate,
            },  # fmt: skip
            name=f"annotator-{annotator_id}",
        )
        for n, (annotator_id, log) in enumerate(zip(annotator_ids, logs, strict=True))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return logs, time.monotonic() - start


def run_processes(
    url: str,
    campaign_id: int,
    annotator_ids: list[int],
    duration: float,
    seed: int,
    processes: int,
    skip_rate: float = 0.03,
    think: ThinkTime | None = None,
    units_each: int | None = None,
    double_submit_rate: float = 0.02,
) -> tuple[list[WorkerLog], float]:
    """The annotators dealt round-robin over ``processes`` OS processes (as N ``critiquelab
    serve`` processes behind a proxy), each with its own engine and one thread per annotator.

    Each worker connects, says ``ready`` on stdout and waits for ``go`` on stdin, so the load
    starts in every process at once; it writes its logs as JSON to a file for the parent."""
    with tempfile.TemporaryDirectory(prefix="critiquelab-workers-") as folder:
        workers = []
        for n in range(processes):
            spec = Path(folder) / f"worker-{n}.json"
            spec.write_text(json.dumps({
                "url": url, "campaign_id": campaign_id,
                "annotator_ids": annotator_ids[n::processes],
                "duration": duration, "seed": seed * 100 + n, "skip_rate": skip_rate,
                "think": None if think is None else asdict(think), "out": str(spec) + ".out",
                "units_each": units_each, "double_submit_rate": double_submit_rate,
            }))  # fmt: skip
            workers.append((spec, subprocess.Popen(
                [sys.executable, __file__, "--worker", str(spec)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )))  # fmt: skip
        try:
            for spec, worker in workers:
                assert worker.stdout is not None
                if worker.stdout.readline().strip() != "ready":
                    raise RuntimeError(f"load worker {spec.name} did not start: see its stderr")
            start = time.monotonic()
            for _, worker in workers:
                assert worker.stdin is not None
                worker.stdin.write("go\n")
                worker.stdin.close()
            for spec, worker in workers:
                if worker.wait() != 0:
                    raise RuntimeError(f"load worker {spec.name} exited with {worker.returncode}")
            wall = time.monotonic() - start
        finally:
            for _, worker in workers:
                if worker.poll() is None:
                    worker.kill()
                    worker.wait()
        logs = [
            log_from_json(data)
            for spec, _ in workers
            for data in json.loads(Path(str(spec) + ".out").read_text())
        ]
    return logs, wall


def _worker(spec_path: str) -> int:
    """One load process (``--worker SPEC``): see :func:`run_processes`."""
    spec = json.loads(Path(spec_path).read_text())
    engine = make_engine(spec["url"])
    with session_scope(engine) as session:  # connected before the start, like a warm server
        session.execute(select(func.count()).where(Unit.campaign_id == spec["campaign_id"]))
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 1
    think = None if spec["think"] is None else ThinkTime(**spec["think"])
    logs, _ = run_annotators(engine, spec["campaign_id"], spec["annotator_ids"], spec["duration"],
                             spec["seed"], spec["skip_rate"], think, spec["units_each"],
                             spec["double_submit_rate"])  # fmt: skip
    engine.dispose()
    Path(spec["out"]).write_text(json.dumps([log_to_json(log) for log in logs]))
    return 0


def run_load(
    url: str,
    *,
    duration: float,
    annotators: int,
    units: int,
    overlap: int = 3,
    baseline_seconds: float = 10.0,
    seed: int = 0,
    processes: int = 1,
    think: ThinkTime | None = None,
    units_each: int | None = None,
    skip_rate: float = 0.03,
    double_submit_rate: float = 0.02,
    routing_churn_every: float | None = None,
) -> dict[str, object]:
    """Seed a fresh database at ``url``, run the baseline (one annotator, no think time, in this
    process) and the load (in this process, or over ``processes`` worker processes), check
    integrity. With ``units_each`` every annotator (the baseline's too) stops after that many
    acknowledged submits; ``duration`` and ``baseline_seconds`` then only bound the run. With
    ``routing_churn_every`` two judges' scores are stored and the campaign's routing alternates
    (:func:`churn_routing`) every that many seconds while the load runs."""
    engine = make_engine(url)
    try:
        upgrade_database(engine)
        started = time.monotonic()
        campaign_id, annotator_ids = seed_campaign(engine, units, annotators + 1, overlap)
        if routing_churn_every is not None:
            judge_campaign(engine, campaign_id, seed)
        seed_seconds = time.monotonic() - started
        baseline_logs, baseline_wall = run_annotators(
            engine, campaign_id, annotator_ids[-1:], baseline_seconds, seed + 1,
            units_each=units_each, skip_rate=skip_rate,
            double_submit_rate=double_submit_rate,
        )  # fmt: skip
        cancelled: Counter = Counter()

        def note_cancellation(context: Any) -> None:
            sqlstate = getattr(context.original_exception, "sqlstate", None)
            if sqlstate in ("40P01", "40001", "55P03"):
                cancelled[f"{sqlstate}: {' '.join((context.statement or '').split())[:100]}"] += 1

        event.listen(engine, "handle_error", note_cancellation)  # this process's engine only
        with routing_churn(engine, campaign_id, routing_churn_every) as churn:
            if processes > 1:
                logs, wall = run_processes(
                    url, campaign_id, annotator_ids[:-1], duration, seed, processes, think=think,
                    units_each=units_each, skip_rate=skip_rate,
                    double_submit_rate=double_submit_rate,
                )  # fmt: skip
            else:
                logs, wall = run_annotators(
                    engine, campaign_id, annotator_ids[:-1], duration, seed, think=think,
                    units_each=units_each, skip_rate=skip_rate,
                    double_submit_rate=double_submit_rate,
                )  # fmt: skip
        integrity = check_integrity(engine, campaign_id, [*baseline_logs, *logs])
        with session_scope(engine) as session:
            total_units = session.execute(
                select(func.count()).where(col(Unit.campaign_id) == campaign_id)
            ).scalar_one()
    finally:
        engine.dispose()
    return {
        "backend": engine.dialect.name,
        "units": total_units,
        "overlap": overlap,
        "processes": processes,
        "think_seconds": None if think is None else asdict(think),
        "seed_seconds": round(seed_seconds, 2),
        "integrity": asdict(integrity) | {"ok": integrity.ok},
        "load": summarize(logs, wall),
        "cancelled_statements": dict(cancelled),
        "routing_churn": None
        if routing_churn_every is None
        else {
            "every_seconds": routing_churn_every,
            "changes": churn.changes,
            "errors": dict(churn.errors),
            "change_latency": percentiles(churn.latencies),
        },
        "baseline_single_annotator": summarize(baseline_logs, baseline_wall),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_average_before_after": [LOAD_AVERAGE_BEFORE, os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--processes", type=int, default=1, help="OS processes of annotators")
    parser.add_argument(
        "--think", type=ThinkTime.parse, default=None, metavar="LOW:HIGH",
        help="seconds a person works on one unit (uniform); 0 or absent: none (stress)",
    )  # fmt: skip
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--url", help="use this database (emptied schema expected) instead")
    parser.add_argument("--baseline-seconds", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--routing-churn", type=float, default=None, metavar="SECONDS",
        help="change the campaign's routing every SECONDS while the load runs (judge-ranked, "
        "then least-annotated, in turn); cancellations and false 'no unit' answers are counted",
    )  # fmt: skip
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args.worker)
    options = dict(
        duration=args.duration, annotators=args.annotators, units=args.units,
        overlap=args.overlap, baseline_seconds=args.baseline_seconds, seed=args.seed,
        processes=args.processes, think=args.think, routing_churn_every=args.routing_churn,
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
