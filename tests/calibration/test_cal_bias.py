"""Judge biases (calibration.bias, calibration.audits): hand-worked cases with their derivation,
and independent computations (scipy, scikit-learn)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata, spearmanr
from sklearn.linear_model import LogisticRegression

from calibration.audits import audit_judges
from calibration.bias import (
    average_ranks,
    average_ranks_per_row,
    fit_logistic,
    length_controlled_agreement,
    length_controlled_correlation,
    length_controlled_correlations,
    rank_correlation,
    rank_correlations_of_ranks,
    score_gap,
    share_for,
)
from calibration.bootstrap import counts_from_indices, unit_resample_indices
from schemas.audit_records import ResponseFacts
from schemas.protocols import get_protocol


def test_average_ranks_and_spearman_match_scipy():
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 6, 80).astype(float), rng.normal(size=80)
    assert average_ranks(x) == pytest.approx(rankdata(x))
    assert rank_correlation(x, y) == pytest.approx(spearmanr(x, y).statistic)
    assert np.isnan(rank_correlation(np.ones(5), y[:5]))


def test_ranks_and_spearman_per_resample_match_scipy_on_every_row():
    """The audit's bootstrap ranks a chunk of resamples in one sort: each row's ranks are
    scipy's rankdata of that row, and each row's correlation scipy's spearmanr (NaN for a
    constant row, as rank_correlation)."""
    rng = np.random.default_rng(3)
    values = rng.integers(1, 11, 40).astype(float)
    feature = np.round(rng.normal(200, 50, 40))
    feature[::7] = 150.0  # ties in the feature too
    drawn = next(unit_resample_indices(40, 25, seed=4))
    drawn[0] = 5  # one resample draws a single unit: both sides constant
    x, y = values[drawn], feature[drawn]
    x_ranks, y_ranks = average_ranks_per_row(x), average_ranks_per_row(y)
    for row in range(drawn.shape[0]):
        assert np.array_equal(x_ranks[row], rankdata(x[row]))
        assert np.array_equal(y_ranks[row], rankdata(y[row]))
    correlations = rank_correlations_of_ranks(x, y, x_ranks, y_ranks)
    assert np.isnan(correlations[0])
    expected = [spearmanr(x[row], y[row]).statistic for row in range(1, drawn.shape[0])]
    assert correlations[1:] == pytest.approx(expected, rel=1e-12)


@pytest.mark.filterwarnings("ignore:Setting penalty=None")
def test_logistic_fit_matches_scikit_learn():
    rng = np.random.default_rng(2)
    features = rng.normal(size=(300, 2))
    outcome = rng.random(300) < 1 / (1 + np.exp(-(0.3 + features @ [1.2, -0.7])))
    weights = rng.choice([0.5, 1.0], 300)
    ours = fit_logistic(features, outcome, weights)
    theirs = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)
    theirs.fit(features, outcome, sample_weight=weights)
    assert ours == pytest.approx([*theirs.intercept_, *theirs.coef_[0]], abs=1e-5)


def test_length_controlled_agreement_hand_worked():
    """Cells (h, z, pairs, judge says A) with shares that a logistic model fits exactly:
    β₀ = 0, β_H = ln 3, β_L = ln 2, since σ(ln 6) = 6/7 = 12/14, σ(ln 1.5) = 3/5,
    σ(ln 2/3) = 2/5 and σ(−ln 6) = 1/7 = 2/14; the MLE reproduces them.
    Raw agreement: (12 + 3 + (5 − 2) + (14 − 2)) / 38 = 30/38.
    Length-controlled (z = 0): a reference A is met with σ(ln 3) = 3/4, a reference B with
    1 − σ(−ln 3) = 3/4, so 0.75: the judge's agreement loses 30/38 − 3/4 without its length effect.
    """
    cells = [(1, 1, 14, 12), (1, -1, 5, 3), (-1, 1, 5, 2), (-1, -1, 14, 2)]
    h = np.concatenate([[hh] * n for hh, _, n, _ in cells])
    z = np.concatenate([[zz] * n for _, zz, n, _ in cells]).astype(float)
    says_a = np.concatenate([[1] * a + [0] * (n - a) for _, _, n, a in cells])
    result = length_controlled_agreement(says_a, h > 0, z, np.ones(h.size))
    assert result.agreement == pytest.approx(30 / 38)
    assert result.length_controlled == pytest.approx(0.75, abs=1e-6)
    assert result.length_coefficient == pytest.approx(np.log(2), abs=1e-6)


def test_length_controlled_correlation_removes_an_exact_length_term():
    """J = H + 2ℓ: least squares finds b_L = 2, and J − 2ℓ = H correlates perfectly."""
    rng = np.random.default_rng(3)
    human, ell = rng.normal(size=50), rng.normal(size=50)
    judge = human + 2 * ell
    result = length_controlled_correlation(judge, human, ell)
    assert result.length_coefficient == pytest.approx(2)
    assert result.length_controlled == pytest.approx(1)
    assert result.agreement == pytest.approx(np.corrcoef(judge, human)[0, 1])


def _per_resample(judge, human, ell, n_boot, seed):
    """The loop the vectorised statistic replaces: a fit on each resample's drawn units."""
    values, counts = [], []
    for chunk in unit_resample_indices(judge.size, n_boot, seed):
        counts.append(counts_from_indices(chunk, judge.size))
        values += [
            length_controlled_correlation(judge[d], human[d], ell[d]).length_controlled
            for d in chunk
        ]
    return np.array(values), np.vstack(counts)


@pytest.mark.parametrize(
    "case", ["continuous", "few judge scores", "one length", "length tracks human"]
)
def test_length_controlled_correlations_equal_a_fit_per_resample(case):
    """The moments of all resamples at once give each resample's own least-squares fit, NaN
    where the fit on the drawn units gives NaN (a constant judge or human score)."""
    rng = np.random.default_rng(7)
    n = 12 if case == "few judge scores" else 40
    human = rng.normal(size=n)
    ell = rng.normal(size=n)
    judge = human + 0.5 * ell + rng.normal(scale=0.7, size=n)
    if case == "few judge scores":  # some resamples draw only 1s
        judge = np.where(np.arange(n) == 0, 2.0, 1.0)
    if case == "one length":
        ell = np.zeros(n)
    if case == "length tracks human":
        ell = human + rng.normal(scale=0.3, size=n)
    expected, counts = _per_resample(judge, human, ell, 300, 5)
    got = length_controlled_correlations(judge, human, ell, counts)
    assert got.shape == expected.shape
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    assert got[~np.isnan(got)] == pytest.approx(expected[~np.isnan(expected)], abs=1e-9)
    if case == "few judge scores":
        assert 0 < np.isnan(got).sum() < got.size  # both kinds of resample occur


def test_length_controlled_correlations_are_undefined_where_the_fit_is_not_unique():
    """ℓ a linear function of H on every resample: no unique b_L, so no value (the per-resample
    least squares would return one of many equally good fits)."""
    rng = np.random.default_rng(2)
    human = rng.normal(size=30)
    judge = human + rng.normal(size=30)
    _, counts = _per_resample(judge, human, 2 * human + 1, 50, 0)
    assert np.isnan(length_controlled_correlations(judge, human, 2 * human + 1, counts)).all()


def test_share_and_gap():
    assert share_for(np.array([0, 1, 2]), np.array([False, False, False])).tolist() == [0, 1, 0.5]
    # own family 9 and 7 (mean 8), others 4 and 6 (mean 5): gap 3
    assert score_gap(np.array([9, 4, 7, 6]), np.array([True, False, True, False])) == 3
    assert np.isnan(score_gap(np.array([1.0, 2.0]), np.array([True, True])))


def _pairwise_case():
    """Responses: a1 (m1, 100 chars, list), b1 (m2, 10), a2 (m2, 10), b2 (m1, 100, list),
    a3 (m2, 50), b3 (m1, 60).

    p:a1|b1  judge A (AB) and A (BA): prefers the longer / the list / m1 → 1; humans A, B → ½
    p:a2|b2  judge A: prefers the shorter → 0;                              humans B, B → 1
    p:a3|b3  lengths 10 apart (≤ 30): no length check; judge tie → ½ for m1; humans B, B → 1
    Longer: judge (1 + 0)/2 = ½, humans (½ + 1)/2 = ¾, judge − humans = −¼; lists the same.
    Own family m1 (pairs 1–3 all mixed): judge (1 + 0 + ½)/3 = ½, humans (½ + 1 + 1)/3 = 5/6.
    """
    facts = [
        ResponseFacts("a1", "m1", 100, True), ResponseFacts("b1", "m2", 10, False),
        ResponseFacts("a2", "m2", 10, False), ResponseFacts("b2", "m1", 100, True),
        ResponseFacts("a3", "m2", 50, False), ResponseFacts("b3", "m1", 60, False),
    ]  # fmt: skip
    humans = {"p:a1|b1": "AB", "p:a2|b2": "BB", "p:a3|b3": "BB"}
    rows = [
        (pair, f"annotator:{k}", "human", label, "AB")
        for pair, labels in humans.items()
        for k, label in zip("xy", labels, strict=True)
    ]
    rows += [
        ("p:a1|b1", "J", "model", "A", "AB"), ("p:a1|b1", "J", "model", "A", "BA"),
        ("p:a2|b2", "J", "model", "A", "AB"), ("p:a3|b3", "J", "model", "tie", "AB"),
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["unit", "rater", "kind", "value", "shown_order"])
    return frame, facts


def test_pairwise_audit_hand_worked():
    frame, facts = _pairwise_case()
    audit = audit_judges(frame, get_protocol("pairwise"), facts, [], families={"J": "f", "m1": "f"},
                         bootstrap=0)  # fmt: skip
    (judge,) = audit.biases
    assert (judge.length.n, judge.length.judge, judge.length.humans) == (2, 0.5, 0.75)
    assert judge.length.difference == pytest.approx(-0.25)
    assert (judge.lists.judge, judge.lists.humans) == (0.5, 0.75)
    assert judge.self_preference.n == 3
    assert judge.self_preference.judge == pytest.approx(0.5)
    assert judge.self_preference.humans == pytest.approx(5 / 6)


def test_pairwise_audit_intervals_are_paired_and_bracket_the_estimate():
    frame, facts = _pairwise_case()
    audit = audit_judges(frame, get_protocol("pairwise"), facts, [], bootstrap=200, seed=1)
    length = audit.biases[0].length
    # two pairs: the judge's share is 1 or 0, the humans' ½ or 1, so Δ per resample ∈ {½, −1, −¼}
    assert -1 <= length.difference_ci[0] <= -0.25 <= length.difference_ci[1] <= 0.5
    assert audit.biases[0].self_preference is None  # no family mapping given


def test_pointwise_audit_hand_worked_self_preference():
    """Judge J of family f scores m1's responses (family f) 9 and 9, m2's 5 and 6; the humans
    give 7, 8 and 5, 6. Judge gap 9 − 5.5 = 3.5, humans' gap 7.5 − 5.5 = 2: J adds 1.5."""
    scores = {"r:a": ("m1", 9, 7), "r:b": ("m1", 9, 8), "r:c": ("m2", 5, 5), "r:d": ("m2", 6, 6)}
    rows = [(u, "J", "model", j) for u, (_, j, _) in scores.items()]
    rows += [(u, "annotator:x", "human", h) for u, (_, _, h) in scores.items()]
    frame = pd.DataFrame(rows, columns=["unit", "rater", "kind", "value"])
    facts = [ResponseFacts(u[2:], m, 10 * (i + 1), False)
             for i, (u, (m, _, _)) in enumerate(scores.items())]  # fmt: skip
    audit = audit_judges(frame, get_protocol("alignmmbench"), facts, [],
                         families={"J": "f", "m1": "f"}, bootstrap=0)  # fmt: skip
    own = audit.biases[0].self_preference
    assert (own.judge, own.humans, own.difference) == (3.5, 2.0, 1.5)
    length = audit.biases[0].length  # lengths 10, 20, 30, 40
    assert length.judge == pytest.approx(spearmanr([9, 9, 5, 6], [10, 20, 30, 40]).statistic)
    assert length.humans == pytest.approx(spearmanr([7, 8, 5, 6], [10, 20, 30, 40]).statistic)


@pytest.mark.filterwarnings("ignore:Setting penalty=None")
def test_pairwise_length_controlled_agreement_matches_scikit_learn():
    """The audit's pipeline against an independent fit: one verdict per pair, one annotator, a
    judge that leans to the longer response; scikit-learn's unpenalised logistic regression on
    (h, tanh(ΔL / sd ΔL)) over the decisive pairs, then the agreement at ΔL = 0."""
    rng = np.random.default_rng(5)
    n = 80
    lengths = rng.integers(20, 400, size=(n, 2))
    human_a = rng.random(n) < 0.5
    longer_a = lengths[:, 0] > lengths[:, 1]
    judge = np.where(rng.random(n) < 0.7, human_a, longer_a)
    ties = rng.random(n) < 0.1  # some judge ties: not decisive, left out of the fit
    facts, rows = [], []
    for i in range(n):
        a, b = f"a{i}", f"b{i}"
        facts += [ResponseFacts(a, "m", int(lengths[i, 0]), False),
                  ResponseFacts(b, "m", int(lengths[i, 1]), False)]  # fmt: skip
        unit = f"p:{a}|{b}"
        rows.append((unit, "annotator:x", "human", "A" if human_a[i] else "B"))
        rows.append((unit, "J", "model", "tie" if ties[i] else ("A" if judge[i] else "B")))
    frame = pd.DataFrame(rows, columns=["unit", "rater", "kind", "value"])
    audit = audit_judges(frame, get_protocol("pairwise"), facts, [], bootstrap=0)
    keep = ~ties
    delta = (lengths[:, 0] - lengths[:, 1])[keep].astype(float)
    z = np.tanh(delta / delta.std(ddof=1))
    h = np.where(human_a[keep], 1.0, -1.0)
    model = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)
    model.fit(np.column_stack([h, z]), judge[keep])
    p_a = 1 / (1 + np.exp(-(model.intercept_[0] + model.coef_[0][0] * h)))
    expected = np.where(h > 0, p_a, 1 - p_a).mean()
    result = audit.biases[0].length_controlled
    assert result.n == keep.sum()
    assert result.agreement == pytest.approx((judge[keep] == human_a[keep]).mean())
    assert result.length_controlled == pytest.approx(expected, abs=1e-6)
    assert result.length_coefficient == pytest.approx(model.coef_[0][1], rel=1e-5)  # 1e-6 ridge
    assert result.length_coefficient > 0  # the judge does lean to the longer response


def test_pointwise_audit_rank_correlation_intervals_match_scipy_per_resample():
    """The length and list rows' intervals: Spearman's rho (scipy) of the judge's and of the
    humans' scores with the feature on each resample's drawn units (the seed's draws, the same
    for both sides), the 2.5th and 97.5th percentiles of the defined ones (numpy)."""
    rng = np.random.default_rng(5)
    n = 30
    units = [f"r:u{k:02d}" for k in range(n)]  # sorted as the audit orders its units
    judge, human = rng.integers(1, 11, n), rng.integers(1, 11, n)
    lengths, lists = rng.integers(50, 500, n), rng.random(n) < 0.3
    rows = [(u, "J", "model", float(j)) for u, j in zip(units, judge, strict=True)]
    rows += [(u, "annotator:x", "human", float(h)) for u, h in zip(units, human, strict=True)]
    frame = pd.DataFrame(rows, columns=["unit", "rater", "kind", "value"])
    facts = [ResponseFacts(u[2:], "m", int(length), bool(listed))
             for u, length, listed in zip(units, lengths, lists, strict=True)]  # fmt: skip
    boot, seed = 200, 3
    audit = audit_judges(frame, get_protocol("alignmmbench"), facts, [], bootstrap=boot, seed=seed)
    drawn = np.concatenate(list(unit_resample_indices(n, boot, seed)))

    def rho(values: np.ndarray, feature: np.ndarray) -> float:
        if np.ptp(values) == 0 or np.ptp(feature) == 0:
            return float("nan")
        return float(spearmanr(values, feature).statistic)

    for beside, feature in ((audit.biases[0].length, lengths), (audit.biases[0].lists, lists)):
        feature = feature.astype(float)
        j = np.array([rho(judge[d].astype(float), feature[d]) for d in drawn])
        h = np.array([rho(human[d].astype(float), feature[d]) for d in drawn])
        for interval, samples in ((beside.judge_ci, j), (beside.humans_ci, h),
                                  (beside.difference_ci, j - h)):  # fmt: skip
            defined = samples[np.isfinite(samples)]
            assert interval == pytest.approx(tuple(np.percentile(defined, [2.5, 97.5])), rel=1e-9)
        assert beside.judge == pytest.approx(spearmanr(judge, feature).statistic)
