"""Scores' ``low_agreement`` margin and ``low_competence`` evidence: a sweep on the **dev** half.

For each HANNA criterion (dev half) and contamination of ``bench/annotator_quality.py`` (same
pool, same careless annotators), the Annotators table is computed once (the product's B = 1000)
and each virtual annotator's figures kept; then every candidate pair (δ, E) is applied: flag
``low_agreement`` when the bottom of their MAE interval exceeds the other annotators' median MAE
by more than δ points, ``low_competence`` when the evidence of random answers is ≥ E nats; the
other flags (``alpha_gain``, ``straight_lining``) as the table raised them. Printed per (δ, E)
and condition: honest annotators flagged, careless found, precision and recall of all flags.
Seeds start at 100 (never a reported run's).

    nice -n 15 .venv/bin/python experiments/annotator_score_rules.py --seeds 5 --labels 20 30 50
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import annotator_quality as aq  # noqa: E402

from calibration.annotators import (  # noqa: E402
    MIN_UNITS,
    AnnotatorReliability,
    Estimate,
    annotator_reliability,
)

FIRST_SEED = 100
MARGINS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
EVIDENCE = (3.0, 4.0, 5.0, 8.0)


def _mae(row: AnnotatorReliability) -> Estimate:
    return row.mae if row.mae is not None else Estimate(float("nan"))


def records(seeds: int, labels: Sequence[int], shares: Sequence[float], bootstrap: int) -> list:
    """One record per virtual annotator and pool: who, and the figures the rules read."""
    out = []
    for campaign in (aq.split(c, "dev") for c in aq.hanna_campaigns()):
        for n in labels:
            for share in shares:
                for kind in ["none"] if share == 0 else ["uniform", "constant"]:
                    for seed in range(FIRST_SEED, FIRST_SEED + seeds):
                        pool = aq.make_pool(campaign, n, seed)
                        values, careless = aq.contaminate(campaign, pool, kind, share, seed, n)
                        table = annotator_reliability(
                            values, [f"v{v:02d}" for v in range(aq.POOL)], scale=aq.SCALE,
                            order=pool.order, bootstrap=bootstrap, seed=seed,
                        )  # fmt: skip
                        maes = np.array([_mae(row).value for row in table.rows])
                        for v, row in enumerate(table.rows):
                            peers = np.delete(maes, v)
                            out.append({
                                "campaign": campaign.name, "n": n, "share": share,
                                "careless": kind, "seed": seed, "is_careless": bool(careless[v]),
                                "loo_n": row.loo_n, "mae_low": _mae(row).low,
                                "peers": float(np.median(peers[np.isfinite(peers)])),
                                "evidence": row.random_evidence, "answers": row.n,
                                "other": sorted({f.kind for f in row.flags}
                                                - {"low_agreement", "low_competence"}),
                            })  # fmt: skip
    return out


def evaluate(rows: list[dict], margin: float, evidence: float) -> dict[tuple, dict[str, int]]:
    totals: dict[tuple, dict[str, int]] = {}
    for r in rows:
        agreement = r["loo_n"] >= MIN_UNITS and r["mae_low"] > r["peers"] + margin
        random = r["answers"] >= MIN_UNITS and r["evidence"] >= evidence
        hit = agreement or random or bool(r["other"])
        t = totals.setdefault((r["n"], r["share"], r["careless"]),
                              {"tp": 0, "fp": 0, "fn": 0, "honest": 0})  # fmt: skip
        if r["is_careless"]:
            t["tp" if hit else "fn"] += 1
        else:
            t["honest"] += 1
            t["fp"] += hit
    return totals


def main(argv: Sequence[str] | None = None) -> None:
    parser = aq.sweep_parser(__doc__, seeds=5, labels=(20, 30, 50), bootstrap=1000)
    parser.add_argument("--records", type=Path, help="reuse (or write) the per-annotator records")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    if args.records and args.records.exists():
        rows = json.loads(args.records.read_text())
    else:
        rows = records(args.seeds, args.labels, args.shares, args.bootstrap)
        if args.records:
            args.records.write_text(json.dumps(rows) + "\n", encoding="utf-8")
    out = []
    for margin in MARGINS:
        for evidence in EVIDENCE:
            for (n, share, kind), t in sorted(evaluate(rows, margin, evidence).items()):
                found = t["tp"] + t["fp"]
                out.append({"margin": margin, "evidence": evidence, "n": n, "share": share,
                            "careless": kind, **t,
                            "honest_flagged": round(t["fp"] / t["honest"], 3),
                            "precision": round(t["tp"] / found, 3) if found else None,
                            "recall": round(t["tp"] / (t["tp"] + t["fn"]), 3)
                            if t["tp"] + t["fn"] else None})  # fmt: skip
                print(json.dumps(out[-1]), flush=True)
    aq.finish_sweep(out, args.out, started, load_before)


if __name__ == "__main__":
    main()
