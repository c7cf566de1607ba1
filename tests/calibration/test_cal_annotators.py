"""Reliability without gold: Dawid–Skene and MACE (against crowd-kit and by hand), the
Annotators table and its flags, and the robust references (``--reference``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from annotate_app.cli.main import app
from calibration import CalibrationInputError, CalibrationOptions, calibrate
from calibration.annotators import annotator_reliability, longer_responses
from calibration.dawid_skene import dawid_skene
from calibration.mace import mace, ordinal_kernel, ordinal_mace, random_answer_evidence
from calibration.reference import human_reference
from calibration.scale import Scale
from calibration.units import human_rater_names
from schemas.protocols import PAIRWISE, get_protocol

nan = np.nan
runner = CliRunner()


def _crowd(matrix: np.ndarray) -> pd.DataFrame:
    """crowd-kit's long form (task, worker, label), workers and labels first met in sorted order
    (crowd-kit's MACE indexes sorted groups with first-met codes)."""
    raters, units = np.nonzero(~np.isnan(matrix))
    order = np.lexsort((raters, units))
    labels = matrix[raters, units].astype(int)
    return pd.DataFrame({"task": units[order], "worker": raters[order], "label": labels[order]})


def _simulated(seed: int, n_raters: int, n_units: int, k: int, accuracy, p_answer=1.0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n_units)
    matrix = np.full((n_raters, n_units), nan)
    for w in range(n_raters):
        answers = np.where(rng.random(n_units) < accuracy[w], truth, rng.integers(0, k, n_units))
        matrix[w] = np.where(rng.random(n_units) < p_answer, answers, nan)
    matrix[:, :k] = np.arange(k)[None, :]  # every rater meets every label first in order
    return truth, matrix


def test_dawid_skene_matches_crowdkit_on_the_same_input():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    _, matrix = _simulated(3, 6, 80, 3, [0.9, 0.8, 0.7, 0.6, 0.34, 0.85], p_answer=0.7)
    theirs = crowdkit.DawidSkene(n_iter=30, tol=-np.inf).fit(_crowd(matrix))
    ours = dawid_skene(matrix, 3, max_iter=30, tol=None)  # same start (soft majority), 30 steps
    posteriors = theirs.probas_.sort_index().reindex(columns=range(3)).to_numpy()
    np.testing.assert_allclose(ours.posteriors, posteriors, atol=1e-6)
    np.testing.assert_allclose(ours.priors, theirs.priors_.sort_index().to_numpy(), atol=1e-6)
    for (worker, answered), row in theirs.errors_.iterrows():  # crowd-kit: [worker, k][true]
        for true in range(3):
            assert ours.confusion[worker, true, answered] == pytest.approx(row[true], abs=1e-6)
    assert (ours.labels == theirs.labels_.sort_index().to_numpy()).all()


def test_dawid_skene_by_hand():
    """Raters 0 and 1 answer A, B on two units, rater 2 answers B, B.

    Soft majority: T = (2/3, 1/3) and (0, 1), π = (1/3, 2/3). M-step: raters 0 and 1 have
    e[A] = (1, 0) and e[B] = (1/4, 3/4) (counts 1/3 and 1 for answers A and B on true B); rater
    2 gave only B, e[A] = e[B] = (0, 1). E-step, unit 0: π_A·1·1·1 = 1/3 against
    π_B·(1/4)²·1 = 1/24, so P(A) = 8/9; unit 1: P(B) = 1 (up to the 1e-10 floor).
    """
    labels = np.array([[0, 1], [0, 1], [1, 1]], dtype=float)
    fit = dawid_skene(labels, 2, max_iter=1, tol=None)
    assert fit.posteriors[0, 0] == pytest.approx(8 / 9, abs=1e-8)
    assert fit.posteriors[1, 1] == pytest.approx(1.0, abs=1e-8)
    np.testing.assert_allclose(fit.priors, [4 / 9, 5 / 9], atol=1e-8)
    # rater 2 answers B whatever the truth: expected accuracy = π_B, exactly chance
    assert fit.competence[2] == pytest.approx(5 / 9, abs=1e-8)
    assert fit.chance[2] == pytest.approx(5 / 9, abs=1e-8)
    assert fit.iterations == 1 and not fit.converged
    assert dawid_skene(labels, 2).converged


def test_mace_matches_crowdkit_em_from_the_same_start():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    from scipy import stats

    _, matrix = _simulated(5, 5, 60, 5, [0.9, 0.8, 0.7, 0.2, 0.85])
    theirs = crowdkit.MACE(n_restarts=1, n_iter=20, method="em", random_state=0)
    theirs.fit(_crowd(matrix))
    # crowd-kit's start: uniform(1, 1.5) draws normalised, both with random_state 0
    spam = stats.uniform(1, 1.5).rvs(size=(5, 2), random_state=0)
    spam /= spam.sum(axis=1, keepdims=True)
    shares = stats.uniform(1, 1.5).rvs(size=(5, 5), random_state=0)
    shares /= shares.sum(axis=1, keepdims=True)
    ours = mace(matrix, 5, max_iter=20, tol=None, init=(spam[:, 1], shares))
    np.testing.assert_allclose(ours.competence, theirs.spamming_[:, 1], atol=1e-6)
    np.testing.assert_allclose(ours.spam, theirs.thetas_, atol=1e-6)
    posteriors = theirs.probas_.sort_index().reindex(columns=range(5)).to_numpy()
    np.testing.assert_allclose(ours.posteriors, posteriors, atol=1e-6)


def test_mace_finds_the_spammer_and_is_deterministic():
    truth, matrix = _simulated(7, 5, 200, 5, [0.9, 0.85, 0.8, 0.0, 0.9])
    matrix[3] = 4.0  # rater 3 always answers the top point
    first, again = mace(matrix, 5), mace(matrix, 5)
    np.testing.assert_array_equal(first.competence, again.competence)
    assert first.converged
    assert first.competence[3] < 0.05 < 0.6 < first.competence[[0, 1, 2, 4]].min()
    assert (first.labels == truth).mean() > 0.95


def _ordinal_pool(seed: int = 3, n_units: int = 200):
    """Truth on 0..4; six attentive raters answer it plus rounded N(0, 0.8) noise (clipped), one
    answers uniformly at random, one always 3."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 5, n_units)
    attentive = [np.clip(np.rint(truth + rng.normal(0, 0.8, n_units)), 0, 4) for _ in range(6)]
    matrix = np.vstack([*attentive, rng.integers(0, 5, n_units), np.full(n_units, 3)])
    matrix = matrix.astype(float)
    matrix[rng.random(matrix.shape) < 0.3] = nan  # not everyone answers everything
    return truth, matrix


def _brute_force(matrix, fit):
    """Log-likelihood per answer and each rater's random-answer evidence, unit by unit in plain
    loops from the model's definition (an independent computation of what the fit reports)."""
    k = fit.priors.size
    kernel = ordinal_kernel(fit.width, k)

    def p_answer(w, y, t):
        return fit.competence[w] * kernel[t, y] + (1 - fit.competence[w]) * fit.spam[w, y]

    total, answers = 0.0, 0
    evidence = np.zeros(matrix.shape[0])
    for u in range(matrix.shape[1]):
        who = [w for w in range(matrix.shape[0]) if not np.isnan(matrix[w, u])]
        joint = [
            fit.priors[t] * np.prod([p_answer(w, int(matrix[w, u]), t) for w in who])
            for t in range(k)
        ]
        total += np.log(sum(joint))
        answers += len(who)
        for w in who:
            y = int(matrix[w, u])
            rest = [joint[t] / p_answer(w, y, t) for t in range(k)]
            near = sum(rest[t] * kernel[t, y] for t in range(k)) / sum(rest)
            mine = matrix[w][~np.isnan(matrix[w])]
            share = np.mean(mine == y)
            typical = np.median(np.delete(fit.competence, w))
            evidence[w] += np.log(share / (typical * near + (1 - typical) * share))
    return total / answers, evidence


def test_ordinal_mace_matches_a_brute_force_computation_and_finds_both_careless_raters():
    truth, matrix = _ordinal_pool()
    fit = ordinal_mace(matrix, 5)
    assert fit.converged
    np.testing.assert_array_equal(fit.competence, ordinal_mace(matrix, 5).competence)
    log_likelihood, evidence = _brute_force(matrix, fit)
    assert fit.log_likelihood == pytest.approx(log_likelihood, abs=1e-9)
    np.testing.assert_allclose(random_answer_evidence(matrix, fit), evidence, atol=1e-9)
    # the attentive raters' noise (σ 0.8, rounded) is found, and told apart from answering at
    # random, which exact-point MACE cannot: an attentive answer is off the truth half the time
    assert 0.6 < fit.width < 1.2
    assert fit.competence[:6].min() > 0.7 > 0.2 > fit.competence[6:].max()
    assert evidence[:6].max() < 0 < 3 < evidence[6:].min()
    assert mace(matrix, 5).competence[:6].min() < 0.6
    plain = np.rint(np.nanmean(matrix, axis=0))  # bent by the two careless raters
    assert np.abs(fit.labels - truth).mean() < np.abs(plain - truth).mean()


def test_the_annotators_table_flags_random_and_constant_scores_not_noisy_ones():
    _, matrix = _ordinal_pool()
    table = annotator_reliability(matrix + 1, list("abcdefrc"), scale=Scale(1, 5, 1.0), bootstrap=0)
    assert table.model == "ordinal-mace"
    fit = ordinal_mace(matrix, 5)
    competence = [
        next((f.reason for f in row.flags if f.kind == "low_competence"), None)
        for row in table.rows
    ]
    assert competence[:6] == [None] * 6  # noisy but attentive: never "at random"
    for row, reason in zip(table.rows[6:], competence[6:], strict=True):
        assert row.random_evidence >= 3.0 and reason is not None
        assert reason.startswith(f"their {row.n} answers are ")
        assert "times likelier as answers at random than as the other annotators answer" in reason
        ratio = reason.split(" answers are ")[1].split(" times")[0]
        assert ratio == "over a million" or ratio.replace(",", "").isdigit(), ratio
    np.testing.assert_allclose(
        [row.random_evidence for row in table.rows], random_answer_evidence(matrix, fit)
    )


def test_ordinal_mace_is_an_em_fixed_point():
    """EM never lowers the likelihood: the fit beats its own neighbours in θ and σ."""
    _, matrix = _ordinal_pool(seed=5, n_units=120)
    fit = ordinal_mace(matrix, 5, tol=None, max_iter=300)
    for width in (fit.width * 0.8, fit.width * 1.25):
        moved = ordinal_mace(matrix, 5, width=width, tol=None, max_iter=300)
        assert moved.log_likelihood <= fit.log_likelihood + 1e-9


def test_ordinal_mace_with_an_exact_kernel_is_mace_on_a_uniform_truth():
    """σ → 0 is MACE (compared with crowd-kit above) with fitted priors: on units whose true
    points are equally common, both give the same θ."""
    _, matrix = _simulated(9, 5, 400, 5, [0.9, 0.8, 0.7, 0.2, 0.85])
    ordinal = ordinal_mace(matrix, 5, width=0.05)
    np.testing.assert_allclose(ordinal.competence, mace(matrix, 5).competence, atol=0.03)
    assert np.abs(ordinal.priors - 0.2).max() < 0.05


def _pairwise_campaign(seed=11, n_units=120):
    """Truth A or B; two careful annotators (95% right) and three who always answer A."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_units).astype(float)
    careful = [np.where(rng.random(n_units) < 0.95, truth, 1 - truth) for _ in range(2)]
    return truth, np.vstack([*careful, np.zeros((3, n_units))])


def test_dawid_skene_reference_is_not_bent_by_spammers():
    truth, matrix = _pairwise_campaign()
    plain = human_reference(matrix, "majority", pairwise=True)
    robust = human_reference(matrix, "dawid-skene", pairwise=True)
    assert (plain.values == truth).mean() < 0.6  # three "A" always win the majority
    assert (robust.values == truth).mean() > 0.9
    np.testing.assert_array_equal(plain.weights, np.ones(5))
    assert robust.weights[2:].max() < 0.6 < robust.weights[:2].min()


def test_mace_reference_of_scores_is_closer_to_the_truth_than_the_mean():
    rng = np.random.default_rng(2)
    truth = rng.integers(1, 6, 150).astype(float)
    careful = [np.where(rng.random(150) < 0.85, truth, rng.integers(1, 6, 150)) for _ in range(3)]
    careless = [np.full(150, 5.0), rng.integers(1, 6, 150).astype(float)]
    matrix = np.vstack([*careful, *careless])
    scale = Scale(1, 5, 1.0)
    mean = human_reference(matrix, "mean", scale=scale).values
    robust = human_reference(matrix, "mace", scale=scale)
    assert np.abs(robust.values - truth).mean() < 0.5 * np.abs(mean - truth).mean()
    assert robust.weights[3] < 0.1


def test_reference_rules_that_do_not_fit_the_protocol_are_named():
    with pytest.raises(CalibrationInputError, match="dawid-skene is for preferences"):
        human_reference(np.ones((2, 3)), "dawid-skene", scale=Scale(1, 5, 1.0))
    with pytest.raises(CalibrationInputError, match="needs a scale with points"):
        human_reference(np.ones((2, 3)), "mace", scale=Scale(0, 1))
    with pytest.raises(CalibrationInputError, match="needs scores"):
        human_reference(np.zeros((2, 3)), "median", pairwise=True)


def test_annotator_table_flags_a_position_spammer_in_words():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 60).astype(float)
    honest = [np.where(rng.random(60) < 0.9, truth, 1 - truth) for _ in range(4)]
    swapped = rng.random((5, 60)) < 0.5
    spammer = np.where(swapped[4], 1.0, 0.0)  # always the response shown first
    table = annotator_reliability(
        np.vstack([*honest, spammer]), list("abcds"), scale=None, swapped=swapped, bootstrap=200
    )
    rows = {row.annotator: row for row in table.rows}
    assert table.model == "dawid-skene" and table.alpha_level == "nominal"
    assert all(not rows[name].flags for name in "abcd")
    kinds = {flag.kind for flag in rows["s"].flags}
    assert kinds == {"low_agreement", "alpha_gain", "low_competence", "position"}
    position = next(f.reason for f in rows["s"].flags if f.kind == "position")
    assert position.startswith("chose the response shown first on 100% of 60 pairs")
    assert rows["s"].position is not None and rows["s"].position.share_first.low > 0.9
    assert rows["s"].alpha_without > table.alpha + 0.1
    assert rows["a"].accuracy is not None and rows["a"].mae is None


def test_careless_annotators_bend_neither_the_position_baseline_nor_the_consensus():
    # 24 pairs shown unswapped. Three honest raters answer alike: "A" on 8 (i % 10 in 0, 3, 6),
    # "B" on 16; two careless raters answer "A" on all 24. The careless are flagged
    # straight-lining (24 in a row; the others' consensus repeats itself at most 3 times) and
    # low competence (Dawid–Skene: always "A" scores what chance does).
    # Position: counting everyone, an honest rater's others chose "A" on (2·8/24 + 2)/4 = 0.67
    # of the pairs, 0.33 from their own 8/24 and outside its Wilson interval (0.18–0.53): they
    # would be flagged. Without the flagged, the baseline is the honest raters' 8/24.
    # Consensus: in the first pass an honest rater's others on a "B" pair are B, B, A, A, no
    # majority, so a tie: agreement 8/24. The second pass leaves out the flagged: agreement 1.
    honest = np.array([0.0 if i % 10 in (0, 3, 6) else 1.0 for i in range(24)])
    matrix = np.vstack([honest] * 3 + [np.zeros(24)] * 2)
    names = ["h1", "h2", "h3", "c1", "c2"]
    table = annotator_reliability(matrix, names, scale=None, bootstrap=0)
    rows = {row.annotator: row for row in table.rows}
    for name in ("c1", "c2"):
        kinds = {flag.kind for flag in rows[name].flags}
        assert {"straight_lining", "low_competence", "position"} <= kinds
        position = rows[name].position
        assert position is not None and position.others_share == pytest.approx(8 / 24)
        assert (position.n, position.share_first.value) == (24, 1.0)
        accuracy = rows[name].accuracy
        assert accuracy is not None and accuracy.value == pytest.approx(8 / 24)
        assert not rows[name].excluded  # screened from the consensus, not from the reference
    for name in ("h1", "h2", "h3"):
        position = rows[name].position
        assert position is not None and position.n == 24
        assert position.share_first.value == pytest.approx(8 / 24)
        assert position.others_share == pytest.approx(8 / 24)
        accuracy = rows[name].accuracy
        assert rows[name].loo_n == 24 and accuracy is not None and accuracy.value == 1.0
        assert not rows[name].flags
    reason = next(f.reason for f in rows["c1"].flags if f.kind == "position")
    assert reason == (
        "chose the response shown first on 100% of 24 pairs (interval 86%–100%), while the "
        "others chose that same response on 33% of the same pairs (others flagged low "
        "competence or straight-lining not counted)"
    )


def _length_campaign(n_biased: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """30 pairs shown unswapped; the longer response is A on even pairs, B on odd ones. The
    better response is the longer one except on pairs 0–5 (S: three with A longer, three with
    B). Six honest raters answer the better response except on three pairs each, where they
    choose the other one: h_k on S[k] and on pairs 6 + 4k and 7 + 4k (better = longer there),
    so each chooses the longer response on 24 − 2 + 1 = 23 of 30 pairs, and every pair is
    answered against the better response by at most one of them. ``n_biased`` raters choose
    the longer response on every pair."""
    longer = np.array([0.0 if i % 2 == 0 else 1.0 for i in range(30)])
    better = np.where(np.arange(30) < 6, 1 - longer, longer)
    honest = []
    for k in range(6):
        answers = better.copy()
        for i in (k, 6 + 4 * k, 7 + 4 * k):
            answers[i] = 1 - answers[i]
        honest.append(answers)
    names = [f"h{k}" for k in range(6)] + [f"L{j}" for j in range(n_biased)]
    return np.vstack(honest + [longer] * n_biased), longer, names


def test_a_length_biased_annotator_is_flagged_length_in_words():
    # One rater L0 always chooses the longer response. The others' majority on every pair is
    # the better response (five or six of six honest raters), so L0 agrees with it on 24 of 30
    # pairs (0.80) and an honest rater on 27 (0.90): within L0's interval. Dawid–Skene sees L0
    # right on 12 of the 15 pairs where A is better and 12 of 15 where B is (0.80, chance 0.50);
    # they chose the response shown first on 15 of 30 pairs, as the others did; their longest
    # run is 1. The former rules flag nobody. With the lengths: L0 chose the longer response on
    # 30 of 30 pairs, Wilson interval 0.886–1; the others (the six honest raters) on
    # 6 · 23 / (6 · 30) = 23/30 = 0.77 of the same pairs: 0.23 above, below the interval.
    matrix, longer, names = _length_campaign(1)
    before = annotator_reliability(matrix, names, scale=None, bootstrap=1000)
    assert not any(row.flags for row in before.rows)
    assert all(row.length is None for row in before.rows)
    table = annotator_reliability(matrix, names, scale=None, longer=longer, bootstrap=1000)
    rows = {row.annotator: row for row in table.rows}
    biased = rows["L0"]
    assert [flag.kind for flag in biased.flags] == ["length"]
    assert biased.length is not None and biased.length.n == 30
    assert biased.length.share_longer.value == 1.0
    assert biased.length.share_longer.low == pytest.approx(0.8865, abs=1e-4)
    assert biased.length.others_share == pytest.approx(23 / 30)
    assert biased.flags[0].reason == (
        "chose the longer response on 100% of 30 pairs of unequal lengths (interval 89%–100%), "
        "while the others chose it on 77% of the same pairs (others flagged low competence or "
        "straight-lining not counted)"
    )
    accuracy = biased.accuracy
    assert accuracy is not None and accuracy.value == pytest.approx(24 / 30)
    for k in range(6):
        row = rows[f"h{k}"]
        assert not row.flags
        assert row.length is not None and row.length.share_longer.value == pytest.approx(23 / 30)
        # the second pass leaves L0 out: the other five honest raters, 5 · 23 / (5 · 30)
        assert row.length.others_share == pytest.approx(23 / 30)
        assert row.accuracy is not None and row.accuracy.value == pytest.approx(27 / 30)


def test_length_biased_annotators_do_not_set_each_others_baseline():
    # Two raters always choose the longer response. In the first pass L0's others are the six
    # honest raters and L1: on each pair (honest choosing the longer + 1) / 7, over the pairs
    # (6 · 23 + 30) / (7 · 30) = 0.80; both are flagged (1.00 is 0.20 above, the interval's
    # bottom 0.886). The second pass counts only the others the first did not flag: L0's
    # others are the six honest raters again, 23/30, and the flag's reason says 77%.
    matrix, longer, names = _length_campaign(2)
    table = annotator_reliability(matrix, names, scale=None, longer=longer, bootstrap=1000)
    rows = {row.annotator: row for row in table.rows}
    for name in ("L0", "L1"):
        length = rows[name].length
        assert "length" in {flag.kind for flag in rows[name].flags}
        assert length is not None and length.others_share == pytest.approx(23 / 30)
    for k in range(6):
        row = rows[f"h{k}"]
        assert "length" not in {flag.kind for flag in row.flags}
        assert row.length is not None and row.length.others_share == pytest.approx(23 / 30)


def test_longer_responses_reads_pairs_and_lengths():
    lengths = {"a": 10, "b": 5, "c": 3, "d": 7, "e": 4, "f": 4, "h": 9}
    units = ["p:a|b", "p:c|d", "p:e|f", "r:a", "p:g|h", "u7"]
    np.testing.assert_array_equal(
        longer_responses(units, lengths), [0.0, 1.0, np.nan, np.nan, np.nan, np.nan]
    )
    with pytest.raises(ValueError, match="p:<a>"):
        longer_responses(["p:a"], lengths)


def test_annotator_table_runs_and_straight_lining_by_hand():
    # rater s answers 3 on twelve units in a row (their order), then 1; the others vary
    others = np.array(
        [[1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1], [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1]]
    )
    matrix = np.vstack([others, [3] * 12 + [1]]).astype(float)
    table = annotator_reliability(matrix, ["a", "b", "s"], scale=Scale(1, 3, 1.0), bootstrap=0)
    s = table.rows[2]
    assert (s.run.length, s.run.value, s.run.n, s.run.others_length) == (12, 3.0, 13, 1)
    flag = next(f for f in s.flags if f.kind == "straight_lining")
    assert flag.reason.startswith("longest run of the same answer: 12 of 13 in a row gave 3")
    assert s.mae is not None and s.mae.value == pytest.approx(
        np.mean(np.abs(matrix[2] - others[0]))
    )
    assert np.isnan(s.mae.low)  # no bootstrap, no interval, and no agreement flag on a point
    assert table.model == "ordinal-mace" and table.rows[0].competence > s.competence


def test_low_agreement_on_scores_needs_a_margin_above_the_others_median():
    # 20 units on 1–5. The consensus is k1, k2, k3 (all 3 everywhere); the others are left out
    # of it, so each is scored against 3. e1..e5 answer 4 on 19 units and 3 on one: MAE 0.95.
    # x answers 4 everywhere: MAE 1.00 on every resample, interval 1.00–1.00, above the
    # others' median 0.95 but by 0.05, within the margin (0.025 of the range 4 = 0.10 points):
    # no flag. y answers 5 everywhere: MAE 2.00, 1.05 above 0.95: flagged.
    near = np.full(20, 4.0)
    matrix = np.vstack(
        [np.full(20, 3.0)] * 3
        + [np.where(np.arange(20) == e, 3.0, near) for e in range(5)]
        + [near, np.full(20, 5.0)]
    )
    names = ["k1", "k2", "k3", "e1", "e2", "e3", "e4", "e5", "x", "y"]
    table = annotator_reliability(
        matrix, names, scale=Scale(1, 5, 1.0), bootstrap=200, excluded=names[3:]
    )
    rows = {row.annotator: row for row in table.rows}
    x, y = rows["x"].mae, rows["y"].mae
    assert x is not None and (x.value, x.low, x.high) == (1.0, 1.0, 1.0)
    assert y is not None and (y.value, y.low) == (2.0, 2.0)
    for e in range(1, 6):
        mae = rows[f"e{e}"].mae
        assert mae is not None and mae.value == pytest.approx(0.95)
    assert "low_agreement" not in {flag.kind for flag in rows["x"].flags}
    reason = next(f.reason for f in rows["y"].flags if f.kind == "low_agreement")
    assert reason == (
        "is 2.00 points from the others' consensus on average over 20 units (interval "
        "2.00–2.00); the other annotators' median is 0.95 (the rule's margin: 0.10 points)"
    )


def _frame(matrix: np.ndarray, pairwise: bool) -> pd.DataFrame:
    labels = ("A", "B", "tie")
    rows = []
    for r, values in enumerate(matrix):
        for u, value in enumerate(values):
            rows.append(
                {
                    "unit": f"u{u:03d}",
                    "rater": f"annotator:h{r}",
                    "kind": "human",
                    "value": labels[int(value)] if pairwise else value,
                }
            )
    return pd.DataFrame(rows)


def test_calibrate_records_the_reference_its_exclusions_and_weights():
    _, matrix = _pairwise_campaign()
    frame = _frame(matrix, pairwise=True)
    options = CalibrationOptions(
        PAIRWISE, consensus="dawid-skene", bootstrap=0, exclude_annotators=("annotator:h4",)
    )
    result = calibrate(frame, options).result
    assert result.reference.consensus == "dawid-skene"
    assert result.reference.excluded_annotators == ["annotator:h4"]
    assert set(result.reference.weights) == {f"annotator:h{r}" for r in range(4)}
    assert result.human.n_annotators == 4
    assert result.annotators is not None
    rows = {row.annotator: row for row in result.annotators.rows}
    assert rows["annotator:h4"].excluded and rows["annotator:h4"].weight is None
    assert rows["annotator:h0"].weight == result.reference.weights["annotator:h0"]
    with pytest.raises(CalibrationInputError, match="annotator:nobody"):
        calibrate(frame, CalibrationOptions(PAIRWISE, exclude_annotators=("annotator:nobody",)))


def test_cli_reference_and_exclusions_round_trip_into_the_json(tmp_path):
    _, matrix = _pairwise_campaign(n_units=40)
    labels = ("A", "B", "tie")
    records = [
        {
            "judge": f"annotator:h{r}",
            "judge_kind": "human",
            "protocol": "pairwise",
            "pair": [f"{u}/1", f"{u}/2"],
            "preference": labels[int(value)],
        }
        for r, values in enumerate(matrix)
        for u, value in enumerate(values)
    ]
    judgments = tmp_path / "j.jsonl"
    judgments.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    out = tmp_path / "out.json"
    result = runner.invoke(
        app,
        [
            "calibrate", "--protocol", "pairwise", "--judgments", str(judgments),
            "--bootstrap", "0", "--reference", "dawid-skene",
            "--exclude-annotator", "h3", "--json", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text("utf-8"))
    assert written["reference"]["consensus"] == "dawid-skene"
    assert written["options"]["consensus"] == "dawid-skene"
    assert written["reference"]["excluded_annotators"] == ["annotator:h3"]
    assert sorted(written["reference"]["weights"]) == [f"annotator:h{r}" for r in (0, 1, 2, 4)]
    assert [row["excluded"] for row in written["annotators"]["rows"]] == [
        False, False, False, True, False,
    ]  # fmt: skip
    clash = runner.invoke(
        app,
        ["calibrate", "--protocol", "pairwise", "--judgments", str(judgments),
         "--consensus", "majority", "--reference", "dawid-skene"],
    )  # fmt: skip
    assert clash.exit_code != 0 and "--reference" in clash.output


def test_a_continuous_scale_has_no_latent_model():
    protocol = get_protocol("score", scale_min=0, scale_max=1)
    matrix = np.array([[0.1, 0.5, 0.9], [0.2, 0.4, 0.8]])
    table = annotator_reliability(matrix, ["a", "b"], scale=Scale.of(protocol), bootstrap=0)
    assert table.model is None and np.isnan(table.rows[0].competence)
    assert table.rows[0].qwk is None and table.rows[0].mae is not None


def test_human_rater_names_map_account_names_to_the_frames_raters() -> None:
    """The one login → ``annotator:<login>`` mapping of the CLI and the pages."""
    raters = ["annotator:ann1", "annotator:both", "both"]
    frame = pd.DataFrame(
        {"rater": [*raters, "judge-x"], "kind": ["human"] * 3 + ["model"], "unit": "u"}
    )
    given = ["ann1", "annotator:ann1", "both", "judge-x", "nobody"]
    assert human_rater_names(frame, given) == (
        "annotator:ann1",
        "annotator:ann1",
        "both",  # a rater of that very name wins over the account name
        "judge-x",  # not a human rater: kept as given
        "nobody",  # unknown: kept, for calibration to name it
    )
