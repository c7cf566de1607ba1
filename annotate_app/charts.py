"""Altair charts of the calibration page: categories in the order given, never re-sorted as text.

Streamlit's ``st.bar_chart`` sorts a text axis alphabetically (1, 10, 2, ...). These builders
state the order of every categorical axis (``sort=`` the given order), keep tick labels
horizontal, and use numeric axes for numbers. Each takes a small, already-aggregated table.
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from calibration.headline import AgreementCell, GroupRow, HeadlineRow

JUDGE_COLOUR = "#4269d0"
HUMAN_COLOUR = "#ff725c"
JUDGE_LABEL = "judge vs reference, 95% interval"
HUMAN_LABEL = "human ceiling: one annotator vs the others"


def ordered_bars(table: pd.DataFrame, *, x_title: str, y_title: str) -> alt.Chart:
    """Grouped vertical bars: one group per row of ``table`` (in its order), one bar per column."""
    order = [str(label) for label in table.index]
    long = (
        table.set_axis(order)
        .rename_axis("category")
        .reset_index()
        .melt(id_vars="category", var_name="series", value_name="value")
    )
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=alt.X("category:N", sort=order, title=x_title, axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("series:N", sort=list(map(str, table.columns))),
            y=alt.Y("value:Q", title=y_title),
            color=alt.Color("series:N", sort=list(map(str, table.columns)), title=None),
            tooltip=["category:N", "series:N", alt.Tooltip("value:Q", format=".3f")],
        )
    )


def headline_chart(rows: list[HeadlineRow], *, title: str) -> alt.LayerChart:
    """Each judge's metric as a dot with its 95% interval, and the human ceiling beside it."""
    judges = [row.judge for row in rows]
    judge_rows = pd.DataFrame(
        {
            "judge": judges,
            "value": [row.value for row in rows],
            "low": [row.low for row in rows],
            "high": [row.high for row in rows],
            "n": [row.n for row in rows],
            "who": JUDGE_LABEL,
        }
    )
    human_rows = pd.DataFrame(
        {
            "judge": [row.judge for row in rows if row.human_ceiling is not None],
            "value": [row.human_ceiling for row in rows if row.human_ceiling is not None],
            "who": HUMAN_LABEL,
        }
    )
    values = [
        v
        for v in [
            *judge_rows["value"],
            *judge_rows["low"],
            *judge_rows["high"],
            *human_rows["value"],
        ]
        if v is not None and not math.isnan(v)
    ]
    domain = [min(0.0, *values) if values else 0.0, 1.0]
    y = alt.Y("judge:N", sort=judges, title=None)
    x = alt.X("value:Q", title=title, scale=alt.Scale(domain=domain), axis=alt.Axis(tickCount=10))
    legend = alt.Color(
        "who:N",
        scale=alt.Scale(
            domain=[JUDGE_LABEL, HUMAN_LABEL],
            range=[JUDGE_COLOUR, HUMAN_COLOUR],
        ),
        legend=alt.Legend(orient="bottom", title=None, labelLimit=0),
    )
    interval = (
        alt.Chart(judge_rows.dropna(subset=["low", "high"]))
        .mark_rule(strokeWidth=2)
        .encode(y=y, x=alt.X("low:Q", scale=alt.Scale(domain=domain)), x2="high:Q", color=legend)
    )
    tooltip = ["judge:N", alt.Tooltip("value:Q", format=".3f")]
    point = (
        alt.Chart(judge_rows)
        .mark_point(filled=True, size=90)
        .encode(
            y=y,
            x=x,
            color=legend,
            tooltip=[*tooltip, alt.Tooltip("low:Q", format=".3f"), "high:Q", "n:Q"],
        )
    )
    ceiling = (
        alt.Chart(human_rows)
        .mark_tick(thickness=3, size=22)
        .encode(y=y, x=x, color=legend, tooltip=tooltip)
    )
    # LayerChart itself (here and below), not alt.layer: altair 6's alt.layer is typed to return a
    # FacetChart too, for layers that share facet encodings, and these have none.
    return alt.LayerChart(layer=[interval, point, ceiling]).properties(height=alt.Step(36))


def agreement_scatter(
    cells: list[AgreementCell], *, low: float, high: float, judge: str
) -> alt.LayerChart:
    """Judge (y) against reference (x) on the scale; dot area = units; the diagonal = agreement."""
    frame = pd.DataFrame(
        {
            "reference": [c.reference for c in cells],
            "judge": [c.judge for c in cells],
            "units": [c.count for c in cells],
        }
    )
    scale = alt.Scale(domain=[low, high], nice=False)
    dots = (
        alt.Chart(frame)
        .mark_circle(color=JUDGE_COLOUR, opacity=0.7)
        .encode(
            x=alt.X("reference:Q", scale=scale, title="reference (humans)"),
            y=alt.Y("judge:Q", scale=scale, title=judge),
            size=alt.Size("units:Q", legend=None),  # the caption says: area = units
            tooltip=["reference:Q", "judge:Q", "units:Q"],
        )
    )
    diagonal = (
        alt.Chart(pd.DataFrame({"reference": [low, high], "judge": [low, high]}))
        .mark_line(color="#888", strokeDash=[4, 4])
        .encode(x=alt.X("reference:Q", scale=scale), y=alt.Y("judge:Q", scale=scale))
    )
    return alt.LayerChart(layer=[diagonal, dots]).properties(height=300)


def confusion_heatmap(confusion: pd.DataFrame, *, judge: str) -> alt.LayerChart:
    """Reference (rows) × judge (columns) counts as shaded cells, labels in the table's order.

    The counts are verdicts, not units: a pair judged in both orders (or sampled more than once)
    gives one verdict per order and sample."""
    rows = [str(label) for label in confusion.index]
    columns = [str(label) for label in confusion.columns]
    long = pd.DataFrame(
        [
            {"reference": rows[i], "judge": columns[j], "verdicts": int(confusion.iat[i, j])}
            for i in range(len(rows))
            for j in range(len(columns))
        ]
    )
    x = alt.X("judge:N", sort=columns, title=judge, axis=alt.Axis(labelAngle=0))
    y = alt.Y("reference:N", sort=rows, title="reference (humans)")
    cells = (
        alt.Chart(long)
        .mark_rect()
        .encode(x=x, y=y, color=alt.Color("verdicts:Q", legend=None), tooltip=["verdicts:Q"])
    )
    text = alt.Chart(long).mark_text().encode(x=x, y=y, text="verdicts:Q")
    return alt.LayerChart(layer=[cells, text]).properties(height=260)


def group_bars(rows: list[GroupRow], *, title: str, field: str) -> alt.Chart:
    """The headline metric per group, one bar per judge; groups in the given order."""
    frame = pd.DataFrame(
        {
            field: [row.group for row in rows],
            "judge": [row.judge for row in rows],
            "value": [row.value for row in rows],
            "n": [row.n for row in rows],
        }
    )
    groups = list(dict.fromkeys(row.group for row in rows))
    judges = list(dict.fromkeys(row.judge for row in rows))
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y(f"{field}:N", sort=groups, title=None),
            yOffset=alt.YOffset("judge:N", sort=judges),
            x=alt.X("value:Q", title=title),
            color=alt.Color("judge:N", sort=judges, legend=alt.Legend(orient="bottom")),
            tooltip=[f"{field}:N", "judge:N", alt.Tooltip("value:Q", format=".3f"), "n:Q"],
        )
        .properties(height=alt.Step(9), title=title)  # with yOffset: the step of one bar
    )
