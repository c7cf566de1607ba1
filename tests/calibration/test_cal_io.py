"""File mode, pure part: typed judgement records into the frame; errors name where and field.

Reading the files themselves (types, strictness, line numbers) is the data layer's reader and is
tested in ``tests/data/test_import_reader.py``; the command end to end in ``tests/badinput``.
"""

from __future__ import annotations

import pandas as pd
import pytest

from calibration import CalibrationInputError, CalibrationOptions, calibrate
from calibration.io import judgement_frame, with_response_metadata
from schemas.protocols import ALIGNMMBENCH, PAIRWISE, score_protocol
from schemas.records import JudgementRecord


def _record(**fields: object) -> JudgementRecord:
    return JudgementRecord.model_validate(
        {"judge": "j", "judge_kind": "model", "protocol": "alignmmbench"} | fields
    )


def test_metadata_joins_on_the_response_and_meta_keys_group() -> None:
    records = []
    for rid, scores in (("i1/a", (3, 4, 5)), ("i1/b", (8, 9, 9))):
        for k, score in enumerate(scores):
            records.append(_record(judge=f"annotator:{k}", judge_kind="human", response_id=rid,
                                   score=score))  # fmt: skip
        records.append(_record(judge="gpt-4", response_id=rid, parse_status="unparsed"))
    metadata = pd.DataFrame(
        [
            {"response_id": "i1/a", "item_id": "i1", "task": "OCR", "model": "a",
             "difficulty": "hard"},
            {"response_id": "i1/b", "item_id": "i1", "task": "OCR", "model": "b",
             "difficulty": "hard", "len": 3},
        ]
    )  # fmt: skip
    frame = judgement_frame([(f"j.jsonl:{n}", r) for n, r in enumerate(records, 1)], ALIGNMMBENCH)
    frame = with_response_metadata(frame, metadata).drop(columns="response_id")
    row = frame[frame["unit"] == "r:i1/b"].iloc[0]
    assert (row["item_id"], row["task"], row["model"], row["difficulty"], row["len"]) == (
        "i1", "OCR", "b", "hard", 3,
    )  # fmt: skip
    result = calibrate(
        frame, CalibrationOptions(ALIGNMMBENCH, bootstrap=0, by=("difficulty",))
    ).result
    assert result.judges["gpt-4"].coverage == 0.0
    assert result.judges["gpt-4"].parse_status == {"unparsed": 2}


def test_pairwise_shown_order_and_a_pair_has_no_model() -> None:
    records = [
        _record(protocol="pairwise", pair=("a", "b"), shown=("b", "a"), preference="A"),
        _record(judge="annotator:x", judge_kind="human", protocol="pairwise", pair=("a", "b"),
                preference="A"),
    ]  # fmt: skip
    frame = judgement_frame([("p.jsonl:1", records[0]), ("p.jsonl:2", records[1])], PAIRWISE)
    assert list(frame["shown_order"]) == ["BA", "AB"]
    assert set(frame["unit"]) == {"p:a|b"}
    metadata = pd.DataFrame([{"response_id": "a", "item_id": "i", "model": "m1"}])
    assert with_response_metadata(frame, metadata)["model"].isna().all()


def test_every_bad_record_is_named_with_where_it_was_read() -> None:
    records = [
        ("p.jsonl:1", _record(response_id="r0", score=8)),
        ("p.jsonl:2", _record(protocol="pairwise", pair=("a", "b"))),
        ("p.jsonl:3", _record(response_id="r", score=7.5)),
        ("p.jsonl:4", _record(response_id="r", score=11)),
        ("p.jsonl:5", _record(response_id="r5", score=3, expected_score=-5000)),  # was read
        ("p.jsonl:6", _record(response_id="r6", score=3, expected_score=3.6)),
    ]
    with pytest.raises(CalibrationInputError) as error:
        judgement_frame(records, ALIGNMMBENCH)
    assert str(error.value).splitlines() == [
        "p.jsonl:2: `protocol` is 'pairwise' but the protocol to calibrate is 'alignmmbench': "
        "calibrate one protocol at a time",
        "p.jsonl:3: `score` is 7.5, but alignmmbench scores are integers 1–10: fix the line, or "
        "calibrate the protocol 'score' with a wider scale",
        "p.jsonl:4: `score` is 11, but alignmmbench scores are integers 1–10: fix the line, or "
        "calibrate the protocol 'score' with a wider scale",
        "p.jsonl:5: `expected_score` is -5000, but an expected score (Σ p(s)·s) of alignmmbench "
        "lies from 1 to 10: fix the line",
    ]


def test_at_most_fifty_problems_are_named() -> None:
    records = [(f"p.jsonl:{n}", _record(response_id=f"r{n}", score=11)) for n in range(1, 80)]
    with pytest.raises(CalibrationInputError) as error:
        judgement_frame(records, ALIGNMMBENCH)
    lines = str(error.value).splitlines()
    assert len(lines) == 51 and lines[49].startswith("p.jsonl:50:")
    assert lines[50] == "stopped after 50 problems"


def test_score_protocol_with_a_continuous_scale_and_no_records() -> None:
    record = _record(judge="annotator:x", judge_kind="human", protocol="score", response_id="r",
                     score=0.35)  # fmt: skip
    frame = judgement_frame([("s.jsonl:1", record)], score_protocol(0, 1))
    assert frame["value"].tolist() == [0.35]
    with pytest.raises(CalibrationInputError, match="hold no judgements"):
        judgement_frame([], ALIGNMMBENCH)
