"""HANNA (3 human raters, 16 LLM judge configurations, 6 criteria): the library against scipy and
krippendorff, criterion by criterion."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibration import CalibrationOptions, calibrate
from schemas.protocols import score_protocol

CRITERIA = ("RE", "CH", "EM", "SU", "EG", "CX")
LLMS = ("Beluga-13B", "Mistral-7B", "Llama-13B", "ChatGPT")


def _judge(hanna: pd.DataFrame, llm: str, criterion: str, prompt: int) -> np.ndarray:
    """An LLM's scores; HANNA writes -1 where no score could be read: those are unparsed."""
    values = hanna[f"{llm} {criterion} {prompt}"].to_numpy(dtype=float)
    return np.where(values < 0, np.nan, values)


def _frame(hanna: pd.DataFrame, criterion: str) -> pd.DataFrame:
    parts = []
    units = "r:" + hanna["story_id"].astype(str)
    for k in (1, 2, 3):
        parts.append(
            pd.DataFrame(
                {
                    "unit": units,
                    "rater": f"annotator:human{k}",
                    "kind": "human",
                    "value": hanna[f"Human {k} {criterion}"].astype(float),
                }
            )
        )
    for llm in LLMS:
        for prompt in (1, 2, 3, 4):
            parts.append(
                pd.DataFrame(
                    {
                        "unit": units,
                        "rater": f"{llm} p{prompt}",
                        "kind": "model",
                        "value": _judge(hanna, llm, criterion, prompt),
                    }
                )
            )
    frame = pd.concat(parts, ignore_index=True)
    frame["model"] = np.tile(hanna["system"].to_numpy(), len(parts))
    return frame


@pytest.mark.parametrize("criterion", CRITERIA)
def test_hanna_alpha_and_kendall_per_criterion(hanna, criterion):
    options = CalibrationOptions(score_protocol(0, 5), bootstrap=0)  # LLM means go to 0
    result = calibrate(_frame(hanna, criterion), options).result
    humans = hanna[[f"Human {k} {criterion}" for k in (1, 2, 3)]].to_numpy(dtype=float).T
    for level in ("interval", "ordinal"):
        expected = krippendorff.alpha(humans, level_of_measurement=level)
        assert result.human.alphas[f"alpha_{level}"].value == pytest.approx(expected, abs=1e-12)
    human_mean = humans.mean(axis=0)
    assert len(result.judges) == 16
    for llm in LLMS:
        for prompt in (1, 2, 3, 4):
            judge = _judge(hanna, llm, criterion, prompt)
            parsed = ~np.isnan(judge)
            expected = stats.kendalltau(judge[parsed], human_mean[parsed]).statistic
            block = result.judges[f"{llm} p{prompt}"]
            assert block.metric("kendall").value == pytest.approx(expected, abs=1e-12)
            assert block.n == parsed.sum()
            assert block.coverage == pytest.approx(parsed.mean())
    # system-level: judge's ranking of the story generators against the humans'
    assert result.judges["ChatGPT p1"].ranking_kendall is not None
