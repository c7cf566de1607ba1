"""The annotation queue's service latency with judge-guided routing on, beside least-annotated.

The same campaign and steps as the service part of ``bench/annotate_bench.py`` (its
``seed_campaign`` and ``service_latency``: ``submit_and_next`` with 1 and with 20 concurrent
annotators), run twice on fresh SQLite databases that hold the same two synthetic judges' scores
on every unit: once least-annotated, once with ``judge-disagreement`` routing set (the time to
rank the units is reported); each starts from a checkpointed write-ahead log. Issue 15 asks that
routing not slow the queue by more than 20%.

    python bench/routing_queue_bench.py --units 20000 --submits 1000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotate_bench import empty_transaction_baseline, service_latency  # noqa: E402
from load_test import seed_campaign  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sqlmodel import select  # noqa: E402

from data.io.judgements import insert_judgements  # noqa: E402
from data.queue.routing import set_routing  # noqa: E402
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


def run(folder: str, units: int, submits: int, routing: str) -> dict[str, object]:
    engine = make_engine(f"sqlite:///{folder}/{routing}.db")
    upgrade_database(engine)
    campaign_id, annotators = seed_campaign(engine, units, 42, overlap=3)
    result: dict[str, object] = {"routing": routing, "units": units}
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
    result["single"] = service_latency(engine, campaign_id, annotators[:1], submits)
    result["concurrent_20"] = service_latency(engine, campaign_id, annotators[1:21], submits)
    engine.dispose()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--units", type=int, default=20_000)
    parser.add_argument("--submits", type=int, default=1000)
    parser.add_argument("--routing", nargs="+", default=["least-annotated", "judge-disagreement"])
    args = parser.parse_args()
    report: dict[str, object] = {"load_average_at_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="routing-bench-") as folder:
        os.environ["CRITIQUELAB_DATA_DIR"] = str(Path(folder) / "data")
        report["runs"] = [run(folder, args.units, args.submits, r) for r in args.routing]
    report["load_average_at_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
