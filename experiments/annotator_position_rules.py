"""Which baseline should the ``position`` flag compare with? A comparison on the **dev** half.

For PandaLM's dev half (the only pairs case) and each contamination of
``bench/annotator_quality.py`` (same pool, same careless annotators, n labels each), the
annotators flagged by the Annotators table's other flags plus one candidate ``position`` rule,
for each candidate baseline of the share choosing the response shown first:

* ``same_pairs``: the others' share on the same pairs, everyone counted (the rule before);
* ``same_pairs_unflagged``: the same, counting only others raised neither ``low_competence``
  nor ``straight_lining`` (annotators who answer regardless of the pair);
* ``same_pairs_unflagged_any``: the same, counting only others raised no flag at all;
* ``median_own``: the median over the other annotators of their own share;
* ``half_of_decided``: their share among non-tie answers against ½ (no baseline from others).

Each keeps the rule's thresholds (≥ 20 pairs, a gap ≥ 0.25, the baseline outside their Wilson
interval). Printed: honest flagged by position, careless found, and precision / recall of all
flags, per condition. Seeds start at 100 (never a reported run's).

    nice -n 15 .venv/bin/python experiments/annotator_position_rules.py --seeds 10 --labels 30
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import annotator_quality as aq  # noqa: E402

from calibration.annotators import (  # noqa: E402
    POSITION_GAP,
    POSITION_MIN_PAIRS,
    AnnotatorReliability,
    annotator_reliability,
)
from schemas.intervals import wilson_interval  # noqa: E402

FIRST_SEED = 100
INATTENTIVE = {"low_competence", "straight_lining"}


def _same_pairs(labels: np.ndarray, r: int, counted: np.ndarray) -> tuple[int, int, float]:
    """(pairs, chose A, others' mean share of A on those pairs) over ``counted`` others."""
    own = labels[r]
    chosen = counted.copy()
    chosen[r] = False
    others = labels[chosen]
    answered = (~np.isnan(others)).sum(axis=0)
    mask = ~np.isnan(own) & (answered > 0)
    n = int(mask.sum())
    if n == 0:
        return 0, 0, float("nan")
    with np.errstate(invalid="ignore"):
        share = (others == 0).sum(axis=0) / answered
    return n, int((own[mask] == 0).sum()), float(np.mean(share[mask]))


def _flag(n: int, first: int, baseline: float) -> bool:
    if n < POSITION_MIN_PAIRS or not np.isfinite(baseline):
        return False
    low, high = wilson_interval(first, n)
    return abs(first / n - baseline) >= POSITION_GAP and not low <= baseline <= high


def candidates(
    labels: np.ndarray, rows: Sequence[AnnotatorReliability]
) -> dict[str, Callable[[int], bool]]:
    kinds = [{f.kind for f in row.flags} for row in rows]
    everyone = np.ones(len(rows), dtype=bool)
    attentive = np.array([not (k & INATTENTIVE) for k in kinds])
    unflagged = np.array([not (k - {"position"}) for k in kinds])
    own_share = np.array([np.mean(labels[r][~np.isnan(labels[r])] == 0) for r in range(len(rows))])

    def median_own(r: int) -> bool:
        n, first, _ = _same_pairs(labels, r, everyone)
        return _flag(n, first, float(np.median(np.delete(own_share, r))))

    def half(r: int) -> bool:
        own = labels[r][~np.isnan(labels[r])]
        decided = own[own != 2]
        return _flag(decided.size, int((decided == 0).sum()), 0.5)

    return {
        "same_pairs": lambda r: _flag(*_same_pairs(labels, r, everyone)),
        "same_pairs_unflagged": lambda r: _flag(*_same_pairs(labels, r, attentive)),
        "same_pairs_unflagged_any": lambda r: _flag(*_same_pairs(labels, r, unflagged)),
        "median_own": median_own,
        "half_of_decided": half,
    }


def main(argv: Sequence[str] | None = None) -> list[dict]:
    args = aq.sweep_parser(__doc__, seeds=10).parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    campaign = aq.split(aq.pandalm_campaign(), "dev")
    out = []
    for n in args.labels:
        for share in args.shares:
            for kind in ["none"] if share == 0 else list(aq.CARELESS):
                totals: dict[str, dict[str, int]] = {}
                for seed in range(FIRST_SEED, FIRST_SEED + args.seeds):
                    pool = aq.make_pool(campaign, n, seed)
                    labels, careless = aq.contaminate(campaign, pool, kind, share, seed, n)
                    table = annotator_reliability(
                        labels, [f"v{v:02d}" for v in range(aq.POOL)], scale=None,
                        order=pool.order, bootstrap=args.bootstrap, seed=seed,
                    )  # fmt: skip
                    other = [bool({f.kind for f in row.flags} - {"position"}) for row in table.rows]
                    for name, rule in candidates(labels, table.rows).items():
                        t = totals.setdefault(
                            name, {"honest_position": 0, "tp": 0, "fp": 0, "fn": 0, "honest": 0}
                        )
                        for v in range(aq.POOL):
                            pos = rule(v)
                            hit = other[v] or pos
                            if careless[v]:
                                t["tp" if hit else "fn"] += 1
                            else:
                                t["honest"] += 1
                                t["fp"] += hit
                                t["honest_position"] += pos
                for name, t in totals.items():
                    p = t["tp"] / (t["tp"] + t["fp"]) if t["tp"] + t["fp"] else float("nan")
                    rec = t["tp"] / (t["tp"] + t["fn"]) if t["tp"] + t["fn"] else float("nan")
                    row = {"n": n, "share": share, "careless": kind, "rule": name, **t,
                           "precision": round(p, 3), "recall": round(rec, 3)}  # fmt: skip
                    out.append(row)
                    print(json.dumps(row), flush=True)
    aq.finish_sweep(out, args.out, started, load_before)
    return out


if __name__ == "__main__":
    main()
