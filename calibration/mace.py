"""MACE: how often each annotator answers at random, without gold (the model for score scales).

D. Hovy, T. Berg-Kirkpatrick, A. Vaswani and E. Hovy, "Learning Whom to Trust with MACE",
NAACL-HLT 2013, 1120–1130. The true label ``T_u`` of a unit is uniform over the K labels;
annotator w *knows* with probability ``θ_w`` and then answers ``T_u``, else spams: answers k with
probability ``ξ_w(k)``, whatever the truth::

    P(y_wu = k | T_u = t) = θ_w [k = t] + (1 − θ_w) ξ_w(k)

EM (the paper's, with its additive smoothing ``δ = 0.01 / K`` of the expected counts before
normalising; crowd-kit's ``MACE(method="em")``, which it matches on the same initial parameters
and iterations: tested). E-step: ``m_u(t) = (1/K) Π_w P(y_wu | t)``, ``Z_u = Σ_t m_u(t)``; the
posterior that w spammed on u is ``Σ_t m_u(t)/Z_u · (1−θ_w)ξ_w(y) / P(y | t)``. M-step: θ_w is
w's expected share of knowing answers, ξ_w their expected spam answers' shares. The default start
is deterministic (θ = ½, ξ uniform); EM stops when the log-likelihood per answer gains less than
``tol``, or after ``max_iter`` iterations.

Why MACE for score scales and not Dawid–Skene on the scale's points: a K-point scale gives each
annotator a K × K confusion matrix, K(K − 1) free numbers (90 on 1–10) to fit from the few
hundred units one person labels, and most cells are never visited; MACE gives each annotator one
competence θ and one answer-share vector ξ (K numbers), which a campaign can estimate, and θ is
exactly the question asked of a careless annotator: how often do they answer without looking.
It treats the points as categories (an answer one point off counts as a miss), so it is a test
for carelessness, not a measure of closeness; closeness is the leave-one-out MAE beside it.

>>> import numpy as np
>>> labels = np.array([[0, 1, 2, 0, 1, 2], [0, 1, 2, 0, 1, 2], [2, 2, 2, 2, 2, 2]], float)
>>> fit = mace(labels, 3)
>>> fit.labels.tolist()
[0.0, 1.0, 2.0, 0.0, 1.0, 2.0]
>>> fit.competence.round(2).tolist()
[1.0, 1.0, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibration.dawid_skene import AnswerPatterns, answer_triples

MACE_MAX_ITER = 100
MACE_TOL = 1e-7
"""Stop when the log-likelihood per answer gains less than this."""


@dataclass(frozen=True)
class MaceFit:
    """A MACE fit. ``posteriors``: units × labels, P(true label | answers) (NaN rows: nobody
    answered); ``labels``: the most probable label (lowest on a tie); ``competence``: θ per
    rater, the probability that they answer the truth rather than spam (NaN: no answers);
    ``spam``: raters × labels, ξ, their answer shares when spamming."""

    posteriors: np.ndarray
    labels: np.ndarray
    competence: np.ndarray
    spam: np.ndarray
    log_likelihood: float
    """Log marginal likelihood per answer at the returned parameters."""
    iterations: int
    converged: bool


def mace(
    labels: np.ndarray,
    n_labels: int,
    *,
    max_iter: int = MACE_MAX_ITER,
    tol: float | None = MACE_TOL,
    init: tuple[np.ndarray, np.ndarray] | None = None,
) -> MaceFit:
    """Fit MACE by EM to a raters × units matrix of label codes 0..n_labels-1 (NaN = none).

    ``init``: (θ per rater, ξ raters × labels) to start from (default θ = ½, ξ uniform);
    ``tol=None`` runs exactly ``max_iter`` iterations.
    """
    patterns = AnswerPatterns.of(labels)
    n_raters, n_patterns = patterns.matrix.shape
    raters, rows, answers = answer_triples(patterns.matrix)
    if answers.size and (answers.min() < 0 or answers.max() >= n_labels):
        raise ValueError(f"label codes must lie in 0..{n_labels - 1}")
    if init is None:
        theta = np.full(n_raters, 0.5)
        xi = np.full((n_raters, n_labels), 1.0 / n_labels)
    else:
        theta, xi = np.asarray(init[0], dtype=np.float64), np.asarray(init[1], dtype=np.float64)
    smoothing = 0.01 / n_labels
    units = patterns.counts
    n_answers = max(float(units[rows].sum()), 1.0)
    state = _e_step(theta, xi, raters, rows, answers, units, n_labels)
    log_likelihood, iterations, converged = state[0], 0, False
    for iterations in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        spam_counts, know_counts, strategy = state[2], state[3], state[4]
        theta, xi = _rater_parameters(spam_counts, know_counts, strategy, smoothing)
        state = _e_step(theta, xi, raters, rows, answers, units, n_labels)
        gain = state[0] - log_likelihood
        log_likelihood = state[0]
        if tol is not None and gain < tol * n_answers:
            converged = True
            break
    posteriors = state[1]
    given = np.zeros(n_raters, dtype=bool)
    given[raters] = True
    return MaceFit(
        patterns.expand(posteriors),
        patterns.expand(np.argmax(posteriors, axis=1).astype(np.float64))
        if n_patterns
        else np.full(patterns.of_unit.size, np.nan),
        np.where(given, theta, np.nan),
        xi,
        float(log_likelihood / n_answers),
        iterations,
        converged,
    )


def _rater_parameters(
    spam_counts: np.ndarray, know_counts: np.ndarray, strategy: np.ndarray, smoothing: float
) -> tuple[np.ndarray, np.ndarray]:
    """MACE's M-step for the raters (both models): θ, the smoothed share of answers given
    knowingly, and ξ, each rater's smoothed distribution of answers given at random."""
    pair = np.column_stack([spam_counts, know_counts]) + smoothing
    smoothed = strategy + smoothing
    return pair[:, 1] / pair.sum(axis=1), smoothed / smoothed.sum(axis=1, keepdims=True)


def _e_step(theta, xi, raters, rows, answers, units, n_labels):
    """(log-likelihood, posteriors per pattern, expected spam counts, expected knowing counts,
    expected spam answers raters × labels) at θ, ξ; patterns weighted by their units."""
    n_raters, n_rows = theta.size, units.size
    spam_part = (1.0 - theta[raters]) * xi[raters, answers]  # answers
    # P(y | t) per answer and true label t
    likelihood = spam_part[:, None] + theta[raters, None] * (
        answers[:, None] == np.arange(n_labels)[None, :]
    )
    log_m = np.full((n_rows, n_labels), -np.log(n_labels))
    with np.errstate(divide="ignore"):
        for t in range(n_labels):
            log_m[:, t] += np.bincount(rows, weights=np.log(likelihood[:, t]), minlength=n_rows)
    m = np.exp(log_m)
    z = m.sum(axis=1)
    log_likelihood = float(units @ np.log(z + 1e-8))
    posteriors = m / z[:, None]
    post = posteriors[rows]  # answers × true label
    weight = units[rows]
    spammed = (post / likelihood).sum(axis=1) * spam_part * weight
    knew = post[np.arange(answers.size), answers] * theta[raters] / (spam_part + theta[raters])
    spam_counts = np.bincount(raters, weights=spammed, minlength=n_raters)
    know_counts = np.bincount(raters, weights=knew * weight, minlength=n_raters)
    strategy = np.zeros((n_raters, n_labels))
    np.add.at(strategy, (raters, answers), spammed)
    return log_likelihood, posteriors, spam_counts, know_counts, strategy


ORDINAL_WIDTHS = np.geomspace(0.05, 4.0, 48)
"""Widths (in scale steps) the ordinal model's M-step chooses from: 0.05 is exact MACE (a
neighbouring point has probability e^-200), 4 a near-flat kernel on a 1–10 scale."""


@dataclass(frozen=True)
class OrdinalMaceFit:
    """An ordinal MACE fit (:func:`ordinal_mace`). ``competence``: θ per rater, the probability
    that they answer as the pool's attentive annotators do (near the truth) rather than at
    random; ``width``: the pool-wide σ of the attentive answers' kernel, in scale steps;
    ``priors``: the true points' shares."""

    posteriors: np.ndarray
    labels: np.ndarray
    competence: np.ndarray
    spam: np.ndarray
    priors: np.ndarray
    width: float
    log_likelihood: float
    iterations: int
    converged: bool


def ordinal_kernel(width: float, n_labels: int) -> np.ndarray:
    """K[t, y] ∝ exp(−(y − t)² / 2σ²) over the scale's points (rows sum to 1)."""
    points = np.arange(n_labels, dtype=np.float64)
    kernel = np.exp(-((points[None, :] - points[:, None]) ** 2) / (2.0 * width**2))
    return kernel / kernel.sum(axis=1, keepdims=True)


def ordinal_mace(
    labels: np.ndarray,
    n_labels: int,
    *,
    max_iter: int = MACE_MAX_ITER,
    tol: float | None = MACE_TOL,
    width: float | None = None,
) -> OrdinalMaceFit:
    """MACE for an ordinal scale: an attentive answer lands *near* the truth, not on it.

    The model (MACE with a distance-aware knowing part and fitted class priors)::

        P(y_wu = k | T_u = t) = θ_w K_σ[t, k] + (1 − θ_w) ξ_w(k),   P(T_u = t) = π_t

    with ``K_σ`` the discretised Gaussian kernel of :func:`ordinal_kernel`, one width σ for the
    whole pool (how far the pool's attentive annotators scatter around the truth), and θ_w, ξ_w
    as in MACE (:func:`mace`). σ → 0 is MACE with fitted priors. EM: the E-step is MACE's with
    ``K_σ[t, k]`` in place of ``[k = t]`` and ``π_t`` in place of ``1/K``; the M-step updates
    θ, ξ (MACE's smoothing 0.01/K) and π in closed form, and σ as the width in
    :data:`ORDINAL_WIDTHS` maximising the expected log-likelihood of the attentive answers,
    ``Σ_{t,k} C[t, k] log K_σ[t, k]`` (``C``: their expected counts by true point and answer).
    ``width`` fixes σ instead of fitting it. Start: θ = ½, ξ and π uniform, σ = 1 step.
    Stops as :func:`mace` does.
    """
    patterns = AnswerPatterns.of(labels)
    n_raters, n_patterns = patterns.matrix.shape
    raters, rows, answers = answer_triples(patterns.matrix)
    if answers.size and (answers.min() < 0 or answers.max() >= n_labels):
        raise ValueError(f"label codes must lie in 0..{n_labels - 1}")
    theta = np.full(n_raters, 0.5)
    xi = np.full((n_raters, n_labels), 1.0 / n_labels)
    priors = np.full(n_labels, 1.0 / n_labels)
    sigma = 1.0 if width is None else float(width)
    kernels = np.stack([ordinal_kernel(w, n_labels) for w in ORDINAL_WIDTHS])
    log_kernels = np.log(np.maximum(kernels, 1e-300))
    smoothing = 0.01 / n_labels
    units = patterns.counts
    n_answers = max(float(units[rows].sum()), 1.0)
    state = _ordinal_e_step(theta, xi, priors, sigma, raters, rows, answers, units, n_labels)
    log_likelihood, iterations, converged = state[0], 0, False
    for iterations in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        _, posteriors, spam_counts, know_counts, strategy, attentive = state
        theta, xi = _rater_parameters(spam_counts, know_counts, strategy, smoothing)
        priors = units @ posteriors + smoothing
        priors /= priors.sum()
        if width is None:
            sigma = float(ORDINAL_WIDTHS[np.argmax((log_kernels * attentive).sum(axis=(1, 2)))])
        state = _ordinal_e_step(theta, xi, priors, sigma, raters, rows, answers, units, n_labels)
        gain = state[0] - log_likelihood
        log_likelihood = state[0]
        if tol is not None and gain < tol * n_answers:
            converged = True
            break
    posteriors = state[1]
    given = np.zeros(n_raters, dtype=bool)
    given[raters] = True
    return OrdinalMaceFit(
        patterns.expand(posteriors),
        patterns.expand(np.argmax(posteriors, axis=1).astype(np.float64))
        if n_patterns
        else np.full(patterns.of_unit.size, np.nan),
        np.where(given, theta, np.nan),
        xi,
        priors,
        sigma,
        float(log_likelihood / n_answers),
        iterations,
        converged,
    )


def _ordinal_e_step(theta, xi, priors, sigma, raters, rows, answers, units, n_labels):
    """(log-likelihood, posteriors per pattern, expected spam counts, expected attentive counts,
    expected spam answers raters × labels, expected attentive answers true × answered)."""
    n_raters, n_rows = theta.size, units.size
    kernel = ordinal_kernel(sigma, n_labels)
    spam_part = (1.0 - theta[raters]) * xi[raters, answers]  # per answer
    know_part = theta[raters, None] * kernel[:, answers].T  # answers × true label
    likelihood = spam_part[:, None] + know_part
    log_m = np.tile(np.log(np.maximum(priors, 1e-300)), (n_rows, 1))
    with np.errstate(divide="ignore"):
        for t in range(n_labels):
            log_m[:, t] += np.bincount(rows, weights=np.log(likelihood[:, t]), minlength=n_rows)
    top = log_m.max(axis=1, keepdims=True)
    m = np.exp(log_m - top)
    z = m.sum(axis=1)
    log_likelihood = float(units @ (np.log(z) + top.ravel()))
    posteriors = m / z[:, None]
    post = posteriors[rows]  # answers × true label
    weight = units[rows]
    spammed = (post / likelihood).sum(axis=1) * spam_part * weight
    knew = post * know_part / likelihood * weight[:, None]  # answers × true label
    spam_counts = np.bincount(raters, weights=spammed, minlength=n_raters)
    know_counts = np.bincount(raters, weights=knew.sum(axis=1), minlength=n_raters)
    strategy = np.zeros((n_raters, n_labels))
    np.add.at(strategy, (raters, answers), spammed)
    attentive = np.zeros((n_labels, n_labels))
    for t in range(n_labels):
        attentive[t] = np.bincount(answers, weights=knew[:, t], minlength=n_labels)
    return log_likelihood, posteriors, spam_counts, know_counts, strategy, attentive


def random_answer_evidence(labels: np.ndarray, fit: OrdinalMaceFit) -> np.ndarray:
    """Per rater, the evidence (natural log of a likelihood ratio, nats) that they answered at
    random rather than as the pool's median annotator does, under an ordinal MACE ``fit`` of
    ``labels`` (raters × units of codes, NaN = none); NaN for a rater without answers.

    For rater w with answer shares q_w (their own, the best description of random answers) and
    θ̃ the median θ of the *other* raters, each answer y on unit u is scored under

    * random: ``q_w(y)``;
    * attentive like the others: ``θ̃ Σ_t P₋w(t) K_σ[t, y] + (1 − θ̃) q_w(y)``, with ``P₋w`` the
      posterior of u's true point given the other raters' answers (w's own answer left out);

    and the evidence is the sum over w's answers of log(random / attentive). It grows with the
    number of answers, so a handful of odd answers is never strong evidence; 3 nats is a
    likelihood ratio of 20 (Kass & Raftery 1995's "strong" evidence).
    """
    matrix = np.asarray(labels, dtype=np.float64)
    n_raters, n_units = matrix.shape
    n_labels = fit.priors.size
    raters, units, answers = answer_triples(matrix)
    result = np.full(n_raters, np.nan)
    if answers.size == 0:
        return result
    theta = np.nan_to_num(fit.competence)
    kernel = ordinal_kernel(fit.width, n_labels)
    own = (1.0 - theta[raters])[:, None] * fit.spam[raters, answers][:, None] + theta[
        raters, None
    ] * kernel[:, answers].T  # P(y | t) per answer and true point
    log_own = np.log(own)
    log_m = np.tile(np.log(np.maximum(fit.priors, 1e-300)), (n_units, 1))
    for t in range(n_labels):
        log_m[:, t] += np.bincount(units, weights=log_own[:, t], minlength=n_units)
    others = log_m[units] - log_own  # the unit's log posterior without this answer
    others = np.exp(others - others.max(axis=1, keepdims=True))
    others /= others.sum(axis=1, keepdims=True)
    attentive = (others * kernel[:, answers].T).sum(axis=1)
    counts = np.zeros((n_raters, n_labels))
    np.add.at(counts, (raters, answers), 1.0)
    given = counts.sum(axis=1) > 0
    shares = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    typical = np.array(
        [np.nanmedian(np.delete(fit.competence, w)) if n_raters > 1 else np.nan
         for w in range(n_raters)]
    )  # fmt: skip
    random = shares[raters, answers]
    mixed = typical[raters] * attentive + (1.0 - typical[raters]) * random
    per_answer = np.log(random) - np.log(mixed)
    result[given] = np.bincount(raters, weights=per_answer, minlength=n_raters)[given]
    return result
