"""The calibration page's "Is judge A better than judge B?" block (calibration.compare).

A picker of two sides (any judge of the campaign, or the leave-one-out human), then the same
table as ``critiquelab calibrate --compare A B`` and the HTML report.
"""

from __future__ import annotations

import streamlit as st

from annotate_app.calibration_worker import CampaignScope, page_comparison
from annotate_app.text import escape_markdown
from calibration import CalibrationInputError
from calibration.compare import HUMAN, JudgeComparison
from calibration.pairwise import UnparsedRule
from calibration.report_compare import comparison_caption, comparison_table, side_label
from calibration.tables import with_metric_names


@st.cache_data(show_spinner="Comparing the two judges on the same resamples…", max_entries=16)
def _comparison(
    scope: CampaignScope, a: str, b: str, unparsed: UnparsedRule, bootstrap: int, seed: int
) -> JudgeComparison:
    """Computed in the calibration worker (:mod:`annotate_app.calibration_worker`), cached on
    the campaign's version and filters."""
    return page_comparison(scope, a, b, unparsed=unparsed, bootstrap=bootstrap, seed=seed)


def render_comparison(
    scope: CampaignScope,
    n_annotators: int,
    judges: list[str],
    *,
    unparsed: UnparsedRule,
    bootstrap: int,
    seed: int = 0,
) -> None:
    """Pick A and B among ``judges`` and the human ceiling (with ``n_annotators`` >= 2); show
    Δ = A − B with its interval."""
    st.subheader("Is judge A better than judge B?")
    sides = [*judges, *([HUMAN] if n_annotators >= 2 else [])]
    if len(sides) < 2:
        st.info("Pick at least two judges above (or one judge, with two or more annotators).")
        return
    left, right = st.columns(2)
    a = left.selectbox("A", sides, index=0, format_func=side_label, key="compare-a")
    b = right.selectbox("B", sides, index=len(sides) - 1, format_func=side_label, key="compare-b")
    if a == b:
        st.info("Choose two different sides to compare.")
        return
    try:
        comparison = _comparison(scope, a, b, unparsed, bootstrap, seed)
    except CalibrationInputError as error:  # e.g. no unit that both sides judged
        st.info(str(error))
        return
    st.caption(escape_markdown(comparison_caption(comparison)))
    st.dataframe(with_metric_names(comparison_table(comparison), axis="index"))
