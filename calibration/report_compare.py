"""A judge comparison (:mod:`calibration.compare`) as a display table and as a report section.

Shared by ``critiquelab calibrate --compare``, the calibration page and the HTML audit report, so
the three show the same columns in the same words.
"""

from __future__ import annotations

from html import escape

import pandas as pd

from calibration.compare import HUMAN, JudgeComparison, MetricComparison
from calibration.shortcut import is_baseline

_BETTER_WORDS = {
    "higher": "higher",
    "lower": "lower",
    "closer_to_zero": "closer to 0",
    "none": "—",
}


def side_label(name: str) -> str:
    """How a side is named to a reader: the human ceiling gets words, a baseline is marked as
    one, a judge its name."""
    if name == HUMAN:
        return "one more human (leave-one-out)"
    return f"{name} (baseline, no language model)" if is_baseline(name) else name


def comparison_table(comparison: JudgeComparison) -> pd.DataFrame:
    """One row per metric: A, B, Δ = A − B, its interval, and the share of resamples A wins."""
    rows = {
        entry.metric: {
            "better": _BETTER_WORDS[entry.better],
            "A": _number(entry.a),
            "B": _number(entry.b),
            "Δ = A − B": _number(entry.delta, signed=True),
            "95% interval of Δ": _interval(entry),
            "A better in": _share(entry.p_a_better),
        }
        for entry in comparison.metrics
    }
    return pd.DataFrame.from_dict(rows, orient="index")


def comparison_caption(comparison: JudgeComparison) -> str:
    """One sentence naming the sides, the units and the bootstrap."""
    against = (
        "the consensus of the other annotators (leave-one-out)"
        if comparison.reference == "leave_one_out"
        else "the reference"
    )
    text = (
        f"A = {side_label(comparison.a)}, B = {side_label(comparison.b)}: both against {against} "
        f"on the {comparison.n_units} units both judged."
    )
    if comparison.bootstrap:
        text += (
            f" Paired bootstrap over those units (the same {comparison.bootstrap} resamples for "
            f"A and B, seed {comparison.seed}); 'A better in' = share of "
            "resamples in which A is better in the metric's direction (ties count as not better)."
        )
    return text


def comparison_text(comparison: JudgeComparison) -> str:
    """The comparison as plain text for a terminal."""
    table = comparison_table(comparison)
    return comparison_caption(comparison) + "\n" + table.to_string()


def comparison_section(comparisons: list[JudgeComparison]) -> str:
    """The HTML report section, one table per comparison (every text escaped)."""
    if not comparisons:
        return ""
    parts = ["<h2>Is judge A better than judge B?</h2>"]
    for comparison in comparisons:
        table = comparison_table(comparison)
        header = "".join(f"<th>{escape(str(c))}</th>" for c in table.columns)
        rows = "".join(
            f"<tr><th class='text'>{escape(str(metric))}</th>"
            + "".join(f"<td>{escape(str(v))}</td>" for v in row)
            + "</tr>"
            for metric, row in zip(table.index, table.to_numpy(), strict=True)
        )
        parts.append(
            f"<h3>{escape(side_label(comparison.a))} against {escape(side_label(comparison.b))}"
            f"</h3><p class='note'>{escape(comparison_caption(comparison))}</p>"
            f"<table><tr><th class='text'>metric</th>{header}</tr>{rows}</table>"
        )
    return "".join(parts)


def _number(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _interval(entry: MetricComparison) -> str:
    if entry.ci is None:
        return "—"
    low, high = entry.ci
    if low is None or high is None:
        return "n/a"
    return f"[{low:+.3f}, {high:+.3f}]"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"
