"""The one reader (``data.io.importers.reader``): the same records from JSON Lines, CSV and Parquet,
the same strictness in each, every bad line named, nothing read from an empty file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from data.io.importers import (
    InvalidFile,
    InvalidRecord,
    dataset_metadata,
    read_dataset,
    read_judgement_files,
    read_judgements,
)

JUDGEMENTS = [
    {"judge": "gpt-4", "judge_kind": "model", "protocol": "alignmmbench", "response_id": "i1/a",
     "score": 8, "rationale": "fine\u2028still fine", "prompt_id": "p@1", "latency": 1.5},
    {"judge": "gpt-4", "judge_kind": "model", "protocol": "pairwise", "pair": ["i1/a", "i1/b"],
     "shown": ["i1/b", "i1/a"], "preference": "tie", "prompt_id": "p@1"},
]  # fmt: skip
ITEM = {"item_id": "i1", "benchmark": "generic", "task": "t", "question": "Which, and why?",
        "responses": [{"response_id": "i1/a", "model": "m1", "content": "a", "meta": {"n": 1}},
                      {"response_id": "i1/b", "model": "m2", "content": "b"}],
        "pairs": [["i1/a", "i1/b"]], "meta": {"difficulty": "hard"}}  # fmt: skip


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _table(path: Path, rows: list[dict], json_columns: tuple[str, ...]) -> Path:
    """Rows as CSV or Parquet the way FORMATS.md describes: object/list columns as JSON text."""
    frame = pd.DataFrame(
        [{k: json.dumps(v) if k in json_columns else v for k, v in row.items()} for row in rows]
    )
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_judgements_read_the_same_from_every_file_type(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"j{suffix}"
    if suffix == ".jsonl":
        _jsonl(path, JUDGEMENTS)
    else:
        _table(path, JUDGEMENTS, ("pair", "shown"))
    lines = read_judgements(path)
    first = 2 if suffix == ".csv" else 1
    assert [line.location for line in lines] == (
        ["row 1", "row 2"] if suffix == ".parquet" else [first, first + 1]
    )
    point, pair = (line.record for line in lines)
    latency = "1.5" if suffix == ".csv" else 1.5  # a CSV cell is text: no type is guessed
    assert (point.score, point.rationale, point.meta) == (
        8.0, "fine\u2028still fine", {"latency": latency},
    )  # fmt: skip
    assert (pair.pair, pair.shown, pair.preference, pair.rationale) == (
        ("i1/a", "i1/b"), ("i1/b", "i1/a"), "tie", "",
    )  # fmt: skip


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_datasets_read_the_same_from_every_file_type(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"d{suffix}"
    if suffix == ".jsonl":
        _jsonl(path, [ITEM])
    else:
        _table(path, [ITEM], ("responses", "pairs", "meta"))
    (plan,) = read_dataset(path)
    assert (plan.item_id, plan.question, plan.meta, plan.pairs) == (
        "i1", "Which, and why?", {"difficulty": "hard"}, [("i1/a", "i1/b")],
    )  # fmt: skip
    assert [(r.response_id, r.model, r.meta) for r in plan.responses] == [
        ("i1/a", "m1", {"n": 1}), ("i1/b", "m2", {}),
    ]  # fmt: skip
    metadata = dataset_metadata(path)
    assert metadata.drop(columns="n").to_dict("records") == [
        {"item_id": "i1", "task": "t", "category": None, "group": None, "difficulty": "hard",
         "response_id": "i1/a", "model": "m1"},
        {"item_id": "i1", "task": "t", "category": None, "group": None, "difficulty": "hard",
         "response_id": "i1/b", "model": "m2"},
    ]  # fmt: skip
    assert metadata["n"].tolist()[0] == 1 and metadata["n"].isna().tolist() == [False, True]


def test_parquet_nan_and_csv_nan_are_refused_not_unparsed(tmp_path: Path) -> None:
    """NaN in a score became an unparsed judgement silently (pandas reads it as missing)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {k: [v] for k, v in JUDGEMENTS[0].items() if k != "score"}
    table = pa.table({**columns, "score": pa.array([float("nan")], pa.float64())})
    pq.write_table(table, tmp_path / "nan.parquet")  # a real NaN, not a null
    with pytest.raises(InvalidFile) as error:
        read_judgements(tmp_path / "nan.parquet")
    assert str(error.value) == (
        f"{tmp_path / 'nan.parquet'}:row 1: `score` is nan, which is not a number: write a "
        "number or null"
    )
    csv = tmp_path / "nan.csv"
    csv.write_text("judge,judge_kind,protocol,response_id,score\ngpt-4,model,mmie,r,NaN\n")
    with pytest.raises(InvalidFile) as error:
        read_judgements(csv)
    assert str(error.value) == f"{csv}:2: `score` is 'NaN' (str), but it must be a number (or null)"


def test_every_bad_line_is_collected_and_good_lines_are_not_reported(tmp_path: Path) -> None:
    rows = [JUDGEMENTS[0], dict(JUDGEMENTS[0], score="7"), JUDGEMENTS[1],
            dict(JUDGEMENTS[1], shown=["i1/a", "i1/c"]), JUDGEMENTS[0]]  # fmt: skip
    path = _jsonl(tmp_path / "j.jsonl", rows)
    with pytest.raises(InvalidFile) as error:
        read_judgements(path)
    assert [(p.location, p.field) for p in error.value.problems] == [
        (2, "score"),
        (4, "shown"),
        (5, "judge"),
    ]
    assert error.value.lines()[2] == (
        f"{path}:5: duplicate judgement (same judge, prompt_id, unit, shown order and sample as "
        "line 1): keep one, or give them different `sample` numbers in meta"
    )


def test_duplicates_are_refused_across_files_and_samples_tell_them_apart(tmp_path: Path) -> None:
    first = _jsonl(tmp_path / "a.jsonl", [JUDGEMENTS[0]])
    second = _jsonl(tmp_path / "b.jsonl", [JUDGEMENTS[0]])
    with pytest.raises(InvalidFile, match=f"as {first}:1"):
        read_judgement_files([first, second])
    _jsonl(second, [dict(JUDGEMENTS[0], meta={"sample": 1})])
    assert len(read_judgement_files([first, second])) == 2


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"score": True}, "score", "`score` is True (bool), but it must be a number (or null)"),
        ({"parse_status": "unparsed"}, "parse_status", "`parse_status` is 'unparsed' but `score` "
         "is 8.0: a judgement with a value was parsed ('ok'); drop the value or the status"),
        ({"created_at": "9999-12-31T23:00:00-05:00"}, "created_at", "`created_at` is "
         "9999-12-31T23:00:00-05:00, which is out of range once moved to UTC"),
        ({"meta": {"sample": 1e20}}, "meta.sample", "`meta.sample` is 1e+20 (float), but it must "
         "be a whole number from 0 to 2,147,483,647"),
        ({"pair": ["i1/a", "i1/b"]}, "response_id", "alignmmbench judgements name one "
         "`response_id` (and no `pair` or `shown`): fix the line"),
        ({"latency": 2, "meta": {"latency": 1}}, "meta", "`latency` appears both as a key and "
         "inside `meta`: keep one"),
    ],
)  # fmt: skip
def test_strict_values(tmp_path: Path, change: dict, field: str, message: str) -> None:
    path = _jsonl(tmp_path / "j.jsonl", [dict(JUDGEMENTS[0], **change)])
    with pytest.raises(InvalidRecord) as error:
        read_judgements(path)
    assert (error.value.field, str(error.value)) == (field, f"{path}:1: {message}")


def test_null_is_the_field_left_out(tmp_path: Path) -> None:
    nulls = dict.fromkeys(("rationale", "raw_output", "created_at", "meta", "parse_status",
                           "expected_score", "prompt_id"))  # fmt: skip
    path = _jsonl(tmp_path / "j.jsonl", [dict(JUDGEMENTS[0], **nulls)])
    (line,) = read_judgements(path)
    assert (line.record.rationale, line.record.meta, line.record.parse_status) == (
        "", {"latency": 1.5}, None,
    )  # fmt: skip


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_an_empty_file_is_refused(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"empty{suffix}"
    path.write_text("\n" if suffix == ".jsonl" else "")
    with pytest.raises(InvalidRecord, match="holds no items|the file is empty"):
        list(read_dataset(path))
    with pytest.raises(InvalidRecord, match="holds no judgements|the file is empty"):
        read_judgements(path)


def test_null_is_the_field_left_out_in_datasets_too(tmp_path: Path) -> None:
    nulls = dict.fromkeys(("benchmark", "task", "category", "group", "history", "reference",
                           "meta", "pairs"))  # fmt: skip
    item = dict(ITEM, **nulls, responses=[dict(ITEM["responses"][0], meta=None)])
    (plan,) = read_dataset(_jsonl(tmp_path / "d.jsonl", [item]))
    assert (plan.benchmark, plan.task, plan.history, plan.reference, plan.meta, plan.pairs) == (
        "generic", None, [], None, {}, [],
    )  # fmt: skip
    assert plan.responses[0].meta == {}
