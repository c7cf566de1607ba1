"""Calibration speed: N units × 3 human raters × 3 judges, every pointwise metric, B = 1000.

Prints JSON: the vectorised library's time (all pointwise metrics and human alpha with their
bootstrap intervals: wall and CPU seconds, and the process's peak resident memory), and in the
same run the naive way — ``krippendorff.alpha`` and scipy per resample in a Python loop — timed
on a subsample of resamples (on at most 100k units, scaled linearly to N: the reference packages
need tens of GB at a million units) and extrapolated to B, with the ratio.
Run: ``.venv/bin/python bench/calibrate_bench.py [--units 100000|1000000] [--bootstrap 1000]``.
Targets: 10 s at 100k units, 20 s and 4 GB at a million.

``--page`` measures instead what opening the Calibration page costs on a campaign stored in
SQLite (``--units`` units, 3 annotators with a rationale each, 2 model judges with rationales,
seeded in bulk): the page's data path as the calibration worker runs it (read the campaign
without rationales, calibrate, read the listed units' rationales) and, in the same run, the path
before it (every rationale in the frame, read in the page's own process) from the commit
``--baseline-ref``; each in its own process, for its wall time and peak memory, and the bytes
the page's process receives from the worker.

    .venv/bin/python bench/calibrate_bench.py --page --units 1000000 --bootstrap 1000

``--small`` measures the small, wide campaigns of the tests and the demo: the bundled sample
project (every campaign: calibrate with the defaults, with B = 100 by task, and the judge audit)
and a campaign of 2 units with 38 annotators and 38 model judges (the hostile Markdown seed),
each computation's CPU seconds (best of ``--repeat``) in a fresh process with this tree's code
and, in the same run, with the code of ``--small-baseline-ref`` (a ``git worktree``); both
processes' outputs (the ``--json`` text, the audit's JSON) must be equal byte for byte.

    .venv/bin/python bench/calibrate_bench.py --small
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
import types
from pathlib import Path

import krippendorff
import numpy as np
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from calibration import AlphaData, PointwiseKernel, Scale
from calibration.bootstrap import percentile_interval, unit_resample_counts, unit_resample_indices

sys.path.insert(0, str(Path(__file__).resolve().parent))  # load_test

SCALE = Scale(1, 10, 1)
NAIVE_UNITS = 100_000


def _data(units: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    quality = rng.integers(1, 11, size=units)
    humans = np.clip(quality + rng.integers(-1, 2, size=(3, units)), 1, 10).astype(float)
    judges = [
        np.clip(quality + rng.integers(-k, k + 1, size=units), 1, 10).astype(float)
        for k in (1, 2, 3)
    ]
    return humans, judges


def vectorised(humans: np.ndarray, judges: list[np.ndarray], n_boot: int) -> dict:
    reference = humans.mean(axis=0)
    kernels = [PointwiseKernel(judge, reference, SCALE) for judge in judges]
    human_alpha = AlphaData.from_matrix(humans)
    samples: dict[tuple[int, str], list[np.ndarray]] = {}
    for weights in unit_resample_counts(reference.size, n_boot, seed=0):
        for level in ("interval", "ordinal"):
            samples.setdefault((-1, level), []).append(human_alpha.evaluate(weights, level))
        for index, kernel in enumerate(kernels):
            for metric, values in kernel.evaluate(weights).items():
                samples.setdefault((index, metric), []).append(values)
    return {key: percentile_interval(np.concatenate(parts)) for key, parts in samples.items()}


def naive_one_resample(humans, judges, index) -> None:
    """What a plain implementation does per resample: the reference packages on resampled data."""
    sample = humans[:, index]
    reference = sample.mean(axis=0)
    for level in ("interval", "ordinal"):
        krippendorff.alpha(sample, level_of_measurement=level)
    rounded_h = np.floor(reference + 0.5)
    for judge in judges:
        j = judge[index]
        np.abs(j - reference).mean(), ((j - reference) ** 2).mean(), (j - reference).mean()
        stats.pearsonr(j, reference), stats.spearmanr(j, reference), stats.kendalltau(j, reference)
        cohen_kappa_score(j.astype(int), rounded_h.astype(int), weights="quadratic")
        krippendorff.alpha(np.vstack([j, reference * 3]), level_of_measurement="interval")
        krippendorff.alpha(np.vstack([j * 3, reference * 3]), level_of_measurement="ordinal")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--naive-resamples", type=int, default=3)
    parser.add_argument("--page", action="store_true", help="the Calibration page's data path")
    parser.add_argument(
        "--baseline-ref", default=BASELINE_REF, help="--page: the old reader's commit"
    )
    parser.add_argument("--measure", choices=("new", "old"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--small", action="store_true", help="the sample and a 38 × 38 campaign")
    parser.add_argument("--small-baseline-ref", default=SMALL_BASELINE_REF)
    parser.add_argument("--repeat", type=int, default=3, help="--small: best of this many runs")
    parser.add_argument("--measure-small", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_small:
        print(json.dumps(measure_small(Path(args.measure_small), args.repeat)))
        return
    if args.small:
        print(json.dumps(small_bench(args.small_baseline_ref, args.repeat), indent=2))
        return
    if args.measure:
        print(
            json.dumps(measure_page_path(args.measure, args.db, args.bootstrap, args.baseline_ref))
        )
        return
    if args.page:
        print(json.dumps(page_bench(args.units, args.bootstrap, args.baseline_ref), indent=2))
        return
    load_before = os.getloadavg()
    humans, judges = _data(args.units)
    start, cpu_start = time.perf_counter(), time.process_time()
    intervals = vectorised(humans, judges, args.bootstrap)
    ours, ours_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load_after = os.getloadavg()
    naive_units = min(args.units, NAIVE_UNITS)
    naive_humans, naive_judges = humans[:, :naive_units], [j[:naive_units] for j in judges]
    chunk = next(unit_resample_indices(naive_units, args.naive_resamples, seed=0))
    start = time.perf_counter()
    for index in chunk[: args.naive_resamples]:
        naive_one_resample(naive_humans, naive_judges, index)
    per_resample = (time.perf_counter() - start) / args.naive_resamples * args.units / naive_units
    naive = per_resample * args.bootstrap
    target_seconds = 20 if args.units > 100_000 else 10
    print(
        json.dumps(
            {
                "units": args.units,
                "human_raters": 3,
                "judges": 3,
                "bootstrap": args.bootstrap,
                "metrics_with_intervals": len(intervals),
                "vectorised_seconds": round(ours, 2),
                "vectorised_cpu_seconds": round(ours_cpu, 2),
                "peak_rss_mb": round(peak_mb),
                "naive_seconds_per_resample": round(per_resample, 3),
                "naive_seconds_extrapolated": round(naive, 1),
                "naive_resamples_timed": args.naive_resamples,
                "naive_units_timed": naive_units,
                "speedup": round(naive / ours, 1),
                "target_seconds": target_seconds,
                "within_target": ours <= target_seconds,
                "target_peak_rss_mb": 4096 if args.units > 100_000 else None,
                "load_average_before_after": [load_before, load_after],
                "example_interval_judge0_kendall": [round(v, 4) for v in intervals[(0, "kendall")]],
            },
            indent=2,
        )
    )


BASELINE_REF = "581b5e9~1"
"""The last commit whose campaign frame carried every row's rationale."""
RATIONALE = (
    "Benchmark rationale {n}: the answer names the objects in the picture correctly, counts "
    "them, and explains its reasoning in two clear sentences, as the rubric asks for."
)


def page_bench(units: int, bootstrap: int, baseline_ref: str) -> dict:
    """Seed the campaign, then measure the new and the old page path, each in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="calibration-page-bench-") as folder:
        url = f"sqlite:///{folder}/bench.db"
        started = time.perf_counter()
        rows = seed_judged_campaign(url, units)
        seeded = time.perf_counter() - started
        result: dict = {
            "units": units,
            "rows": rows,
            "bootstrap": bootstrap,
            "seed_seconds": round(seeded, 1),
            "cpus": os.cpu_count(),
        }
        for path in ("new", "old"):
            command = [sys.executable, __file__, "--measure", path, "--db", url]
            command += ["--bootstrap", str(bootstrap), "--baseline-ref", baseline_ref]
            before = os.getloadavg()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            measured = json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr}
            measured["load_average_before_after"] = [before, os.getloadavg()]
            result[path] = measured
    return result


def seed_judged_campaign(url: str, units: int) -> int:
    """A pointwise campaign of ``units`` responses, each answered by 3 annotators and scored by
    2 judges, every answer and judgement with a rationale of about 170 characters."""
    from load_test import seed_campaign
    from sqlalchemy import insert, select
    from sqlmodel import col

    from data.storage.engine import make_engine, session_scope, upgrade_database
    from schemas.tables import Annotation, Judgement, Response, Unit, utcnow

    engine = make_engine(url)
    upgrade_database(engine)
    campaign_id, annotators = seed_campaign(engine, units, 3, overlap=3)
    rng, now = np.random.default_rng(0), utcnow()
    with session_scope(engine) as session:
        connection = session.connection()
        pairs = session.execute(
            select(col(Unit.id), col(Response.id), col(Response.response_id))
            .join(Response, col(Response.id) == col(Unit.response_pk))
            .where(col(Unit.campaign_id) == campaign_id)
        ).all()
        quality = rng.integers(1, 11, size=len(pairs))
        for start in range(0, len(pairs), 20_000):
            chunk = list(enumerate(pairs[start : start + 20_000], start))
            connection.execute(
                insert(Annotation),
                [
                    {"campaign_id": campaign_id, "unit_id": unit, "annotator_id": annotator,
                     "score": float(np.clip(quality[n] + (n + a) % 3 - 1, 1, 10)),
                     "rationale": RATIONALE.format(n=n), "revision": 1, "is_live": True, "meta": {},
                     "created_at": now}
                    for n, (unit, _, _) in chunk for a, annotator in enumerate(annotators)
                ],
            )  # fmt: skip
            connection.execute(
                insert(Judgement),
                [
                    {"judge": judge, "protocol": "alignmmbench", "unit_key": f"r:{rid}",
                     "response_pk": pk, "score": float(np.clip(quality[n] + n % (j + 3), 1, 10)),
                     "rationale": RATIONALE.format(n=n), "usage": {}, "meta": {}, "created_at": now}
                    for n, (_, pk, rid) in chunk for j, judge in enumerate(("bench-a", "bench-b"))
                ],
            )  # fmt: skip
    engine.dispose()
    return len(pairs) * 5


def measure_page_path(path: str, url: str, bootstrap: int, baseline_ref: str) -> dict:
    """One path, in this (fresh) process: seconds to read, to calibrate, peak memory."""
    import pickle

    from annotate_app import calibration_worker as worker
    from data.readmodels.campaign_input import campaign_version
    from data.storage.engine import make_engine, read_scope

    engine = make_engine(url)
    with read_scope(engine) as session:
        scope = worker.CampaignScope(url, 1, campaign_version(session, 1))
    start = time.perf_counter()
    if path == "new":  # what the worker process does; the page receives only the results
        overview = worker._overview(scope)
        read = time.perf_counter() - start
        page = worker._calibration(scope, {"bootstrap": bootstrap})
        received = len(pickle.dumps(overview)) + len(pickle.dumps(page))
        rows, report = overview.rows, page.report
    else:  # before: the whole frame, every rationale included, read in the page's process
        from calibration import CalibrationOptions, calibrate
        from data.readmodels.frames import campaign_reference_overrides
        from schemas.protocols import ALIGNMMBENCH

        old = _module_at(baseline_ref, "data/readmodels/frames.py", "old_frames")
        with read_scope(engine) as session:
            frame = old.campaign_judgement_frame(session, 1)
            overrides = campaign_reference_overrides(session, 1)
        read = time.perf_counter() - start
        options = CalibrationOptions(protocol=ALIGNMMBENCH, bootstrap=bootstrap)
        report = calibrate(frame, options, overrides=overrides)
        received, rows = None, len(frame)
    total = time.perf_counter() - start
    assert report is not None and all(  # both paths show the listed units' rationales
        details.disagreements["human_rationales"].map(len).all()
        for details in report.details.values()
    )
    return {
        "path": path,
        "frame_rows": rows,
        "read_seconds": round(read, 2),
        "read_and_calibrate_seconds": round(total, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "bytes_sent_to_the_page": received,
    }


SMALL_BASELINE_REF = "d3e6eb3"
"""The last commit before issue 26's speed-up of small, wide calibrations."""


def small_bench(baseline_ref: str, repeat: int) -> dict:
    """Seed the sample project and the 38 × 38 campaign once; measure both trees on them."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="calibration-small-bench-") as folder:
        data = Path(folder)
        seed_small(data)
        old_tree = data / "baseline"
        subprocess.run(
            ["git", "-C", str(root), "worktree", "add", "--detach", str(old_tree), baseline_ref],
            capture_output=True,
            check=True,
        )
        try:
            result: dict = {"baseline_ref": baseline_ref, "repeat": repeat, "cpus": os.cpu_count()}
            outputs = {}
            for label, tree in (("new", root), ("old", old_tree)):
                before = os.getloadavg()
                done = subprocess.run(
                    [sys.executable, __file__, "--measure-small", str(data)]
                    + ["--repeat", str(repeat)],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=tree,
                    env={**os.environ, "PYTHONPATH": str(tree)},
                )
                measured = json.loads(done.stdout)
                outputs[label] = measured.pop("output_sha256")
                measured["load_average_before_after"] = [before, os.getloadavg()]
                result[label] = measured
        finally:
            subprocess.run(
                ["git", "-C", str(root), "worktree", "remove", "--force", str(old_tree)],
                capture_output=True,
                check=False,
            )
    result["same_outputs"] = outputs["new"] == outputs["old"]
    result["speedup_total_cpu"] = round(result["old"]["total_cpu"] / result["new"]["total_cpu"], 2)
    return result


def seed_small(folder: Path) -> None:
    """``sample.db``: the bundled sample project; ``wide.db``: 2 units, each answered by 38
    annotators and scored by 38 model judges (the layout of the hostile Markdown seed)."""
    from data.sample.build import build_sample_project
    from data.services.campaigns import CampaignSpec, create_campaign
    from data.storage.engine import make_engine, session_scope, upgrade_database
    from schemas.core import stored_id
    from schemas.tables import Dataset, Item, Judgement, Response, User

    engine = make_engine(f"sqlite:///{folder / 'sample.db'}")
    upgrade_database(engine)
    build_sample_project(engine, data_dir=folder / "data")
    engine.dispose()
    from data import queue

    engine = make_engine(f"sqlite:///{folder / 'wide.db'}")
    upgrade_database(engine)
    width = 38
    with session_scope(engine) as session:
        annotators = [User(name=f"a{n:02d}", password_hash="!", role="annotator") for n in
                      range(width)]  # fmt: skip
        session.add_all(annotators)
        dataset = Dataset(name="wide", benchmark="alignmmbench", description="bench")
        session.add(dataset)
        session.flush()
        responses = []
        for n in range(2):
            item = Item(dataset_id=stored_id(dataset), item_id=f"w-{n}", benchmark="alignmmbench",
                        task="Counting", category="Perception & Understanding", group="g",
                        history=[], question=[{"type": "text", "text": f"Question {n}"}],
                        reference=None, meta={}, content_sha256=f"{n:064d}")  # fmt: skip
            session.add(item)
            session.flush()
            response = Response(response_id=f"w-{n}/m", item_pk=stored_id(item), model="m",
                                content=[{"type": "text", "text": "answer"}], meta={},
                                content_sha256=f"{n + 2:064d}")  # fmt: skip
            session.add(response)
            responses.append(response)
        session.flush()
        campaign = create_campaign(
            session,
            CampaignSpec(name="wide", dataset="wide", protocol="alignmmbench", overlap=width),
        )
        for n, annotator in enumerate(annotators):
            for _ in range(2):
                view = queue.next_unit(session, stored_id(campaign), stored_id(annotator))
                assert view is not None
                queue.submit(
                    session,
                    view.assignment_id,
                    stored_id(annotator),
                    score=float(1 + n % 10),
                    rationale=f"Annotator {n} explains the score in a sentence.",
                )
        for n in range(width):
            for response in responses:
                session.add(Judgement(judge=f"judge-{n:02d}", protocol="alignmmbench",
                                      unit_key=f"r:{response.response_id}",
                                      response_pk=response.id, score=float(1 + (n * 3) % 10),
                                      prompt_id="p@1"))  # fmt: skip
    engine.dispose()


def measure_small(folder: Path, repeat: int) -> dict:
    """In this process (this tree's code): CPU seconds of each computation, best of
    ``repeat``, and one hash of every output."""
    import hashlib

    from annotate_app.campaign_calibration import load_campaign
    from data.storage.campaign_lookup import list_campaigns
    from data.storage.engine import make_engine, read_scope

    digest = hashlib.sha256()
    seconds: dict[str, float] = {}
    for database in ("wide.db", "sample.db"):
        engine = make_engine(f"sqlite:///{folder / database}")
        with read_scope(engine) as session:
            names = [campaign.name for campaign in list_campaigns(session)]
        for name in names:
            source = load_campaign(engine, name)
            if source.frame.empty:
                continue
            runs = _small_runs(engine, source)
            for label, run in runs.items():
                best = float("inf")
                for _ in range(repeat):
                    start = time.process_time()
                    text = run()
                    best = min(best, time.process_time() - start)
                digest.update(text.encode())
                seconds[f"{database}/{name}/{label}"] = round(best, 3)
        engine.dispose()
    import calibration

    return {
        "code": str(Path(calibration.__file__).parent.parent),
        "cpu_seconds": seconds,
        "total_cpu": round(sum(seconds.values()), 2),
        "output_sha256": digest.hexdigest(),
    }


def _small_runs(engine, source) -> dict:
    """The computations ``--small`` times on one campaign, each returning its output's text."""
    from annotate_app.campaign_calibration import calibrate_campaign, judge_audit

    def by_task() -> str:
        report = calibrate_campaign(engine, source, bootstrap=100, by=("task",)).report
        return report.result.to_json()

    return {
        "calibrate": lambda: calibrate_campaign(engine, source).report.result.to_json(),
        "calibrate_b100_by_task": by_task,
        "audit": lambda: judge_audit(engine, source).model_dump_json(),
    }


def _module_at(ref: str, path: str, name: str):
    """The module ``path`` as it was at commit ``ref`` (``git show``), imported as ``name``."""
    source = subprocess.run(
        ["git", "show", f"{ref}:{path}"], capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType(name)
    exec(compile(source, f"{ref}:{path}", "exec"), module.__dict__)
    return module


if __name__ == "__main__":
    main()
