"""Prediction-powered model scores, measured on real data: coverage, width and effective labels.

HANNA (``tests/fixtures/hanna``: 1,056 stories = 96 prompts × 11 systems, three human raters per
story, LLM judges): the target is each system's mean human score per criterion (the three raters'
mean per story, averaged over the system's 96 stories). For n labelled stories drawn uniformly at
random from all 1,056 (so about n/11 per system), each system's humans-only and PPI++ estimates
(:func:`calibration.ppi.prediction_powered_mean`, the product's code; the judge's score from its
first prompt on every story) and their 95% intervals are compared with the full-data human value:

* **coverage**: the share of (draw, system) intervals that hold it;
* **width ratio**: mean PPI++ width / mean humans-only width;
* **effective labels**: the mean over draws and systems of n_system × V₀ / V.

A system with fewer than 2 labelled stories in a draw has no estimate (counted as ``skipped``).
The judges' -1 (no score read) are left out of the units they would judge.

Usage: ``python bench/ppi_coverage.py --draws 200 --out results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from calibration.ppi import prediction_powered_mean

HANNA = Path(__file__).resolve().parents[1] / "tests/fixtures/hanna"
CRITERIA = ("RE", "CH", "EM", "SU", "EG", "CX")
JUDGES = ("Beluga-13B", "Mistral-7B", "Llama-13B", "ChatGPT")
SIZES = (50, 100, 200, 400)


def measure(hanna: pd.DataFrame, criterion: str, judge: str, n: int, draws: int, seed: int) -> dict:
    """Coverage, width ratio and effective labels of one judge on one criterion at ``n``."""
    human = hanna[[f"Human {k} {criterion}" for k in (1, 2, 3)]].to_numpy(float).mean(axis=1)
    scores = hanna[f"{judge} {criterion} 1"].to_numpy(float)
    scored = scores >= 0
    systems = hanna["system"].to_numpy(dtype=object)
    names = sorted(set(systems))
    truth = {s: float(human[systems == s].mean()) for s in names}
    rng = np.random.default_rng(seed)
    covered = {"humans_only": 0, "ppi": 0}
    widths = {"humans_only": 0.0, "ppi": 0.0}
    effective, labelled, estimates, skipped = 0.0, 0, 0, 0
    for _ in range(draws):
        chosen = np.zeros(len(hanna), dtype=bool)
        chosen[rng.choice(len(hanna), size=n, replace=False)] = True
        for system in names:
            mine = (systems == system) & scored
            lab, unlab = mine & chosen, mine & ~chosen
            if lab.sum() < 2 or unlab.sum() == 0:
                skipped += 1
                continue
            found = prediction_powered_mean(human[lab], scores[lab], scores[unlab])
            for key, estimate in (
                ("humans_only", found.humans_only),
                ("ppi", found.prediction_powered),
            ):
                covered[key] += estimate.low <= truth[system] <= estimate.high
                widths[key] += estimate.high - estimate.low
            effective += found.effective_labels
            labelled += found.n_labelled
            estimates += 1
    return {
        "criterion": criterion,
        "judge": judge,
        "n": n,
        "estimates": estimates,
        "skipped": skipped,
        "coverage_humans_only": covered["humans_only"] / estimates,
        "coverage_ppi": covered["ppi"] / estimates,
        "coverage_ppi_interval": _wilson(covered["ppi"], estimates),
        "width_ratio": widths["ppi"] / widths["humans_only"],
        "mean_labelled_per_system": labelled / estimates,
        "mean_effective_labels_per_system": effective / estimates,
    }


def _wilson(successes: int, total: int, z: float = 1.96) -> list[float]:
    """The Wilson 95% interval of a proportion (the coverage's Monte Carlo uncertainty)."""
    p = successes / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * np.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return [float(centre - half), float(centre + half)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--criteria", nargs="*", default=list(CRITERIA))
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    hanna = pd.read_csv(HANNA / "hanna_human_and_llm_scores_long.csv")
    report: dict = {
        "draws": args.draws,
        "seed": args.seed,
        "load_average_at_start": os.getloadavg(),
    }
    start = time.perf_counter()
    report["results"] = [
        measure(hanna, criterion, judge, n, args.draws, args.seed)
        for criterion in args.criteria
        for judge in JUDGES
        for n in SIZES
    ]
    report["seconds"] = time.perf_counter() - start
    report["load_average_at_end"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    print(text)


if __name__ == "__main__":
    main()
