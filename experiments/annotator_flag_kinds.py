"""Which flag of the Annotators table fires on whom: a diagnosis on the **dev** half.

For each case (PandaLM, each HANNA criterion) and contamination of
``bench/annotator_quality.py`` (same pool, same careless annotators), the number of honest and
of careless virtual annotators on whom each flag kind (``low_agreement``, ``alpha_gain``,
``low_competence``, ``position``, ``straight_lining``) was raised. It says *why* precision or
recall misses a target; it reports no result (the dev half is where rules are chosen).

    nice -n 10 .venv/bin/python experiments/annotator_flag_kinds.py --seeds 3 --labels 30 \\
        --out flag_kinds.json

Seeds start at 100 so that they are never those of a reported run; ``--bootstrap`` (default 200,
the product's is 1000) sets the intervals the ``low_agreement`` and ``position`` rules read.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import annotator_quality as aq  # noqa: E402

from calibration.annotators import annotator_reliability  # noqa: E402

FIRST_SEED = 100


def flag_kinds(
    campaign: aq.Campaign, kind: str, share: float, n: int, seeds: int, bootstrap: int
) -> dict[str, Any]:
    """Counts of annotators per flag kind, honest and careless, over ``seeds`` pools."""
    counts: dict[str, Counter[str]] = {"honest": Counter(), "careless": Counter()}
    totals: Counter[str] = Counter()
    for seed in range(FIRST_SEED, FIRST_SEED + seeds):
        pool = aq.make_pool(campaign, n, seed)
        labels, careless = aq.contaminate(campaign, pool, kind, share, seed, n)
        table = annotator_reliability(
            labels,
            [f"v{v:02d}" for v in range(aq.POOL)],
            scale=None if campaign.pairwise else aq.SCALE,
            order=pool.order,
            bootstrap=bootstrap,
            seed=seed,
        )
        for v, row in enumerate(table.rows):
            who = "careless" if careless[v] else "honest"
            totals[who] += 1
            counts[who].update({flag.kind for flag in row.flags})
    return {
        "campaign": campaign.name,
        "careless": kind,
        "share": share,
        "n": n,
        "honest": totals["honest"],
        "careless_annotators": totals["careless"],
        "honest_flagged_by": dict(sorted(counts["honest"].items())),
        "careless_flagged_by": dict(sorted(counts["careless"].items())),
    }


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    args = aq.sweep_parser(__doc__, seeds=3).parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    campaigns = [aq.pandalm_campaign(), *aq.hanna_campaigns()]
    rows = []
    for campaign in (aq.split(c, "dev") for c in campaigns):
        kinds = [k for k in aq.CARELESS if campaign.pairwise or k != "length"]
        for share in args.shares:
            for kind in ["none"] if share == 0 else kinds:
                for n in args.labels:
                    row = flag_kinds(campaign, kind, share, n, args.seeds, args.bootstrap)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    aq.finish_sweep(rows, args.out, started, load_before)
    return rows


if __name__ == "__main__":
    main()
