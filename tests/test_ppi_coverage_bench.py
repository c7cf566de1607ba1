"""bench/ppi_coverage.py wires the humans and the judge the right way round: a judge that gives
the humans' own mean is worth far more labels, one that gives noise is worth about none."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.ppi_coverage import HANNA, measure


@pytest.fixture(scope="module")
def hanna() -> pd.DataFrame:
    frame = pd.read_csv(HANNA / "hanna_human_and_llm_scores_long.csv")
    human = frame[[f"Human {k} RE" for k in (1, 2, 3)]].to_numpy(float).mean(axis=1)
    noise = np.random.default_rng(0).integers(1, 6, size=len(frame)).astype(float)
    extra = pd.DataFrame({"Perfect RE 1": human, "Noise RE 1": noise}, index=frame.index)
    return pd.concat([frame, extra], axis=1)


def test_a_perfect_judge_is_worth_many_labels_and_noise_none(hanna: pd.DataFrame) -> None:
    perfect = measure(hanna, "RE", "Perfect", 200, draws=5, seed=1)
    assert perfect["estimates"] == 5 * 11 and perfect["skipped"] == 0
    assert perfect["width_ratio"] < 0.5
    assert perfect["mean_effective_labels_per_model"] > 4 * perfect["mean_labelled_per_model"]
    assert perfect["coverage_ppi"] >= 0.9
    noise = measure(hanna, "RE", "Noise", 200, draws=5, seed=1)
    assert 0.97 < noise["width_ratio"] <= 1.02
    assert noise["mean_effective_labels_per_model"] == pytest.approx(
        noise["mean_labelled_per_model"], rel=0.1
    )


def test_pandalm_win_rates_count_a_tie_as_half_and_flip_for_the_second_model() -> None:
    from bench.ppi_coverage import measure_pairwise, pandalm_win_rates

    human, judges, models = pandalm_win_rates()
    assert len(human) == len(models) == 999 and set(np.unique(human)) <= {0.0, 0.5, 1.0}
    assert np.isnan(judges["gpt-3.5-turbo"]).sum() > 0  # garbage verdicts are unparsed
    # the humans as their own judge: PPI++ has no error left to correct
    perfect = measure_pairwise(human, human, models, 200, draws=3, seed=0)
    assert perfect["estimates"] == 3 * 5
    assert perfect["width_ratio"] < 0.6 and perfect["coverage_ppi"] == 1.0
