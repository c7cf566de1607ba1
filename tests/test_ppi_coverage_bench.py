"""bench/ppi_coverage.py wires the humans and the judge the right way round: a judge that gives
the humans' own mean is worth far more labels, one that gives noise is worth about none."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.ppi_coverage import HANNA, VARIANTS, measure


@pytest.fixture(scope="module")
def hanna() -> pd.DataFrame:
    frame = pd.read_csv(HANNA / "hanna_human_and_llm_scores_long.csv")
    human = frame[[f"Human {k} RE" for k in (1, 2, 3)]].to_numpy(float).mean(axis=1)
    noise = np.random.default_rng(0).integers(1, 6, size=len(frame)).astype(float)
    extra = pd.DataFrame({"Perfect RE 1": human, "Noise RE 1": noise}, index=frame.index)
    return pd.concat([frame, extra], axis=1)


def test_a_perfect_judge_is_worth_many_labels_and_noise_none(hanna: pd.DataFrame) -> None:
    found = measure(hanna, "RE", "Perfect", 200, draws=5, seed=1)
    assert found["estimates"] == 5 * 11 and found["skipped"] == 0
    assert set(found["variants"]) == set(VARIANTS)
    for variant in VARIANTS:
        perfect = found["variants"][variant]
        assert perfect["width_ratio"] < 0.5
        assert perfect["mean_effective_labels_per_model"] > 4 * found["mean_labelled_per_model"]
        assert perfect["coverage_ppi"] >= 0.9
    # with the finite-population variance a perfect judge's PPI++ error is (1 − κ) times the
    # humans-only one, and so is its interval: the two cover in the same draws
    for variant in ("finite_population", "product"):
        perfect = found["variants"][variant]
        assert perfect["coverage_ppi"] == perfect["coverage_humans_only"]
    noise = measure(hanna, "RE", "Noise", 200, draws=5, seed=1)
    for variant in VARIANTS:
        useless = noise["variants"][variant]
        assert 0.97 < useless["width_ratio"] <= 1.02
        assert useless["mean_effective_labels_per_model"] == pytest.approx(
            noise["mean_labelled_per_model"], rel=0.1
        )


def test_the_corrections_narrow_at_large_n_and_widen_at_small_n(hanna: pd.DataFrame) -> None:
    """The same draws four ways: the finite-population correction narrows the humans-only
    interval by √(1 − n_s/96) on average, Student's t widens it, most at 4-5 labels a system."""
    large = measure(hanna, "RE", "Beluga-13B", 400, draws=3, seed=2)["variants"]
    ratio = (
        large["finite_population"]["mean_width_humans_only"]
        / large["ppi_py"]["mean_width_humans_only"]
    )
    assert 0.7 < ratio < 0.85  # √(1 − 36/96) = 0.79, times √(n/(n − 1)) from the divisor
    small = measure(hanna, "RE", "Beluga-13B", 50, draws=3, seed=2)["variants"]
    widening = (
        small["student_t"]["mean_width_humans_only"] / small["ppi_py"]["mean_width_humans_only"]
    )
    assert widening > 1.5  # t(0.975, 3) · √(4/3) / 1.96 = 1.87 at 4 labels


def test_pandalm_win_rates_count_a_tie_as_half_and_flip_for_the_second_model() -> None:
    from bench.ppi_coverage import measure_pairwise, pandalm_win_rates

    human, judges, models = pandalm_win_rates()
    assert len(human) == len(models) == 999 and set(np.unique(human)) <= {0.0, 0.5, 1.0}
    assert np.isnan(judges["gpt-3.5-turbo"]).sum() > 0  # garbage verdicts are unparsed
    # the humans as their own judge: PPI++ has no error left to correct
    found = measure_pairwise(human, human, models, 200, draws=3, seed=0)
    assert found["estimates"] == 3 * 5
    for perfect in found["variants"].values():
        assert perfect["width_ratio"] < 0.6
    for variant in ("ppi_py", "student_t"):  # the superpopulation variance over-covers here
        assert found["variants"][variant]["coverage_ppi"] == 1.0
    for variant in ("finite_population", "product"):  # the same draws as humans-only (above)
        perfect = found["variants"][variant]
        assert perfect["coverage_ppi"] == perfect["coverage_humans_only"]
