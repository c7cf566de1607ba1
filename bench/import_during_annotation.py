"""Annotators at work while a large ``annotations import`` runs on the same database.

Seeds a dataset of ``--units`` responses with an open campaign (``load_test.seed_campaign``),
writes a labels file of ``--labels`` human scores on those responses (3 external annotators per
response, so ``--labels`` / 3 responses are labelled), then:

1. **baseline**: ``--annotators`` threads submit and take the next unit
   (``data.queue.submit_and_next``, as the annotation page does) for ``--baseline-seconds``,
   no import running;
2. **during the import**: ``critiquelab annotations import`` runs as its own process (as the
   CLI does next to a running ``critiquelab serve``) while the same annotators keep working,
   in rounds of ``--round-seconds``, until the import process ends.

Prints one JSON object: p50 / p95 / p99 latency of ``submit_and_next`` and ``next_unit`` and the
errors (refusals such as ``DatabaseBusy``, whose wait is not in the latencies) for both phases,
the import's wall time, exit code and peak resident memory (``ru_maxrss`` of the child process),
and the load average before and after.

    python bench/import_during_annotation.py --backend sqlite --labels 300000 --units 100000
    python bench/import_during_annotation.py --backend postgresql --labels 300000 --units 100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, select
from sqlmodel import col

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests/
sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_records import WorkerLog, summarize  # noqa: E402
from load_test import RESPONSES_PER_ITEM, run_annotators, seed_campaign  # noqa: E402

from data.storage.engine import make_engine, session_scope, upgrade_database  # noqa: E402
from schemas.tables import Annotation, Campaign  # noqa: E402
from tests.pg_cluster import throwaway_postgres  # noqa: E402

LOAD_AVERAGE_BEFORE = os.getloadavg()
IMPORT_ANNOTATORS = 3
RATIONALE = "Imported rater {rater}: the answer to item {item} counts the apples right."


def write_labels(path: Path, labels: int) -> int:
    """``labels`` pointwise human scores, 3 raters per response of the seeded dataset; return the
    file's size in bytes."""
    with path.open("w", encoding="utf-8") as out:
        for n in range(labels):
            response, rater = divmod(n, IMPORT_ANNOTATORS)
            item, model = divmod(response, RESPONSES_PER_ITEM)
            record = {
                "judge": f"annotator:ext-rater{rater}",
                "judge_kind": "human",
                "protocol": "alignmmbench",
                "response_id": f"load-{item}/m{model}",
                "score": 1 + (n % 10),
                "rationale": RATIONALE.format(rater=rater, item=item),
                "seconds": 20.5,
            }
            out.write(json.dumps(record) + "\n")
    return path.stat().st_size


def _import_process(url: str, labels: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-c", "from annotate_app.cli.main import app; app()",
        "--db", url, "annotations", "import", str(labels), "--campaign", "imported-big",
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run(url: str, *, labels: int, units: int, annotators: int, baseline_seconds: float,
        round_seconds: float, folder: Path) -> dict[str, object]:  # fmt: skip
    engine = make_engine(url)
    try:
        upgrade_database(engine)
        campaign_id, annotator_ids = seed_campaign(engine, units, annotators, overlap=3)
        path = folder / "labels.jsonl"
        size = write_labels(path, labels)
        baseline_logs, baseline_wall = run_annotators(
            engine, campaign_id, annotator_ids, baseline_seconds, seed=1, skip_rate=0.0,
            double_submit_rate=0.0,
        )  # fmt: skip
        started = time.monotonic()
        process = _import_process(url, path)
        logs: list[WorkerLog] = []
        rounds = 0
        while process.poll() is None:
            round_logs, _ = run_annotators(
                engine, campaign_id, annotator_ids, round_seconds, seed=2 + rounds,
                skip_rate=0.0, double_submit_rate=0.0,
            )  # fmt: skip
            logs.extend(round_logs)
            rounds += 1
        out, err = process.communicate()
        import_seconds = time.monotonic() - started
        with session_scope(engine) as session:
            imported = session.execute(
                select(func.count())
                .select_from(Annotation)
                .join(Campaign, col(Campaign.id) == col(Annotation.campaign_id))
                .where(col(Campaign.name) == "imported-big")
            ).scalar_one()
    finally:
        engine.dispose()
    during = summarize(logs, import_seconds)
    return {
        "backend": engine.dialect.name,
        "labels": labels,
        "labels_file_mb": round(size / 2**20, 1),
        "units": units,
        "annotators": annotators,
        "import": {
            "exit_code": process.returncode,
            "seconds": round(import_seconds, 2),
            "annotations_stored": imported,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
            "output": (out.decode() + err.decode())[-400:],
        },
        "during_import": during,
        "baseline_no_import": summarize(baseline_logs, baseline_wall),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_average_before_after": [LOAD_AVERAGE_BEFORE, os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--labels", type=int, default=300_000)
    parser.add_argument("--units", type=int, default=0, help="default: labels / 3 + 2000")
    parser.add_argument("--annotators", type=int, default=8)
    parser.add_argument("--baseline-seconds", type=float, default=10.0)
    parser.add_argument("--round-seconds", type=float, default=2.0)
    args = parser.parse_args(argv)
    units = args.units or args.labels // IMPORT_ANNOTATORS + 2000
    with tempfile.TemporaryDirectory(prefix="critiquelab-import-bench-") as folder:
        options = dict(
            labels=args.labels, units=units, annotators=args.annotators,
            baseline_seconds=args.baseline_seconds, round_seconds=args.round_seconds,
            folder=Path(folder),
        )  # fmt: skip
        if args.backend == "postgresql":
            with throwaway_postgres() as url:
                report = run(url, **options)
        else:
            report = run(f"sqlite:///{folder}/bench.db", **options)
    print(json.dumps(report, indent=2))
    return 0 if report["import"]["exit_code"] == 0 else 1  # type: ignore[index]


if __name__ == "__main__":
    sys.exit(main())
