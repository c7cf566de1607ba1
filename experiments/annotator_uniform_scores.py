"""Uniform random raters among HANNA's: what could find them? A study on the **dev** half.

For each HANNA criterion (dev half), n labels per annotator, the clean pool and 10, 20, 30%
uniform raters of ``bench/annotator_quality.py`` (same pool, same careless annotators), the
Annotators table is computed (the product's B = 1000) and, per virtual annotator, statistics a
rule could read:

* ``corr``: Pearson correlation of their scores with the others' mean on their units;
* ``perm_p``, ``perm_z``: their MAE from the others' mean against its permutation null (their
  own scores permuted over their units, 200 permutations): a rater answering at random has the
  null's MAE; p = the share of permutations at least as close, z = (null mean − MAE) / null sd;
* ``evidence``: ordinal MACE's random-answer evidence (``low_competence`` reads ≥ 4 nats);
* ``mae_excess``: the bottom of their MAE interval minus the others' median MAE
  (``low_agreement`` reads > 0.10 points);
* ``tv``: total variation distance of their score distribution from the others' on the same
  units.

Printed: the raters' own agreement (the three real raters' pairwise correlation, dev half); the
flags' honest rate and uniform recall per criterion; "no better than chance" rules (flag p >
0.05 or 0.5; Benjamini–Hochberg at q = 0.05 over each pool's annotators, flag those not
rejected); each statistic alone at the threshold that flags 5% of honest raters in the clean
pool (per criterion, and one threshold for all); and a logistic regression on all six
statistics, fitted per criterion with 5-fold cross-validation over seeds, thresholded at 5% of
honest raters: what the statistics could reach together, fitted to the benchmark (an upper
bound for a rule, not a rule). Seeds start at 100 (never a reported run's).

    nice -n 15 .venv/bin/python experiments/annotator_uniform_scores.py --seeds 20 --labels 30
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import annotator_quality as aq  # noqa: E402

from calibration.annotators import annotator_reliability  # noqa: E402

FIRST_SEED = 100
PERMUTATIONS = 200
SHARES = (0.1, 0.2, 0.3)
HONEST_RATE = 0.05
STATISTICS = ("corr", "perm_z", "evidence", "mae_excess", "tv", "mae")


def records(seeds: int, n: int, bootstrap: int) -> list[dict]:
    """One record per virtual annotator and pool: who, their flags and the statistics."""
    out = []
    permute = np.random.default_rng(0)
    for campaign in (aq.split(c, "dev") for c in aq.hanna_campaigns()):
        for seed in range(FIRST_SEED, FIRST_SEED + seeds):
            pool = aq.make_pool(campaign, n, seed)
            for kind, share in [("none", 0.0), *(("uniform", s) for s in SHARES)]:
                labels, careless = aq.contaminate(campaign, pool, kind, share, seed, n)
                table = annotator_reliability(
                    labels, [f"v{v:02d}" for v in range(aq.POOL)], scale=aq.SCALE,
                    order=pool.order, bootstrap=bootstrap, seed=seed,
                )  # fmt: skip
                maes = np.array([row.mae.value if row.mae else np.nan for row in table.rows])
                for v, row in enumerate(table.rows):
                    others = np.delete(labels, v, axis=0)
                    mean = np.nanmean(others, axis=0)  # every unit has 3 labels: 2 others
                    mine = ~np.isnan(labels[v]) & ~np.isnan(mean)
                    own, consensus = labels[v, mine], mean[mine]
                    mae = float(np.abs(own - consensus).mean())
                    null = np.array(
                        [
                            np.abs(permute.permutation(own) - consensus).mean()
                            for _ in range(PERMUTATIONS)
                        ]
                    )
                    theirs = others[:, mine]
                    theirs = theirs[~np.isnan(theirs)].astype(int)
                    mine_share = np.bincount(own.astype(int), minlength=6)[1:] / own.size
                    their_share = np.bincount(theirs, minlength=6)[1:] / theirs.size
                    varied = own.std() > 0 and consensus.std() > 0
                    peers = np.delete(maes, v)
                    out.append({
                        "criterion": campaign.name.split("/")[1], "seed": seed, "kind": kind,
                        "share": share, "careless": bool(careless[v]),
                        "flagged": bool(row.flags),
                        "corr": float(np.corrcoef(own, consensus)[0, 1]) if varied else 0.0,
                        "perm_p": float((np.sum(null <= mae) + 1) / (PERMUTATIONS + 1)),
                        "perm_z": float((null.mean() - mae) / null.std()) if null.std() else 0.0,
                        "evidence": float(row.random_evidence),
                        "mae_excess": float(row.mae.low - np.median(peers[np.isfinite(peers)]))
                        if row.mae and np.isfinite(row.mae.low) else 0.0,
                        "tv": float(0.5 * np.abs(mine_share - their_share).sum()),
                        "mae": mae,
                    })  # fmt: skip
    return out


def _suspicion(record: dict, name: str) -> float:
    """Larger = more like a random rater."""
    return -record[name] if name in ("corr", "perm_z") else record[name]


def report(rows: list[dict]) -> str:
    criteria = sorted({r["criterion"] for r in rows}, key=aq.HANNA_CRITERIA.index)
    clean = [r for r in rows if r["kind"] == "none"]
    uniform = {s: [r for r in rows if r["share"] == s and r["careless"]] for s in SHARES}
    lines = ["Real raters' agreement, dev half: Pearson r of each pair of HANNA's three columns"]
    for campaign in (aq.split(c, "dev") for c in aq.hanna_campaigns()):
        h = campaign.humans
        pairs = [np.corrcoef(h[i], h[j])[0, 1] for i, j in ((0, 1), (0, 2), (1, 2))]
        lines.append(f"  {campaign.name}: " + ", ".join(f"{r:.2f}" for r in pairs))
    lines += ["", "Flags (the product's rules): honest flagged in the clean pool / uniform recall"]
    for c in criteria:
        cells = [f"{np.mean([r['flagged'] for r in clean if r['criterion'] == c]):.3f}"]
        cells += [
            f"{np.mean([r['flagged'] for r in uniform[s] if r['criterion'] == c]):.2f}"
            for s in SHARES
        ]
        lines.append(f"  {c}: honest {cells[0]}; uniform 10/20/30%: {' / '.join(cells[1:])}")
    lines += ["", "'No better than chance' (MAE against its permutation null): flagged share"]
    for c in [*criteria, "all"]:
        mine = [r for r in clean if c in ("all", r["criterion"])]
        theirs = [r for r in uniform[0.2] if c in ("all", r["criterion"])]
        cells = [
            f"p > {a}: honest {np.mean([r['perm_p'] > a for r in mine]):.2f}, uniform 20% "
            f"{np.mean([r['perm_p'] > a for r in theirs]):.2f}"
            for a in (0.05, 0.5)
        ]
        lines.append(f"  {c}: " + "; ".join(cells))
    pools: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        pools[(r["criterion"], r["seed"], r["kind"], r["share"])].append(r)
    not_rejected: dict[str, list[bool]] = {"honest": [], "uniform": []}
    for (_, _, kind, share), members in pools.items():
        p = np.array([r["perm_p"] for r in members])
        order = np.argsort(p)
        passed = p[order] <= 0.05 * np.arange(1, p.size + 1) / p.size
        k = int(np.flatnonzero(passed).max() + 1) if passed.any() else 0
        rejected = np.zeros(p.size, dtype=bool)
        rejected[order[:k]] = True
        for r, done in zip(members, rejected, strict=True):
            if kind == "none":
                not_rejected["honest"].append(not done)
            elif share == 0.2 and r["careless"]:
                not_rejected["uniform"].append(not done)
    lines.append(
        f"  Benjamini–Hochberg (q = 0.05) in each pool, flag the not rejected: honest "
        f"{np.mean(not_rejected['honest']):.2f}, uniform 20% {np.mean(not_rejected['uniform']):.2f}"
    )
    lines += [
        "",
        f"Each statistic alone at {HONEST_RATE:.0%} of honest raters (clean pool): recall of "
        "uniform raters at 20%, per criterion | one threshold for all",
    ]
    for name in STATISTICS[:-1]:
        cells = []
        for c in criteria:
            h = np.array([_suspicion(r, name) for r in clean if r["criterion"] == c])
            u = np.array([_suspicion(r, name) for r in uniform[0.2] if r["criterion"] == c])
            cells.append(f"{c} {np.mean(u > np.percentile(h, 100 * (1 - HONEST_RATE))):.2f}")
        h = np.array([_suspicion(r, name) for r in clean])
        u = np.array([_suspicion(r, name) for r in uniform[0.2]])
        pooled = np.mean(u > np.percentile(h, 100 * (1 - HONEST_RATE)))
        lines.append(f"  {name}: " + ", ".join(cells) + f" | {pooled:.2f}")
    lines += [
        "",
        "All statistics together (logistic regression per criterion, 5-fold over seeds, "
        f"threshold at {HONEST_RATE:.0%} of honest raters): uniform recall at 20%",
    ]
    lines.append("  " + _learned(rows, criteria))
    return "\n".join(lines)


def _learned(rows: list[dict], criteria: list[str]) -> str:
    from sklearn.linear_model import LogisticRegression

    cells, found, total = [], 0, 0
    for c in criteria:
        mine = [r for r in rows if r["criterion"] == c]
        x = np.array([[r[name] for name in STATISTICS] for r in mine])
        y = np.array([r["careless"] for r in mine])
        folds = np.array([r["seed"] % 5 for r in mine])
        score = np.zeros(len(mine))
        for fold in range(5):
            test = folds == fold
            model = LogisticRegression(max_iter=2000).fit(x[~test], y[~test])
            score[test] = model.decision_function(x[test])
        clean = np.array([r["kind"] == "none" for r in mine])
        threshold = np.percentile(score[clean], 100 * (1 - HONEST_RATE))
        target = np.array([r["share"] == 0.2 and r["careless"] for r in mine])
        hits = score[target] > threshold
        found, total = found + int(hits.sum()), total + int(target.sum())
        cells.append(f"{c} {hits.mean():.2f}")
    return ", ".join(cells) + f"; all criteria {found / total:.2f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--labels", type=int, default=30)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--records", type=Path, help="reuse (or write) the per-annotator records")
    args = parser.parse_args(argv)
    if args.seeds < 5:
        parser.error("--seeds: at least 5 (the combination is cross-validated over 5 folds)")
    load_before = os.getloadavg()
    started = time.perf_counter()
    if args.records and args.records.exists():
        rows = json.loads(args.records.read_text())
    else:
        rows = records(args.seeds, args.labels, args.bootstrap)
        if args.records:
            args.records.write_text(json.dumps(rows) + "\n", encoding="utf-8")
    print(report(rows))
    aq.finish_sweep(rows, None, started, load_before)


if __name__ == "__main__":
    main()
