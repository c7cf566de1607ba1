"""The annotation queue's service latency with judge-guided routing on, beside least-annotated.

The same campaign and steps as the service part of ``bench/annotate_bench.py`` (its
``seed_campaign`` and ``service_latency``: ``submit_and_next`` with 1 and with 20 concurrent
annotators), on fresh SQLite databases that hold the same two synthetic judges' scores on every
unit: one least-annotated, one with ``judge-disagreement`` routing set (the time to rank the units
is reported); each starts from a checkpointed write-ahead log. Issue 15 asks that routing not
slow the queue by more than 20%.

Both campaigns are measured in the same run, in ``--rounds`` rounds that alternate which goes
first (A B, B A, A B, ...), so that a change in the machine's load during the run (it is shared)
falls on both alike; each round is ``--submits`` steps of 20 annotators and a quarter as many of
one annotator, per routing. The summary gives each
routing's median over all its steps and the ratio, beside every round's own ratio, and the load
average at the start and the end.

    python bench/routing_queue_bench.py --units 20000 --submits 1000 --rounds 6
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotate_bench import _annotator, empty_transaction_baseline  # noqa: E402
from load_test import percentiles, seed_campaign  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sqlmodel import select  # noqa: E402

from data.services.judgements import insert_judgements  # noqa: E402
from data.services.routing import set_routing  # noqa: E402
from data.storage.engine import make_engine, session_scope, upgrade_database  # noqa: E402
from schemas.tables import Judgement, Response  # noqa: E402


def _judge_everything(engine: object, seed: int = 0) -> None:
    """Two synthetic judges score every response 1–10 (seeded), stored in bulk."""
    draw = random.Random(seed)
    with session_scope(engine) as session:  # type: ignore[arg-type]
        responses = session.exec(select(Response.id, Response.response_id)).all()
        rows = [
            Judgement(judge=judge, protocol="alignmmbench", unit_key=f"r:{rid}",
                      response_pk=pk, score=float(draw.randint(1, 10)))
            for judge in ("bench-judge-a", "bench-judge-b") for pk, rid in responses
        ]  # fmt: skip
        for start in range(0, len(rows), 10_000):
            insert_judgements(session, rows[start : start + 10_000])


def prepare(folder: str, units: int, routing: str) -> tuple[Any, int, list[int], dict[str, Any]]:
    """A seeded, judged campaign with ``routing`` set, on a checkpointed SQLite database."""
    engine = make_engine(f"sqlite:///{folder}/{routing}.db")
    upgrade_database(engine)
    campaign_id, annotators = seed_campaign(engine, units, 42, overlap=3)
    result: dict[str, Any] = {"routing": routing, "units": units}
    _judge_everything(engine)  # in both runs, so that the databases differ only in the routing
    if routing != "least-annotated":
        started = time.perf_counter()
        with session_scope(engine) as session:
            plan = set_routing(session, campaign_id, routing, ["bench-judge-a", "bench-judge-b"])
        result["rank_seconds"] = round(time.perf_counter() - started, 2)
        result["note"] = plan.note
    raw = engine.raw_connection()  # outside a transaction: start from an empty write-ahead log
    try:
        raw.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        raw.close()
    result["baseline_empty_transaction"] = empty_transaction_baseline(engine)
    return engine, campaign_id, annotators, result


def _steps(engine: Any, campaign_id: int, annotators: list[int], submits: int) -> list[float]:
    """Every step's seconds of one :func:`service_latency`-style run (kept for pooling)."""
    per_thread = -(-submits // len(annotators))
    results: list[list[float]] = [[] for _ in annotators]
    threads = [
        threading.Thread(target=_annotator, args=(engine, campaign_id, a, per_thread, 0.0, out))
        for a, out in zip(annotators, results, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [value for out in results for value in out]


def measure(folder: str, units: int, submits: int, rounds: int, routings: list[str]) -> dict:
    """Seed every routing's campaign, then the alternating rounds; the JSON report's body."""
    prepared = {routing: prepare(folder, units, routing) for routing in routings}
    steps: dict[str, dict[str, list[float]]] = {
        r: {"single": [], "concurrent_20": []} for r in routings
    }
    per_round = []
    for number in range(rounds):
        order = routings if number % 2 == 0 else routings[::-1]
        medians: dict[str, dict[str, float]] = {}
        for routing in order:
            engine, campaign_id, annotators, _ = prepared[routing]
            round_steps = {
                "single": _steps(engine, campaign_id, annotators[:1], max(1, submits // 4)),
                "concurrent_20": _steps(engine, campaign_id, annotators[1:21], submits),
            }
            for kind, values in round_steps.items():
                steps[routing][kind] += values
            medians[routing] = {k: statistics.median(v) * 1000 for k, v in round_steps.items()}
        per_round.append(
            {"order": order, "load_average": os.getloadavg(), "p50_ms": medians}
            | {"ratio": _ratios(medians, routings)}
        )
    runs = []
    for routing in routings:
        engine, _, _, result = prepared[routing]
        result |= {kind: percentiles(values) for kind, values in steps[routing].items()}
        runs.append(result)
        engine.dispose()
    pooled = {r: {k: statistics.median(v) * 1000 for k, v in steps[r].items()} for r in routings}
    return {"runs": runs, "rounds": per_round, "pooled_p50_ms": pooled,
            "pooled_ratio": _ratios(pooled, routings)}  # fmt: skip


def _ratios(medians: dict[str, dict[str, float]], routings: list[str]) -> dict[str, Any]:
    """Each other routing's median over the first's, per kind of run (1.2 = 20% slower)."""
    base = medians[routings[0]]
    return {
        routing: {kind: round(medians[routing][kind] / base[kind], 3) for kind in base}
        for routing in routings[1:]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--units", type=int, default=20_000)
    parser.add_argument("--submits", type=int, default=1000, help="20-annotator steps per round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--routing", nargs="+", default=["least-annotated", "judge-disagreement"])
    args = parser.parse_args()
    report: dict[str, object] = {"load_average_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="routing-bench-") as folder:
        os.environ["CRITIQUELAB_DATA_DIR"] = str(Path(folder) / "data")
        report |= measure(folder, args.units, args.submits, args.rounds, args.routing)
    report["load_average_at_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
