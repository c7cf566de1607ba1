"""Judge-guided routing, measured: replay real human labels in the order each routing serves units.

Two cases: PandaLM's test set (``tests/fixtures/pandalm``: 999 pairs, three human labels each,
GPT-3.5 and PandaLM-7B as judges; the reference is the majority of the three labels, a tie
when there is none) and the sample project's finished campaigns (``critiquelab demo``:
synthetic labels and judges, three annotators per unit; reference = calibration's consensus,
the mean score or the majority preference).

For every routing and seed the units are ordered by :func:`data.queue.priority.plan_routing`,
the function the queue stores as ``Unit.priority`` (one implementation). Labels are spent unit
by unit, K at a time (K = labels per unit), in that order: after ``B`` labels the first
``floor(B / K)`` units are complete. ``least-annotated`` (and a routing that falls back to it)
is replayed in a seeded random unit order, standing for an arbitrary import order. This credits
it generously: the live least-annotated queue gives every unit its first label before any gets a
second, so after B < (K - 1) × units labels it has completed no unit at all.

Per routing, evaluated judge and budget, over the seeds:

* **errors found per 100 labels**: complete units on which the judge's verdict differs from
  the reference (pairwise: its mean verdict over both shown orders on the A = 1 / tie = 0.5 /
  B = 0 axis, rounded to A at ≥ 0.75, B at ≤ 0.25, else tie; an unparsed verdict counts as an
  error; pointwise: |score - reference| ≥ 20% of the scale's range), × 100 / B;
* **estimate** of the judge's accuracy (pairwise) or MAE (pointwise) on the estimation units:
  every complete unit, except under ``stratified``, where it is the random-stream prefix
  (:func:`data.queue.priority.estimation_sample`); its bias (mean over seeds of estimate minus
  the value on all units), the mean width of its 95% interval (Wilson for accuracy, mean ±
  1.96 s/√n for MAE) and the share of seeds whose interval holds the full-data value.

On PandaLM, ``expected_ratio`` (:func:`expected_ratios`) adds the target's ratio in expectation
over the random orders, with a bootstrap interval over the pairs.

    python bench/routing_sim.py                  # both cases, 20 seeds, JSON on stdout
    python bench/routing_sim.py --case pandalm --seeds 5 --budgets 150 300
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling pandalm
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration.reference import ConsensusRule, consensus  # noqa: E402
from data.queue.priority import (  # noqa: E402
    PREFERENCE_AXIS,
    ROUTING_MODES,
    JudgeReading,
    estimation_sample,
    is_random_position,
    plan_routing,
    random_order,
    unit_signal,
)
from schemas.core import stored_id  # noqa: E402
from schemas.disagreements import DEFAULT_THRESHOLD_SHARE  # noqa: E402
from schemas.intervals import wilson_interval  # noqa: E402

PAIRWISE_CODES = {"A": 0.0, "B": 1.0, "tie": 2.0}
"""calibration's pairwise label codes (:mod:`calibration.pairwise`)."""
POINTWISE_ERROR = DEFAULT_THRESHOLD_SHARE
"""A pointwise judge errs on a unit when it is this share of the scale's range off or more (the
default disagreement threshold, which the disagreement routing's cap is built on)."""
DEFAULT_BUDGETS = (150, 300, 600, 1200)
STRATIFIED_SHARE = 0.2


@dataclass(frozen=True)
class Case:
    """Units with their human labels and the judges' readings."""

    name: str
    pairwise: bool
    units: tuple[int, ...]
    labels_per_unit: int
    reference: dict[int, float]
    """Unit → reference (pairwise code 0 = A, 1 = B, 2 = tie; pointwise score)."""
    readings: dict[int, dict[str, JudgeReading]]
    judges: tuple[str, ...]
    scale: tuple[float, float]


def judge_error(case: Case, judge: str, unit: int) -> float:
    """Pairwise: 1 when the judge is wrong on the unit (or gave no verdict), else 0.
    Pointwise: the absolute error of its mean score (NaN without one)."""
    reading = case.readings.get(unit, {}).get(judge)
    mean = None if reading is None else reading.mean
    if case.pairwise:
        if mean is None:
            return 1.0
        verdict = "A" if mean >= 0.75 else "B" if mean <= 0.25 else "tie"
        return float(PAIRWISE_CODES[verdict] != case.reference[unit])
    if mean is None:
        return math.nan
    low, high = case.scale
    return abs(low + mean * (high - low) - case.reference[unit])


def is_error(case: Case, judge: str, unit: int) -> bool:
    error = judge_error(case, judge, unit)
    if case.pairwise:
        return error == 1.0
    return not math.isnan(error) and error >= POINTWISE_ERROR * (case.scale[1] - case.scale[0])


def serving_order(case: Case, routing: str, seed: int) -> tuple[list[int], str]:
    """The unit order a routing serves (the queue's plan), and its note."""
    share = STRATIFIED_SHARE if routing == "stratified" else None
    plan = plan_routing(
        routing, case.units, case.readings, judges=case.judges, share=share, seed=seed
    )
    order = list(plan.order) if plan.order else random_order(case.units, seed + 10_000)
    return order, plan.note


def estimate(case: Case, judge: str, units: Sequence[int]) -> tuple[float, float, float]:
    """(value, low, high): accuracy with a Wilson 95% interval, or MAE ± 1.96 s/√n."""
    errors = np.array([judge_error(case, judge, u) for u in units], dtype=float)
    errors = errors[~np.isnan(errors)]
    n = len(errors)
    if n == 0:
        return math.nan, math.nan, math.nan
    if case.pairwise:
        right = n - int(errors.sum())
        return right / n, *wilson_interval(right, n)
    mae = float(errors.mean())
    half = 1.96 * float(errors.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
    return mae, mae - half, mae + half


def replay(case: Case, judge: str, routing: str, seed: int, budget: int) -> dict[str, float]:
    """One seed, one budget: errors found per 100 labels, the estimate and its interval."""
    order, _ = serving_order(case, routing, seed)
    complete = order[: budget // case.labels_per_unit]
    found = sum(is_error(case, judge, unit) for unit in complete)
    if routing == "stratified":
        estimation = estimation_sample(case.units, set(complete), seed)
    else:
        estimation = complete
    value, low, high = estimate(case, judge, estimation)
    return {
        "errors_found_per_100_labels": 100 * found / budget,
        "estimate": value,
        "low": low,
        "high": high,
        "estimation_units": len(estimation),
    }


def summarise(case: Case, seeds: int, budgets: Sequence[int]) -> dict[str, object]:
    """Every routing × judge × budget over ``seeds`` seeds, with the full-data values."""
    result: dict[str, object] = {
        "units": len(case.units),
        "labels_per_unit": case.labels_per_unit,
        "judges": list(case.judges),
        "notes": {r: serving_order(case, r, 0)[1] for r in ROUTING_MODES},
    }
    per_judge: dict[str, object] = {}
    for judge in case.judges:
        full = estimate(case, judge, case.units)[0]
        total_errors = sum(is_error(case, judge, u) for u in case.units)
        rows: dict[str, object] = {}
        for routing in ROUTING_MODES:
            rows[routing] = {
                str(budget): _over_seeds(case, judge, routing, seeds, budget, full)
                for budget in budgets
                if budget // case.labels_per_unit <= len(case.units)
            }
        per_judge[judge] = {
            "full_data_value": full,
            "metric": "accuracy" if case.pairwise else "mae",
            "errors_on_all_units": total_errors,
            "routings": rows,
        }
    result["by_judge"] = per_judge
    return result


def _over_seeds(
    case: Case, judge: str, routing: str, seeds: int, budget: int, full: float
) -> dict[str, float | list[float]]:
    runs = [replay(case, judge, routing, seed, budget) for seed in range(seeds)]
    estimates = np.array([r["estimate"] for r in runs])
    lows, highs = np.array([r["low"] for r in runs]), np.array([r["high"] for r in runs])
    bias = float(np.nanmean(estimates) - full)
    width = float(np.nanmean(highs - lows))
    found = [r["errors_found_per_100_labels"] for r in runs]
    return {
        "errors_found_per_100_labels": round(float(np.mean(found)), 2),
        "errors_found_seed_range": [round(min(found), 2), round(max(found), 2)],
        "estimate_bias": round(bias, 4),
        "estimate_interval_width": round(width, 4),
        "bias_within_half_width": bool(abs(bias) <= width / 2),
        "coverage": round(float(np.mean((lows <= full) & (full <= highs))), 2),
        "estimation_units": float(np.mean([r["estimation_units"] for r in runs])),
    }


# --- the cases ----------------------------------------------------------------------------------


def pandalm_case(folder: Path | None = None) -> Case:
    """PandaLM's 999 pairs: the majority of three human labels, GPT-3.5 and PandaLM-7B."""
    from pandalm import GPT_FILE, GPT_LABELS, HUMAN_LABELS, PANDALM_DIR, PANDALM_FILE, TESTSET

    folder = folder or PANDALM_DIR
    rows = json.loads((folder / TESTSET).read_text(encoding="utf-8"))
    gpt = {r["idx"]: GPT_LABELS.get(str(r["gpt_result"])) for r in _load(folder / GPT_FILE)}
    panda = {r["idx"]: HUMAN_LABELS.get(r["pandalm_result"]) for r in _load(folder / PANDALM_FILE)}
    humans = np.array(
        [[PAIRWISE_CODES[HUMAN_LABELS[r[f"annotator{k}"]]] for r in rows] for k in (1, 2, 3)]
    )
    reference = consensus(humans, "majority", no_majority="tie", pairwise=True)
    units = tuple(int(r["idx"]) for r in rows)
    readings = {
        unit: {
            name: JudgeReading(() if v is None else (PREFERENCE_AXIS[v],))
            for name, v in (("gpt-3.5-turbo", gpt.get(unit)), ("pandalm-7b", panda.get(unit)))
        }
        for unit in units
    }
    return Case(
        "pandalm", True, units, 3, dict(zip(units, map(float, reference), strict=True)),
        readings, ("gpt-3.5-turbo", "pandalm-7b"), (0.0, 1.0),
    )  # fmt: skip


def _load(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))


def sample_cases() -> list[Case]:
    """The sample project's finished campaigns, built in a throw-away SQLite database."""
    from sqlmodel import Session, col, select

    from data.readmodels.frames import campaign_judges
    from data.sample import build_sample_project
    from data.services.routing import judge_readings
    from data.storage.campaign_lookup import campaign_protocol
    from data.storage.engine import make_engine, upgrade_database
    from schemas.tables import Annotation, Campaign, Unit

    cases = []
    with tempfile.TemporaryDirectory(prefix="routing-sim-") as folder:
        os.environ["CRITIQUELAB_DATA_DIR"] = str(Path(folder) / "data")
        engine = make_engine(f"sqlite:///{folder}/sample.db")
        upgrade_database(engine)
        build_sample_project(engine, data_dir=Path(folder) / "data")
        with Session(engine) as session:
            finished = session.exec(
                select(Campaign).where(Campaign.status == "closed").order_by(Campaign.name)
            ).all()
            for campaign in finished:
                protocol = campaign_protocol(campaign)
                pairwise = not protocol.is_pointwise
                ids = session.exec(
                    select(col(Unit.id)).where(Unit.campaign_id == campaign.id)
                ).all()
                units = tuple(unit for unit in ids if unit is not None)  # stored rows: all set
                index = {u: i for i, u in enumerate(units)}
                live = session.exec(
                    select(Annotation.unit_id, Annotation.score, Annotation.preference).where(
                        Annotation.campaign_id == campaign.id, col(Annotation.is_live)
                    )
                ).all()
                # a missing score is None, which the matrix below reads as NaN
                per_unit: dict[int, list[float | None]] = {u: [] for u in units}
                for unit, score, preference in live:
                    if pairwise:
                        assert preference is not None  # a pairwise answer always has one
                        per_unit[unit].append(PAIRWISE_CODES[preference])
                    else:
                        per_unit[unit].append(score)
                k = max(len(v) for v in per_unit.values())
                matrix = np.full((k, len(units)), np.nan)
                for unit, values in per_unit.items():
                    matrix[: len(values), index[unit]] = values
                rule: ConsensusRule = "majority" if pairwise else "mean"
                reference = consensus(matrix, rule, no_majority="tie", pairwise=pairwise)
                judges = tuple(campaign_judges(session, stored_id(campaign)))
                scale = (0.0, 1.0) if pairwise else protocol.bounds
                cases.append(
                    Case(
                        campaign.name, pairwise, units, k,
                        dict(zip(units, map(float, reference), strict=True)),
                        judge_readings(session, campaign, judges), judges, scale,
                    )
                )  # fmt: skip
        engine.dispose()
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=("pandalm", "sample", "all"), default="all")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budgets", type=int, nargs="+", default=list(DEFAULT_BUDGETS))
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    started = time.perf_counter()
    report: dict[str, object] = {
        "command": "python bench/routing_sim.py " + " ".join(sys.argv[1:]),
        "load_average_at_start": os.getloadavg(),
        "seeds": args.seeds,
        "stratified_share": STRATIFIED_SHARE,
        "random_position_check": [t for t in range(10) if is_random_position(t, STRATIFIED_SHARE)],
    }
    cases = []
    if args.case in ("pandalm", "all"):
        cases.append(pandalm_case())
    if args.case in ("sample", "all"):
        cases += sample_cases()
    report["cases"] = {case.name: summarise(case, args.seeds, args.budgets) for case in cases}
    if "pandalm" in report["cases"]:  # type: ignore[operator]
        report["targets"] = pandalm_targets(report["cases"]["pandalm"], args.budgets)  # type: ignore[index]
        report["expected_ratio"] = expected_ratios(cases[0], args.budgets)
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["load_average_at_end"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


def pandalm_targets(result: dict, budgets: Sequence[int]) -> dict[str, object]:
    """Issue 15's targets on PandaLM, per judge and budget: judge-disagreement finds ≥ 1.5× the
    errors per 100 labels of least-annotated; stratified keeps its bias within its interval."""
    out: dict[str, object] = {}
    for judge, data in result["by_judge"].items():
        routings = data["routings"]
        for budget in map(str, budgets):
            if budget not in routings["least-annotated"]:
                continue
            base = routings["least-annotated"][budget]["errors_found_per_100_labels"]
            guided = routings["judge-disagreement"][budget]["errors_found_per_100_labels"]
            stratified = routings["stratified"][budget]
            out[f"{judge}@{budget}"] = {
                "disagreement_over_least_annotated": round(guided / base, 2) if base else None,
                "meets_1_5x": bool(base and guided / base >= 1.5),
                "stratified_bias_within_half_width": stratified["bias_within_half_width"],
            }
    return out


def expected_ratios(
    case: Case, budgets: Sequence[int], boot: int = 2000, seed: int = 0
) -> dict[str, object]:
    """judge-disagreement's errors found over least-annotated's, in expectation over the seeds'
    random orders and tie-breaks, per judge and budget, with a 95% percentile interval from a
    bootstrap over the case's units (the data's own uncertainty, which the seeds do not show).

    Expected errors among the first n = B / K units of an order whose units are served by signal
    level, randomly within a level: the levels served in full, plus (n - units before) × the
    error share of the level served in part; least-annotated (a random order): n × the error
    share of all units. Signals are the queue's (:func:`data.queue.priority.unit_signal`).
    """
    units = list(case.units)
    signal = [unit_signal("disagreement", case.readings.get(u, {}), case.judges) for u in units]
    levels = sorted({-1.0 if v is None else round(v, 6) for v in signal}, reverse=True)
    member = np.zeros((len(units), len(levels)))
    for row, value in enumerate(signal):
        member[row, levels.index(-1.0 if value is None else round(value, 6))] = 1.0
    rng = np.random.default_rng(seed)
    weights = np.vstack(
        [np.ones(len(units))]
        + [np.bincount(rng.integers(0, len(units), len(units)), minlength=len(units))
           for _ in range(boot)]
    )  # fmt: skip
    sizes = weights @ member
    before = np.cumsum(sizes, axis=1) - sizes
    out: dict[str, object] = {}
    for judge in case.judges:
        wrong = np.array([is_error(case, judge, u) for u in units], dtype=float)
        errors = (weights * wrong) @ member
        for budget in budgets:
            n = budget // case.labels_per_unit
            taken = np.clip(n - before, 0, sizes)
            guided = np.sum(np.where(sizes > 0, taken * errors / np.maximum(sizes, 1), 0), axis=1)
            base = n * errors.sum(axis=1) / sizes.sum(axis=1)
            ratio = np.divide(guided, base, out=np.full_like(base, np.nan), where=base > 0)
            low, high = np.nanpercentile(ratio[1:], [2.5, 97.5])  # draws without errors: none
            out[f"{judge}@{budget}"] = {
                "ratio": round(float(ratio[0]), 3),
                "ci95": [round(float(low), 3), round(float(high), 3)],
                "bootstrap": int(np.isfinite(ratio[1:]).sum()),
            }
    return out


if __name__ == "__main__":
    main()
