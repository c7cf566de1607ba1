"""The one disagreement rule (calibration/disagreement.py, METRICS.md "Disagreement"): what it
counts, on frames whose answers are worked out by hand, and that the report lists its first ones.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from calibration import CalibrationInputError, CalibrationOptions, calibrate
from calibration.analysis import find_disagreements
from schemas.protocols import get_protocol

POINTS = get_protocol("alignmmbench")  # 1–10: default threshold 20% of 9 = 1.8
PAIRS = get_protocol("pairwise")


def _frame(rows: list[tuple[str, str, object, str, int]]) -> pd.DataFrame:
    """(unit, rater, value, shown order, sample); raters named ``h…`` are humans."""
    return pd.DataFrame(
        [
            {
                "unit": unit,
                "rater": rater if not rater.startswith("h") else f"annotator:{rater}",
                "kind": "human" if rater.startswith("h") else "model",
                "value": value,
                "shown_order": order,
                "sample": sample,
                "parse_status": "ok" if value is not None else "unparsed",
            }
            for unit, rater, value, order, sample in rows
        ]
    )


def _humans(unit: str, *values: object) -> list[tuple[str, str, object, str, int]]:
    return [(unit, f"h{i}", value, "AB", 0) for i, value in enumerate(values)]


@pytest.fixture
def scores() -> pd.DataFrame:
    return _frame(
        [
            *_humans("r:a", 5, 5), ("r:a", "gpt", 8, "AB", 0),  # gap 3
            *_humans("r:b", 5, 5), ("r:b", "gpt", 6.8, "AB", 0), ("r:b", "gpt", 6.8, "AB", 1),
            *_humans("r:c", 5, 5), ("r:c", "gpt", 3.3, "AB", 0),  # gap 1.7: below 1.8
            *_humans("r:d", 2, 3), ("r:d", "gpt", 10, "AB", 0), ("r:d", "gpt", None, "AB", 1),
            ("r:e", "gpt", 10, "AB", 0),  # no human: no reference, no disagreement
            *_humans("r:f", 5, 5), ("r:f", "gpt", 9, "AB", 0),  # adjudicated 9 below
        ]
    )  # fmt: skip


def _listed(entries) -> list[tuple[str, str, str, float]]:
    return [(e.unit_key, e.judge_value, e.reference_value, round(e.gap, 9)) for e in entries]


def test_pointwise_gap_of_the_mean_at_least_the_threshold(scores):
    found = find_disagreements(
        scores, CalibrationOptions(protocol=POINTS), "gpt", overrides={"r:f": 9}
    )
    # r:b: 6.8 − 5 is 1.7999999999999998 in floating point, still at the 1.8 threshold; r:d's
    # unparsed sample gives no verdict (mean of the parsed one: 10, reference (2 + 3) / 2)
    assert _listed(found.entries) == [
        ("r:d", "10", "2.5", 7.5),
        ("r:a", "8", "5", 3.0),
        ("r:b", "6.8", "5", 1.8),
    ]
    assert found.threshold == 1.8 and found.references == 5  # r:e has none
    without_adjudication = find_disagreements(scores, CalibrationOptions(protocol=POINTS), "gpt")
    assert ("r:f", "9", "5", 4.0) in _listed(without_adjudication.entries)
    stricter = CalibrationOptions(protocol=POINTS, disagreement_threshold=3)
    assert [e.unit_key for e in find_disagreements(scores, stricter, "gpt").entries] == [
        "r:d",
        "r:f",
        "r:a",
    ]


def test_pairwise_counts_every_verdict_not_the_first_one():
    frame = _frame(
        [
            *_humans("p:1", "A", "A"),
            ("p:1", "gpt", "A", "AB", 0), ("p:1", "gpt", "B", "BA", 0),  # position bias: ½
            *_humans("p:2", "A", "A"),  # the first verdict differs, but only 1 of 3: agrees
            ("p:2", "gpt", "B", "AB", 0), ("p:2", "gpt", "A", "BA", 0),
            ("p:2", "gpt", "A", "BA", 1),
            *_humans("p:3", "B", "B"),  # the first verdict agrees, but 2 of 3 differ
            ("p:3", "gpt", "B", "AB", 0), ("p:3", "gpt", "A", "BA", 0),
            ("p:3", "gpt", "A", "BA", 1),
            *_humans("p:4", "A", "B"), ("p:4", "gpt", "A", "AB", 0),  # split vote: tie
            *_humans("p:5", "A", "A"), ("p:5", "gpt", None, "AB", 0),  # unparsed: no verdict
        ]
    )  # fmt: skip
    found = find_disagreements(frame, CalibrationOptions(protocol=PAIRS), "gpt")
    assert _listed(found.entries) == [
        ("p:4", "A", "tie", 1.0),
        ("p:3", "A×2 B×1", "B", round(2 / 3, 9)),
        ("p:1", "A×1 B×1", "A", 0.5),
    ]
    assert found.threshold is None and found.references == 5


def test_the_report_lists_the_first_of_the_same_disagreements(scores):
    options = CalibrationOptions(protocol=POINTS, bootstrap=0, max_disagreements=2)
    report = calibrate(scores, options, overrides={"r:f": 9})
    details = report.details["gpt"]
    assert details.disagreements["unit"].tolist() == ["r:d", "r:a"]
    assert details.disagreements["gap"].round(9).tolist() == [7.5, 3.0]
    assert details.disagreement_count == 3 and details.disagreement_threshold == 1.8


@pytest.mark.parametrize(
    ("protocol", "threshold", "message"),
    [
        (PAIRS, 1.0, "disagreement threshold does not apply to pairwise judgements"),
        (POINTS, 0.0, "disagreement threshold 0 must be more than 0 and at most the scale's "
                      "width (9 for integers 1–10)"),
        (POINTS, 9.5, "disagreement threshold 9.5 must be more than 0"),
    ],
)  # fmt: skip
def test_a_threshold_that_cannot_apply_is_refused(protocol, threshold, message):
    with pytest.raises(CalibrationInputError, match=re.escape(message)):
        CalibrationOptions(protocol=protocol, disagreement_threshold=threshold).validate()
