"""Import speed: AlignMMBench metadata plus synthetic models' responses into SQLite.

Builds response files (one answer per question per model: 16 models, ≈80k responses, or with
``--responses N`` as many models as N answers need, the last one answering only the first
questions, so that exactly N responses are imported), imports them with the metadata through
``import_alignmmbench`` (validate everything, then bulk insert in one transaction) into a fresh
SQLite database, re-imports the same files (idempotent: nothing written), and compares with a
baseline in the same run: the naive per-row ORM insert (look the row up, ``session.add``,
``flush``) on a subsample (the first items, 16 models), extrapolated to the full row count.

Run: ``.venv/bin/python bench/import_bench.py METADATA.jsonl [--models 16 | --responses N]
[--baseline-items 300]`` (the AlignMMBench metadata, distributed by its authors).
Prints one JSON object, with the peak resident memory of the process (``ru_maxrss``) after the
import and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from data.io.importers import import_alignmmbench  # noqa: E402
from data.storage.engine import make_engine, session_scope, upgrade_database  # noqa: E402
from schemas.core import stored_id  # noqa: E402
from schemas.tables import Dataset, Item, Response  # noqa: E402

WORDS = ("cat", "mat", "red", "sits", "on", "the", "while", "two", "birds", "watch", "old", "fence")


def _response_files(
    folder: Path, question_ids: list[str], responses: int
) -> list[tuple[Path, str]]:
    """Files of ``responses`` answers in all: one file per model, one answer per question."""
    rng = random.Random(0)
    files = []
    models = -(-responses // len(question_ids))
    for m in range(models):
        path = folder / f"model-{m:03d}.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for question_id in question_ids[: responses - m * len(question_ids)]:
                answer = " ".join(rng.choices(WORDS, k=rng.randint(20, 80)))
                handle.write(json.dumps({"question_id": question_id, "predict": answer}) + "\n")
        files.append((path, f"model-{m:03d}"))
    return files


def _fresh_engine(folder: Path, name: str) -> Engine:
    engine = make_engine(f"sqlite:///{folder / name}")
    upgrade_database(engine)
    return engine


def _naive_insert(folder: Path, metadata: list[dict], files: list[tuple[Path, str]]) -> int:
    """The baseline: one ORM object at a time, each looked up first and flushed."""
    engine = _fresh_engine(folder, "naive.db")
    answers = {
        model: {json.loads(line)["question_id"]: json.loads(line)["predict"]
                for line in path.read_text(encoding="utf-8").splitlines()}
        for path, model in files
    }  # fmt: skip
    rows = 0
    with Session(engine) as session:
        dataset = Dataset(name="alignmmbench", benchmark="alignmmbench")
        session.add(dataset)
        session.flush()
        for line in metadata:
            item_id = f"amb-{line['question_id']}"
            if session.exec(select(Item).where(Item.item_id == item_id)).first() is None:
                item = Item(
                    dataset_id=stored_id(dataset), item_id=item_id, benchmark="alignmmbench",
                    task=line["task"], category=line["category"],
                    group=line["question_id"].split("-")[0], history=[],
                    question=[{"type": "text", "text": line["prompt"]}],
                    reference=line["ref_answer"], content_sha256="",
                )  # fmt: skip
                session.add(item)
                session.flush()
                rows += 1
            for model, by_question in answers.items():
                response_id = f"{item_id}/{model}"
                found = session.exec(select(Response).where(Response.response_id == response_id))
                if found.first() is None:
                    session.add(Response(response_id=response_id, item_pk=stored_id(item),
                                         model=model, content=by_question[line["question_id"]],
                                         content_sha256=""))  # fmt: skip
                    session.flush()
                    rows += 1
        session.commit()
    engine.dispose()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "metadata", type=Path, help="AlignMMBench metadata.jsonl (distributed by its authors)"
    )
    parser.add_argument("--models", type=int, default=16, help="one answer per question each")
    parser.add_argument("--responses", type=int, help="instead of --models: N answers in all")
    parser.add_argument("--baseline-items", type=int, default=300)
    args = parser.parse_args()
    if not args.metadata.is_file():
        sys.exit(f"AlignMMBench metadata not found at {args.metadata.resolve()}")
    metadata = [json.loads(line) for line in args.metadata.read_text(encoding="utf-8").splitlines()]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        question_ids = [line["question_id"] for line in metadata]
        wanted = args.responses or args.models * len(question_ids)
        files = _response_files(folder, question_ids, wanted)
        load_before = os.getloadavg()
        engine = _fresh_engine(folder, "bench.db")
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start, cpu_start = time.perf_counter(), time.process_time()
        with session_scope(engine) as session:
            summary = import_alignmmbench(session, args.metadata, responses=files,
                                          allow_missing_images=True)  # fmt: skip
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows = summary.items_added + summary.responses_added
        start = time.perf_counter()
        with session_scope(engine) as session:
            again = import_alignmmbench(session, args.metadata, responses=files,
                                        allow_missing_images=True)  # fmt: skip
        reimport_seconds = time.perf_counter() - start
        engine.dispose()
        sample = metadata[: args.baseline_items]
        start = time.perf_counter()
        baseline_rows = _naive_insert(folder, sample, files[:16])
        baseline_seconds = time.perf_counter() - start
    baseline_rate = baseline_rows / baseline_seconds
    target = 60 if rows > 500_000 else 15  # 1M responses: 60 s (issue 11); 80k: 15 s
    print(json.dumps({
        "benchmark": "import alignmmbench metadata + synthetic responses into SQLite",
        "items": summary.items_added,
        "responses": summary.responses_added,
        "rows": rows,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "rows_per_second": round(rows / seconds),
        "peak_rss_mb": round(peak_mb),
        "rss_before_import_mb": round(rss_before / 1024),
        "reimport_seconds": round(reimport_seconds, 2),
        "reimport_rows_written": again.items_added + again.responses_added,
        "baseline": {
            "method": "per-row ORM: look up, session.add, flush (subsample, extrapolated)",
            "rows": baseline_rows,
            "seconds": round(baseline_seconds, 2),
            "rows_per_second": round(baseline_rate),
            "extrapolated_seconds": round(rows / baseline_rate, 1),
        },
        "speedup": round(rows / baseline_rate / seconds, 1),
        "target_seconds": target,
        "within_target": seconds <= target,
        "target_peak_rss_mb": 1024,
        "load_average_before_after": [load_before, os.getloadavg()],
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
