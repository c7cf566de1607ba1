"""Judge bias and cost audit of one campaign, the way AlpacaEval's evaluator leaderboard reports
judges: cost and time per 1,000 units, length and list preference beside the humans',
length-controlled agreement and self-preference, each with a bootstrap interval over units.

Inputs are the campaign's judgement frame
(:func:`data.readmodels.frames.campaign_judgement_frame`), the facts of its responses and the
usage of its judgements (:mod:`data.readmodels.judge_facts`); the metrics themselves are the
pure functions of :mod:`calibration.bias` and :mod:`calibration.cost`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

import calibration.bias as bias
from calibration.audit_stats import (
    Interval,
    counts_statistic_interval,
    finite_or_none,
    interval_or_none,
    ratio,
    ratio_difference_interval,
    ratio_interval,
    statistic_interval,
    statistic_samples,
)
from calibration.bootstrap import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_SEED,
    counts_from_indices,
    percentile_interval,
    unit_resample_indices,
)
from calibration.cost import JudgeCost, Prices, judge_costs
from calibration.errors import CalibrationInputError
from calibration.reference import ConsensusRule, NoMajorityRule
from calibration.units import UnitData, prepare_units
from schemas.audit_records import JudgementUsage, ResponseFacts
from schemas.ids import parse_unit_key
from schemas.protocols import Protocol


class Beside(BaseModel):
    """A judge's value beside the humans' on the same units, and judge − humans."""

    model_config = ConfigDict(frozen=True)

    n: int
    judge: float | None
    judge_ci: Interval
    humans: float | None
    humans_ci: Interval
    difference: float | None
    difference_ci: Interval
    """Paired bootstrap: both sides evaluated on the same resampled units."""


class LengthControlledAgreement(BaseModel):
    """How much of the judge's agreement with the humans survives without its length effect."""

    model_config = ConfigDict(frozen=True)

    metric: Literal["acc_decisive", "pearson"]
    n: int
    agreement: float | None
    length_controlled: float | None
    length_controlled_ci: Interval
    length_coefficient: float | None


class JudgeBias(BaseModel):
    """One judge's biases (METRICS.md, "Judge bias and cost")."""

    model_config = ConfigDict(frozen=True)

    judge: str
    length: Beside
    """Pairwise: share preferring the longer response; pointwise: Spearman(score, length)."""
    lists: Beside
    """Pairwise: share preferring the response with a list; pointwise: Spearman(score, list)."""
    length_controlled: LengthControlledAgreement
    family: str | None
    """The judge's model family from the mapping; None when not given."""
    self_preference: Beside | None
    """Pairwise: share preferring its own family's response on mixed pairs; pointwise: mean score
    on own-family responses minus on the others. None without a family."""


class JudgeAudit(BaseModel):
    """``judge_audit`` of ``calibrate --json``: cost and bias of every judge of a campaign."""

    model_config = ConfigDict(frozen=True)

    pairwise: bool
    bootstrap: int
    seed: int
    length_gap: int
    costs: list[JudgeCost]
    biases: list[JudgeBias]


def parse_families(raw: object, where: str) -> dict[str, str]:
    """A families file's parsed JSON: an object mapping judge and model names to a family name
    (non-empty text), as the self-preference rows read it."""
    if not isinstance(raw, dict) or not all(isinstance(v, str) and v for v in raw.values()):
        raise CalibrationInputError(
            f"{where}: expected an object mapping judge and model names to a family, "
            'e.g. {"gpt-4o-judge": "gpt", "gpt-4o": "gpt"}'
        )
    return {str(k): v for k, v in raw.items()}


def audit_judges(
    frame: pd.DataFrame,
    protocol: Protocol,
    facts: Sequence[ResponseFacts],
    usage: Sequence[JudgementUsage],
    *,
    families: Mapping[str, str] | None = None,
    prices: Mapping[str, Prices] | Prices | None = None,
    judges: Sequence[str] | None = None,
    consensus: ConsensusRule | None = None,
    no_majority: NoMajorityRule = "tie",
    overrides: dict[str, object] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> JudgeAudit:
    """Cost and bias of each judge (``judges``, or every model rater of ``frame``)."""
    pairwise = not protocol.is_pointwise
    rule = consensus or ("majority" if pairwise else "mean")
    data = prepare_units(frame, protocol, rule=rule, no_majority=no_majority, overrides=overrides)
    present = sorted(set(data.frame.loc[data.frame["kind"] == "model", "rater"].astype(str)))
    names = list(judges) if judges is not None else present
    by_id = {f.response_id: f for f in facts}
    family_of = dict(families or {})
    audit = _pairwise_bias if pairwise else _pointwise_bias
    return JudgeAudit(
        pairwise=pairwise,
        bootstrap=bootstrap,
        seed=seed,
        length_gap=bias.LENGTH_GAP,
        costs=judge_costs(usage, prices, names),
        biases=[audit(data, name, by_id, family_of, bootstrap, seed) for name in names],
    )


def _beside(judge: np.ndarray, humans: np.ndarray, boot: int, seed: int) -> Beside:
    """Rates: means over units of per-unit shares, paired intervals."""
    ones = np.ones(judge.size)
    j, h = ratio(judge, ones), ratio(humans, ones)
    return Beside(
        n=int(judge.size),
        judge=finite_or_none(j),
        judge_ci=ratio_interval(judge, ones, boot, seed),
        humans=finite_or_none(h),
        humans_ci=ratio_interval(humans, ones, boot, seed),
        difference=finite_or_none(j - h),
        difference_ci=ratio_difference_interval(judge, ones, humans, ones, boot, seed),
    )


def _beside_stat(stat, judge: np.ndarray, humans: np.ndarray, boot: int, seed: int) -> Beside:
    """A statistic of (values, unit indices) for the judge and the humans, recomputed on the same
    resampled units for both (so the difference's interval is paired)."""
    n, everything = judge.size, np.arange(judge.size)
    j, h = stat(judge, everything), stat(humans, everything)
    if boot > 0 and n > 0:
        samples = statistic_samples(
            [lambda idx: stat(judge, idx), lambda idx: stat(humans, idx)], n, boot, seed
        )
        return _paired_beside(n, j, h, samples[0], samples[1])
    return _paired_beside(n, j, h, None, None)


def _paired_beside(
    n: int, j: float, h: float, judge_samples: np.ndarray | None, human_samples: np.ndarray | None
) -> Beside:
    """The judge's and the humans' value and their difference, with percentile intervals from
    paired resample values (none without resamples)."""
    cis: list[Interval] = [None, None, None]
    if judge_samples is not None and human_samples is not None:
        rows = (judge_samples, human_samples, judge_samples - human_samples)
        cis = [interval_or_none(percentile_interval(row)) for row in rows]
    return Beside(
        n=int(n),
        judge=finite_or_none(j),
        judge_ci=cis[0],
        humans=finite_or_none(h),
        humans_ci=cis[1],
        difference=finite_or_none(j - h),
        difference_ci=cis[2],
    )


def _beside_rank_correlations(
    features: Sequence[np.ndarray], judge: np.ndarray, humans: np.ndarray, boot: int, seed: int
) -> list[Beside]:
    """Per feature, Spearman's rho of the judge's and of the humans' scores with it
    (:func:`calibration.bias.rank_correlation`), as :func:`_beside_stat` computes it: on each
    resample's drawn units, the same draws for both sides and every feature. Each resample's
    values are ranked once for all features, every resample of a chunk in one sort."""
    n, everything = judge.size, np.arange(judge.size)
    samples: list[list[list[np.ndarray]]] = [[[], []] for _ in features]
    if boot > 0 and n > 0:
        for drawn in unit_resample_indices(n, boot, seed):
            sides = [
                (values[drawn], bias.average_ranks_per_row(values[drawn]))
                for values in (judge, humans)
            ]
            for feature, feature_samples in zip(features, samples, strict=True):
                f = feature[drawn]
                f_ranks = bias.average_ranks_per_row(f)
                for (v, v_ranks), side_samples in zip(sides, feature_samples, strict=True):
                    side_samples.append(bias.rank_correlations_of_ranks(v, f, v_ranks, f_ranks))
    return [
        _paired_beside(
            n,
            bias.rank_correlation(judge[everything], feature[everything]),
            bias.rank_correlation(humans[everything], feature[everything]),
            np.concatenate(judge_parts) if judge_parts else None,
            np.concatenate(human_parts) if human_parts else None,
        )
        for feature, (judge_parts, human_parts) in zip(features, samples, strict=True)
    ]


def _pair_table(data: UnitData, judge: str, facts: Mapping[str, ResponseFacts]) -> pd.DataFrame:
    """One row per pair the judge gave a parsed verdict on and the humans labelled."""
    rows = data.judge_rows(judge)
    rows = rows[rows["code"].notna()]
    records = []
    for index, verdicts in rows.groupby("unit_index"):
        labels = data.humans[:, index]
        labels = labels[~np.isnan(labels)]
        a, b = parse_unit_key(str(data.units[index])).response_ids
        if labels.size == 0 or a not in facts or b not in facts:
            continue
        records.append(
            {
                "unit_index": index,
                "verdicts": verdicts["code"].to_numpy(int),
                "labels": labels,
                "reference": data.reference[index],
                "a": facts[a],
                "b": facts[b],
            }
        )
    return pd.DataFrame(records)


def _shares(table: pd.DataFrame, column: str, side_is_a: np.ndarray) -> np.ndarray:
    return np.array(
        [
            bias.share_for(codes, np.full(codes.size, side)).mean()
            for codes, side in zip(table[column], side_is_a, strict=True)
        ]
    )


def _pairwise_bias(data, judge, facts, families, boot, seed) -> JudgeBias:
    table = _pair_table(data, judge, facts)
    empty = Beside(
        n=0,
        judge=None,
        judge_ci=None,
        humans=None,
        humans_ci=None,
        difference=None,
        difference_ci=None,
    )
    if table.empty:
        lc = LengthControlledAgreement(
            metric="acc_decisive",
            n=0,
            agreement=None,
            length_controlled=None,
            length_controlled_ci=None,
            length_coefficient=None,
        )
        return JudgeBias(
            judge=judge,
            length=empty,
            lists=empty,
            length_controlled=lc,
            family=families.get(judge),
            self_preference=None,
        )

    def beside(keep: np.ndarray, side_is_a: np.ndarray) -> Beside:
        part = table[keep]
        if part.empty:
            return empty
        side = side_is_a[keep]
        return _beside(_shares(part, "verdicts", side), _shares(part, "labels", side), boot, seed)

    len_a = np.array([f.length for f in table["a"]])
    len_b = np.array([f.length for f in table["b"]])
    list_a = np.array([f.has_list for f in table["a"]])
    list_b = np.array([f.has_list for f in table["b"]])
    family = families.get(judge)
    own = None
    if family is not None:
        own_a = np.array([families.get(f.model) == family for f in table["a"]])
        own_b = np.array([families.get(f.model) == family for f in table["b"]])
        own = beside(own_a != own_b, own_a)
    return JudgeBias(
        judge=judge,
        length=beside(np.abs(len_a - len_b) > bias.LENGTH_GAP, len_a > len_b),
        lists=beside(list_a != list_b, list_a),
        length_controlled=_pairwise_lc(table, len_a - len_b, boot, seed),
        family=family,
        self_preference=own,
    )


def _pairwise_lc(table: pd.DataFrame, delta: np.ndarray, boot: int, seed: int):
    """Checks: decisive verdicts on the m pairs with a decisive reference, each pair weighing 1;
    z = tanh(ΔL / sd) with sd over those pairs; the interval resamples those pairs."""
    pairs: list[int] = []
    says_a: list[bool] = []
    reference_a: list[bool] = []
    weights: list[float] = []
    kept: list[int] = []
    for i, (codes, reference) in enumerate(zip(table["verdicts"], table["reference"], strict=True)):
        decisive = codes[codes < 2]
        if reference not in (0.0, 1.0) or decisive.size == 0:
            continue
        for code in decisive:
            pairs.append(len(kept))
            says_a.append(bool(code == 0))
            reference_a.append(reference == 0.0)
            weights.append(1.0 / decisive.size)
        kept.append(i)
    pair, y = np.array(pairs, dtype=int), np.array(says_a, dtype=bool)
    ref_a, w = np.array(reference_a, dtype=bool), np.array(weights, dtype=float)
    z = bias.length_term_pairwise(delta[kept], np.zeros(len(kept)))[pair]
    result = bias.length_controlled_agreement(y, ref_a, z, w)

    def resample(idx: np.ndarray) -> float:
        counts = counts_from_indices(idx[None, :], len(kept))[0]
        return bias.length_controlled_agreement(y, ref_a, z, w * counts[pair]).length_controlled

    return LengthControlledAgreement(
        metric="acc_decisive",
        n=len(kept),
        agreement=finite_or_none(result.agreement),
        length_controlled=finite_or_none(result.length_controlled),
        length_controlled_ci=statistic_interval(resample, len(kept), boot, seed),
        length_coefficient=finite_or_none(result.length_coefficient),
    )


def _pointwise_bias(data, judge, facts, families, boot, seed) -> JudgeBias:
    rows = data.judge_rows(judge)
    rows = rows[rows["code"].notna()]
    scores = rows.groupby("unit_index")["code"].mean()
    keep = [
        (i, s)
        for i, s in scores.items()
        if not np.isnan(data.reference[i]) and _response_id(data.units[i]) in facts
    ]
    index = np.array([i for i, _ in keep], int)
    judged = np.array([s for _, s in keep], float)
    humans = data.reference[index]
    unit_facts = [facts[_response_id(data.units[i])] for i in index]
    length = np.array([f.length for f in unit_facts], float)
    lists = np.array([f.has_list for f in unit_facts], float)

    ell = bias.length_term_pointwise(length)
    result = bias.length_controlled_correlation(judged, humans, ell)

    family = families.get(judge)
    own = None
    if family is not None:
        mine = np.array([families.get(f.model) == family for f in unit_facts])
        gap = lambda values, idx: bias.score_gap(values[idx], mine[idx])  # noqa: E731
        own = _beside_stat(gap, judged, humans, boot, seed)
    with_length, with_lists = _beside_rank_correlations([length, lists], judged, humans, boot, seed)
    return JudgeBias(
        judge=judge,
        length=with_length,
        lists=with_lists,
        length_controlled=LengthControlledAgreement(
            metric="pearson",
            n=int(index.size),
            agreement=finite_or_none(result.agreement),
            length_controlled=finite_or_none(result.length_controlled),
            length_controlled_ci=counts_statistic_interval(
                lambda counts: bias.length_controlled_correlations(judged, humans, ell, counts),
                index.size,
                boot,
                seed,
            ),
            length_coefficient=finite_or_none(result.length_coefficient),
        ),
        family=family,
        self_preference=own,
    )


def _response_id(unit: str) -> str:
    return parse_unit_key(str(unit)).response_ids[0]
