"""File mode: judgement and dataset files into the frame, with errors naming file:line:field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibration import CalibrationInputError, CalibrationOptions, calibrate
from calibration.io import read_judgement_frame
from schemas.protocols import ALIGNMMBENCH, PAIRWISE, score_protocol


def _lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _dataset(path: Path) -> Path:
    return _lines(
        path,
        [
            {
                "item_id": "i1",
                "benchmark": "alignmmbench",
                "task": "OCR",
                "category": "P",
                "group": "g",
                "question": "q",
                "meta": {"difficulty": "hard"},
                "responses": [
                    {"response_id": "i1/a", "model": "a", "content": "x"},
                    {"response_id": "i1/b", "model": "b", "content": "y", "meta": {"len": 3}},
                ],
            },
        ],
    )


def test_dataset_metadata_joins_and_meta_keys_group(tmp_path):
    records = []
    for rid, scores in (("i1/a", (3, 4, 5)), ("i1/b", (8, 9, 9))):
        for k, score in enumerate(scores):
            records.append(
                {
                    "judge": f"annotator:{k}",
                    "judge_kind": "human",
                    "protocol": "alignmmbench",
                    "response_id": rid,
                    "score": score,
                }
            )
        records.append(
            {
                "judge": "gpt-4",
                "judge_kind": "model",
                "protocol": "alignmmbench",
                "response_id": rid,
                "score": None,
                "parse_status": "unparsed",
            }
        )
    frame, digest = read_judgement_frame(
        [_lines(tmp_path / "j.jsonl", records)], ALIGNMMBENCH, _dataset(tmp_path / "d.jsonl")
    )
    assert len(digest) == 64
    row = frame[frame["unit"] == "r:i1/b"].iloc[0]
    assert (row["item_id"], row["task"], row["model"], row["difficulty"], row["len"]) == (
        "i1",
        "OCR",
        "b",
        "hard",
        3,
    )
    summary = calibrate(
        frame, CalibrationOptions(ALIGNMMBENCH, bootstrap=0, by=("difficulty",))
    ).summary
    assert summary["judges"]["gpt-4"]["coverage"] == 0.0
    assert summary["judges"]["gpt-4"]["parse_status"] == {"unparsed": 2}


def test_pairwise_shown_order_is_read(tmp_path):
    records = [
        {
            "judge": "j",
            "judge_kind": "model",
            "protocol": "pairwise",
            "pair": ["a", "b"],
            "shown": ["b", "a"],
            "preference": "A",
        },
        {
            "judge": "annotator:x",
            "judge_kind": "human",
            "protocol": "pairwise",
            "pair": ["a", "b"],
            "preference": "A",
        },
    ]
    frame, _ = read_judgement_frame([_lines(tmp_path / "p.jsonl", records)], PAIRWISE)
    assert list(frame["shown_order"]) == ["BA", "AB"]
    assert set(frame["unit"]) == {"p:a|b"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "p.jsonl:2: not valid JSON"),
        (
            '{"judge": "j", "protocol": "alignmmbench", "response_id": "r"}',
            "p.jsonl:2: field `judge_kind`: Field required",
        ),
        (
            '{"judge": "j", "judge_kind": "model", "protocol": "pairwise", "pair": ["a", "b"]}',
            "p.jsonl:2: protocol is 'pairwise' but --protocol is 'alignmmbench'",
        ),
        (
            '{"judge": "j", "judge_kind": "model", "protocol": "alignmmbench", "response_id": "r", '
            '"score": 7.5}',
            "p.jsonl:2: `score` is 7.5, but alignmmbench scores are integers 1–10",
        ),
        (
            '{"judge": "j", "judge_kind": "model", "protocol": "alignmmbench"}',
            "p.jsonl:2: field `response_id` is missing",
        ),
    ],
)
def test_bad_lines_name_file_line_and_field(tmp_path, line, message):
    good = '{"judge": "j", "judge_kind": "model", "protocol": "alignmmbench", "response_id": "r0"}'
    path = tmp_path / "p.jsonl"
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(CalibrationInputError) as error:
        read_judgement_frame([path], ALIGNMMBENCH)
    assert message in str(error.value)


def test_score_protocol_with_a_continuous_scale(tmp_path):
    records = [
        {
            "judge": "annotator:x",
            "judge_kind": "human",
            "protocol": "score",
            "response_id": "r",
            "score": 0.35,
        }
    ]
    frame, _ = read_judgement_frame([_lines(tmp_path / "s.jsonl", records)], score_protocol(0, 1))
    assert frame["value"].tolist() == [0.35]
    with pytest.raises(CalibrationInputError, match="cannot read it"):
        read_judgement_frame([tmp_path / "missing.jsonl"], ALIGNMMBENCH)
