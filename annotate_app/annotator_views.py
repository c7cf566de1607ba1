"""The Annotators table on the pages: one renderer for the Monitor (the campaign's live labels)
and the Calibration page (the calibration's ``annotators`` section).

Both hand it the same record, the result's :class:`~calibration.result.AnnotatorsSection` (the
Monitor's, :func:`annotate_app.monitor_views.live_annotators`, converts its table with
:func:`calibration.analysis.annotators_section`), so the two pages
show the same columns, the same flag reasons and the same exclusion marks as the HTML report
(:func:`calibration.annotators.annotator_label`: ``ann0 (excluded: held)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd
import streamlit as st

from calibration.annotators import annotator_label
from calibration.result import AnnotatorEstimate, AnnotatorRow, AnnotatorsSection

CAPTION = (
    "Without gold: each annotator against the consensus of the others (95% bootstrap interval "
    "over their units), the campaign's alpha without them, a latent-class competence "
    "(Dawid–Skene for preferences; ordinal MACE for scores, beside the evidence in nats that "
    "they answered at random), the share choosing the response shown "
    "first beside the others' on the same pairs (and, where the responses' lengths are known, "
    "the share choosing the longer one), and the longest run of one answer. Annotators "
    "left out of the reference are marked excluded, with why (listed, or held or retired in "
    "the campaign), and are not in the others' consensus. Click a column to sort; each flag says "
    "why it was raised (thresholds in METRICS.md)."
)
LABELS = {"accuracy": "LOO accuracy", "mae": "LOO MAE", "qwk": "LOO QWK"}


def annotators_table(
    section: AnnotatorsSection | None,
    *,
    pairwise: bool,
    reasons: Mapping[str, str] | None = None,
    names: Sequence[str] | None = None,
    leading: Mapping[str, list] | None = None,
) -> pd.DataFrame:
    """One row per annotator: ``names`` in that order (default: the section's rows), with the
    ``leading`` columns (one value per name) after the annotator's name, then the section's
    figures (empty where a name has no row). ``reasons``: why each excluded annotator is left
    out (the JSON's ``exclusion_reasons``)."""
    rows = {row.annotator: row for row in section.rows} if section else {}
    order = list(names) if names is not None else list(rows)
    found: list[AnnotatorRow | None] = [rows.get(name) for name in order]
    why = reasons or {}
    table: dict[str, list] = {
        "Annotator": [
            annotator_label(name, row.excluded if row else name in why, why.get(name))
            for name, row in zip(order, found, strict=True)
        ],
        **{column: list(values) for column, values in (leading or {}).items()},
        "Units": [row.n if row else None for row in found],
        "Weight": [_number(row.weight) if row else None for row in found],
    }
    for name in ("accuracy",) if pairwise else ("mae", "qwk"):
        label = LABELS[name]
        table[label] = [_figure(getattr(row, name)) if row else None for row in found]
        table[f"{label} 95%"] = [_interval(getattr(row, name)) if row else "—" for row in found]
    table["Alpha without"] = [_number(row.alpha_without) if row else None for row in found]
    table["Competence"] = [_number(row.competence) if row else None for row in found]
    if not pairwise:
        table["Random-answer evidence"] = [
            _number(row.random_evidence) if row and row.random_evidence is not None else None
            for row in found
        ]
    if pairwise:
        table["Shown first"] = [
            _figure(row.position.share_first) if row and row.position else None for row in found
        ]
        table["Others, same pairs"] = [
            _number(row.position.others_share) if row and row.position else None for row in found
        ]
    if pairwise and any(row is not None and row.length is not None for row in found):
        table["Longer chosen"] = [
            _figure(row.length.share_longer) if row and row.length else None for row in found
        ]
        table["Others, longer"] = [
            _number(row.length.others_share) if row and row.length else None for row in found
        ]
    table["Longest run"] = [row.run.length if row else None for row in found]
    table["Flags"] = ["; ".join(f.reason for f in row.flags) if row else "" for row in found]
    return pd.DataFrame(table)


def render_annotators(
    section: AnnotatorsSection | None,
    *,
    pairwise: bool,
    reasons: Mapping[str, str] | None = None,
    names: Sequence[str] | None = None,
    leading: Mapping[str, list] | None = None,
) -> None:
    """The *Annotators* subheader, what the table shows, the alpha with everyone and the
    latent-class model, and the table (:func:`annotators_table`)."""
    st.subheader("Annotators")
    st.caption(CAPTION)
    if section is not None:
        overall = _number(section.alpha)
        st.caption(
            f"Alpha with everyone, all tasks together: "
            f"{'n/a' if overall is None else f'{overall:.3f}'}; competence: "
            f"{section.model or 'none on a continuous scale'}."
        )
    frame = annotators_table(
        section, pairwise=pairwise, reasons=reasons, names=names, leading=leading
    )
    if frame["Weight"].isna().all():  # an equal-weight reference: nothing to tell apart
        frame = frame.drop(columns="Weight")
    # Numbers stay numbers (the columns sort), shown with one rule: three decimals.
    decimals = {
        column: st.column_config.NumberColumn(format="%.3f", help=COLUMN_HELP.get(column))
        for column in frame.columns
        if frame[column].dtype == float and column not in ("Units", "Longest run")
    }
    st.dataframe(frame, hide_index=True, column_config=decimals)


COLUMN_HELP = {
    "Others, same pairs": "The share of the response shown first among the other annotators' "
    "answers on this annotator's pairs, leaving out those flagged low competence or "
    "straight-lining (so that careless annotators do not move the baseline; METRICS.md).",
    "Longer chosen": "Their share choosing the longer response, over the pairs of unequal "
    "lengths (ties count as not longer).",
    "Others, longer": "The share of the longer response among the other annotators' answers on "
    "this annotator's pairs of unequal lengths, counted as for 'Others, same pairs'.",
}
"""Column tips of the Annotators table, where a column's name cannot say it all."""


def _figure(estimate: AnnotatorEstimate | None) -> float | None:
    return None if estimate is None else _number(estimate.value)


def _interval(estimate: AnnotatorEstimate | None) -> str:
    if estimate is None or estimate.low is None or estimate.high is None:
        return "—"
    if math.isnan(estimate.low) or math.isnan(estimate.high):
        return "—"
    return f"{estimate.low:.2f}–{estimate.high:.2f}"


def _number(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value
