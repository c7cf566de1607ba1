"""The typed result of :func:`calibration.calibrate`: what ``calibrate --json`` writes.

Every section of METRICS.md ("Output") is a pydantic model; the JSON is
``CalibrationResult.model_dump(mode="json")`` (NaN and infinities become ``null``) and its JSON
Schema, generated from these models, is ``docs/spec/calibration-result.schema.json``
(``python -c "from calibration.result import schema_text; print(schema_text(), end='')"
> docs/spec/calibration-result.schema.json`` rewrites it).

Metric values are keyed by metric name (the metrics depend on the protocol and the scale: no
``strict_acc`` on a continuous scale, no ``percent_mae`` off a percent scale), so a block of
metrics keeps them as extra keys typed ``float | None`` beside its declared fields, exactly as the
JSON has them; :meth:`JudgeResult.metric` gives one metric with its interval. Sections that only
some runs have (intervals with ``bootstrap > 0``, groups, maps, the model leaderboard, judge
comparisons, audits) are left out of the JSON when they were not set, as before.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from calibration.audits import JudgeAudit
from calibration.compare import JudgeComparison
from calibration.consistency import ConsistencyReport
from calibration.model_estimates import ModelEstimates

Interval = tuple[float | None, float | None]
"""A 95% percentile bootstrap interval ``[low, high]``; ``null`` ends where undefined."""
MetricMap = dict[str, float | None]
"""Metric name → value (``null`` where undefined: a constant side, too few units)."""


class _Section(BaseModel):
    """A JSON section; the fields named in ``_omit_unset`` are left out unless they were set."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)
    _omit_unset: ClassVar[frozenset[str]] = frozenset()

    # No return annotation: pydantic would take it as the serialised schema instead of the
    # model's own.
    @model_serializer(mode="wrap")
    def _leave_out_unset(self, handler: SerializerFunctionWrapHandler):
        data = handler(self)
        for name in self._omit_unset - self.model_fields_set:
            data.pop(name, None)
        return self._ordered(data)

    def _ordered(self, data: dict[str, Any]) -> dict[str, Any]:
        return data


class _Metrics(_Section):
    """Declared fields plus metric values as extra keys (``float | None``)."""

    model_config = ConfigDict(frozen=True, extra="allow", use_attribute_docstrings=True)
    __pydantic_extra__: dict[str, float | None] = Field(init=False)
    _metrics_after: ClassVar[str | None] = None
    """The declared field the metrics follow in the JSON (None: after every declared field)."""

    def _ordered(self, data: dict[str, Any]) -> dict[str, Any]:
        if self._metrics_after is None:
            return data
        metrics = set(self.__pydantic_extra__ or {})
        keys = [k for k in data if k not in metrics]
        at = keys.index(self._metrics_after) + 1
        order = [*keys[:at], *(k for k in data if k in metrics), *keys[at:]]
        return {k: data[k] for k in order}

    @property
    def values(self) -> MetricMap:
        """The metric values, by name, in the order computed."""
        return dict(self.__pydantic_extra__ or {})


class MetricValue(BaseModel):
    """One metric of one judge: the point estimate and its 95% interval (None without)."""

    model_config = ConfigDict(frozen=True)

    value: float | None
    low: float | None = None
    high: float | None = None


class GroupMetrics(_Metrics):
    """A judge's metrics on one group of units (``by``) or on the held-out split (``maps``)."""

    n: int
    """Units scored in the group."""


class GroupAggregate(_Metrics):
    """One number per metric over the groups of a field (``--aggregate``)."""

    _metrics_after = "n_groups"
    mode: str
    n_groups: int
    groups_without_correlation: int
    """Groups that gave no correlation (fewer than 2 units or a constant side)."""


class AnnotatorLeaveOneOut(_Section):
    """One annotator against the consensus of the others; the judge on the same units."""

    _omit_unset = frozenset({"judge"})
    n: int
    human: MetricMap
    judge: MetricMap | None = None


class LeaveOneOut(_Section):
    """The human ceiling: each annotator against the others' consensus, averaged over them,
    beside the judge against that same consensus; degradation = judge − human."""

    _omit_unset = frozenset({"human", "judge", "degradation"})
    by_annotator: dict[str, AnnotatorLeaveOneOut]
    n_annotators: int
    human: MetricMap | None = None
    judge: MetricMap | None = None
    degradation: MetricMap | None = None


class MapSplit(_Section):
    by: str
    fraction: float
    seed: int
    calibration_units: int
    held_out_units: int


class LinearFit(_Section):
    slope: float | None
    intercept: float | None


class CalibrationMaps(_Section):
    """Held-out metrics of the raw judge and of each map fitted on the other split."""

    _omit_unset = frozenset({"isotonic", "linear", "expected"})
    split: MapSplit
    linear_fit: LinearFit
    raw: GroupMetrics
    isotonic: GroupMetrics | None = None
    linear: GroupMetrics | None = None
    expected: GroupMetrics | None = None


class JudgeResult(_Metrics):
    """One judge against the reference; its metric values are the extra keys."""

    _omit_unset = frozenset({"ci", "by", "by_aggregate", "maps", "ranking_kendall"})
    _metrics_after = "coverage"
    n: int
    """Units scored."""
    coverage: float | None
    """Share of the judge's units (or verdicts) that could be parsed."""
    ci: dict[str, Interval] | None = None
    """Per metric, its 95% interval (``bootstrap > 0`` only)."""
    parse_status: dict[str, int]
    by: dict[str, dict[str, GroupMetrics]] | None = None
    """Field → group → metrics."""
    by_aggregate: dict[str, GroupAggregate] | None = None
    loo: LeaveOneOut
    maps: CalibrationMaps | None = None
    """Scores only."""
    ranking_kendall: float | None = None
    """Scores only: Kendall's tau between the judge's and the humans' model rankings."""

    def metric(self, name: str) -> MetricValue:
        """``name``'s value with its interval; KeyError when the judge has no such metric."""
        values = self.values
        if name not in values:
            raise KeyError(name)
        low, high = (self.ci or {}).get(name) or (None, None)
        return MetricValue(value=values[name], low=low, high=high)

    @property
    def metrics(self) -> dict[str, MetricValue]:
        """Every metric with its interval, in the order computed."""
        return {name: self.metric(name) for name in self.values}


class HumanResult(_Section):
    """Agreement among the annotators: alpha over all of them and the leave-one-out ceiling."""

    _omit_unset = frozenset({"alpha_interval", "alpha_ordinal", "alpha_nominal", "ci"})
    n_annotators: int
    n_units: int
    n_judgements: int
    annotations_per_unit: float
    alpha_interval: float | None = None
    """Scores: Krippendorff's alpha, interval level."""
    alpha_ordinal: float | None = None
    """Scores: Krippendorff's alpha, ordinal level."""
    alpha_nominal: float | None = None
    """Preferences: Krippendorff's alpha, nominal level."""
    ci: dict[str, Interval] | None = None
    loo: LeaveOneOut

    @property
    def alphas(self) -> dict[str, MetricValue]:
        """The alpha levels computed for the protocol, with their intervals."""
        result: dict[str, MetricValue] = {}
        for name in ("alpha_interval", "alpha_ordinal", "alpha_nominal"):
            if name in self.model_fields_set:
                low, high = (self.ci or {}).get(name) or (None, None)
                result[name] = MetricValue(value=getattr(self, name), low=low, high=high)
        return result

    @property
    def ceiling(self) -> MetricMap:
        """Each metric for one annotator against the others' consensus, mean over annotators."""
        return self.loo.human or {}


class PointScale(_Section):
    min: int | float
    max: int | float
    step: int | float | None
    """None: a continuous scale."""
    percent: bool


class LabelScale(_Section):
    labels: list[str]


class ReferenceSummary(_Section):
    _omit_unset = frozenset({"rejected_answers"})
    consensus: str
    """The reference rule (``--reference``): mean, median, majority, dawid-skene or mace."""
    no_majority: str
    n_units: int
    """Units with a reference (the units scored)."""
    n_units_total: int
    n_units_without_reference: int
    n_adjudicated: int
    excluded_annotators: list[str] = []
    """Annotators left out of the reference and of the human ceiling."""
    exclusion_reasons: dict[str, str] = {}
    """Why each of ``excluded_annotators`` is left out: ``listed`` (``--exclude-annotator``),
    ``held`` or ``retired`` (their standing in the campaign: left out by itself)."""
    weights: dict[str, float | None] = {}
    """Each annotator's weight in the reference: 1.0 under mean, median and majority; the
    Dawid–Skene expected accuracy or the MACE θ under those models."""
    rejected_answers: int | None = None
    """A campaign's answers to the units calibrated that a reviewer rejected (and revisions of
    them not accepted yet): left out of the reference and of every metric. Absent when
    calibrating files, which carry no review."""


class AnnotatorEstimate(_Section):
    """A figure with its 95% interval (null ends where undefined or ``bootstrap`` is 0)."""

    value: float | None
    low: float | None = None
    high: float | None = None


class AnnotatorFlagResult(_Section):
    kind: str
    """low_agreement | alpha_gain | low_competence | position | length | straight_lining"""
    reason: str
    """Why, in words, with the figures that raised it."""


class AnnotatorPosition(_Section):
    n: int
    share_first: AnnotatorEstimate
    """Share of their answers choosing the response shown first to them (Wilson 95%)."""
    others_share: float | None
    """The others' share choosing that same response on the same pairs."""


class AnnotatorLength(_Section):
    n: int
    share_longer: AnnotatorEstimate
    """Share of their answers choosing the longer response of a pair (Wilson 95%), over the
    pairs of unequal lengths."""
    others_share: float | None
    """The others' share choosing the longer response on the same pairs."""


class AnnotatorRun(_Section):
    length: int
    """Longest run of one answer, in the order of their answers."""
    value: float | None
    n: int
    others_length: int | None
    """Longest run of the others' consensus on the same units in the same order."""
    others_share: float | None
    """Share of the others' answers on the same units that are ``value``."""


class AnnotatorRow(_Section):
    """One annotator (METRICS.md, "Annotators")."""

    annotator: str
    n: int
    excluded: bool
    weight: float | None
    loo_n: int
    mae: AnnotatorEstimate | None
    """Scores: mean absolute difference from the others' consensus."""
    qwk: AnnotatorEstimate | None
    """Scores with points: quadratic weighted kappa with the others' consensus."""
    accuracy: AnnotatorEstimate | None
    """Preferences: share of pairs where they give the others' consensus."""
    alpha_without: float | None
    competence: float | None
    chance: float | None
    random_evidence: float | None = None
    """Scores with points: nats of evidence that they answered at random rather than as the
    others' median annotator does (ordinal MACE); null otherwise."""
    position: AnnotatorPosition | None
    length: AnnotatorLength | None = None
    """Preferences with the responses' lengths known: how often they chose the longer one;
    null otherwise."""
    run: AnnotatorRun
    flags: list[AnnotatorFlagResult]


class AnnotatorsSection(_Section):
    """Per-annotator reliability without gold (``calibration.annotators``)."""

    model: str | None
    """The latent-class model behind ``competence``: dawid-skene, ordinal-mace or null."""
    loo_rule: str
    alpha_level: str
    alpha: float | None
    bootstrap: int
    seed: int
    rows: list[AnnotatorRow]


class OptionsSummary(_Section):
    """Every option that changed a number."""

    unparsed: str
    bootstrap: int
    seed: int
    ci_level: float
    ci_method: str
    consensus: str
    no_majority: str
    by: list[str]
    aggregate: str
    judges: list[str]
    calibration_fraction: float
    exclude_annotators: list[str] = []


class ModelScore(_Section):
    """A model's average score from one source (the humans' reference or a judge)."""

    _omit_unset = frozenset({"alignment_score"})
    avg: float | None
    n: int
    by_task: dict[str, float | None]
    by_category: dict[str, float | None]
    alignment_score: float | None = None


class CalibrationResult(_Section):
    """The whole calibration of one protocol (METRICS.md, "Output")."""

    _omit_unset = frozenset(
        {"models", "model_estimates", "comparisons", "judge_audit", "consistency", "annotators"}
    )
    protocol: str
    scale: PointScale | LabelScale
    reference: ReferenceSummary
    options: OptionsSummary
    definitions: dict[str, str]
    human: HumanResult
    judges: dict[str, JudgeResult]
    versions: dict[str, str]
    models: dict[str, dict[str, ModelScore]] | None = None
    """Scores only: model → source (``human``, ``judge:NAME``) → score."""
    model_estimates: ModelEstimates | None = None
    """Per judge and model: judge-only, humans-only and prediction-powered (PPI++) values."""
    comparisons: list[JudgeComparison] | None = None
    """``calibrate --compare A B``."""
    judge_audit: JudgeAudit | None = None
    """Bias and cost of the judges (``calibrate --campaign``)."""
    consistency: ConsistencyReport | None = None
    """``calibrate --consistency``."""
    annotators: AnnotatorsSection | None = None
    """One row per human annotator: agreement without gold, competence, flags."""
    # A new audit block is one more optional field here (and in _omit_unset), then the schema
    # in docs/spec/ is regenerated.

    @property
    def pairwise(self) -> bool:
        return isinstance(self.scale, LabelScale)

    def with_extras(self, **sections: Any) -> CalibrationResult:
        """A copy with the comparison and audit sections that are not None set."""
        update = {name: value for name, value in sections.items() if value is not None}
        unknown = set(update) - self._omit_unset
        if unknown:
            raise TypeError(f"not an extra section: {', '.join(sorted(unknown))}")
        return self.model_copy(update=update)

    def to_json(self) -> str:
        """The ``--json`` text: the serialisation, indented, UTF-8 characters kept."""
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False)


def result_schema() -> dict[str, Any]:
    """The JSON Schema of the ``--json`` output, generated from :class:`CalibrationResult`."""
    schema = CalibrationResult.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "calibration-result.schema.json"
    return schema


def schema_text() -> str:
    """:func:`result_schema` as the committed file's text."""
    return json.dumps(result_schema(), indent=2, ensure_ascii=False) + "\n"
