"""Judge biases as pure functions of arrays: length and format preference, length-controlled
agreement, self-preference (METRICS.md, "Judge bias and cost").

Pairwise preferences are coded 0 = A, 1 = B, 2 = tie (:data:`calibration.pairwise.LABELS`).
The length-controlled agreement follows AlpacaEval's length-controlled win rate (Dubois et al.
2024, arXiv:2404.04475): fit a GLM of the judge's verdict with the length difference as a
mediator, then predict with that term set to zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LENGTH_GAP = 30
"""Pairs whose lengths differ by at most this many characters say nothing about a length
preference (AlpacaEval's ``significant_delta_length``)."""
_RIDGE = 1e-6  # keeps the Newton steps finite when the verdicts are separable


def share_for(code: np.ndarray, side_is_a: np.ndarray) -> np.ndarray:
    """Per preference, 1 when it chose the given side, 0 the other side, ½ for a tie.

    >>> share_for(np.array([0, 1, 2, 0]), np.array([True, True, True, False]))
    array([1. , 0. , 0.5, 0. ])
    """
    code, side_is_a = np.asarray(code), np.asarray(side_is_a, bool)
    chose_a = np.where(code == 0, 1.0, np.where(code == 1, 0.0, 0.5))
    return np.where(side_is_a, chose_a, 1.0 - chose_a)


def rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho, NaN with fewer than 3 units or a constant side."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return _pearson(average_ranks(x), average_ranks(y))  # Spearman = Pearson of ranks


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties sharing their mean rank (``scipy.stats.rankdata``'s default, without
    its per-call overhead: the bootstrap calls this thousands of times).

    >>> average_ranks(np.array([3.0, 1.0, 3.0, 2.0]))
    array([3.5, 1. , 3.5, 2. ])
    """
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2.0)[inverse]


def average_ranks_per_row(matrix: np.ndarray) -> np.ndarray:
    """:func:`average_ranks` of each row of ``matrix`` (resamples × units), without a sort per row.

    Each value's rank is (values below it + 1 + values up to it) / 2 within its row, counted
    from each row's counts of the distinct values: the same integers halved as
    :func:`average_ranks`, so the ranks are equal to the bit.

    >>> average_ranks_per_row(np.array([[3.0, 1.0, 3.0, 2.0], [1.0, 1.0, 2.0, 2.0]]))
    array([[3.5, 1. , 3.5, 2. ],
           [1.5, 1.5, 3.5, 3.5]])
    """
    rows, width = matrix.shape
    distinct, codes = np.unique(matrix, return_inverse=True)
    codes = codes.reshape(rows, width)
    offsets = np.arange(rows)[:, None] * distinct.size
    counts = np.bincount((codes + offsets).ravel(), minlength=rows * distinct.size)
    counts = counts.reshape(rows, distinct.size)
    up_to = np.take_along_axis(np.cumsum(counts, axis=1), codes, axis=1)
    below = up_to - np.take_along_axis(counts, codes, axis=1)
    return (below + 1 + up_to) / 2.0


def rank_correlations_of_ranks(
    x: np.ndarray, y: np.ndarray, x_ranks: np.ndarray, y_ranks: np.ndarray
) -> np.ndarray:
    """Per row, :func:`rank_correlation` of the rows of ``x`` and ``y`` given their
    :func:`average_ranks_per_row` (a bootstrap ranks each resample's values once for several
    correlations)."""
    result = np.full(x.shape[0], np.nan)
    if x.shape[1] < 3:
        return result
    varies = (np.ptp(x, axis=1) != 0) & (np.ptp(y, axis=1) != 0)
    for row in np.flatnonzero(varies):
        result[row] = _pearson(x_ranks[row], y_ranks[row])
    return result


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def fit_logistic(features: np.ndarray, outcome: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted logistic regression by Newton–Raphson (IRLS); an intercept is added first.

    Returns ``[intercept, *coefficients]``, the maximiser of
    ``Σ w_i [y_i log p_i + (1 − y_i) log(1 − p_i)] − ½·1e-6·‖β‖²`` with
    ``p_i = σ(β₀ + x_i·β)``; the tiny ridge only matters when the classes are separable.
    """
    design = np.column_stack([np.ones(len(outcome)), np.asarray(features, float)])
    y, w = np.asarray(outcome, float), np.asarray(weights, float)
    beta = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(design @ beta)))
        gradient = design.T @ (w * (y - p)) - _RIDGE * beta
        hessian = (design * (w * p * (1 - p))[:, None]).T @ design + _RIDGE * np.eye(beta.size)
        step = np.linalg.solve(hessian, gradient)
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return beta


@dataclass(frozen=True)
class LengthControlled:
    """Agreement with the humans before and after removing the judge's length effect."""

    agreement: float
    """Raw: weighted share of the judge's verdicts equal to the reference (or Pearson r)."""
    length_controlled: float
    """The same, predicted by the model with the length term set to zero."""
    length_coefficient: float
    """β_L: the judge's length effect with the human label held fixed."""


def length_controlled_agreement(
    judge_says_a: np.ndarray,
    reference_a: np.ndarray,
    length_term: np.ndarray,
    weights: np.ndarray,
) -> LengthControlled:
    """Pairwise, over decisive checks (judge and reference both A or B).

    Model: ``P(judge says A) = σ(β₀ + β_H·h + β_L·z)`` with ``h = +1`` when the reference is A,
    ``−1`` when B, and ``z`` the length term (``tanh(ΔL / sd ΔL)``, ΔL = len A − len B, as in
    AlpacaEval LC). Raw agreement: Σ w·[verdict = reference] / Σ w. Length-controlled: Σ w·p̃ / Σ w
    with p̃ = σ(β₀ + β_H·h) for a reference A and 1 − σ(β₀ + β_H·h) for B, i.e. the model's
    agreement at ΔL = 0. (With h the only other regressor the fitted agreement *with* the length
    term equals the raw agreement, so the gap is the length term's share.)
    """
    y = np.asarray(judge_says_a, float)
    ref_a = np.asarray(reference_a, bool)
    w = np.asarray(weights, float)
    if w.sum() <= 0 or np.unique(ref_a).size < 2:
        return LengthControlled(float("nan"), float("nan"), float("nan"))
    h = np.where(ref_a, 1.0, -1.0)
    beta = fit_logistic(np.column_stack([h, length_term]), y, w)
    p_a = 1.0 / (1.0 + np.exp(-(beta[0] + beta[1] * h)))
    agree_lc = np.where(ref_a, p_a, 1.0 - p_a)
    raw = np.where(ref_a, y, 1.0 - y)
    total = w.sum()
    return LengthControlled(float(w @ raw / total), float(w @ agree_lc / total), float(beta[2]))


def length_controlled_correlation(
    judge: np.ndarray, human: np.ndarray, length_term: np.ndarray
) -> LengthControlled:
    """Pointwise: ordinary least squares ``J = b₀ + b_H·H + b_L·ℓ`` (ℓ the standardised log
    length); the length-controlled score is ``J − b_L·ℓ`` and the agreement is Pearson's r with
    H before and after."""
    judge, human, ell = (np.asarray(x, float) for x in (judge, human, length_term))
    if judge.size < 3 or np.ptp(judge) == 0 or np.ptp(human) == 0:
        return LengthControlled(float("nan"), float("nan"), float("nan"))
    design = np.column_stack([np.ones(judge.size), human, ell])
    coef = np.linalg.lstsq(design, judge, rcond=None)[0]
    controlled = judge - coef[2] * ell
    return LengthControlled(_pearson(judge, human), _pearson(controlled, human), float(coef[2]))


def length_controlled_correlations(
    judge: np.ndarray, human: np.ndarray, length_term: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """``length_controlled_correlation(judge[d], human[d], length_term[d]).length_controlled`` for
    each bootstrap resample ``d``, given as its draw counts per unit (rows of ``counts``, shape
    (b, n)): one pass of weighted moments for all resamples instead of a fit per resample.

    The least squares of ``J = b₀ + b_H·H + b_L·ℓ`` on the drawn units solves the centred normal
    equations (weighted by the counts), ``b_L = (S_HH·S_Jℓ − S_Hℓ·S_JH) / (S_HH·S_ℓℓ − S_Hℓ²)``,
    and Pearson's r of ``J − b_L·ℓ`` with H is ``(S_JH − b_L·S_Hℓ) / √(S_CC·S_HH)`` with
    ``S_CC = S_JJ − 2·b_L·S_Jℓ + b_L²·S_ℓℓ``. NaN where the per-resample function gives NaN: fewer
    than 3 units, or drawn judge or human scores all equal; also where the fit is not unique (H
    and ℓ collinear on the drawn units). Drawn lengths all equal leave ``J`` as it is (b_L = 0).
    """
    judge, human, ell = (np.asarray(x, float) for x in (judge, human, length_term))
    counts = np.asarray(counts, float)
    if judge.size < 3:
        return np.full(counts.shape[0], np.nan)
    first = np.argmax(counts > 0, axis=1)  # a drawn unit of each resample

    def all_equal(values: np.ndarray) -> np.ndarray:
        # exact, as np.ptp: no drawn value differs from one drawn value
        return (counts * (values[None, :] != values[first][:, None])).sum(1) == 0

    total = counts.sum(1)
    centred = [x - x.mean() for x in (judge, human, ell)]  # less cancellation in the moments
    means = [counts @ x / total for x in centred]

    def moment(a: int, b: int) -> np.ndarray:
        return counts @ (centred[a] * centred[b]) / total - means[a] * means[b]

    s_jj, s_hh, s_ll = moment(0, 0), moment(1, 1), moment(2, 2)
    s_jh, s_jl, s_hl = moment(0, 1), moment(0, 2), moment(1, 2)
    flat_length = all_equal(ell)
    det = s_hh * s_ll - s_hl**2
    unique_fit = flat_length | (det > 1e-12 * s_hh * s_ll)
    with np.errstate(invalid="ignore", divide="ignore"):
        b_l = np.where(flat_length, 0.0, (s_hh * s_jl - s_hl * s_jh) / det)
        s_cc = s_jj - 2 * b_l * s_jl + b_l**2 * s_ll
        r = (s_jh - b_l * s_hl) / np.sqrt(s_cc * s_hh)
    defined = ~all_equal(judge) & ~all_equal(human) & unique_fit & (s_cc > 1e-12 * s_jj)
    return np.where(defined, np.clip(r, -1.0, 1.0), np.nan)


def length_term_pairwise(length_a: np.ndarray, length_b: np.ndarray) -> np.ndarray:
    """AlpacaEval LC's length feature: ``tanh(ΔL / sd(ΔL))`` (0 where all ΔL are equal)."""
    delta = np.asarray(length_a, float) - np.asarray(length_b, float)
    sd = delta.std(ddof=1) if delta.size > 1 else 0.0
    return np.tanh(delta / sd) if sd > 0 else np.zeros_like(delta)


def length_term_pointwise(length: np.ndarray) -> np.ndarray:
    """Standardised ``log(1 + length)`` (0 where all lengths are equal)."""
    ell = np.log1p(np.asarray(length, float))
    sd = ell.std(ddof=1) if ell.size > 1 else 0.0
    return (ell - ell.mean()) / sd if sd > 0 else np.zeros_like(ell)


def score_gap(values: np.ndarray, own: np.ndarray) -> float:
    """Mean of ``values`` on the own-family units minus the mean on the others (NaN if either
    side is empty)."""
    values, own = np.asarray(values, float), np.asarray(own, bool)
    if own.all() or not own.any():
        return float("nan")
    return float(values[own].mean() - values[~own].mean())
