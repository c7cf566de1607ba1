"""Cross-protocol consistency: does the response a rater prefers also get the higher score?

When the same responses have pointwise scores (one campaign) and pairwise preferences (another,
or the same dataset), every pair (a, b) with a preference and both scores is a check:

* preference A is consistent when s(a) > s(b), preference B when s(a) < s(b);
* a tie is consistent when |s(a) − s(b)| ≤ δ (``delta``, in scale points).

The humans are read as their reference on both sides (pointwise: the consensus score, pairwise:
the majority preference; adjudications win), a judge as its own scores (mean over samples) and its
own verdicts (each parsed verdict of a pair, both orders, weighs 1/k for a pair judged k times).
The rate is the mean over pairs; its interval is a bootstrap over pairs (METRICS.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from calibration.audit_stats import Interval, finite_or_none, ratio, ratio_interval
from calibration.bootstrap import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from calibration.errors import CalibrationInputError
from calibration.pairwise import LABELS
from calibration.reference import ConsensusRule, NoMajorityRule
from calibration.units import UnitData, prepare_units
from schemas.ids import parse_unit_key, response_unit_key
from schemas.protocols import Protocol, get_protocol

HUMANS = "humans"
"""The rater name under which the human references are reported."""
MAX_CASES = 200


def consistent(
    preference: np.ndarray, score_a: np.ndarray, score_b: np.ndarray, delta: float
) -> np.ndarray:
    """Per check, 1.0 when the preference (coded 0 = A, 1 = B, 2 = tie) agrees with the scores.

    >>> consistent(np.array([0, 1, 2, 2]), np.array([7, 7, 5, 5]), np.array([5, 5, 5.5, 7]), 1)
    array([1., 0., 1., 0.])
    """
    diff = np.asarray(score_a, float) - np.asarray(score_b, float)
    code = np.asarray(preference)
    result = np.where(code == 0, diff > 0, np.where(code == 1, diff < 0, np.abs(diff) <= delta))
    return result.astype(np.float64)


class InconsistentCase(BaseModel):
    """A pair on which a rater's preference and scores disagree."""

    model_config = ConfigDict(frozen=True)

    rater: str
    pair: str
    """The pair's unit key ``p:<a>|<b>``."""
    preference: str
    """The preference (canonical order); a judge's verdicts joined by ``/`` when it gave several."""
    score_a: float
    score_b: float
    share_consistent: float
    """Share of the rater's verdicts on this pair that agree with the scores (0 for humans)."""


class RaterConsistency(BaseModel):
    """One rater's consistency over the pairs it both scored and compared."""

    model_config = ConfigDict(frozen=True)

    rater: str
    n_pairs: int
    consistency: float | None
    ci: Interval
    n_inconsistent: int
    """Pairs with at least one inconsistent verdict."""


class ConsistencyReport(BaseModel):
    """``calibrate --consistency``: humans first, then each judge."""

    model_config = ConfigDict(frozen=True)

    pointwise_campaign: str
    pairwise_campaign: str
    delta: float
    n_pairs: int
    """Pairs of the pairwise campaign whose two responses are both units of the pointwise one."""
    bootstrap: int
    seed: int
    raters: list[RaterConsistency]
    cases: list[InconsistentCase]
    """Inconsistent pairs, largest score gap first, at most :data:`MAX_CASES`."""


def cross_protocol_consistency(
    pointwise_frame: pd.DataFrame,
    pairwise_frame: pd.DataFrame,
    protocol: Protocol,
    *,
    names: tuple[str, str] = ("pointwise", "pairwise"),
    delta: float | None = None,
    consensus: ConsensusRule = "mean",
    no_majority: NoMajorityRule = "tie",
    overrides: tuple[dict[str, object], dict[str, object]] = ({}, {}),
    judges: tuple[str, ...] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> ConsistencyReport:
    """Consistency of the humans and of every judge present in both frames (``judges``: only
    these). ``protocol`` is the pointwise campaign's; ``delta`` defaults to its step (1 point on a
    continuous scale)."""
    if not protocol.is_pointwise:
        raise CalibrationInputError(
            f"the first campaign must be pointwise (scores); {names[0]} is {protocol.name}"
        )
    delta = float(protocol.step or 1.0) if delta is None else float(delta)
    if not np.isfinite(delta) or delta < 0:
        raise CalibrationInputError(f"delta must be a number ≥ 0, got {delta}")
    scores = prepare_units(
        pointwise_frame, protocol, rule=consensus, no_majority=no_majority, overrides=overrides[0]
    )
    pairs = prepare_units(
        pairwise_frame,
        get_protocol("pairwise"),
        rule="majority",
        no_majority=no_majority,
        overrides=overrides[1],
    )
    keys = [_score_keys(unit) for unit in pairs.units]
    where = {str(unit): i for i, unit in enumerate(scores.units)}
    linked = np.array([a in where and b in where for a, b in keys], dtype=bool)
    if not linked.any():
        raise CalibrationInputError(
            f"no pair of {names[1]} has both responses scored in {names[0]}: the two campaigns "
            "must cover the same responses (campaigns of one dataset)"
        )
    checks = [_human_checks(scores, pairs, keys, linked, where)]
    both = _judges_in(scores) & _judges_in(pairs)
    if judges is not None:
        missing = sorted(set(judges) - both)
        if missing:
            raise CalibrationInputError(
                f"judge(s) {', '.join(missing)} did not judge both campaigns; in both: "
                + (", ".join(sorted(both)) or "none")
            )
        both = set(judges)
    checks += [_judge_checks(scores, pairs, keys, linked, judge) for judge in sorted(both)]
    raters, cases = [], []
    for rater, table in checks:
        raters.append(_summary(rater, table, delta, bootstrap, seed))
        cases += _cases(rater, table, delta)
    cases.sort(key=lambda c: (-abs(c.score_a - c.score_b), c.rater, c.pair))
    return ConsistencyReport(
        pointwise_campaign=names[0],
        pairwise_campaign=names[1],
        delta=delta,
        n_pairs=int(linked.sum()),
        bootstrap=bootstrap,
        seed=seed,
        raters=raters,
        cases=cases[:MAX_CASES],
    )


def _score_keys(pair_key: str) -> tuple[str, str]:
    a, b = parse_unit_key(pair_key).response_ids
    return response_unit_key(a), response_unit_key(b)


def _judges_in(data: UnitData) -> set[str]:
    return set(data.frame.loc[data.frame["kind"] == "model", "rater"].astype(str))


def _human_checks(
    scores: UnitData, pairs: UnitData, keys: list, linked: np.ndarray, where: dict[str, int]
):
    """One check per pair with a reference preference and both reference scores."""
    rows = []
    for i in np.flatnonzero(linked):
        a, b = (scores.reference[where[k]] for k in keys[i])
        if np.isnan(pairs.reference[i]) or np.isnan(a) or np.isnan(b):
            continue
        rows.append((pairs.units[i], int(pairs.reference[i]), a, b))
    return HUMANS, pd.DataFrame(rows, columns=["pair", "code", "score_a", "score_b"])


def _judge_checks(scores: UnitData, pairs: UnitData, keys: list, linked: np.ndarray, judge: str):
    """One check per parsed verdict of ``judge`` on a pair whose responses it scored."""
    score_rows = scores.judge_rows(judge)
    score_rows = score_rows[score_rows["code"].notna()]
    means = score_rows.groupby("unit")["code"].mean()
    verdicts = pairs.judge_rows(judge)
    verdicts = verdicts[verdicts["code"].notna()]
    linked_units = set(pairs.units[linked])
    rows = []
    for pair, code in zip(verdicts["unit"], verdicts["code"], strict=True):
        a, b = _score_keys(pair)
        if pair in linked_units and a in means.index and b in means.index:
            rows.append((pair, int(code), float(means[a]), float(means[b])))
    return judge, pd.DataFrame(rows, columns=["pair", "code", "score_a", "score_b"])


def _per_pair(table: pd.DataFrame, delta: float) -> pd.DataFrame:
    """Share of consistent checks per pair (a judge's verdicts on a pair weigh 1/k each)."""
    ok = consistent(
        table["code"].to_numpy(), table["score_a"].to_numpy(), table["score_b"].to_numpy(), delta
    )
    return (
        table.assign(ok=ok)
        .groupby("pair", sort=True)
        .agg(
            ok=("ok", "mean"),
            code=("code", lambda c: "/".join(LABELS[int(x)] for x in c)),
            score_a=("score_a", "first"),
            score_b=("score_b", "first"),
        )
    )


def _summary(rater: str, table: pd.DataFrame, delta: float, bootstrap: int, seed: int):
    if table.empty:
        return RaterConsistency(rater=rater, n_pairs=0, consistency=None, ci=None, n_inconsistent=0)
    per_pair = _per_pair(table, delta)
    ok, ones = per_pair["ok"].to_numpy(), np.ones(len(per_pair))
    return RaterConsistency(
        rater=rater,
        n_pairs=len(per_pair),
        consistency=finite_or_none(ratio(ok, ones)),
        ci=ratio_interval(ok, ones, bootstrap, seed),
        n_inconsistent=int((ok < 1).sum()),
    )


def _cases(rater: str, table: pd.DataFrame, delta: float) -> list[InconsistentCase]:
    if table.empty:
        return []
    per_pair = _per_pair(table, delta)
    return [
        InconsistentCase(
            rater=rater,
            pair=str(pair),
            preference=row.code,
            score_a=float(row.score_a),
            score_b=float(row.score_b),
            share_consistent=float(row.ok),
        )
        for pair, row in per_pair[per_pair["ok"] < 1].iterrows()
    ]
