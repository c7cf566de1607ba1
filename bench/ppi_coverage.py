"""Prediction-powered model scores, measured on real data: coverage, width and effective labels.

HANNA (``tests/fixtures/hanna``: 1,056 stories = 96 prompts × 11 systems, three human raters per
story, LLM judges): the target is each system's mean human score per criterion (the three raters'
mean per story, averaged over the system's 96 stories). For n labelled stories drawn uniformly at
random from all 1,056 (so about n/11 per system), each system's humans-only and PPI++ estimates
(:func:`calibration.ppi.prediction_powered_mean`, the product's code; the judge's score from its
first prompt on every story) and their 95% intervals are compared with the full-data human value
over the stories the judge scored (the product's target: the humans' mean over the judge's units),
each interval five ways (:data:`VARIANTS`): ppi_py's superpopulation normal interval (the product
before the corrections), with the finite-population correction only, with Student's t only, with
both and λ from each system's own labels, and the product (both, and the judge's one λ from all
systems' labels of the draw, each system centred on its own means:
:func:`calibration.model_estimates.judge_tuning`). Per variant:

* **coverage**: the share of (draw, system) intervals that hold it;
* **width ratio**: mean PPI++ width / mean humans-only width;
* **effective labels**: the mean over draws and systems of n_system × V₀ / V.

A system with fewer than 2 labelled stories in a draw has no estimate (counted as ``skipped``).
The judges' -1 (no score read) are left out of the units they would judge.

PandaLM (``tests/fixtures/pandalm``: 999 pairs of five models' responses, three human labels,
GPT-3.5 and PandaLM-7B as judges): the target is each model's win rate over the pairs it is in
by the humans' majority (a tie when there is none; a tie counts 0.5), the judge's verdict the
same way (GPT-3.5's unparsed verdicts leave the pair out of its units); n labelled pairs drawn
from the 999, the same measures per model.

Usage: ``python bench/ppi_coverage.py --draws 1000 --out results.json``, then
``python bench/ppi_coverage.py --summary results.json`` for the tables of MODEL_SCORES.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from calibration.model_estimates import judge_tuning
from calibration.ppi import prediction_powered_mean

HANNA = Path(__file__).resolve().parents[1] / "tests/fixtures/hanna"
PANDALM = Path(__file__).resolve().parents[1] / "tests/fixtures/pandalm"
PANDALM_JUDGES = ("gpt-3.5-turbo", "pandalm-7b")
_WIN = {"1": 1.0, "0": 0.5, "2": 0.0}
"""PandaLM's labels as response 1's win: 1 = response 1, 0 = tie, 2 = response 2."""
CRITERIA = ("RE", "CH", "EM", "SU", "EG", "CX")
JUDGES = ("Beluga-13B", "Mistral-7B", "Llama-13B", "ChatGPT")
SIZES = (50, 100, 200, 400)
VARIANTS = {
    "ppi_py": {"finite_population": False, "student_t": False, "judge_lambda": False},
    "finite_population": {"finite_population": True, "student_t": False, "judge_lambda": False},
    "student_t": {"finite_population": False, "student_t": True, "judge_lambda": False},
    "own_tuning": {"finite_population": True, "student_t": True, "judge_lambda": False},
    "product": {"finite_population": True, "student_t": True, "judge_lambda": True},
}
"""The intervals compared: ppi_py's (superpopulation variance, normal quantile), each correction
alone, both with λ estimated from each model's own labels (n − 2 degrees of freedom), and the
product: both, with the judge's one λ estimated from every model's labels of the draw, each
model's centred on its own means (:func:`calibration.model_estimates.judge_tuning`), and taken as
fixed (n − 1)."""


def measure(hanna: pd.DataFrame, criterion: str, judge: str, n: int, draws: int, seed: int) -> dict:
    """Coverage, width ratio and effective labels of one judge on one criterion at ``n``."""
    human = hanna[[f"Human {k} {criterion}" for k in (1, 2, 3)]].to_numpy(float).mean(axis=1)
    scores = hanna[f"{judge} {criterion} 1"].to_numpy(float)
    scored = scores >= 0
    systems = hanna["system"].to_numpy(dtype=object)
    result = _measure(human, np.where(scored, scores, np.nan), systems, n, draws, seed)
    return {"criterion": criterion, "judge": judge, "n": n, **result}


def pandalm_win_rates(folder: Path = PANDALM) -> tuple[np.ndarray, dict[str, np.ndarray], list]:
    """Per pair: response 1's win by the humans' majority, by each judge (NaN: unparsed), and
    the two models."""
    rows = json.loads((folder / "testset-v1.json").read_text("utf-8"))
    gpt = {
        r["idx"]: r["gpt_result"]
        for r in json.loads((folder / "gpt-3.5-turbo-testset-v1.json").read_text("utf-8"))
    }
    panda = {
        r["idx"]: r["pandalm_result"]
        for r in json.loads((folder / "pandalm-7b-testset-v1.json").read_text("utf-8"))
    }
    human = []
    for row in rows:
        labels = [str(row[f"annotator{k}"]) for k in (1, 2, 3)]
        top, count = max(((x, labels.count(x)) for x in set(labels)), key=lambda p: p[1])
        human.append(_WIN[top] if count >= 2 else 0.5)
    gpt_map = {"1": 1.0, "2": 0.0, "Tie": 0.5}
    judges = {
        "gpt-3.5-turbo": np.array([gpt_map.get(gpt[r["idx"]], np.nan) for r in rows]),
        "pandalm-7b": np.array([_WIN.get(str(panda[r["idx"]]), np.nan) for r in rows]),
    }
    models = [tuple(r["cmp_key"].split("_")) for r in rows]
    return np.array(human), judges, models


def measure_pairwise(
    human: np.ndarray, judge: np.ndarray, models: list, n: int, draws: int, seed: int
) -> dict:
    """Coverage, width ratio and effective labels of each model's win rate at ``n`` pairs."""
    names = sorted({m for pair in models for m in pair})
    first = np.array([pair[0] for pair in models], dtype=object)
    second = np.array([pair[1] for pair in models], dtype=object)
    ys, fs, groups = [], [], []
    for name in names:  # one row per (model, pair it is in): the model's win
        mine = (first == name) | (second == name)
        flip = first[mine] == name
        ys.append(np.where(flip, human[mine], 1 - human[mine]))
        fs.append(np.where(flip, judge[mine], 1 - judge[mine]))
        groups.append(np.flatnonzero(mine))
    return _measure_groups(names, groups, ys, fs, len(human), n, draws, seed)


def _measure(
    human: np.ndarray, scores: np.ndarray, systems: np.ndarray, n: int, draws: int, seed: int
) -> dict:
    names = sorted(set(systems))
    groups = [np.flatnonzero(systems == name) for name in names]
    ys = [human[g] for g in groups]
    fs = [scores[g] for g in groups]
    return _measure_groups(names, groups, ys, fs, len(human), n, draws, seed)


def _measure_groups(
    names: list,
    groups: list,
    ys: list,
    fs: list,
    units: int,
    n: int,
    draws: int,
    seed: int,
) -> dict:
    """Each group's units are ``groups[i]`` (indices into the units drawn from), its human
    values ``ys[i]`` and judge values ``fs[i]`` (NaN: not scored). The target of a group is the
    humans' mean over the units its judge scored. ``units``: how many units the draws
    choose from (a pair is one unit, in two groups)."""
    truth = [float(y[~np.isnan(f)].mean()) for y, f in zip(ys, fs, strict=True)]
    rng = np.random.default_rng(seed)
    keys = [(v, k) for v in VARIANTS for k in ("humans_only", "ppi")]
    covered = dict.fromkeys(keys, 0)
    widths = dict.fromkeys(keys, 0.0)
    effective = dict.fromkeys(VARIANTS, 0.0)
    labelled, estimates, skipped = 0, 0, 0
    for _ in range(draws):
        chosen = np.zeros(units, dtype=bool)
        chosen[rng.choice(units, size=n, replace=False)] = True
        # the judge's λ, as the product estimates it: from every group, labelled where drawn
        judge_lambda = judge_tuning(
            [(np.where(chosen[g], y, np.nan), f) for g, y, f in zip(groups, ys, fs, strict=True)]
        )
        for index in range(len(names)):
            y, f = ys[index], fs[index]
            scored = ~np.isnan(f)
            lab, unlab = scored & chosen[groups[index]], scored & ~chosen[groups[index]]
            if lab.sum() < 2 or unlab.sum() == 0:
                skipped += 1
                continue
            for variant, options in VARIANTS.items():
                found = prediction_powered_mean(
                    y[lab], f[lab], f[unlab],
                    tuning=judge_lambda if options["judge_lambda"] else None,
                    finite_population=options["finite_population"],
                    student_t=options["student_t"],
                )  # fmt: skip
                for key, estimate in (
                    ("humans_only", found.humans_only),
                    ("ppi", found.prediction_powered),
                ):
                    covered[variant, key] += estimate.low <= truth[index] <= estimate.high
                    widths[variant, key] += estimate.high - estimate.low
                effective[variant] += found.effective_labels
            labelled += int(lab.sum())
            estimates += 1
    return {
        "estimates": estimates,
        "skipped": skipped,
        "mean_labelled_per_model": labelled / estimates,
        "variants": {
            variant: {
                "coverage_humans_only": covered[variant, "humans_only"] / estimates,
                "coverage_humans_only_interval": _wilson(
                    covered[variant, "humans_only"], estimates
                ),
                "coverage_ppi": covered[variant, "ppi"] / estimates,
                "coverage_ppi_interval": _wilson(covered[variant, "ppi"], estimates),
                "mean_width_humans_only": widths[variant, "humans_only"] / estimates,
                "mean_width_ppi": widths[variant, "ppi"] / estimates,
                "width_ratio": widths[variant, "ppi"] / widths[variant, "humans_only"],
                "mean_effective_labels_per_model": effective[variant] / estimates,
            }
            for variant in VARIANTS
        },
    }


def _wilson(successes: int, total: int, z: float = 1.96) -> list[float]:
    """The Wilson 95% interval of a proportion (the coverage's Monte Carlo uncertainty)."""
    p = successes / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * np.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return [float(centre - half), float(centre + half)]


def summary(report: dict) -> str:
    """MODEL_SCORES.md's tables from a run's JSON: per variant and n, HANNA's coverages pooled
    over the configurations (covered over all intervals) with their range, the mean width ratio
    and effective labels with their range, and how many configurations' Wilson interval of the
    PPI++ coverage reaches into [0.93, 0.97]; PandaLM's rows as they are."""
    lines = []
    for variant in VARIANTS:
        lines += [
            f"HANNA, {variant}",
            "| n | per system | coverage PPI++ (range) | coverage humans-only (range) | "
            "width ratio (range) | mean PPI++ width | effective labels (range) | "
            "configs reaching [0.93, 0.97] |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for n in SIZES:
            rows = [r for r in report["results"] if r["n"] == n]
            if not rows:
                continue
            parts = [r["variants"][variant] for r in rows]
            counts = np.array([r["estimates"] for r in rows], dtype=float)

            reaching = sum(
                p["coverage_ppi_interval"][1] >= 0.93 and p["coverage_ppi_interval"][0] <= 0.97
                for p in parts
            )
            per_system = np.mean([r["mean_labelled_per_model"] for r in rows])
            width = np.mean([p["mean_width_ppi"] for p in parts])
            cells = [
                str(n),
                f"{per_system:.1f}",
                _pooled(parts, counts, "coverage_ppi"),
                _pooled(parts, counts, "coverage_humans_only"),
                _spread(parts, "width_ratio", 3),
                f"{width:.3f}",
                _spread(parts, "mean_effective_labels_per_model", 1),
                f"{reaching} of {len(rows)}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "PandaLM",
        "| judge | n | per model | variant | coverage PPI++ [95%] | coverage humans-only [95%] | "
        "width ratio | mean PPI++ width | effective labels |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["pandalm"]:
        for variant in VARIANTS:
            v = row["variants"][variant]
            ppi, humans = v["coverage_ppi_interval"], v["coverage_humans_only_interval"]
            lines.append(
                f"| {row['judge']} | {row['n']} | {row['mean_labelled_per_model']:.1f} | "
                f"{variant} | {v['coverage_ppi']:.3f} [{ppi[0]:.3f}, {ppi[1]:.3f}] | "
                f"{v['coverage_humans_only']:.3f} [{humans[0]:.3f}, {humans[1]:.3f}] | "
                f"{v['width_ratio']:.3f} | {v['mean_width_ppi']:.4f} | "
                f"{v['mean_effective_labels_per_model']:.1f} |"
            )
    return "\n".join(lines)


def _pooled(parts: list[dict], counts: np.ndarray, key: str) -> str:
    """The covered share over all intervals of the configurations, and its range over them."""
    values = np.array([part[key] for part in parts])
    mean = float((values * counts).sum() / counts.sum())
    return f"{mean:.3f} ({values.min():.3f}–{values.max():.3f})"


def _spread(parts: list[dict], key: str, digits: int) -> str:
    """The mean over the configurations, and the range."""
    values = np.array([part[key] for part in parts])
    low, high = values.min(), values.max()
    return f"{values.mean():.{digits}f} ({low:.{digits}f}–{high:.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--criteria", nargs="*", default=list(CRITERIA))
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--summary", type=Path, help="print the tables of this run's JSON, only")
    args = parser.parse_args()
    if args.summary:
        print(summary(json.loads(args.summary.read_text("utf-8"))))
        return
    hanna = pd.read_csv(HANNA / "hanna_human_and_llm_scores_long.csv")
    report: dict = {
        "draws": args.draws,
        "seed": args.seed,
        "variants": VARIANTS,
        "load_average_at_start": os.getloadavg(),
    }
    start = time.perf_counter()
    report["results"] = []
    for criterion in args.criteria:
        for judge in JUDGES:
            for n in SIZES:
                report["results"].append(measure(hanna, criterion, judge, n, args.draws, args.seed))
            _progress(f"HANNA {criterion} {judge}", start)
    human, judges, models = pandalm_win_rates()
    report["pandalm"] = []
    for judge in PANDALM_JUDGES:
        for n in SIZES:
            found = measure_pairwise(human, judges[judge], models, n, args.draws, args.seed)
            report["pandalm"].append({"judge": judge, "n": n, **found})
        _progress(f"PandaLM {judge}", start)
    report["seconds"] = time.perf_counter() - start
    report["load_average_at_end"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    print(text)


def _progress(done: str, start: float) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{done} done, {time.perf_counter() - start:.0f} s, load {load}", file=sys.stderr)


if __name__ == "__main__":
    main()
