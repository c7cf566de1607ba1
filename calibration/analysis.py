"""The whole calibration of one protocol: humans, reference, every judge, intervals, models.

:func:`calibrate` turns a judgement frame into a :class:`CalibrationReport`: ``result`` is the
typed :class:`~calibration.result.CalibrationResult` whose serialisation is the JSON of
METRICS.md ("Output"); ``details`` holds what the audit report and the dashboard draw
(confusion tables, distributions, bias by score point, largest disagreements).
"""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata
import platform
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd

from calibration.alpha import AlphaData
from calibration.annotators import AnnotatorTable, annotator_reliability, longer_responses
from calibration.bootstrap import (
    CI_LEVEL,
    percentile_interval,
    unit_resample_counts,
)
from calibration.ceiling import LeaveOneOut
from calibration.details import (
    JudgeDetails,
    listed_units,
    pairwise_details,
    pointwise_details,
    with_rationales,
)
from calibration.disagreement import disagreement_threshold, judge_disagreements
from calibration.errors import CalibrationInputError
from calibration.grouped import aggregate_groups, group_weights
from calibration.leaderboard import alignment_scores, model_scores, ranking_kendall
from calibration.maps import calibration_maps
from calibration.model_estimates import ModelEstimates, model_estimates, pairwise_judge_values
from calibration.options import CalibrationOptions
from calibration.pairwise import LABELS, PairwiseKernel
from calibration.pointwise import PointwiseKernel
from calibration.result import AnnotatorsSection, CalibrationResult
from calibration.scale import Scale
from calibration.shortcut import is_baseline, shortcut_judgements
from calibration.units import UnitData, prepare_units
from schemas.audit_records import ResponseFacts
from schemas.audit_records import response_lengths as lengths_of  # a parameter has the name
from schemas.disagreements import JudgeDisagreement
from schemas.option_text import OptionText
from schemas.protocols import Protocol

DEFINITIONS: dict[str, str] = {
    "reference": "adjudicated label where one exists, else the consensus of the human judgements",
    "strict_acc": "fraction with round(J) == round(H), rounding half up on the scale's step; "
    "our definition, not AlignMMBench's unpublished code",
    "fuzzy_acc": "fraction with |round(J) - round(H)| <= 1 scale step; our definition, not "
    "AlignMMBench's unpublished code",
    "alignment_score": "1 / mean over prompt-variant groups (>= 2 variants) of the population "
    "variance of a model's scores across variants: our reading of AlignMMBench; null when "
    "every group's variants got the same score (infinite)",
    "degradation": "judge minus human leave-one-out value: positive is worse for error metrics "
    "(mae, mse, rmse, percent_mae), negative is worse for agreement metrics",
    "ci": "95% percentile bootstrap interval over units (all raters of a unit resampled together)",
    "pairwise_weights": "a pair judged in both orders gives each verdict weight 1/2",
}


@dataclass
class CalibrationReport:
    """``result``: the typed METRICS.md result; ``details``: per judge tables for figures;
    ``units``: the units' metadata (task, model...), one row per unit."""

    result: CalibrationResult
    details: dict[str, JudgeDetails] = field(default_factory=dict)
    units: pd.DataFrame | None = None

    def listed_units(self) -> list[str]:
        """The units whose rationales the report shows (its judges' largest disagreements)."""
        return listed_units(self.details)

    def with_rationales(self, rows: pd.DataFrame) -> CalibrationReport:
        """This report with the rationales of its listed units taken from ``rows`` (the
        judgement-frame rows of those units, e.g.
        :func:`data.readmodels.frames.campaign_rationales`)."""
        return replace(self, details=with_rationales(self.details, rows))

    @property
    def summary(self) -> dict:
        """The METRICS.md JSON as a dict (``result.model_dump(mode="json")``).

        Kept while readers move to attribute access on :attr:`result`; new code reads
        ``result``.
        """
        return self.result.model_dump(mode="json")


@dataclass(frozen=True)
class DisagreementList:
    """A judge's disagreements with the reference (:mod:`calibration.disagreement`)."""

    judge: str
    threshold: float | None
    """The pointwise threshold used; None for pairwise."""
    references: int
    """How many units have a reference label (only they can be disagreements)."""
    entries: tuple[JudgeDisagreement, ...]
    """Largest gap first, then unit key."""


def find_disagreements(
    frame: pd.DataFrame,
    options: CalibrationOptions,
    judge: str,
    *,
    overrides: dict[str, object] | None = None,
) -> DisagreementList:
    """Every disagreement of ``judge`` on ``frame``: against the reference :func:`calibrate`
    computes with the same ``options`` and ``overrides``, so the report's list of largest
    disagreements is the first ``options.max_disagreements`` of these."""
    options.validate()
    data = _units(frame, options, overrides)
    entries = judge_disagreements(data, judge, threshold=options.disagreement_threshold)
    return DisagreementList(
        judge,
        disagreement_threshold(options.protocol, options.disagreement_threshold),
        int((~np.isnan(data.reference)).sum()),
        tuple(entries),
    )


def _units(
    frame: pd.DataFrame, options: CalibrationOptions, overrides: dict[str, object] | None
) -> UnitData:
    """The frame over its units with the reference of ``options`` (adjudication, else the
    humans' reference without the excluded annotators)."""
    data = prepare_units(
        frame,
        options.protocol,
        rule=options.reference_rule,
        no_majority=options.no_majority,
        overrides=overrides,
        exclude=options.exclude_annotators,
    )
    check_annotators(options.exclude_annotators, data.all_raters)
    return data


def calibrate(
    frame: pd.DataFrame,
    options: CalibrationOptions,
    *,
    overrides: dict[str, object] | None = None,
    data_sha256: str | None = None,
    progress: Callable[[int], None] | None = None,
    unlabelled: pd.DataFrame | None = None,
    facts: Sequence[ResponseFacts] | None = None,
    response_lengths: Mapping[str, int] | None = None,
) -> CalibrationReport:
    """Calibrate every judge of ``frame`` against the humans (METRICS.md).

    ``overrides``: adjudicated reference per unit key; ``data_sha256``: the hash of the input
    files to record (default: a hash of the frame); ``progress``: called with the number of
    bootstrap resamples just done; ``unlabelled``: judge rows of units outside the labelled
    random sample (a stratified campaign's routed units), which only the model estimates read,
    as unlabelled units; ``facts``: every response's length, list format and model, to add the
    shortcut baseline (:mod:`calibration.shortcut`) as a judge, fitted by cross-fitting on the
    reference; ``response_lengths``: response id → characters (preferences), for the Annotators
    table's ``length`` figure and flag (without it, or ``facts``, the table has none).
    """
    options.validate()
    data = _units(frame, options, overrides)
    lengths = response_lengths
    if lengths is None and facts is not None:
        lengths = lengths_of(facts)
    if facts is not None:
        frame = with_shortcut_baseline(frame, options, facts, overrides=overrides)
        data = _units(frame, options, overrides)
    judges = _judge_names(data, options)
    scale = Scale.of(options.protocol) if options.protocol.is_pointwise else None
    human_alpha = AlphaData.from_matrix(data.humans)
    alpha_levels = ("interval", "ordinal") if scale else ("nominal",)
    kernels = {name: _kernel(data, name, scale, options) for name in judges}
    human_block = _human_block(data, human_alpha, alpha_levels, options, scale)
    ones = np.ones((1, data.n_units))
    judge_blocks = {}
    for name, kernel in kernels.items():
        block: dict = {"n": int(kernel.n()[0]), "coverage": _coverage(data, name, kernel)}
        block.update({k: float(v[0]) for k, v in kernel.evaluate(ones).items()})
        judge_blocks[name] = block
    if options.bootstrap > 0:
        _add_intervals(
            data, human_alpha, alpha_levels, kernels, human_block, judge_blocks, options, progress
        )
    loo = LeaveOneOut(data.humans, data.raters, options.loo_rule, options.no_majority, scale=scale)
    human_block["loo"] = loo.pointwise(None) if scale else loo.pairwise()
    details: dict[str, JudgeDetails] = {}
    for name, kernel in kernels.items():
        block = judge_blocks[name]
        block["parse_status"] = _parse_status(data, name)
        _add_groups(data, kernel, block, options)
        if scale:
            judge_values = data.judge_scores(name)
            block["loo"] = loo.pointwise(judge_values)
            block["maps"] = calibration_maps(
                judge_values,
                data.reference,
                _items(data),
                scale,
                expected=data.judge_scores(name, column="expected_score"),
                fraction=options.calibration_fraction,
                seed=options.seed,
            )
            details[name] = pointwise_details(
                data,
                name,
                judge_values,
                scale,
                options.max_disagreements,
                options.disagreement_threshold,
            )
        else:
            rows = data.judge_rows(name)
            block["loo"] = loo.pairwise(
                rows["unit_index"].to_numpy(),
                _verdicts(rows),
                rows["shown_order"].to_numpy(),
                options.unparsed,
            )
            details[name] = pairwise_details(
                data, name, options.unparsed, options.max_disagreements
            )
    summary: dict[str, object] = {
        "protocol": options.protocol.name,
        "scale": _scale_summary(options.protocol),
        "reference": _reference_summary(data, options),
        "options": _options_summary(options, judges, _grouping(data, options)),
        "definitions": DEFINITIONS,
        "human": human_block,
        "judges": judge_blocks,
        "versions": _versions(data_sha256 or frame_sha256(data.frame)),
        "annotators": asdict(annotator_table(data, options, scale, lengths)),
    }
    if scale:
        summary["models"] = _models(data, judges, judge_blocks, scale)
    if unlabelled is not None and not unlabelled.empty:
        judged = unlabelled[unlabelled["kind"] == "model"]
        estimates_data = _units(pd.concat([frame, judged], ignore_index=True), options, overrides)
    else:
        estimates_data = data
    estimates = _model_estimates(estimates_data, judges, scale, options)
    if estimates.estimates:
        summary["model_estimates"] = estimates
    result = CalibrationResult.model_validate(_jsonable(summary))
    report = CalibrationReport(result, details, data.meta)
    if "rationale" in data.frame.columns:  # a frame read from files carries its rationales
        return report.with_rationales(data.frame)
    return report


def with_shortcut_baseline(
    frame: pd.DataFrame,
    options: CalibrationOptions,
    facts: Iterable[ResponseFacts],
    *,
    overrides: dict[str, object] | None = None,
) -> pd.DataFrame:
    """``frame`` with the shortcut baseline's rows added (:mod:`calibration.shortcut`), fitted
    on the reference of ``options`` and ``overrides``: every table, interval and comparison then
    treats it as one more judge."""
    data = _units(frame, options, overrides)
    baseline = shortcut_judgements(data, facts, seed=options.seed)
    return pd.concat([frame, baseline], ignore_index=True)


def frame_sha256(frame: pd.DataFrame) -> str:
    """A hash of the judgement rows, independent of their order: the SHA-256 of the rows' CSV
    text (these columns as text, rows sorted). The text goes to the hash a block of rows at a
    time, never whole: at millions of rows it would be hundreds of MB, held twice (text, bytes)."""
    columns = ["unit", "rater", "kind", "value", "shown_order", "parse_status"]
    rows = frame[columns].astype(str).sort_values(columns)
    digest = hashlib.sha256()
    for start in range(0, max(len(rows), 1), _HASH_BLOCK):
        block = rows.iloc[start : start + _HASH_BLOCK]
        digest.update(block.to_csv(index=False, header=start == 0).encode())
    return digest.hexdigest()


_HASH_BLOCK = 100_000
"""Rows written to :func:`frame_sha256`'s hash at a time."""


def check_judges(wanted: Sequence[str], present: Sequence[str]) -> None:
    """:class:`CalibrationInputError` naming the ``wanted`` judges that are not ``present``, and
    those that are."""
    unknown = [name for name in wanted if name not in present]
    if unknown:
        raise CalibrationInputError(
            f"judge(s) {', '.join(unknown)} have no judgements here; present: "
            + (", ".join(present) or "none")
        )


def check_annotators(wanted: Sequence[str], present: Sequence[str]) -> None:
    """:class:`CalibrationInputError` naming the ``wanted`` annotators that are not
    ``present``, and those that are."""
    unknown = [name for name in wanted if name not in present]
    if unknown:
        raise CalibrationInputError(
            f"annotator(s) {', '.join(unknown)} have no judgements here; present: "
            + (", ".join(present) or "none")
        )


def annotator_table(
    data: UnitData,
    options: CalibrationOptions,
    scale: Scale | None,
    lengths: Mapping[str, int] | None = None,
) -> AnnotatorTable:
    """The Annotators table (:mod:`calibration.annotators`) of every human rater, excluded ones
    too; answers in the order of the frame's rows (a campaign's: submission order);
    ``lengths``: response id → characters, for preferences' ``length`` figure."""
    raters = list(data.all_raters)
    humans = data.all_humans if data.all_humans is not None else data.humans
    frame = data.frame
    chosen = ((frame["kind"] == "human") & frame["code"].notna()).to_numpy()
    rows = np.flatnonzero(chosen)
    rater_index = np.searchsorted(
        np.array(raters, dtype=object), frame["rater"].to_numpy(dtype=object)[rows]
    )
    units = data.row_units[rows]
    swapped = np.zeros(humans.shape, dtype=bool)
    swapped[rater_index, units] = frame["shown_order"].to_numpy(dtype=object)[rows] == "BA"
    order = np.full(humans.shape, np.nan)
    order[rater_index, units] = np.arange(rows.size, dtype=np.float64)
    weights = dict(
        zip(data.raters, (data.weights if data.weights is not None else []), strict=False)
    )
    return annotator_reliability(
        humans,
        raters,
        scale=scale,
        swapped=swapped,
        order=order,
        longer=None
        if scale is not None or lengths is None
        else longer_responses([str(unit) for unit in data.units], lengths),
        rule=options.loo_rule,
        no_majority=options.no_majority,
        bootstrap=options.bootstrap,
        seed=options.seed,
        excluded=data.excluded,
        weights={k: float(v) for k, v in weights.items()},
    )


def annotators_section(table: AnnotatorTable) -> AnnotatorsSection:
    """An Annotators table as the result's ``annotators`` section (NaN as null), the form that
    the pages' renderer reads, whether it came from a calibration or from the Monitor's live
    labels."""
    section = _jsonable(asdict(table))
    return AnnotatorsSection.model_validate(section)


def _judge_names(data: UnitData, options: CalibrationOptions) -> list[str]:
    present = sorted(data.frame.loc[data.frame["kind"] == "model", "rater"].unique())
    if options.judges is None:
        return present
    check_judges(options.judges, present)
    return [*options.judges, *(j for j in present if is_baseline(j) and j not in options.judges)]


def _kernel(data: UnitData, name: str, scale: Scale | None, options: CalibrationOptions):
    if scale is not None:
        return PointwiseKernel(data.judge_scores(name), data.reference, scale)
    rows = data.judge_rows(name)
    reference = np.array(
        [None if np.isnan(c) else LABELS[int(c)] for c in data.reference], dtype=object
    )
    return PairwiseKernel(
        rows["unit_index"].to_numpy(),
        _verdicts(rows),
        rows["shown_order"].to_numpy(),
        reference,
        options.unparsed,
    )


def _verdicts(rows: pd.DataFrame) -> np.ndarray:
    return np.array([v if v in LABELS else None for v in rows["value"]], dtype=object)


def _coverage(data: UnitData, name: str, kernel) -> float:
    if isinstance(kernel, PairwiseKernel):
        return kernel.coverage
    rows = data.judge_rows(name)
    asked = rows["unit_index"].nunique()
    parsed = rows.loc[rows["code"].notna(), "unit_index"].nunique()
    return parsed / asked if asked else float("nan")


def _parse_status(data: UnitData, name: str) -> dict[str, int]:
    rows = data.judge_rows(name)
    status = rows["parse_status"].fillna("ok").astype(str)
    status = status.where(rows["code"].notna() | (status != "ok"), "unparsed")
    return {str(k): int(v) for k, v in status.value_counts().sort_index().items()}


def _human_block(data, human_alpha, levels, options, scale) -> dict:
    ones = np.ones((1, data.n_units))
    present = ~np.isnan(data.humans)
    block: dict = {
        "n_annotators": len(data.raters),
        "n_units": int(present.any(axis=0).sum()),
        "n_judgements": int(present.sum()),
        "annotations_per_unit": float(present.sum() / max(present.any(axis=0).sum(), 1)),
    }
    for level in levels:
        block[f"alpha_{level}"] = float(human_alpha.evaluate(ones, level)[0])
    return block


def _add_intervals(
    data, human_alpha, levels, kernels, human_block, judge_blocks, options, progress
) -> None:
    samples: dict[tuple[str, str], list[np.ndarray]] = {}
    for weights in unit_resample_counts(data.n_units, options.bootstrap, options.seed):
        if progress is not None:
            progress(weights.shape[0])
        for level in levels:
            key = ("", f"alpha_{level}")
            samples.setdefault(key, []).append(human_alpha.evaluate(weights, level))
        for name, kernel in kernels.items():
            for metric, values in kernel.evaluate(weights).items():
                samples.setdefault((name, metric), []).append(values)
    for (name, metric), parts in samples.items():
        block = human_block if name == "" else judge_blocks[name]
        block.setdefault("ci", {})[metric] = list(percentile_interval(np.concatenate(parts)))


def _add_groups(data: UnitData, kernel, block: dict, options: CalibrationOptions) -> None:
    for field_name in _grouping(data, options):
        if field_name not in data.meta.columns:
            raise CalibrationInputError(
                OptionText(
                    "{by} {field}: no such field; use task, category, model, group, item_id "
                    "or a key of the items' or responses' meta",
                    field=field_name,
                )
            )
        names, weights = group_weights(data.meta[field_name].to_numpy(dtype=object))
        if not names:
            raise CalibrationInputError(
                OptionText("{by} {field}: no unit has a value for it", field=field_name)
            )
        values = kernel.evaluate(weights)
        values = {"n": kernel.n(weights), **values}
        block.setdefault("by", {})[field_name] = {
            group: {m: int(v[i]) if m == "n" else float(v[i]) for m, v in values.items()}
            for i, group in enumerate(names)
        }
        block.setdefault("by_aggregate", {})[field_name] = aggregate_groups(
            values, options.aggregate
        )


def _items(data: UnitData) -> np.ndarray:
    items = data.meta["item_id"].to_numpy(dtype=object)
    return np.array([i if i is not None else u for i, u in zip(items, data.units, strict=True)])


def _models(data: UnitData, judges: list[str], blocks: dict, scale: Scale) -> dict:
    meta = data.meta
    protocol = data.protocol.name
    sources = {"human": data.reference}
    sources.update({f"judge:{name}": data.judge_scores(name) for name in judges})
    # Judges that gave the same scores (a small campaign's judges, one judge under two names)
    # have the same leaderboard: each distinct score vector is averaged once, and copied, since
    # the entries are completed below.
    leaderboards: dict[bytes, dict] = {}

    def leaderboard(values: np.ndarray) -> dict:
        key = values.tobytes()
        if key not in leaderboards:
            leaderboards[key] = model_scores(meta, values, protocol, scale)
        return copy.deepcopy(leaderboards[key])

    per_source = {key: leaderboard(values) for key, values in sources.items()}
    alignment = {key: alignment_scores(meta, values) for key, values in sources.items()}
    # The humans' model averages depend on the judge only through the units both scored, and
    # judges of one campaign mostly score the same units: each set of units is averaged once
    # (38 judges on one campaign made 76 of the page's 115 model_scores calls).
    human_on: dict[bytes, dict] = {}
    for name in judges:
        judge = sources[f"judge:{name}"]
        scored = ~np.isnan(judge)
        common = scored & ~np.isnan(data.reference)
        units_key = np.packbits(common).tobytes()
        if units_key not in human_on:
            human_on[units_key] = leaderboard(np.where(common, data.reference, np.nan))
        if np.array_equal(common, scored):  # every unit the judge scored has a reference
            judge_common = per_source[f"judge:{name}"]
        else:
            judge_common = leaderboard(np.where(common, judge, np.nan))
        blocks[name]["ranking_kendall"] = ranking_kendall(judge_common, human_on[units_key])
    models: dict[str, dict] = {}
    for key, table in per_source.items():
        for model, entry in table.items():
            if model in alignment[key]:
                entry["alignment_score"] = alignment[key][model]
            models.setdefault(model, {})[key] = entry
    return models


def _model_estimates(
    data: UnitData, judges: list[str], scale: Scale | None, options: CalibrationOptions
) -> ModelEstimates:
    """Every judge's judge-only, humans-only and PPI++ model values (:mod:`calibration.
    model_estimates`)."""
    if scale is not None:
        values = {name: data.judge_scores(name) for name in judges}
    else:
        values = {}
        for name in judges:
            rows = data.judge_rows(name)
            verdicts = _verdicts(rows)
            values[name] = pairwise_judge_values(
                rows["unit_index"].to_numpy(), verdicts, data.n_units
            )
    return model_estimates(
        data.meta,
        data.reference,
        values,
        protocol=data.protocol.name,
        scale=scale,
        routing=options.routing,
    )


def _scale_summary(protocol: Protocol) -> dict:
    if not protocol.is_pointwise:
        return {"labels": list(LABELS)}
    return {
        "min": protocol.scale_min,
        "max": protocol.scale_max,
        "step": protocol.step,
        "percent": protocol.percent,
    }


def _reference_summary(data: UnitData, options: CalibrationOptions) -> dict:
    has = ~np.isnan(data.reference)
    return {
        "consensus": options.reference_rule,
        "no_majority": options.no_majority,
        "n_units": int(has.sum()),
        "n_units_total": data.n_units,
        "n_units_without_reference": int((~has).sum()),
        "n_adjudicated": int(data.adjudicated.sum()),
        "excluded_annotators": list(data.excluded),
        "exclusion_reasons": {
            name: dict(options.exclusion_reasons).get(name, "listed") for name in data.excluded
        },
        "weights": dict(
            zip(data.raters, (data.weights if data.weights is not None else []), strict=False)
        ),
    }


def _grouping(data: UnitData, options: CalibrationOptions) -> tuple[str, ...]:
    if options.by is not None:
        return options.by
    return tuple(f for f in ("task", "category") if data.meta[f].notna().any())


def _options_summary(options: CalibrationOptions, judges: list[str], by: tuple[str, ...]) -> dict:
    return {
        "unparsed": options.unparsed,
        "bootstrap": options.bootstrap,
        "seed": options.seed,
        "ci_level": CI_LEVEL,
        "ci_method": "percentile, resampling units",
        "consensus": options.reference_rule,
        "no_majority": options.no_majority,
        "by": list(by),
        "aggregate": options.aggregate,
        "judges": judges,
        "calibration_fraction": options.calibration_fraction,
        "exclude_annotators": list(options.exclude_annotators),
    }


def _versions(data_sha256: str) -> dict[str, str]:
    versions = {"critiquelab": _version("critiquelab")}
    for package in ("numpy", "scipy", "scikit-learn", "pandas"):
        versions[package] = _version(package)
    versions["python"] = platform.python_version()
    versions["data_sha256"] = data_sha256
    return versions


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _jsonable(value: object) -> object:
    """Plain JSON types; NaN and infinities become null (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
