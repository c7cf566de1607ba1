import math

import pytest

from schemas.benchmarks import ALIGNMMBENCH_TASKS
from schemas.guidance import ALIGNMMBENCH_TASK_GUIDANCE, ALIGNMMBENCH_TASK_GUIDANCE_ZH
from schemas.protocols import (
    ALIGNMMBENCH,
    MMIE,
    PAIRWISE,
    InvalidJudgement,
    get_protocol,
    parse_scale,
    score_protocol,
    to_canonical,
    to_shown,
)


def test_alignmmbench_scale_is_integers_one_to_ten() -> None:
    assert ALIGNMMBENCH.scale_points() == [float(v) for v in range(1, 11)]
    assert ALIGNMMBENCH.validate_score(8) == 8.0
    assert ALIGNMMBENCH.validate_score(8.0) == 8.0


@pytest.mark.parametrize("bad", [0, 11, 7.5, -1, math.nan])
def test_alignmmbench_refuses_values_off_the_scale(bad: float) -> None:
    with pytest.raises(InvalidJudgement, match="alignmmbench scores are integers 1–10"):
        ALIGNMMBENCH.validate_score(bad)


@pytest.mark.parametrize("bad", ["8", True, None, [8]])
def test_scores_must_be_numbers(bad: object) -> None:
    with pytest.raises(InvalidJudgement, match="are numbers"):
        ALIGNMMBENCH.validate_score(bad)


def test_mmie_is_zero_to_six_and_reports_percent() -> None:
    assert MMIE.scale_points() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert MMIE.percent_of(3) == pytest.approx(50.0)
    assert MMIE.percent_of(6) == pytest.approx(100.0)
    with pytest.raises(InvalidJudgement):
        MMIE.validate_score(7)


def test_every_band_lies_on_the_scale_and_every_point_has_a_band() -> None:
    for protocol in (ALIGNMMBENCH, MMIE):
        for point in protocol.scale_points():
            assert protocol.band_for(point) is not None, (protocol.name, point)


def test_thirteen_tasks_in_three_categories_each_with_guidance() -> None:
    assert len(ALIGNMMBENCH_TASKS) == 13
    assert len(set(ALIGNMMBENCH_TASKS.values())) == 3
    assert set(ALIGNMMBENCH_TASK_GUIDANCE) == set(ALIGNMMBENCH_TASKS)
    assert set(ALIGNMMBENCH_TASK_GUIDANCE_ZH) == set(ALIGNMMBENCH_TASKS)


def test_pairwise_labels_and_order_mapping() -> None:
    assert PAIRWISE.validate_preference("tie") == "tie"
    with pytest.raises(InvalidJudgement, match="one of 'A', 'B', 'tie'"):
        PAIRWISE.validate_preference("C")
    assert to_canonical("A", swapped=True) == "B"
    assert to_canonical("B", swapped=True) == "A"
    assert to_canonical("tie", swapped=True) == "tie"
    assert to_canonical("A", swapped=False) == "A"
    for label in ("A", "B", "tie"):
        assert to_canonical(to_shown(label, swapped=True), swapped=True) == label


def test_score_protocol_with_step_snaps_float_noise() -> None:
    protocol = score_protocol(0, 1, 0.1)
    assert protocol.validate_score(0.30000000000000004) == 0.3
    assert len(protocol.scale_points()) == 11
    with pytest.raises(InvalidJudgement, match="0–1 in steps of 0.1"):
        protocol.validate_score(0.35)


def test_continuous_score_protocol_has_no_points() -> None:
    protocol = score_protocol(0, 100)
    assert not protocol.is_discrete
    assert protocol.validate_score(42.42) == 42.42
    with pytest.raises(ValueError, match="continuous"):
        protocol.scale_points()
    with pytest.raises(InvalidJudgement, match="any number from 0 to 100"):
        protocol.validate_score(100.5)


def test_parse_scale_and_get_protocol() -> None:
    assert parse_scale("1:5") == (1.0, 5.0, None)
    assert parse_scale("0:1:0.1") == (0.0, 1.0, 0.1)
    with pytest.raises(ValueError, match="MIN:MAX"):
        parse_scale("1-5")
    likert = get_protocol("score", scale_min=1, scale_max=5, step=1)
    assert likert.describe_scale() == "integers 1–5"
    with pytest.raises(ValueError, match="needs a scale"):
        get_protocol("score")
    with pytest.raises(ValueError, match="unknown protocol 'likert'"):
        get_protocol("likert")
    with pytest.raises(ValueError, match="does not divide"):
        score_protocol(0, 1, 0.3)


@pytest.mark.parametrize("text", ["1:inf", "-inf:5", "1:nan", "0:1:inf", "nan:1"])
def test_a_scale_is_finite(text: str) -> None:
    """An infinite bound made a campaign whose options held JSON's non-standard Infinity."""
    with pytest.raises(ValueError, match="must be finite numbers"):
        score_protocol(*parse_scale(text))


def test_score_labels_follow_one_percent_rule() -> None:
    """MMIE shows points with their percent of 6, whole percent (16.67 → 17, 83.33 → 83)."""
    assert [MMIE.score_label(v) for v in (0, 1, 3, 5, 6)] == [
        "0 (0%)", "1 (17%)", "3 (50%)", "5 (83%)", "6 (100%)",
    ]  # fmt: skip
    assert MMIE.percent_label(1, 2) == "17–33%" and MMIE.percent_label(6, 6) == "100%"
    assert ALIGNMMBENCH.score_label(7) == "7" and ALIGNMMBENCH.score_label(7.5) == "7.5"
    assert PAIRWISE.answer_label(None, "tie") == "tie" and MMIE.answer_label(None, None) == "—"
