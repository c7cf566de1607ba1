"""Per-annotator reliability without gold: one row per annotator, with flags that say why.

For each annotator (METRICS.md, "Annotators"):

* **leave-one-out agreement** with the consensus of the others (the reference's per-unit rule;
  the protocol's default one under a latent-class reference) on the units both have: scores,
  ``mae`` = mean |x − c| and ``qwk`` (quadratic weighted kappa on the scale's points, as
  :mod:`calibration.pointwise`); preferences, ``accuracy`` = share of units where the label equals
  the others' consensus (tie a class of its own). 95% percentile bootstrap interval over the
  annotator's units (:mod:`calibration.bootstrap`, seeded);
* **Krippendorff's α** of all annotators, and without this one (interval level for scores,
  nominal for preferences; :mod:`calibration.alpha`);
* **competence** from a latent-class model of everyone's labels: Dawid–Skene expected accuracy
  for preferences (:mod:`calibration.dawid_skene`, beside ``chance``: what answering with their
  own answer shares would score); for scores on a scale with points, ordinal MACE's θ
  (:func:`calibration.mace.ordinal_mace`, an attentive answer lands near the truth), beside the
  evidence in nats that they answered at random rather than as the others do
  (:func:`calibration.mace.random_answer_evidence`); none on a continuous scale;
* **position preference** (preferences): the share of their answers that chose the response
  shown first to them (Wilson interval), beside the share of the others who chose that same
  response on the same pairs, the others being those of the consensus not flagged
  ``low_competence`` or ``straight_lining`` (an annotator who answers without reading the pair,
  always "A" say, would otherwise pull the baseline towards their own habit and get honest
  annotators flagged);
* **length preference** (preferences, when the responses' lengths are given): the share of
  their answers that chose the longer response of the pair (Wilson interval), beside the share
  of the same others choosing it on the same pairs; flagged only *above* theirs (choosing the
  longer response without reading is the shortcut; careless annotators among the others raise
  the others' share, and a two-sided rule would then flag honest annotators below it);
* **straight-lining**: the longest run of one answer in their answers' order, beside the
  longest run of the others' consensus on the same units in the same order.

Flags are raised only on clear evidence (the thresholds are the constants below) and each says
in words why.

**Preferences: two passes.** With a majority of two or three labels per pair, a few careless
annotators (always "A", always the longer response) are much of the others' consensus on the
pairs they answered: honest annotators then look worse and the careless better. So on
preferences the table is computed twice: the second pass takes the leave-one-out figures
(``loo_n``, ``accuracy``, ``run``) and the others' shares of ``position`` and ``length``
against the others who raised no flag in the first (and are not ``excluded``), and its flags
are the table's. Chosen on PandaLM's dev half
(docs/ANNOTATOR_QUALITY.md): it raised recall and precision at nearly every share and n; on
HANNA's scores it did not help, so scores keep one pass.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from calibration.alpha import AlphaData
from calibration.bootstrap import chunk_size, percentile_interval
from calibration.dawid_skene import dawid_skene
from calibration.mace import ordinal_mace, random_answer_evidence
from calibration.pointwise import PointwiseKernel
from calibration.reference import ConsensusRule, NoMajorityRule, consensus, default_rule
from calibration.scale import Scale
from schemas.ids import parse_unit_key
from schemas.intervals import wilson_interval

MIN_UNITS = 10
"""Units (or answers) an annotator needs before any figure of theirs can raise a flag."""
MIN_PEERS = 2
"""Other annotators with a value needed before 'below the others' median' means anything."""
ALPHA_GAIN = 0.10
"""Flag when the campaign's alpha rises by at least this without the annotator."""
DS_CHANCE_MARGIN = 0.10
"""Dawid–Skene: flag when the expected accuracy is less than this above chance."""
RANDOM_EVIDENCE = 4.0
"""Ordinal scales: flag when the evidence that they answered at random rather than as the
others' median annotator does is at least 4 nats (a likelihood ratio of 55)."""
MAE_MARGIN = 0.025
"""Scores: flag ``low_agreement`` when the bottom of their MAE interval is more than this share
of the scale's range (0.10 points on 1–5) above the others' median MAE. HANNA's honest raters
differ in how far they sit from the others: without a margin (and at 3 nats) 4–7% were flagged.
Chosen with RANDOM_EVIDENCE on the dev half of HANNA's stories
(experiments/annotator_score_rules.py, docs/ANNOTATOR_QUALITY.md): of margins 0–0.3 points and
3, 4, 5, 8 nats, the pair keeping the most recall of uniform raters among those flagging at most
5% of honest raters at every n from 20 to 50 and reaching precision 0.9 against constant raters
at every share at n = 30."""
POSITION_MIN_PAIRS = 20
POSITION_GAP = 0.25
"""Position: flag when, over at least 20 pairs, the share choosing the response shown first is
at least 0.25 away from the others' share on the same pairs, and the others' share lies outside
the annotator's Wilson interval."""
POSITION_BASELINE_SKIPS: frozenset[str] = frozenset({"low_competence", "straight_lining"})
"""Flags that leave an annotator out of the others' share in everyone else's position figure:
answers that do not depend on the pair say nothing of where its first response stands.
Chosen on the dev half of PandaLM (experiments/annotator_position_rules.py,
docs/ANNOTATOR_QUALITY.md) over the others' median own share and a test of their decided
answers against ½: with 20% / 30% always-"A" annotators it flagged 0 of 720 / 630 honest
annotators for position at n = 30 (everyone counted: 25 and 126)."""
LENGTH_EXCESS = 0.15
"""Length (preferences, the responses' lengths known): flag when, over at least 20 pairs of
unequal lengths, the share choosing the longer response is at least 0.15 *above* the others'
share on the same pairs, and the others' share lies below the annotator's Wilson interval.
One-sided: choosing the longer response without reading the pair is the known shortcut
(verbosity bias), and careless annotators among the others raise the others' share, so that a
two-sided rule would flag honest annotators below it. Chosen on the dev half of PandaLM
(experiments/annotator_length_rule.py, docs/ANNOTATOR_QUALITY.md): of gaps 0.10, 0.15, 0.20 and
0.25, the one keeping the most recall of length-biased annotators at n = 30 while flagging no honest
annotator ``length`` in the clean pool at any n (a tie going to the larger gap). Every pair of
unequal lengths counts, not only those differing by more than the judge audit's 30 characters
(:data:`calibration.bias.LENGTH_GAP`): a third of PandaLM's pairs differ by less, and an
annotator with 30 labels would keep too few pairs for the rule's 20."""
RUN_MIN = 10
RUN_RATIO = 2.0
RUN_CHANCE = 0.001
"""Straight-lining: flag a run of at least 10 equal answers that is at least twice the longest
run of the others' consensus on the same units in the same order, and that answers drawn at
random as the others answer would hardly ever give: the expected number of such runs,
n·(1 − p)·p^L with p the share of the others' answers on the same units that are this value (a
run of length L starts at a given answer with probability about (1 − p)·p^L), is below 0.001."""

FlagKind = Literal[
    "low_agreement", "alpha_gain", "low_competence", "position", "length", "straight_lining"
]
FLAG_KINDS: tuple[FlagKind, ...] = (
    "low_agreement",
    "alpha_gain",
    "low_competence",
    "position",
    "length",
    "straight_lining",
)
_NAN = float("nan")


@dataclass(frozen=True)
class Estimate:
    """A figure with its 95% interval (NaN where undefined or without intervals)."""

    value: float
    low: float = _NAN
    high: float = _NAN


@dataclass(frozen=True)
class AnnotatorFlag:
    """Why an annotator deserves a look, in words."""

    kind: FlagKind
    reason: str


@dataclass(frozen=True)
class PositionPreference:
    """Preferences: how often the annotator chose the response shown first to them."""

    n: int
    """Pairs answered that at least one other annotator answered too."""
    share_first: Estimate
    """Their share choosing the response shown first (ties count as not first), Wilson 95%."""
    others_share: float
    """Mean over the same pairs of the others' share choosing that same response."""


@dataclass(frozen=True)
class LengthPreference:
    """Preferences: how often the annotator chose the longer response of a pair."""

    n: int
    """Pairs of unequal lengths answered that at least one other annotator answered too."""
    share_longer: Estimate
    """Their share choosing the longer response (ties count as not longer), Wilson 95%."""
    others_share: float
    """Mean over the same pairs of the others' share choosing the longer response."""


@dataclass(frozen=True)
class AnswerRun:
    """The longest run of one answer, in the order of the annotator's answers."""

    length: int
    value: float
    """The answer repeated (a score, or the preference code 0 = A, 1 = B, 2 = tie)."""
    n: int
    """Answers in the sequence."""
    others_length: int | None
    """Longest run of the others' consensus (scores rounded to the scale) on the same units in
    the same order; None when the others reached no consensus on them."""
    others_share: float
    """Share of the others' answers on the same units that are ``value`` (scores rounded to the
    scale's points); NaN when nobody else answered them."""


@dataclass(frozen=True)
class AnnotatorReliability:
    """One annotator's row of the Annotators table."""

    annotator: str
    n: int
    """Units they labelled."""
    excluded: bool
    """Left out of the reference (``exclude_annotators``)."""
    weight: float
    """Their weight in the reference (NaN when excluded or not given)."""
    loo_n: int
    """Units where they and the others' consensus both have a value."""
    mae: Estimate | None
    qwk: Estimate | None
    accuracy: Estimate | None
    alpha_without: float
    """The campaign's alpha without them (NaN when undefined)."""
    competence: float
    """Dawid–Skene expected accuracy (preferences) or ordinal MACE θ (scores); NaN: no model."""
    chance: float
    """Dawid–Skene only: expected accuracy of answering with their own shares at random."""
    random_evidence: float
    """Ordinal MACE only: nats of evidence that they answered at random rather than as the
    others' median annotator does (:func:`calibration.mace.random_answer_evidence`)."""
    position: PositionPreference | None
    length: LengthPreference | None
    """Preferences with the responses' lengths known (``longer``); None otherwise."""
    run: AnswerRun
    flags: tuple[AnnotatorFlag, ...]


@dataclass(frozen=True)
class AnnotatorTable:
    """The Annotators table of a campaign (METRICS.md, "Annotators")."""

    model: Literal["dawid-skene", "ordinal-mace"] | None
    """The latent-class model behind ``competence``."""
    loo_rule: ConsensusRule
    alpha_level: Literal["interval", "nominal"]
    alpha: float
    """The campaign's alpha with everyone."""
    bootstrap: int
    seed: int
    rows: tuple[AnnotatorReliability, ...]


def annotator_reliability(
    humans: np.ndarray,
    raters: Sequence[str],
    *,
    scale: Scale | None,
    swapped: np.ndarray | None = None,
    order: np.ndarray | None = None,
    longer: np.ndarray | None = None,
    rule: ConsensusRule | None = None,
    no_majority: NoMajorityRule = "tie",
    bootstrap: int = 1000,
    seed: int = 0,
    excluded: Collection[str] = (),
    weights: Mapping[str, float] | None = None,
) -> AnnotatorTable:
    """The Annotators table of a raters × units matrix (pairwise codes 0 = A, 1 = B, 2 = tie).

    ``scale``: None for preferences; ``swapped``: raters × units, True where the pair was shown
    to that rater in the order B, A (default: never); ``order``: raters × units, the position of
    each answer in submission order (default: unit order); ``longer``: preferences, per unit
    the code of the longer response (0 = A, 1 = B; NaN where both are as long or unknown), for
    the ``length`` figure and flag (default: none); ``rule``: the others' per-unit
    consensus (default mean / majority); ``excluded``: raters left out of the others' consensus
    (still given a row); ``weights``: each rater's weight in the reference, copied into the rows.
    Preferences take two passes (the module's docstring).
    """
    data = np.atleast_2d(np.asarray(humans, dtype=np.float64))
    pairwise = scale is None
    rule = rule or default_rule(pairwise=pairwise)
    names = list(raters)
    keep = np.array([name not in excluded for name in names], dtype=bool)
    level: Literal["interval", "nominal"] = "nominal" if pairwise else "interval"
    alpha = _alpha(data, level)
    model, competence, chance, evidence = _latent(data, scale)
    margin = 0.0 if scale is None else MAE_MARGIN * (scale.high - scale.low)
    rows = [
        AnnotatorReliability(
            annotator=name,
            n=int((~np.isnan(data[r])).sum()),
            excluded=not keep[r],
            weight=float((weights or {}).get(name, _NAN)) if keep[r] else _NAN,
            loo_n=0,
            mae=None,
            qwk=None,
            accuracy=None,
            alpha_without=_alpha(np.delete(data, r, axis=0), level),
            competence=float(competence[r]),
            chance=float(chance[r]),
            random_evidence=float(evidence[r]),
            position=None,
            length=None,
            run=AnswerRun(0, _NAN, 0, None, _NAN),
            flags=(),
        )
        for r, name in enumerate(names)
    ]

    def flagged_rows(counted: np.ndarray) -> list[AnnotatorReliability]:
        """The rows, their leave-one-out figures against the consensus of ``counted``."""
        out = []
        for r, row in enumerate(rows):
            others = _others(data, counted, r, rule, no_majority, pairwise=pairwise)
            own = data[r]
            both = ~np.isnan(own) & ~np.isnan(others)
            mae, qwk, accuracy = _agreement(own[both], others[both], scale, bootstrap, seed)
            rest = np.delete(data, r, axis=0)
            run = _run(own, others, rest, order[r] if order is not None else None, scale)
            out.append(
                replace(row, loo_n=int(both.sum()), mae=mae, qwk=qwk, accuracy=accuracy, run=run)
            )
        flagged = [_flags(row, out, alpha, model, level, margin) for row in out]
        if pairwise:
            baseline = counted & np.array(
                [not {f.kind for f in flags} & POSITION_BASELINE_SKIPS for flags in flagged]
            )
            for r, row in enumerate(out):
                position = _position(data, r, swapped, baseline)
                length = None if longer is None else _length(data, r, longer, baseline)
                out[r] = replace(row, position=position, length=length)
                habits = (*_position_flags(position), *_length_flags(length))
                flagged[r] = _in_kind_order((*flagged[r], *habits))
        return [replace(row, flags=flags) for row, flags in zip(out, flagged, strict=True)]

    table = flagged_rows(keep)
    if pairwise:  # the second pass: a consensus the flagged annotators do not take part in
        screened = keep & np.array([not row.flags for row in table])
        if (screened != keep).any():
            table = flagged_rows(screened)
    return AnnotatorTable(model, rule, level, alpha, bootstrap, seed, tuple(table))


def longer_responses(units: Sequence[str], lengths: Mapping[str, int]) -> np.ndarray:
    """Per unit key, the code of the longer response of the pair (0 = A, 1 = B), as
    :func:`annotator_reliability` reads ``longer``: NaN for a unit that is not a pair, a pair of
    equal lengths, or one whose response is missing from ``lengths`` (response id →
    characters, :class:`schemas.audit_records.ResponseFacts`'s ``length``)."""
    out = np.full(len(units), np.nan)
    for j, unit in enumerate(units):
        if not str(unit).startswith("p:"):
            continue
        key = parse_unit_key(str(unit))
        if key.pair is None or not all(r in lengths for r in key.pair):
            continue
        a, b = (lengths[r] for r in key.pair)
        if a != b:
            out[j] = 0.0 if a > b else 1.0
    return out


def annotator_label(name: str, excluded: bool, reason: str | None = None) -> str:
    """How every Annotators table names a row (the HTML report, the Monitor and the Calibration
    page): the name, and for an annotator left out of the reference ``(excluded: REASON)``, the
    reason being the JSON's ``exclusion_reasons`` (``listed``, ``held``, ``retired``)."""
    if not excluded:
        return name
    return f"{name} (excluded: {reason})" if reason else f"{name} (excluded)"


def _alpha(data: np.ndarray, level: Literal["interval", "nominal"]) -> float:
    if data.shape[0] < 2:
        return _NAN
    prepared = AlphaData.from_matrix(data)
    return float(prepared.evaluate(np.ones((1, prepared.n_units)), level)[0])


def _latent(
    data: np.ndarray, scale: Scale | None
) -> tuple[Literal["dawid-skene", "ordinal-mace"] | None, np.ndarray, np.ndarray, np.ndarray]:
    """(model, competence, chance, random-answer evidence) per rater."""
    nan = np.full(data.shape[0], np.nan)
    if not (~np.isnan(data)).any():
        return None, nan, nan, nan
    if scale is None:
        fit = dawid_skene(data, 3)
        return "dawid-skene", fit.competence, fit.chance, nan
    if not scale.is_discrete:
        return None, nan, nan, nan
    codes = np.where(np.isnan(data), np.nan, scale.point_index(np.nan_to_num(data)))
    ordinal = ordinal_mace(codes, scale.n_points)
    return "ordinal-mace", ordinal.competence, nan, random_answer_evidence(codes, ordinal)


def _others(data, keep, r, rule, no_majority, *, pairwise) -> np.ndarray:
    chosen = keep.copy()
    chosen[r] = False
    if not chosen.any():
        return np.full(data.shape[1], np.nan)
    return consensus(data[chosen], rule, no_majority=no_majority, pairwise=pairwise)


def _agreement(
    own: np.ndarray, others: np.ndarray, scale: Scale | None, bootstrap: int, seed: int
) -> tuple[Estimate | None, Estimate | None, Estimate | None]:
    """(mae, qwk, accuracy): those of the protocol, the others None.

    Every figure is a function of how many units carry each distinct (own, others) pair, so a
    bootstrap resample of the n units is drawn as multinomial(n, pair shares) counts over the
    distinct pairs (the same distribution as drawing units, at a cost independent of n).
    """
    n = own.size
    names = _agreement_names(scale)
    point: dict[str, float] = dict.fromkeys(names, _NAN)
    intervals: dict[str, tuple[float, float]] = {}
    if n:
        pairs, sizes = np.unique(np.column_stack([own, others]), axis=0, return_counts=True)
        evaluate = _pair_metrics(pairs, scale, names)
        point = {k: float(v[0]) for k, v in evaluate(sizes[None, :].astype(np.float64)).items()}
        if bootstrap > 0:
            rng = np.random.default_rng(seed)
            parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
            size = chunk_size(pairs.shape[0])
            for start in range(0, bootstrap, size):
                rows = min(size, bootstrap - start)
                draws = rng.multinomial(n, sizes / n, size=rows).astype(np.float64)
                for name, values in evaluate(draws).items():
                    parts[name].append(values)
            intervals = {k: percentile_interval(np.concatenate(v)) for k, v in parts.items()}
    estimates = {k: Estimate(point[k], *intervals.get(k, (_NAN, _NAN))) for k in names}
    return estimates.get("mae"), estimates.get("qwk"), estimates.get("accuracy")


def _agreement_names(scale: Scale | None) -> tuple[str, ...]:
    if scale is None:
        return ("accuracy",)
    return ("mae", "qwk") if scale.is_discrete else ("mae",)


def _pair_metrics(pairs: np.ndarray, scale: Scale | None, names: tuple[str, ...]):
    """Metrics of weighted distinct (own, others) pairs, one value per row of weights."""
    if scale is None:
        hits = (pairs[:, 0] == pairs[:, 1]).astype(np.float64)

        def accuracy(weights: np.ndarray) -> dict[str, np.ndarray]:
            return {"accuracy": weights @ hits / weights.sum(axis=1)}

        return accuracy
    kernel = PointwiseKernel(pairs[:, 0], pairs[:, 1], scale, group_pairs=False)

    def pointwise(weights: np.ndarray) -> dict[str, np.ndarray]:
        return kernel.evaluate(weights, names)

    return pointwise


def _position(
    data: np.ndarray, r: int, swapped: np.ndarray | None, counted: np.ndarray
) -> PositionPreference:
    """Rater ``r``'s share choosing the response shown first, on the pairs that at least one
    other rater of ``counted`` answered, and those others' mean share choosing it there."""
    flipped = (
        np.zeros(data.shape[1], dtype=bool)
        if swapped is None
        else np.asarray(swapped[r], dtype=bool)
    )
    first = np.where(flipped, 1.0, 0.0)  # the canonical code of the response shown first
    return PositionPreference(*_choosing(data, r, first, counted))


def _length(data: np.ndarray, r: int, longer: np.ndarray, counted: np.ndarray) -> LengthPreference:
    """Rater ``r``'s share choosing the longer response, on the pairs of unequal lengths that
    at least one other rater of ``counted`` answered, and those others' mean share there."""
    return LengthPreference(*_choosing(data, r, np.asarray(longer, dtype=np.float64), counted))


def _choosing(
    data: np.ndarray, r: int, target: np.ndarray, counted: np.ndarray
) -> tuple[int, Estimate, float]:
    """(pairs, rater ``r``'s share choosing ``target`` with its Wilson interval, the counted
    others' mean share choosing it on the same pairs): over the pairs with a target (not NaN)
    that ``r`` and at least one other rater of ``counted`` answered. ``target``: per unit, a
    response's code (0 = A, 1 = B); a tie is not a choice of it."""
    own = data[r]
    chosen = np.asarray(counted, dtype=bool).copy()
    chosen[r] = False
    others = data[chosen]
    answered_by_others = (~np.isnan(others)).sum(axis=0)
    mask = ~np.isnan(own) & ~np.isnan(target) & (answered_by_others > 0)
    n = int(mask.sum())
    if n == 0:
        return 0, Estimate(_NAN), _NAN
    hits = int((own[mask] == target[mask]).sum())
    with np.errstate(invalid="ignore"):
        share = (others == target[None, :]).sum(axis=0) / answered_by_others
    low, high = wilson_interval(hits, n)
    return n, Estimate(hits / n, low, high), float(np.mean(share[mask]))


def _run(
    own: np.ndarray,
    others: np.ndarray,
    rest: np.ndarray,
    order: np.ndarray | None,
    scale: Scale | None,
) -> AnswerRun:
    """``others``: their consensus per unit; ``rest``: the other raters' answers."""
    answered = np.flatnonzero(~np.isnan(own))
    if order is not None:
        answered = answered[np.argsort(order[answered], kind="stable")]
    length, value = _longest(own[answered])
    theirs = others[answered]
    theirs = theirs[~np.isnan(theirs)]
    if scale is not None and scale.is_discrete:
        theirs = scale.round(theirs)
    others_length = _longest(theirs)[0] if theirs.size else None
    answers = rest[:, answered]
    answers = answers[~np.isnan(answers)]
    if scale is not None and scale.is_discrete:
        answers = scale.round(answers)
    share = float(np.mean(answers == value)) if answers.size else _NAN
    return AnswerRun(length, value, int(answered.size), others_length, share)


def _longest(values: np.ndarray) -> tuple[int, float]:
    """Longest run of equal consecutive values, and the value (first such run)."""
    if values.size == 0:
        return 0, _NAN
    breaks = np.flatnonzero(np.diff(values) != 0) + 1
    starts = np.concatenate([[0], breaks])
    lengths = np.diff(np.concatenate([starts, [values.size]]))
    best = int(np.argmax(lengths))
    return int(lengths[best]), float(values[starts[best]])


def _median_of_others(rows: Sequence[AnnotatorReliability], me: str, key: str) -> float:
    """Median over the other annotators of a figure (``mae``, ``accuracy``: their value)."""
    values = []
    for row in rows:
        figure = getattr(row, key)
        if row.annotator != me and figure is not None:
            values.append(figure.value if isinstance(figure, Estimate) else float(figure))
    finite = [v for v in values if math.isfinite(v)]
    return float(np.median(finite)) if len(finite) >= MIN_PEERS else _NAN


def _flags(
    row: AnnotatorReliability,
    rows: Sequence[AnnotatorReliability],
    alpha: float,
    model: str | None,
    level: str,
    mae_margin: float,
) -> tuple[AnnotatorFlag, ...]:
    flags: list[AnnotatorFlag] = []
    name = row.annotator
    if row.loo_n >= MIN_UNITS:
        accuracy, mae = row.accuracy, row.mae
        if accuracy is not None:
            peers = _median_of_others(rows, name, "accuracy")
            if accuracy.high < peers:
                flags.append(
                    AnnotatorFlag(
                        "low_agreement",
                        f"agrees with the others' consensus on {_pct(accuracy.value)} of "
                        f"{row.loo_n} pairs (interval {_pct(accuracy.low)}–"
                        f"{_pct(accuracy.high)}); the other annotators' median is {_pct(peers)}",
                    )
                )
        if mae is not None:
            peers = _median_of_others(rows, name, "mae")
            if mae.low > peers + mae_margin:
                flags.append(
                    AnnotatorFlag(
                        "low_agreement",
                        f"is {mae.value:.2f} points from the others' consensus on average over "
                        f"{row.loo_n} units (interval {mae.low:.2f}–{mae.high:.2f}); the "
                        f"other annotators' median is {peers:.2f} (the rule's margin: "
                        f"{mae_margin:.2f} points)",
                    )
                )
    gain = row.alpha_without - alpha
    if len(rows) >= 3 and math.isfinite(gain) and gain >= ALPHA_GAIN:
        flags.append(
            AnnotatorFlag(
                "alpha_gain",
                f"the campaign's alpha ({level}) rises from {alpha:.2f} to "
                f"{row.alpha_without:.2f} without them",
            )
        )
    competence = row.competence
    if row.n >= MIN_UNITS and math.isfinite(competence):
        if model == "dawid-skene" and competence - row.chance < DS_CHANCE_MARGIN:
            flags.append(
                AnnotatorFlag(
                    "low_competence",
                    f"Dawid–Skene puts their expected accuracy at {competence:.2f}, less than "
                    f"{DS_CHANCE_MARGIN:.2f} above the {row.chance:.2f} of answering at random "
                    "with their own answer shares",
                )
            )
        peers = _median_of_others(rows, name, "competence")
        evidence = row.random_evidence
        if model == "ordinal-mace" and math.isfinite(evidence) and evidence >= RANDOM_EVIDENCE:
            flags.append(
                AnnotatorFlag(
                    "low_competence",
                    f"their {row.n} answers are {_ratio(evidence)} times likelier as answers "
                    f"at random than as the other annotators answer (ordinal MACE θ = "
                    f"{competence:.2f}; the others' median θ is {peers:.2f})",
                )
            )
    run = row.run
    if (
        run.length >= RUN_MIN
        and run.others_length is not None
        and run.length >= RUN_RATIO * run.others_length
        and run.n * (1 - run.others_share) * run.others_share**run.length < RUN_CHANCE
    ):
        flags.append(
            AnnotatorFlag(
                "straight_lining",
                f"longest run of the same answer: {run.length} of {run.n} in a row gave "
                f"{_answer(run.value, level)}; on the same units in the same order the others' "
                f"consensus repeated itself at most {run.others_length} times",
            )
        )
    return tuple(flags)


def _position_flags(position: PositionPreference) -> tuple[AnnotatorFlag, ...]:
    if position.n < POSITION_MIN_PAIRS:
        return ()
    share = position.share_first
    outside = not share.low <= position.others_share <= share.high
    if not (abs(share.value - position.others_share) >= POSITION_GAP and outside):
        return ()
    return (
        AnnotatorFlag(
            "position",
            f"chose the response shown first on {_pct(share.value)} of {position.n} pairs "
            f"(interval {_pct(share.low)}–{_pct(share.high)}), while the others chose that "
            f"same response on {_pct(position.others_share)} of the same pairs (others flagged "
            "low competence or straight-lining not counted)",
        ),
    )


def _length_flags(length: LengthPreference | None) -> tuple[AnnotatorFlag, ...]:
    if length is None or length.n < POSITION_MIN_PAIRS:
        return ()
    share = length.share_longer
    if not (share.value - length.others_share >= LENGTH_EXCESS and length.others_share < share.low):
        return ()
    return (
        AnnotatorFlag(
            "length",
            f"chose the longer response on {_pct(share.value)} of {length.n} pairs of unequal "
            f"lengths (interval {_pct(share.low)}–{_pct(share.high)}), while the others chose "
            f"it on {_pct(length.others_share)} of the same pairs (others flagged low "
            "competence or straight-lining not counted)",
        ),
    )


def _in_kind_order(flags: Sequence[AnnotatorFlag]) -> tuple[AnnotatorFlag, ...]:
    return tuple(sorted(flags, key=lambda flag: FLAG_KINDS.index(flag.kind)))


def _ratio(nats: float) -> str:
    """A likelihood ratio e^nats in words: "20", "1,100", "over a million"."""
    if nats >= math.log(1e6):
        return "over a million"
    ratio = math.exp(nats)
    return f"{float(f'{ratio:.2g}'):,.0f}" if ratio >= 10 else f"{ratio:.2g}"


def _pct(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{100 * value:.0f}%"


def _answer(value: float, level: str) -> str:
    if level == "nominal":
        return ("A", "B", "tie")[int(value)]
    return f"{value:g}"
