"""The judge audits as display tables, terminal text and HTML report sections.

Shared by ``critiquelab calibrate`` (``--consistency``, the ``judge_audit`` block), the
calibration page and the HTML audit report, so the three show the same columns in the same words.
"""

from __future__ import annotations

from html import escape

import pandas as pd

from calibration.audit_stats import Interval
from calibration.audits import Beside, JudgeAudit
from calibration.consistency import ConsistencyReport


def consistency_table(report: ConsistencyReport) -> pd.DataFrame:
    """One row per rater (the humans first): pairs, consistency with its interval, inconsistent."""
    return pd.DataFrame(
        [
            {
                "rater": r.rater,
                "pairs": r.n_pairs,
                "consistent": _number(r.consistency),
                "95% interval": _interval(r.ci),
                "inconsistent pairs": r.n_inconsistent,
            }
            for r in report.raters
        ]
    ).set_index("rater")


def consistency_cases(report: ConsistencyReport) -> pd.DataFrame:
    """The inconsistent pairs, largest score gap first."""
    columns = ["rater", "pair", "preference", "score A", "score B", "consistent share"]
    return pd.DataFrame(
        [
            [c.rater, c.pair, c.preference, c.score_a, c.score_b, round(c.share_consistent, 2)]
            for c in report.cases
        ],
        columns=columns,
    )


def consistency_caption(report: ConsistencyReport) -> str:
    """One paragraph: what was compared and how a check counts."""
    text = (
        f"{report.n_pairs} pairs of {report.pairwise_campaign} whose two responses are scored in "
        f"{report.pointwise_campaign}. Consistent: the preferred response got the higher score; a "
        f"tie, scores at most δ = {report.delta:g} apart. Humans: reference preference and "
        "reference scores; a judge: its own verdicts (both orders, ½ each) and its own scores. "
        "Inconsistent pairs: those with at least one inconsistent verdict, so a judge consistent "
        "in one order of a pair and not in the other counts ½ in the share and 1 here."
    )
    if report.bootstrap:
        text += f" 95% intervals: bootstrap over pairs, B = {report.bootstrap}, seed {report.seed}."
    return text


PRICE_COLUMN = "price / 1k units"
"""The cost table's price column (prices are in the currency the user stated them in)."""


def cost_table(audit: JudgeAudit) -> pd.DataFrame:
    """Tokens, price and seconds per 1,000 units per judge; with a column "calls of" naming the
    judge whose calls a read-out (``-probs``, ``-debiased``) is charged, when there is one."""
    sources = any(c.source is not None for c in audit.costs)
    rows = {
        c.judge: {
            **({"calls of": c.source or c.judge} if sources else {}),
            "units": c.n_units,
            "calls": c.n_calls,
            "cached": c.n_cached,
            "input tokens / 1k units": _count(c.input_tokens_per_1000),
            "output tokens / 1k units": _count(c.output_tokens_per_1000),
            PRICE_COLUMN: "—" if c.cost_per_1000 is None else f"{c.cost_per_1000:,.2f}",
            "seconds / 1k units": _count(c.seconds_per_1000),
        }
        for c in audit.costs
    }
    return pd.DataFrame.from_dict(rows, orient="index")


def bias_table(audit: JudgeAudit) -> pd.DataFrame:
    """Per judge and bias: judge, humans on the same units, judge − humans, each with interval."""
    length = "prefers the longer" if audit.pairwise else "Spearman(score, length)"
    lists = "prefers the list" if audit.pairwise else "Spearman(score, has list)"
    own = "prefers own family" if audit.pairwise else "own-family score gap"
    rows = []
    for b in audit.biases:
        for label, value in ((length, b.length), (lists, b.lists), (own, b.self_preference)):
            if value is not None:
                rows.append(_beside_row(b.judge, label, value, share=audit.pairwise))
    columns = ["judge", "bias", "units", "judge value", "humans", "judge − humans"]
    return pd.DataFrame(rows, columns=columns)


def length_controlled_table(audit: JudgeAudit) -> pd.DataFrame:
    """Agreement before and after removing the judge's length effect."""
    metric = "accuracy on decisive pairs" if audit.pairwise else "Pearson r with the reference"
    rows = {
        b.judge: {
            "agreement": metric,
            "units": b.length_controlled.n,
            "raw": _number(b.length_controlled.agreement),
            "length-controlled": _number(b.length_controlled.length_controlled),
            "95% interval": _interval(b.length_controlled.length_controlled_ci),
            "length coefficient": _number(b.length_controlled.length_coefficient, signed=True),
        }
        for b in audit.biases
    }
    return pd.DataFrame.from_dict(rows, orient="index")


def audit_caption(audit: JudgeAudit) -> str:
    """How to read the bias and cost tables."""
    if audit.pairwise:
        text = (
            f"Length: pairs whose lengths differ by more than {audit.length_gap} characters; "
            "list: pairs where exactly one response has a list; own family: pairs with exactly "
            "one response from the judge's family. A share counts a tie as ½; humans = the mean "
            "over the annotators of each pair. Length-controlled: logistic GLM of the judge's "
            "verdict on the human label and tanh(Δlength / sd), predicted at Δlength = 0."
        )
    else:
        text = (
            "Humans = the reference score. Own family: mean score on the judge's own family's "
            "responses minus on the others. Length-controlled: least squares of the judge's "
            "score on the reference and the standardised log length; the length term removed."
        )
    families = [b.family for b in audit.biases if b.family is not None]
    if not families:
        text += " Self-preference needs a mapping of judges and models to their families."
    if audit.bootstrap:
        text += (
            f" 95% intervals: bootstrap over units, B = {audit.bootstrap}, seed {audit.seed} "
            "(judge − humans: paired)."
        )
    return text


def cost_caption(audit: JudgeAudit) -> str:
    """How cost and time are measured."""
    text = (
        "Per 1,000 units: mean over units whose every call was paid for (not cached) and recorded "
        "(tokens: judge run's usage; time: meta.latency). Price: user-stated prices per million "
        "tokens (input and output prices for every judge, or a price per judge); — where not "
        "given or not recorded."
    )
    if any(c.source is not None for c in audit.costs):
        text += (
            " A read-out (<judge>-probs, <judge>-debiased) pays for no call of its own: it is "
            "charged the calls of the judge it was read out of ('calls of'), one per unit, two "
            "for a pair judged in both orders."
        )
    return text


def consistency_text(report: ConsistencyReport) -> str:
    """The consistency report for a terminal."""
    lines = [consistency_caption(report), consistency_table(report).to_string()]
    cases = consistency_cases(report)
    if not cases.empty:
        lines += ["inconsistent pairs (largest score gap first):", cases.head(10).to_string()]
    return "\n".join(lines)


def audit_text(audit: JudgeAudit) -> str:
    """The bias and cost audit for a terminal."""
    return "\n".join(
        [
            "judge cost per 1,000 units:",
            cost_table(audit).to_string(),
            "judge biases:",
            bias_table(audit).to_string(index=False),
            "length-controlled agreement:",
            length_controlled_table(audit).to_string(),
        ]
    )


def consistency_section(report: ConsistencyReport | None) -> str:
    """HTML: "Scores and preferences: do they agree?" (every text escaped)."""
    if report is None:
        return ""
    cases = consistency_cases(report).head(50)
    return (
        "<h2>Scores and preferences: do they agree?</h2>"
        f"<p class='note'>{escape(consistency_caption(report))}</p>"
        + _html_table(consistency_table(report), "rater")
        + "<h3>Inconsistent pairs (largest score gap first, up to 50)</h3>"
        + (_html_table(cases.set_index("rater"), "rater") if not cases.empty else "<p>None.</p>")
    )


def audit_section(audit: JudgeAudit | None) -> str:
    """HTML: "Judge bias and cost" (every text escaped)."""
    if audit is None:
        return ""
    return (
        "<h2>Judge bias and cost</h2>"
        f"<p class='note'>{escape(cost_caption(audit))}</p>"
        + _html_table(cost_table(audit), "judge")
        + f"<p class='note'>{escape(audit_caption(audit))}</p>"
        + _html_table(bias_table(audit).set_index("judge"), "judge")
        + "<h3>Length-controlled agreement</h3>"
        + _html_table(length_controlled_table(audit), "judge")
    )


def _html_table(table: pd.DataFrame, index_name: str) -> str:
    header = "".join(f"<th>{escape(str(c))}</th>" for c in table.columns)
    rows = "".join(
        f"<tr><th class='text'>{escape(str(key))}</th>"
        + "".join(f"<td>{escape(str(v))}</td>" for v in row)
        + "</tr>"
        for key, row in zip(table.index, table.to_numpy(), strict=True)
    )
    return f"<table><tr><th class='text'>{escape(index_name)}</th>{header}</tr>{rows}</table>"


def _beside_row(judge: str, label: str, value: Beside, *, share: bool) -> list:
    fmt = _percent if share else _number
    return [
        judge,
        label,
        value.n,
        f"{fmt(value.judge)} {_interval(value.judge_ci, fmt)}",
        f"{fmt(value.humans)} {_interval(value.humans_ci, fmt)}",
        f"{_number(value.difference, signed=True)} "
        f"{_interval(value.difference_ci, lambda v: _number(v, signed=True))}",
    ]


def _number(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _count(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _interval(interval: Interval, fmt=_number) -> str:
    if interval is None:
        return "—"
    return f"[{fmt(interval[0])}, {fmt(interval[1])}]"
