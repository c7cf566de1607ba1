"""Dawid–Skene: each annotator's confusion matrix and each unit's true label, without gold.

A. P. Dawid and A. M. Skene, "Maximum likelihood estimation of observer error-rates using the EM
algorithm", *Applied Statistics* 28(1), 1979, 20–28. Every unit u has a latent true class
``z_u`` with prior ``π_c``; annotator w answers k on a unit of true class c with probability
``e_w[c, k]`` (the row of their confusion matrix for c), independently of the others::

    P(z_u = c | answers) ∝ π_c · Π_{w answered u} e_w[c, y_wu]              (E-step)
    π_c = mean_u T[u, c],   e_w[c, k] ∝ Σ_{u: y_wu = k} T[u, c]                (M-step)

EM starts from the soft majority vote (``T[u, c]`` = share of u's answers that are c), as
crowd-kit's ``DawidSkene`` does, so the two agree on the same input and iterations (tested).
As crowd-kit does, a count is floored at 1e-10 before a row is normalised, over the labels the
annotator gave (a label they never gave keeps probability 0: it never enters a likelihood).
EM stops when the observed-data log-likelihood per answer gains less than ``tol`` (EM never
lowers it), or after ``max_iter`` iterations; nothing is random, so a fit is deterministic.

Competence of annotator w: their expected accuracy ``Σ_c π_c e_w[c, c]``, beside ``chance``, what
someone answering independently of the truth with w's own answer shares ``q_w`` would reach,
``Σ_c π_c q_w(c)``.

>>> import numpy as np
>>> labels = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [1, 0, 0, 1]], dtype=float)
>>> fit = dawid_skene(labels, 2)
>>> fit.labels.tolist()
[0.0, 0.0, 1.0, 1.0]
>>> fit.competence.round(2).tolist()
[1.0, 1.0, 0.5]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibration.alpha import unique_rows

DS_MAX_ITER = 100
"""Iteration cap (crowd-kit's default ``n_iter``)."""
DS_TOL = 1e-7
"""Stop when the log-likelihood per answer gains less than this."""
_EPS = 1e-10


@dataclass(frozen=True)
class DawidSkeneFit:
    """A Dawid–Skene fit over the units of a raters × units label matrix.

    ``posteriors``: units × classes, P(true class | answers), NaN rows for units nobody
    answered; ``labels``: the most probable class per unit (lowest class on a tie; NaN where
    nobody answered); ``priors``: π; ``confusion``: raters × true class × answered class;
    ``competence`` and ``chance`` per rater (NaN for a rater without answers).
    """

    posteriors: np.ndarray
    labels: np.ndarray
    priors: np.ndarray
    confusion: np.ndarray
    competence: np.ndarray
    chance: np.ndarray
    log_likelihood: float
    """Observed-data log-likelihood per answer at the returned parameters' E-step."""
    iterations: int
    converged: bool


def answer_triples(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rater, unit, class) index arrays of the answered cells of a raters × units matrix."""
    matrix = np.asarray(labels, dtype=np.float64)
    raters, units = np.nonzero(~np.isnan(matrix))
    return raters, units, matrix[raters, units].astype(np.int64)


@dataclass(frozen=True)
class AnswerPatterns:
    """The units someone answered, grouped by their answers: units where the same raters gave
    the same answers have the same posterior, so EM runs once per pattern, weighted by its
    number of units (a campaign of a million units on a 1–5 scale has a few hundred)."""

    matrix: np.ndarray
    """Raters × patterns (NaN = no answer)."""
    counts: np.ndarray
    """Units per pattern."""
    of_unit: np.ndarray
    """Per unit, its pattern's column; -1 where nobody answered."""

    @classmethod
    def of(cls, labels: np.ndarray) -> AnswerPatterns:
        matrix = np.asarray(labels, dtype=np.float64)
        answered = (~np.isnan(matrix)).any(axis=0)
        of_unit = np.full(matrix.shape[1], -1, dtype=np.int64)
        if not answered.any():
            return cls(np.zeros((matrix.shape[0], 0)), np.zeros(0), of_unit)
        columns = np.where(np.isnan(matrix), -1.0, matrix)[:, answered].T
        distinct, _, inverse = unique_rows(columns)
        of_unit[answered] = inverse
        counts = np.bincount(inverse, minlength=distinct.shape[0]).astype(np.float64)
        return cls(np.where(distinct.T < 0, np.nan, distinct.T), counts, of_unit)

    def expand(self, per_pattern: np.ndarray) -> np.ndarray:
        """Per-pattern rows (patterns × …) as per-unit rows, NaN where nobody answered."""
        shape = (self.of_unit.size, *per_pattern.shape[1:])
        result = np.full(shape, np.nan)
        answered = self.of_unit >= 0
        result[answered] = per_pattern[self.of_unit[answered]]
        return result


def majority_shares(labels: np.ndarray, n_classes: int) -> np.ndarray:
    """Units × classes: the share of each unit's answers that are each class (NaN rows: none)."""
    raters, units, classes = answer_triples(labels)
    n_units = np.asarray(labels).shape[1]
    counts = np.zeros((n_units, n_classes))
    np.add.at(counts, (units, classes), 1.0)
    total = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        return counts / total


def dawid_skene(
    labels: np.ndarray,
    n_classes: int,
    *,
    max_iter: int = DS_MAX_ITER,
    tol: float | None = DS_TOL,
) -> DawidSkeneFit:
    """Fit Dawid–Skene to a raters × units matrix of class codes 0..n_classes-1 (NaN = none).

    ``tol=None`` runs exactly ``max_iter`` iterations (to compare with another implementation).
    """
    patterns = AnswerPatterns.of(labels)
    n_raters = patterns.matrix.shape[0]
    raters, rows, classes = answer_triples(patterns.matrix)
    if classes.size and (classes.min() < 0 or classes.max() >= n_classes):
        raise ValueError(f"class codes must lie in 0..{n_classes - 1}")
    units = patterns.counts  # units per pattern
    weight = units[rows]  # per answer
    used = np.zeros((n_raters, n_classes), dtype=bool)
    used[raters, classes] = True
    posteriors = majority_shares(patterns.matrix, n_classes)
    priors = _weighted_mean(posteriors, units, n_classes)
    confusion = _m_step(posteriors, rows, raters, classes, weight, used)
    log_likelihood, iterations, converged = -np.inf, 0, False
    for iterations in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        posteriors, new_ll = _e_step(priors, confusion, rows, raters, classes, units)
        priors = _weighted_mean(posteriors, units, n_classes)
        confusion = _m_step(posteriors, rows, raters, classes, weight, used)
        if tol is not None and new_ll - log_likelihood < tol * max(weight.sum(), 1.0):
            log_likelihood, converged = new_ll, True
            break
        log_likelihood = new_ll
    full = patterns.expand(posteriors)
    best = patterns.expand(np.argmax(posteriors, axis=1).astype(np.float64))
    shares = np.zeros((n_raters, n_classes))
    np.add.at(shares, (raters, classes), weight)
    with np.errstate(invalid="ignore"):
        shares /= shares.sum(axis=1, keepdims=True)
        competence = np.einsum("c,wcc->w", priors, confusion)
        chance = shares @ priors
    competence = np.where(used.any(axis=1), competence, np.nan)
    return DawidSkeneFit(
        full,
        best,
        priors,
        confusion,
        competence,
        chance,
        float(log_likelihood / max(weight.sum(), 1.0)),
        iterations,
        converged,
    )


def _weighted_mean(posteriors: np.ndarray, units: np.ndarray, n_classes: int) -> np.ndarray:
    """π: the posteriors' mean over units (patterns weighted by their units)."""
    if units.sum() == 0:
        return np.full(n_classes, 1.0 / n_classes)
    return units @ posteriors / units.sum()


def _m_step(posteriors, rows, raters, classes, weight, used) -> np.ndarray:
    """e_w[c, k] ∝ Σ_{u: y_wu = k} T[u, c], floored at 1e-10 over the labels w gave."""
    n_raters, n_classes = used.shape
    counts = np.zeros((n_raters, n_classes, n_classes))  # rater, true, answered
    for true in range(n_classes):
        counts[:, true, :] = np.bincount(
            raters * n_classes + classes,
            weights=posteriors[rows, true] * weight,
            minlength=n_raters * n_classes,
        ).reshape(n_raters, n_classes)
    counts = np.where(used[:, None, :], np.maximum(counts, _EPS), 0.0)
    total = counts.sum(axis=2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, counts / total, 0.0)


def _e_step(priors, confusion, rows, raters, classes, units) -> tuple[np.ndarray, float]:
    """Posteriors of the true class per pattern, and the observed-data log-likelihood (summed
    over units)."""
    n_classes, n_rows = priors.size, units.size
    with np.errstate(divide="ignore"):
        log_e = np.log(confusion[raters, :, classes])  # answers × true class
    log_joint = np.tile(np.log(np.maximum(priors, _EPS)), (n_rows, 1))
    for true in range(n_classes):
        log_joint[:, true] += np.bincount(rows, weights=log_e[:, true], minlength=n_rows)
    top = log_joint.max(axis=1, keepdims=True)
    scaled = np.exp(log_joint - top)
    total = scaled.sum(axis=1, keepdims=True)
    return scaled / total, float(units @ (np.log(total) + top).ravel())
