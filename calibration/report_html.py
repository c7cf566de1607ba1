"""The audit report: one self-contained HTML file (inline CSS and SVG, no script, no URL).

Every piece of data text (model and human text, names, ids) goes through :func:`html.escape`, so
it is shown, never interpreted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from pathlib import Path

from calibration.analysis import CalibrationReport
from calibration.annotators import annotator_label
from calibration.compare import JudgeComparison
from calibration.details import JudgeDetails
from calibration.disagreement import disagreement_rule_text
from calibration.maps import MAP_KINDS
from calibration.report_compare import comparison_section
from calibration.report_glance import glance_section
from calibration.result import (
    AnnotatorEstimate,
    CalibrationResult,
    Interval,
    JudgeResult,
    LabelScale,
    PointScale,
)
from calibration.svg import bar_chart, heatmap
from calibration.tables import MODEL_SCORES_NOTE, model_score_table

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;line-height:1.4}
h1{font-size:1.6rem}h2{border-bottom:2px solid #4269d0;padding-bottom:.2rem;margin-top:2.2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.85rem;display:block;overflow-x:auto}
th,td{border:1px solid #ccc;padding:.25rem .45rem;text-align:right;vertical-align:top}
th{background:#f0f3fa}td.text,th.text{text-align:left;white-space:pre-wrap;max-width:28rem}
.ci{color:#666;font-size:.75rem}.note{color:#555;font-size:.85rem}
.worse{color:#b3261e}.better{color:#1b6e20}dl{display:grid;grid-template-columns:14rem 1fr}
.charts{display:flex;flex-wrap:wrap;gap:1rem}
dt{font-weight:bold}dd{margin:0 0 .3rem 0;word-break:break-all}
"""
_ERROR_METRICS = {"mae", "mse", "rmse", "percent_mae"}
_SIGNED_METRICS = {"bias", "smd"}  # a difference of signed errors is neither better nor worse


def write_html(
    report: CalibrationReport,
    path: Path,
    comparisons: Sequence[JudgeComparison] = (),
    extra_sections: Sequence[str] = (),
) -> None:
    """Write the audit report to ``path`` (UTF-8), with a section per judge comparison."""
    Path(path).write_text(render_html(report, comparisons, extra_sections), encoding="utf-8")


def render_html(
    report: CalibrationReport,
    comparisons: Sequence[JudgeComparison] = (),
    extra_sections: Sequence[str] = (),
) -> str:
    """The audit report as one HTML document (``comparisons``: from calibration.compare;
    ``extra_sections``: escaped HTML from :mod:`calibration.report_audits`, after them)."""
    result = report.result
    sections = [
        glance_section(report),  # the charts first, as on the calibration page
        _setup(result),
        _headline(result),
        _ceiling(result),
        _annotators(result),
        _groups(result),
        _models(result),
        _model_scores(result),
        _maps(result),
    ]
    sections.append(comparison_section(list(comparisons)))
    sections.extend(extra_sections)
    for name, details in report.details.items():
        sections.append(_judge_section(result.judges[name], name, details))
    title = f"CritiqueLab calibration report — {result.protocol}"
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>" + "".join(sections) + "</body></html>"
    )


def audit_report_html(sections: Sequence[str]) -> str:
    """A report made of the judge-audit sections alone (``calibrate --consistency`` by itself)."""
    title = "CritiqueLab judge audit"
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>{_CSS}</style></head><body>"
        f"<h1>{title}</h1>" + "".join(sections) + "</body></html>"
    )


def _setup(result: CalibrationResult) -> str:
    reference, options = result.reference, result.options
    judges = ", ".join(result.judges) or "none"
    facts = {
        "Protocol": f"{result.protocol} {_scale_text(result.scale)}",
        "Judges compared": judges,
        "Humans": f"{result.human.n_annotators} annotators on {result.human.n_units} units",
        "Reference": f"{reference.consensus} of the human judgements; adjudicated label where "
        f"one exists ({reference.n_adjudicated} units); no majority → {reference.no_majority}",
        "Annotators left out of the reference": ", ".join(
            f"{name} ({reference.exclusion_reasons.get(name, 'listed')})"
            for name in reference.excluded_annotators
        )
        or "none",
        "Annotators' weights in the reference": ", ".join(
            f"{name} {_fmt(weight)}" for name, weight in reference.weights.items()
        )
        or "none",
        **(
            {}
            if reference.rejected_answers is None
            else {"Answers a reviewer rejected (left out)": str(reference.rejected_answers)}
        ),
        "Units": f"{reference.n_units} with a reference of {reference.n_units_total} "
        f"({reference.n_units_without_reference} without one, not scored)",
        "Unparsed judge outputs": _unparsed_text(options.unparsed, result.pairwise),
        "Intervals": f"{options.ci_method}, B = {options.bootstrap}, level "
        f"{options.ci_level}, seed {options.seed}",
        "Grouping": (", ".join(options.by) or "none")
        + f" (aggregate over groups: {options.aggregate})",
    }
    versions = dict(result.versions)
    fingerprint = versions.pop("data_sha256", None)
    facts |= {f"Version of {k}": v for k, v in versions.items()}
    if fingerprint is not None:
        facts["Data fingerprint"] = f"SHA-256 of the judgement rows compared: {fingerprint}"
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in facts.items())
    definitions = "".join(
        f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in result.definitions.items()
    )
    return (
        "<h2>What was compared, and how</h2>"
        "<p class='note'>Each judge's judgements are compared with the reference label of each "
        "unit (a model response, or a pair of responses). Intervals come from resampling whole "
        "units with replacement.</p>"
        f"<dl>{items}</dl><ul class='note'>{definitions}</ul>"
    )


_UNPARSED_MEANING = {
    "wrong": "wrong: an unparsed verdict counts as a miss (it matches no reference label)",
    "tie": "tie: an unparsed verdict is read as a tie",
    "drop": "drop: unparsed verdicts are left out of the metrics (see coverage)",
}


def _unparsed_text(rule: str, pairwise: bool) -> str:
    if not pairwise:
        return "left out: an unparsed score is not scored and counts against coverage"
    return _UNPARSED_MEANING.get(rule, rule)


def _headline(result: CalibrationResult) -> str:
    judges = result.judges
    if not judges:
        return "<h2>Judges against the reference</h2><p>No judge judgements were found.</p>"
    metrics = ["n", "coverage", *next(iter(judges.values())).values]
    header = "<tr><th class='text'>metric</th>" + "".join(
        f"<th>{escape(name)}</th>" for name in judges
    )
    rows = "".join(
        f"<tr><th class='text'>{escape(metric)}</th>"
        + "".join(f"<td>{_judge_value(judge, metric)}</td>" for judge in judges.values())
        + "</tr>"
        for metric in metrics
    )
    return (
        "<h2>Judges against the reference</h2>"
        "<p class='note'>Point estimate, 95% interval below it. n = units scored; coverage = "
        "share of the judge's answers that could be parsed.</p>"
        f"<table>{header}</tr>{rows}</table>"
    )


def _ceiling(result: CalibrationResult) -> str:
    alphas = "".join(
        _row(k, _value(v.value, (v.low, v.high))) for k, v in result.human.alphas.items()
    )
    parts = [
        "<h2>The human ceiling</h2>",
        "<p class='note'>Agreement among the annotators themselves (Krippendorff's alpha over "
        "all of them), and leave-one-out: each annotator against the consensus of the others, "
        "beside each judge against that same consensus on the same units. Degradation = judge "
        "− human: red where the judge is further from the humans than a human is.</p>",
        f"<table><tr><th class='text'>inter-human</th><th>value</th></tr>{alphas}</table>",
    ]
    for name, block in result.judges.items():
        loo = block.loo
        if loo.judge is None or loo.human is None or loo.degradation is None:
            continue
        rows = "".join(
            f"<tr><th class='text'>{escape(metric)}</th><td>{_fmt(loo.human[metric])}</td>"
            f"<td>{_fmt(loo.judge[metric])}</td>"
            f"{_degradation(metric, loo.degradation[metric])}</tr>"
            for metric in loo.judge
        )
        parts.append(
            f"<h3>{escape(name)} against one more human ({loo.n_annotators} annotators)</h3>"
            "<table><tr><th class='text'>metric</th><th>human LOO</th><th>judge LOO</th>"
            f"<th>degradation</th></tr>{rows}</table>"
        )
    return "".join(parts)


def _annotators(result: CalibrationResult) -> str:
    """One row per annotator (METRICS.md, "Annotators"), each flag with its reason."""
    section = result.annotators
    if section is None or not section.rows:
        return ""
    pairwise = result.pairwise
    agreement = ["accuracy"] if pairwise else ["mae", "qwk"]
    competence = {
        "dawid-skene": "Dawid–Skene expected accuracy (chance)",
        "ordinal-mace": "ordinal MACE θ",
    }.get(section.model or "", "competence")
    left_out = result.reference.exclusion_reasons
    header = ["annotator", "units", "weight", "LOO units", *agreement]
    header += [f"alpha without ({_fmt(section.alpha)} with all)", competence]
    lengths = pairwise and any(row.length is not None for row in section.rows)
    header += ["shown first: them / others"] if pairwise else []
    header += ["longer chosen: them / others"] if lengths else []
    header += ["longest run / others'", "flags"]
    rows = []
    for row in section.rows:
        cells = [
            escape(annotator_label(row.annotator, row.excluded, left_out.get(row.annotator))),
            _fmt(row.n),
            _fmt(row.weight),
            _fmt(row.loo_n),
            *(_estimate(getattr(row, name)) for name in agreement),
            _fmt(row.alpha_without),
            _fmt(row.competence)
            + (f" ({_fmt(row.chance)})" if section.model == "dawid-skene" else ""),
        ]
        if pairwise:
            position = row.position
            cells.append(
                "n/a"
                if position is None
                else f"{_estimate(position.share_first)} / {_fmt(position.others_share)}"
            )
        if lengths:
            length = row.length
            cells.append(
                "n/a"
                if length is None
                else f"{_estimate(length.share_longer)} / {_fmt(length.others_share)}"
            )
        run = row.run
        cells.append(f"{run.length} of {run.n} / {_fmt(run.others_length)}")
        reasons = "".join(f"<li>{escape(flag.reason)}</li>" for flag in row.flags)
        cells.append(f"<ul>{reasons}</ul>" if reasons else "none")
        rows.append(
            f"<tr><th class='text'>{cells[0]}</th>"
            + "".join(f"<td>{cell}</td>" for cell in cells[1:-1])
            + f"<td class='text'>{cells[-1]}</td></tr>"
        )
    text_columns = ("annotator", "flags")
    head = "".join(
        (
            f"<th class='text'>{escape(name)}</th>"
            if name in text_columns
            else f"<th>{escape(name)}</th>"
        )
        for name in header
    )
    return (
        "<h2>Annotators</h2><p class='note'>Each annotator against the consensus of the others "
        f"({escape(section.loo_rule)}) on the units both have, with a 95% bootstrap interval "
        f"over their units (B = {section.bootstrap}, seed {section.seed}); the campaign's "
        f"Krippendorff alpha ({escape(section.alpha_level)}) without them; a latent-class "
        "competence; the longest run of one answer in their answers' order beside that of the "
        "others' consensus on the same units. A flag says why it was raised; thresholds are in "
        f"METRICS.md.</p><table><tr>{head}</tr>{''.join(rows)}</table>"
    )


def _estimate(estimate: AnnotatorEstimate | None) -> str:
    if estimate is None:
        return "n/a"
    return _value(estimate.value, (estimate.low, estimate.high))


def _groups(result: CalibrationResult) -> str:
    parts = []
    for name, block in result.judges.items():
        for field, groups in (block.by or {}).items():
            metrics = ["n", *next(iter(groups.values())).values]
            header = f"<tr><th class='text'>{escape(field)}</th>" + "".join(
                f"<th>{escape(m)}</th>" for m in metrics
            )
            rows = "".join(
                f"<tr><th class='text'>{escape(group)}</th>"
                + "".join(f"<td>{_fmt(({'n': values.n} | values.values)[m])}</td>" for m in metrics)
                + "</tr>"
                for group, values in groups.items()
            )
            aggregate = (block.by_aggregate or {})[field]
            agg_row = f"<tr><th class='text'>aggregate ({escape(aggregate.mode)})</th>" + "".join(
                f"<td>{_fmt(aggregate.values.get(m))}</td>" for m in metrics
            )
            parts.append(
                f"<h3>{escape(name)} by {escape(field)}</h3><table>{header}</tr>{rows}{agg_row}"
                f"</tr></table><p class='note'>{aggregate.groups_without_correlation} group(s) "
                "gave no correlation (fewer than 2 units or a constant side).</p>"
            )
    return ("<h2>Per group</h2>" + "".join(parts)) if parts else ""


def _models(result: CalibrationResult) -> str:
    models = result.models
    if not models:
        return ""
    sources = sorted({source for entry in models.values() for source in entry})
    header = "<tr><th class='text'>model</th>" + "".join(
        f"<th>{escape(s)} avg</th><th>{escape(s)} alignment</th>" for s in sources
    )
    rows = "".join(
        f"<tr><th class='text'>{escape(model)}</th>"
        + "".join(
            f"<td>{_fmt(entry[s].avg if s in entry else None)}</td>"
            f"<td>{_fmt(entry[s].alignment_score if s in entry else None)}</td>"
            for s in sources
        )
        + "</tr>"
        for model, entry in models.items()
    )
    ranks = "".join(
        f"<li>{escape(name)}: Kendall's tau between model rankings = "
        f"{_fmt(block.ranking_kendall)}</li>"
        for name, block in result.judges.items()
    )
    return (
        "<h2>Models (leaderboard)</h2><p class='note'>AlignMMBench: unweighted mean of the task "
        "means; MMIE: percent of the maximum. The alignment score is our reading of "
        "AlignMMBench (1 / mean variance across prompt variants).</p>"
        f"<table>{header}</tr>{rows}</table><ul>{ranks}</ul>"
    )


def _model_scores(result: CalibrationResult) -> str:
    """The *Model scores* table: judge-only, humans-only and PPI++ per judge and model."""
    table = model_score_table(result)
    if table.empty or result.model_estimates is None:
        return ""
    header = "".join(f"<th class='text'>{escape(c)}</th>" for c in table.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td class='text'>{escape(str(v))}</td>" for v in row) + "</tr>"
        for row in table.itertuples(index=False)
    )
    note = MODEL_SCORES_NOTE.format(sample=result.model_estimates.sample)
    return (
        f"<h2>Model scores</h2><p class='note'>{escape(note)}</p>"
        f"<table><tr>{header}</tr>{rows}</table>"
    )


def _maps(result: CalibrationResult) -> str:
    parts = []
    for name, block in result.judges.items():
        maps = block.maps
        if maps is None:
            continue
        fitted = {k: getattr(maps, k) for k in ("raw", *MAP_KINDS)}
        tables = {k: {"n": v.n} | v.values for k, v in fitted.items() if v is not None}
        kinds = list(tables)
        metrics = list(tables["raw"])
        rows = "".join(
            f"<tr><th class='text'>{escape(m)}</th>"
            + "".join(f"<td>{_fmt(tables[k].get(m))}</td>" for k in kinds)
            + "</tr>"
            for m in metrics
        )
        split = maps.split
        parts.append(
            f"<h3>{escape(name)}</h3><p class='note'>Fitted on {split.calibration_units} units, "
            f"reported on {split.held_out_units} held-out units (split by item, seed "
            f"{split.seed}).</p><table><tr><th class='text'>metric</th>"
            + "".join(f"<th>{escape(k)}</th>" for k in kinds)
            + f"</tr>{rows}</table>"
        )
    return ("<h2>Calibration maps (before / after)</h2>" + "".join(parts)) if parts else ""


def _judge_section(block: JudgeResult, name: str, details: JudgeDetails) -> str:
    parts = [f"<h2>Judge {escape(name)}</h2>"]
    status = ", ".join(f"{escape(k)}: {v}" for k, v in block.parse_status.items())
    parts.append(f"<p><b>Parse coverage</b>: {_fmt(block.coverage)} ({status})</p>")
    if "acc_with_tie" in block.values:
        keys = (
            "acc_with_tie",
            "acc_without_tie",
            "consistency",
            "agreement_both_orders",
            "prefer_first",
            "tie_rate",
        )
        rows = "".join(_row(k, _judge_value(block, k)) for k in keys)
        parts.append(
            "<p class='note'>Accuracy with ties counts tie as a class; without ties it is over "
            "pairs the humans did not call a tie. Consistency: both orders give the same "
            "verdict (n/a when no pair was judged in both orders). "
            "prefer_first above 0.5 means the judge favours whichever response is shown first.</p>"
            f"<table>{rows}</table>"
        )
    distribution = details.distribution
    totals = distribution.sum().replace(0, 1)
    shares = distribution / totals
    parts.append(
        bar_chart(
            [str(i) for i in distribution.index],
            {col: shares[col].tolist() for col in distribution.columns},
            title=f"Distribution of values: {name} beside the humans (share of each)",
        )
    )
    confusion = details.confusion
    parts.append(
        heatmap(
            [str(i) for i in confusion.index],
            [str(c) for c in confusion.columns],
            confusion.to_numpy().tolist(),
            title=f"Confusion: reference × {name}",
            row_label="reference (humans)",
            column_label=f"{name}",
        )
    )
    if not details.bias.empty:
        parts.append(
            bar_chart(
                [str(i) for i in details.bias.index],
                {"judge − reference": details.bias["mean_bias"].tolist()},
                title=f"Bias of {name} by reference score (mean judge − reference)",
                symmetric=True,
            )
        )
    parts.append(_disagreements(name, details))
    return "".join(parts)


def _disagreements(name: str, details: JudgeDetails) -> str:
    table = details.disagreements
    rule = disagreement_rule_text(name, details.disagreement_threshold)
    if table.empty:
        return f"<p>No disagreements ({escape(rule)}).</p>"
    rows = []
    for row in table.to_dict("records"):
        humans = "\n\n".join(f"{r} ({v}): {t}" for r, v, t in row["human_rationales"])
        judge = "\n\n".join(f"[{o}] ({v}): {t}" for o, v, t in row["judge_rationales"])
        rows.append(
            f"<tr><td class='text'>{escape(str(row['item_id']))}<br>{escape(str(row['unit']))}"
            f"<br>{escape(str(row.get('task')))} · {escape(str(row.get('model')))}</td>"
            f"<td>{escape(str(row['judge']))}</td><td>{escape(str(row['reference']))}"
            f"{' (adjudicated)' if row['adjudicated'] else ''}</td>"
            f"<td class='text'>{escape(humans)}</td><td class='text'>{escape(judge)}</td></tr>"
        )
    return (
        f"<h3>Largest disagreements of {escape(name)}</h3><p>{len(table)} of "
        f"{details.disagreement_count} disagreements, where {escape(rule)}; largest gap first "
        "(the <em>Disagreements</em> page lists them all).</p><table><tr><th class='text'>item / "
        "unit</th><th>judge</th><th>reference</th><th class='text'>human rationales</th>"
        f"<th class='text'>judge rationale</th></tr>{''.join(rows)}</table>"
    )


def _row(label: str, cell: str) -> str:
    return f"<tr><th class='text'>{escape(label)}</th><td>{cell}</td></tr>"


def _judge_value(judge: JudgeResult, metric: str) -> str:
    """A judge's count, coverage or metric (with its interval) as a table cell."""
    if metric == "n":
        return _fmt(judge.n)
    if metric == "coverage":
        return _fmt(judge.coverage)
    if metric not in judge.values:
        return _fmt(None)
    entry = judge.metric(metric)
    return _value(entry.value, (entry.low, entry.high))


def _scale_text(scale: PointScale | LabelScale) -> str:
    if isinstance(scale, LabelScale):
        return "(" + " / ".join(scale.labels) + ")"
    step = "continuous" if scale.step is None else f"step {scale.step}"
    return f"({scale.min}–{scale.max}, {step})"


def _fmt(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, int):
        return str(value)
    return f"{value:.3f}" if isinstance(value, float) else escape(str(value))


def _value(value: object, interval: Interval | None) -> str:
    text = _fmt(value)
    if interval and all(v is not None for v in interval):
        text += f"<br><span class='ci'>[{interval[0]:.3f}, {interval[1]:.3f}]</span>"
    return text


def _degradation(metric: str, value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "<td>n/a</td>"
    if metric in _SIGNED_METRICS:
        return f"<td>{value:+.3f}</td>"
    worse = value > 0 if metric in _ERROR_METRICS else value < 0
    return f"<td class='{'worse' if worse else 'better'}'>{value:+.3f}</td>"
