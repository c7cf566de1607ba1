"""Low-effort flags on plain records: the reading floor, near-duplicates, stock phrases."""

from __future__ import annotations

import pytest

from data.services.effort import (
    ABS_MIN_SECONDS,
    MIN_ANSWERS,
    EffortAnswer,
    assess,
    is_stock,
    jaccard,
    normalise,
    reading_floor,
    word_shingles,
)


def _answer(index: int, rationale: str, *, seconds: float = 60.0, chars: int = 500, images=0,
            name: str = "ann", response: str | None = None) -> EffortAnswer:  # fmt: skip
    return EffortAnswer(
        index, index, f"u{index}", name, seconds, rationale, chars, images,
        (response if response is not None else f"response text {index}",),
    )  # fmt: skip


def test_the_reading_floor_grows_with_the_text_and_the_images():
    assert reading_floor(0, 0) == ABS_MIN_SECONDS
    assert reading_floor(1000, 0) == pytest.approx(14.0)
    assert reading_floor(1000, 2) == pytest.approx(17.0)
    assert reading_floor(100, 0) == ABS_MIN_SECONDS  # 1.4 s of text: the absolute minimum


def test_too_fast_says_how_much_was_shown_and_the_floor():
    report = assess([_answer(1, "A reason of some length about the chart.", seconds=9.5,
                             chars=2000, images=1)])  # fmt: skip
    (flag,) = report.flags
    assert flag.reason == "too_fast"
    assert (
        flag.detail == "9.5 s for 2,000 characters and 1 image; skimming them takes at least 30 s"
    )


def test_near_duplicates_need_different_units_and_different_response_text():
    text = "The second bar of the chart is read as 40 but it is 45 in the picture"
    answers = [
        _answer(1, text),
        _answer(2, text.lower() + "!"),
        _answer(3, text, response="same"),
        _answer(4, text + ".", response="same"),  # same response text as 3: not compared
    ]
    flagged = {f.unit_id for f in assess(answers).flags if f.reason == "duplicate_rationale"}
    # 1 and 2 differ in case and punctuation only; 3 and 4 match 1 and 2 (different responses)
    assert flagged == {1, 2, 3, 4}
    alone = [_answer(3, text, response="same"), _answer(4, text + ".", response="same")]
    assert assess(alone).flags == []


def test_rationales_sharing_a_frame_but_not_their_content_are_not_duplicates():
    first = word_shingles(normalise("Good structure, but it miscounts the red chairs."))
    second = word_shingles(normalise("Good structure, but it miscounts the blue windows."))
    assert jaccard(first, second) < 0.8


def test_chinese_is_compared_character_by_character():
    same = word_shingles(normalise("两个回答都有问题，权衡之下我稍微倾向于第一个回答。"))
    other = word_shingles(normalise("两个回答都有问题，权衡之下我稍微倾向于第二个回答。"))
    assert len(same) > 20
    assert 0.5 < jaccard(same, other) < 0.8


def test_stock_phrases_are_not_duplicates_but_make_a_per_annotator_flag():
    assert is_stock(normalise("Looks good!")) and not is_stock("")
    stock = [_answer(i, "Looks good.") for i in range(MIN_ANSWERS)]
    report = assess(stock)
    assert report.flags == []
    (row,) = report.annotators
    assert row.stock == MIN_ANSWERS
    assert [(f.kind, f.reason) for f in row.flags] == [
        (
            "stock_rationales",
            "a stock phrase or a rationale under 25 characters on 10 of 10 answers (100%; "
            "flagged above 50%)",
        )
    ]


def test_per_annotator_flags_wait_for_enough_answers_and_a_share():
    fast = [_answer(i, f"Reason number {'x' * i} differs.", seconds=2) for i in range(9)]
    assert assess(fast).annotators[0].flags == ()
    fast.append(_answer(9, "One more distinct and considered remark.", seconds=2))
    (flag,) = assess(fast).annotators[0].flags
    assert flag.kind == "too_fast"
    assert flag.reason == (
        "answered faster than the text can be skimmed on 10 of 10 answers (100%; flagged from 20%)"
    )
