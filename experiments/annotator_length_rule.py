"""The ``length`` flag's rule: a comparison on the **dev** half of PandaLM.

For PandaLM's dev half and each contamination of ``bench/annotator_quality.py`` (same pool,
same careless annotators, n labels each), the Annotators table is computed with the responses'
lengths (``longer``) under each candidate rule for the ``length`` flag, and once without them
(``none``: the rules before the flag). Candidates: one-sided (the share choosing the longer
response at least ``gap`` *above* the others' share on the same pairs, the others' share below
the annotator's Wilson interval; the product's form, ``gap`` = ``LENGTH_EXCESS``) for gaps 0.10,
0.15, 0.20, 0.25, and two-sided (\\|share − others\\| ≥ ``gap`` and the others' share outside the
interval, the ``position`` rule's form) for gaps 0.15 and 0.25. Everything else is the table's.
Printed per candidate and condition: precision / recall of all flags, and the honest annotators
flagged ``length``. Seeds start at ``--first-seed`` (100 and up: never a reported run's).

    nice -n 15 .venv/bin/python experiments/annotator_length_rule.py --seeds 30 --first-seed 130
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import annotator_quality as aq  # noqa: E402

import calibration.annotators as annotators  # noqa: E402
from calibration.annotators import (  # noqa: E402
    POSITION_MIN_PAIRS,
    AnnotatorFlag,
    LengthPreference,
    annotator_reliability,
)

ONE_SIDED = (0.10, 0.15, 0.20, 0.25)
TWO_SIDED = (0.15, 0.25)


def _two_sided(gap: float):
    """A ``length`` rule of the ``position`` form: \\|share − others\\| ≥ gap, others outside."""

    def flags(length: LengthPreference | None) -> tuple[AnnotatorFlag, ...]:
        if length is None or length.n < POSITION_MIN_PAIRS:
            return ()
        share = length.share_longer
        outside = not share.low <= length.others_share <= share.high
        if abs(share.value - length.others_share) >= gap and outside:
            return (AnnotatorFlag("length", "two-sided candidate"),)
        return ()

    return flags


def candidates() -> list[tuple[str, float | None, bool]]:
    """(name, gap, one-sided): ``none`` first (no lengths given)."""
    out: list[tuple[str, float | None, bool]] = [("none", None, True)]
    out += [(f"one-sided {gap:.2f}", gap, True) for gap in ONE_SIDED]
    out += [(f"two-sided {gap:.2f}", gap, False) for gap in TWO_SIDED]
    return out


def run(seeds: int, first: int, labels: Sequence[int], bootstrap: int) -> list[dict]:
    campaign = aq.split(aq.pandalm_campaign(), "dev")
    original_gap, original_flags = annotators.LENGTH_EXCESS, annotators._length_flags
    totals: dict[tuple, dict[str, int]] = {}
    try:
        for name, gap, one_sided in candidates():
            if gap is not None:
                annotators.LENGTH_EXCESS = gap
                annotators._length_flags = original_flags if one_sided else _two_sided(gap)
            for n in labels:
                for seed in range(first, first + seeds):
                    pool = aq.make_pool(campaign, n, seed)
                    longer = None if gap is None else aq.longer_of(campaign, pool)
                    for kind, share in aq.conditions_for(campaign, aq.CARELESS, aq.SHARES):
                        values, careless = aq.contaminate(campaign, pool, kind, share, seed, n)
                        table = annotator_reliability(
                            values, [f"v{v:02d}" for v in range(aq.POOL)], scale=None,
                            order=pool.order, longer=longer, bootstrap=bootstrap, seed=seed,
                        )  # fmt: skip
                        hit = np.array([bool(row.flags) for row in table.rows])
                        by_length = np.array(
                            [any(f.kind == "length" for f in row.flags) for row in table.rows]
                        )
                        t = totals.setdefault(
                            (name, n, kind, share),
                            {"tp": 0, "fp": 0, "fn": 0, "honest": 0, "honest_length": 0},
                        )
                        t["tp"] += int((hit & careless).sum())
                        t["fp"] += int((hit & ~careless).sum())
                        t["fn"] += int((~hit & careless).sum())
                        t["honest"] += int((~careless).sum())
                        t["honest_length"] += int((by_length & ~careless).sum())
    finally:
        annotators.LENGTH_EXCESS, annotators._length_flags = original_gap, original_flags
    out = []
    for (name, n, kind, share), t in totals.items():
        found = t["tp"] + t["fp"]
        out.append({"rule": name, "n": n, "careless": kind, "share": share, **t,
                    "precision": round(t["tp"] / found, 3) if found else None,
                    "recall": round(t["tp"] / (t["tp"] + t["fn"]), 3)
                    if t["tp"] + t["fn"] else None})  # fmt: skip
    return out


def table(rows: list[dict]) -> str:
    """Markdown: per rule and n, honest flagged in the clean pool (all flags; by ``length``),
    then precision / recall against length-biased annotators at 10, 20, 30%, and honest
    annotators flagged ``length`` over every contaminated condition."""
    lines = [
        "| rule | n | clean: honest flagged (by length) | length 10% P / R | length 20% P / R "
        "| length 30% P / R | honest flagged length, all conditions |",
        "|---|---|---|---|---|---|---|",
    ]
    keyed = {(r["rule"], r["n"], r["careless"], r["share"]): r for r in rows}
    for name, _, _ in candidates():
        for n in sorted({r["n"] for r in rows}):
            clean = keyed.get((name, n, "none", 0.0))
            if clean is None:
                continue
            cells = [f"{clean['fp']}/{clean['honest']} ({clean['honest_length']})"]
            for share in aq.SHARES:
                r = keyed[(name, n, "length", share)]
                cells.append(f"{r['precision']:.2f} / {r['recall']:.2f}")
            mine = [r for r in rows if r["rule"] == name and r["n"] == n]
            cells.append(
                f"{sum(r['honest_length'] for r in mine)}/{sum(r['honest'] for r in mine)}"
            )
            lines.append(f"| {name} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--first-seed", type=int, default=100)
    parser.add_argument("--labels", type=int, nargs="+", default=[20, 30, 50])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.first_seed < 100:
        parser.error("--first-seed: seeds below 100 are the reported (test) runs'")
    load_before = os.getloadavg()
    started = time.perf_counter()
    rows = run(args.seeds, args.first_seed, args.labels, args.bootstrap)
    print(table(rows))
    aq.finish_sweep(rows, args.out, started, load_before)


if __name__ == "__main__":
    main()
