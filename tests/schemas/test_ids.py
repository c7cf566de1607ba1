"""The one id rule and the one unit-key helper (schemas.ids)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from schemas.ids import (
    MAX_ID_LENGTH,
    UnitKey,
    account_name,
    check_id,
    check_response_id,
    id_problem,
    pair_unit_key,
    parse_unit_key,
    response_unit_key,
    unit_key,
)
from schemas.records import JudgementRecord

GOOD_IDS = [
    "item-0/model-x",
    "图1中有几只猫/qwen2-vl",  # CJK
    "👩\u200d🔬-emoji-with-zero-width-joiner",
    "می\u200cخواهم",  # Persian: the zero-width non-joiner is part of the word
    "a b",  # inner spaces are fine
    "x" * MAX_ID_LENGTH,
]

BAD_IDS = {
    "": "empty",
    " lead": "white space",
    "trail ": "white space",
    "tab\t": "white space",
    "x" * (MAX_ID_LENGTH + 1): "at most 512",
    "nul\x00": "control character (U+0000)",
    "bell\x07in": "control character (U+0007)",
    "del\x7f": "control character (U+007F)",
    "c1\x85next": "control character (U+0085)",
    "new\nline": "control character (U+000A)",
    "ls\u2028x": "line separator (U+2028)",
    "ps\u2029x": "paragraph separator (U+2029)",
    "rlo\u202egpj.exe": "bidirectional control (U+202E)",
    "lri\u2066x": "bidirectional control (U+2066)",
    "rlm\u200fx": "bidirectional control (U+200F)",
    "alm\u061cx": "bidirectional control (U+061C)",
    "bom\ufeffx": "byte-order mark (U+FEFF)",
    "surrogate\ud800x": "lone surrogate (U+D800)",
}


@pytest.mark.parametrize("value", GOOD_IDS)
def test_ordinary_ids_in_any_script_are_accepted(value: str) -> None:
    assert check_id(value) == value and check_response_id(value) == value


@pytest.mark.parametrize("value", list(BAD_IDS), ids=lambda v: ascii(v)[:30])
def test_ids_a_reader_cannot_see_or_that_reorder_text_are_refused(value: str) -> None:
    with pytest.raises(ValueError, match="the id ") as error:
        check_id(value)
    assert BAD_IDS[value] in str(error.value)
    assert value not in str(error.value) or value.isprintable()  # shown escaped


def test_a_response_id_may_not_hold_the_pair_separator() -> None:
    assert check_id("x|y") == "x|y"  # an item or dataset id may
    with pytest.raises(ValueError, match="separates the two ids of a pair"):
        check_response_id("x|y")
    assert id_problem("x|y", response=True) is not None


def test_pair_keys_that_used_to_collide_cannot_be_built() -> None:
    """Items with responses ``x|y``, ``z`` and ``x``, ``y|z`` both gave ``p:x|y|z``."""
    record = {"judge": "j", "judge_kind": "model", "protocol": "pairwise", "preference": "A"}
    for pair in (["x|y", "z"], ["x", "y|z"]):
        with pytest.raises(ValidationError, match="separates the two ids of a pair"):
            JudgementRecord(**record, pair=pair)
    with pytest.raises(ValueError, match="response ids hold no"):
        parse_unit_key("p:x|y|z")


def test_keys_round_trip() -> None:
    assert response_unit_key("i0/m1") == "r:i0/m1" == unit_key("i0/m1", None)
    assert pair_unit_key("i0/m1", "i0/m2") == "p:i0/m1|i0/m2" == unit_key(None, ("i0/m1", "i0/m2"))
    assert parse_unit_key("r:i0/m1") == UnitKey(response_id="i0/m1")
    assert parse_unit_key("r:a|b").response_ids == ("a|b",)  # a stored id from before the rule
    assert parse_unit_key("p:i0/m1|i0/m2").response_ids == ("i0/m1", "i0/m2")
    for bad in ("", "r:", "p:a", "p:a|", "p:|b", "q:a", "a|b"):
        with pytest.raises(ValueError, match="must be r:<response_id> or p:<a>|<b>"):
            parse_unit_key(bad)


def test_judgement_records_check_every_id_field() -> None:
    base = {"judge": "j", "judge_kind": "human", "protocol": "alignmmbench", "response_id": "r1"}
    for field in ("judge", "response_id", "annotator", "campaign"):
        with pytest.raises(ValidationError, match="bidirectional control") as error:
            JudgementRecord(**{**base, field: "x\u202e"})
        assert error.value.errors()[0]["loc"] == (field,)


def test_account_name_is_the_rater_name_without_the_human_prefix() -> None:
    assert account_name("annotator:ann1") == "ann1" and account_name("judge-x") == "judge-x"
