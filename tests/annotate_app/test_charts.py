"""The Calibration page's pairwise heatmap counts verdicts and says so (issue 25 B: it said
"units" while a pair judged in both orders counts once per order)."""

from __future__ import annotations

import pandas as pd

from annotate_app.charts import confusion_heatmap
from calibration import CalibrationOptions, calibrate
from schemas.protocols import PAIRWISE


def test_the_pairwise_heatmap_counts_verdicts_of_both_orders() -> None:
    rows = []
    for unit in range(3):  # three pairs, reference A, each judged A in both orders
        for rater in ("a0", "a1"):
            rows.append({"unit": f"p:{unit}", "rater": f"annotator:{rater}", "kind": "human",
                         "value": "A", "shown_order": "AB", "parse_status": "ok"})  # fmt: skip
        for order in ("AB", "BA"):
            rows.append({"unit": f"p:{unit}", "rater": "gpt", "kind": "model", "value": "A",
                         "shown_order": order, "parse_status": "ok"})  # fmt: skip
    frame = pd.DataFrame(rows).assign(item_id="i", task="t", model=None, rationale="")
    confusion = calibrate(frame, CalibrationOptions(PAIRWISE, bootstrap=0)).details["gpt"].confusion
    assert int(confusion.to_numpy().sum()) == 6  # 3 units, 6 verdicts
    chart = confusion_heatmap(confusion, judge="gpt").to_dict()
    cells, text = chart["layer"]
    assert cells["encoding"]["color"]["field"] == "verdicts"
    assert text["encoding"]["text"]["field"] == "verdicts"
    assert "units" not in str(chart)
