"""The report's first section: the charts that answer "how good is each judge?" at a glance.

The headline metric of each judge with its 95% interval beside the human ceiling, each judge
against the reference (a bubble scatter on the scale), and the metric per task when the report
is grouped by task — the same order as the calibration page (calibration/headline.py).
"""

from __future__ import annotations

import math

from calibration.analysis import CalibrationReport
from calibration.headline import (
    METRIC_TITLES,
    agreement_cells,
    group_rows,
    headline_metric,
    headline_rows,
)
from calibration.result import PointScale
from calibration.svg import bubble_chart, horizontal_bars, interval_chart


def glance_section(report: CalibrationReport) -> str:
    """The charts first: headline metric beside the human ceiling, each judge against the
    reference, the metric per task (when grouped by task)."""
    result = report.result
    if not result.judges:
        return ""
    metric = headline_metric(result)
    title = METRIC_TITLES[metric]
    rows = [
        (row.judge, row.value, row.low, row.high, row.human_ceiling)
        for row in headline_rows(result)
    ]
    parts = [
        "<h2>At a glance</h2>",
        "<p class='note'>Dot and bar: the judge against the reference with its 95% interval. "
        "Tick: the human ceiling, the same metric for one annotator against the consensus of "
        "the others on the units the judge scored (mean over annotators).</p>",
        interval_chart(rows, title=f"{title}: judges beside the human ceiling", axis_label=title),
    ]
    scatters = []
    scale = result.scale
    for name, details in report.details.items():
        cells = agreement_cells(details.confusion)
        if cells is None or not isinstance(scale, PointScale):
            continue
        scatters.append(
            bubble_chart(
                [(cell.reference, cell.judge, cell.count) for cell in cells],
                low=float(scale.min),
                high=float(scale.max),
                title=f"{name} against the reference",
                x_label="reference (humans)",
                y_label=name,
            )
        )
    if scatters:
        parts.append(
            "<p class='note'>Dot area = units; on the dashed diagonal the judge agrees with the "
            f"humans.</p><div class='charts'>{''.join(scatters)}</div>"
        )
    if "task" in result.options.by:
        by_task = group_rows(result, "task")
        tasks = list(dict.fromkeys(row.group for row in by_task))
        series = {
            name: [
                next((r.value for r in by_task if r.judge == name and r.group == task), math.nan)
                for task in tasks
            ]
            for name in result.judges
        }
        parts.append(horizontal_bars(tasks, series, title=f"{title}, by task", axis_label=title))
    return "".join(parts)
