"""Calibration speed: N units × 3 human raters × 3 judges, every pointwise metric, B = 1000.

Prints JSON: the vectorised library's time (all pointwise metrics and human alpha with their
bootstrap intervals: wall and CPU seconds, and the process's peak resident memory), and in the
same run the naive way — ``krippendorff.alpha`` and scipy per resample in a Python loop — timed
on a subsample of resamples (on at most 100k units, scaled linearly to N: the reference packages
need tens of GB at a million units) and extrapolated to B, with the ratio.
Run: ``.venv/bin/python bench/calibrate_bench.py [--units 100000|1000000] [--bootstrap 1000]``.
Targets: 10 s at 100k units, 20 s and 4 GB at a million.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import krippendorff
import numpy as np
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from calibration import AlphaData, PointwiseKernel, Scale
from calibration.bootstrap import percentile_interval, unit_resample_counts, unit_resample_indices

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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
