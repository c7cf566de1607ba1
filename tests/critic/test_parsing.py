"""The judge-output parsers: the forms PROTOCOLS.md lists, statuses, and two properties checked
with hypothesis — they never raise and never return a value off the scale."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from critic.parsing import parse_judgement, parse_preference, parse_score
from critic.prompts import builtin_template, format_target
from schemas.protocols import ALIGNMMBENCH, MMIE, PAIRWISE, score_protocol

PERCENT = score_protocol(0, 100, 1)
UNIT = score_protocol(0, 1, 0.1)
CONTINUOUS = score_protocol(0, 1)


@pytest.mark.parametrize(
    ("text", "protocol", "value", "rationale"),
    [
        ('{"Rating": 8, "Reason": "Mostly right."}', ALIGNMMBENCH, 8, "Mostly right."),
        ('{"Rating": "7", "Reason": "ok"}', ALIGNMMBENCH, 7, "ok"),
        ('Here you go: {"rating": 6, "reason": "part"} done', ALIGNMMBENCH, 6, "part"),
        ('{"评分": 9, "理由": "完整"}', ALIGNMMBENCH, 9, "完整"),
        (
            '{"Rating": 6, "Reason": "Cut short because the judge ran out of',
            ALIGNMMBENCH,
            6,
            "Cut short because the judge ran out of",
        ),
        ("Rating: 8\nThe count is right.", ALIGNMMBENCH, 8, "The count is right."),
        ("The answer is fine. Score: 4", ALIGNMMBENCH, 4, "The answer is fine."),
        ("Verdict [[8]] because it is good", ALIGNMMBENCH, 8, "Verdict\nbecause it is good"),
        ("评分：8\n理由：正确", ALIGNMMBENCH, 8, "正确"),
        ("### Score\n5\n\n### Reason\nFive criteria met.", MMIE, 5, "Five criteria met."),
        ("Good story. Final Score: 85", PERCENT, 85, "Good story."),
        ("Rating: 0.3", UNIT, 0.3, ""),
        ("Rating: 0.37", CONTINUOUS, 0.37, ""),
    ],
)
def test_score_forms(text: str, protocol, value: float, rationale: str) -> None:  # type: ignore[no-untyped-def]
    parsed = parse_score(text, protocol)
    assert (parsed.value, parsed.status, parsed.rationale) == (value, "ok", rationale)


@pytest.mark.parametrize(
    ("text", "protocol", "status"),
    [
        ("Final Score: 85", ALIGNMMBENCH, "out_of_scale"),  # only where the scale allows it
        ('{"Rating": 11, "Reason": "x"}', ALIGNMMBENCH, "out_of_scale"),
        ("Rating: 7.5", ALIGNMMBENCH, "out_of_scale"),  # between scale points
        ("Score: 0.35", UNIT, "out_of_scale"),
        ("### Score\n7", MMIE, "out_of_scale"),
        ("I think the answer is quite good.", ALIGNMMBENCH, "unparsed"),
        ("", ALIGNMMBENCH, "unparsed"),
        ('{"Rating": true}', ALIGNMMBENCH, "unparsed"),
    ],
)
def test_score_failures_have_their_own_status(text: str, protocol, status: str) -> None:  # type: ignore[no-untyped-def]
    parsed = parse_score(text, protocol)
    assert parsed.value is None and parsed.status == status


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("[[A]]\nA counts right.", "A"),
        ("After thought: [[B]]", "B"),
        ("[[C]] both fine", "tie"),
        ("Response A is better because it counts right.", "A"),
        ("Answer 2 is better.", "B"),
        ("The better response: first", "A"),
        ("The better answer is Response B.", "B"),
        ("Two responses are equally good.", "tie"),
        ("Tie", "tie"),
        ('{"preference": "B", "reason": "x"}', "B"),
        ("回答B更好，因为计数正确。", "B"),
        ("两个回答一样好。", "tie"),
    ],
)
def test_preference_forms(text: str, label: str) -> None:
    parsed = parse_preference(text)
    assert (parsed.value, parsed.status) == (label, "ok")


@pytest.mark.parametrize(
    "text", ["I cannot decide which one.", "", "Response A is better. No, Response B is better."]
)
def test_preference_without_a_clear_verdict_is_unparsed(text: str) -> None:
    assert parse_preference(text).status == "unparsed"
    assert parse_preference(text).value is None


@pytest.mark.parametrize("protocol", [ALIGNMMBENCH, MMIE, PERCENT, UNIT])
def test_trained_target_parses_back_to_its_label(protocol) -> None:  # type: ignore[no-untyped-def]
    name = protocol.name
    template = builtin_template(name)
    for value in protocol.scale_points():
        text = format_target(template, protocol, value, 'Says "why", {with} braces.')
        parsed = parse_judgement(text, protocol)
        assert (parsed.value, parsed.status) == (value, "ok")
        assert parsed.rationale == 'Says "why", {with} braces.'


def test_pairwise_target_parses_back() -> None:
    for language in ("en", "zh"):
        template = builtin_template("pairwise", language)
        for label in ("A", "B", "tie"):
            parsed = parse_judgement(format_target(template, PAIRWISE, label, "reason"), PAIRWISE)
            assert (parsed.value, parsed.rationale) == (label, "reason")


_TEXT = st.one_of(
    st.text(),
    st.text(alphabet='0123456789.-:[]{}"# \nRatingScore评分：ABC', max_size=60),
    st.builds(
        lambda v, r: json.dumps({"Rating": v, "Reason": r}),
        st.one_of(
            st.integers(-(10**30), 10**30),
            st.floats(allow_nan=True),
            st.text(max_size=8),
            st.none(),
        ),
        st.text(max_size=20),
    ),
    st.builds(lambda v: f"Rating: {v}", st.floats(allow_nan=True, allow_infinity=True)),
)


@settings(max_examples=400, deadline=None)
@given(text=_TEXT, protocol=st.sampled_from([ALIGNMMBENCH, MMIE, PERCENT, UNIT, CONTINUOUS]))
def test_score_parser_never_raises_and_stays_on_the_scale(text: str, protocol) -> None:  # type: ignore[no-untyped-def]
    parsed = parse_score(text, protocol)
    assert parsed.status in ("ok", "unparsed", "out_of_scale")
    if parsed.value is None:
        assert parsed.status != "ok"
    else:
        assert parsed.status == "ok"
        assert protocol.validate_score(parsed.value) == parsed.value


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(st.text(), st.text(alphabet="[]ABCtie12 betrsponAnwfi", max_size=50)))
def test_preference_parser_never_raises_and_returns_a_label(text: str) -> None:
    parsed = parse_preference(text)
    assert parsed.value in (None, "A", "B", "tie")
    assert (parsed.value is None) == (parsed.status == "unparsed")
