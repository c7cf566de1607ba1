"""Disagreement causes: the reference per unit, Wilson intervals, the per-judge summary, report."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from calibration.disagreement_tags import summarise_tags
from calibration.report_tags import tags_section
from schemas.disagreements import TagRecord
from schemas.intervals import wilson_interval


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    # Newcombe (1998), Statistics in Medicine 17:857–872, Table I, method 3 (Wilson score)
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611),
     (1, 29, 0.0061, 0.1718)],
)  # fmt: skip
def test_wilson_interval_matches_newcombe_table_one(successes, trials, low, high):
    got = wilson_interval(successes, trials)
    assert got == pytest.approx((low, high), abs=5e-5)


def _score_test_bounds(k: int, n: int, confidence: float) -> tuple[float, float]:
    """The Wilson interval by its definition: the p whose score test |p̂ − p| / √(p(1−p)/n)
    does not exceed z, found by root finding instead of the closed form."""
    z = norm.ppf(0.5 + confidence / 2)
    p_hat = k / n

    def excess(p: float) -> float:
        return abs(p_hat - p) - z * math.sqrt(p * (1 - p) / n)

    low = 0.0 if k == 0 else brentq(excess, 1e-12, p_hat)
    high = 1.0 if k == n else brentq(excess, max(p_hat, 1e-12), 1 - 1e-12)
    return low, high


def _tag(judge: str, unit: str, cause: str, gap: float = 2.0, note: str = "") -> TagRecord:
    return TagRecord(
        tag_id=0, campaign="c", unit_key=unit, item_id="i", judge=judge, cause=cause, note=note,
        judge_value="9", reference_value="5", gap=gap, reviewer="rita",
        created_at=datetime(2026, 12, 1, tzinfo=UTC),
    )  # fmt: skip


def test_summary_counts_each_cause_with_an_interval_over_the_judges_units():
    tags = [_tag("gpt", f"u{i}", "too lenient", gap=i) for i in range(7)]
    tags += [_tag("gpt", "v1", "too harsh"), _tag("gpt", "v2", "renamed cause")]
    tags += [_tag("other-judge", "w", "too harsh")]
    summary = summarise_tags(tags, ["too harsh", "too lenient", "other"], confidence=0.9)
    assert [s.judge for s in summary] == ["gpt", "other-judge"]
    gpt = summary[0]
    assert gpt.tagged == 9
    assert [(c.cause, c.count) for c in gpt.causes] == [
        ("too harsh", 1), ("too lenient", 7), ("other", 0), ("renamed cause", 1)
    ]  # fmt: skip
    for cause in gpt.causes:
        assert cause.share == cause.count / 9
        assert (cause.low, cause.high) == pytest.approx(
            _score_test_bounds(cause.count, 9, 0.9), abs=1e-9
        )
    lenient = gpt.causes[1]
    assert [t.unit_key for t in lenient.examples] == ["u6", "u5"]  # two, largest gap first


def test_report_section_escapes_every_stored_text():
    tags = [_tag("<b>gpt</b>", "u<1>", "<script>x</script>", note="<img src=x>")]
    html = tags_section(summarise_tags(tags, ["<script>x</script>"]))
    assert "<script>" not in html and "<img" not in html and "<b>gpt" not in html
    assert "&lt;img src=x&gt;" in html and "100.0%" in html
    assert tags_section([]) == ""
