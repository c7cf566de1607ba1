"""Strict JSON for import files: UTF-8, no NaN/Infinity, no NUL, bounded lines and nesting."""

from __future__ import annotations

from pathlib import Path

import pytest

from data.importers import InvalidRecord
from data.importers.strict_json import read_json_document, read_json_lines


def _lines(path: Path, data: bytes) -> list[object]:
    path.write_bytes(data)
    return [value for _, value in read_json_lines(path)]


@pytest.mark.parametrize(
    ("second_line", "message"),
    [
        (b'{"meta": {"weight": NaN}}', "`meta.weight` is NaN, which is not valid JSON: write a "
         "number or null"),
        (b'{"score": -Infinity}', "`score` is -Infinity, which is not valid JSON: write a number "
         "or null"),
        (b'{"item_id": "a\\u0000b"}', "`item_id` contains a NUL character (\\u0000), which "
         "cannot be stored: remove it"),
        (b'{"text": "caf\xe9"}', "not UTF-8 text (byte 14 of the line: invalid continuation "
         "byte): save the file as UTF-8"),
        (b'{"meta": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "not valid JSON here: the value "
         "is nested too deeply"),
        (b'{"a": 1} {"b": 2}', "not valid JSON (Extra data at column 10): fix the line"),
    ],
)  # fmt: skip
def test_bad_lines_are_refused_with_line_and_field(
    tmp_path: Path, second_line: bytes, message: str
) -> None:
    path = tmp_path / "f.jsonl"
    with pytest.raises(InvalidRecord) as error:
        _lines(path, b'{"ok": 1}\n' + second_line + b"\n")
    assert str(error.value) == f"{path}:2: {message}"


def test_long_lines_are_refused_without_reading_them_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("data.importers.strict_json.MAX_LINE_BYTES", 2 * 1024 * 1024)
    path = tmp_path / "f.jsonl"
    with pytest.raises(InvalidRecord) as error:
        _lines(path, b'{"ok": 1}\n{"x": "' + b"a" * (3 * 1024 * 1024) + b'"}\n')
    assert str(error.value) == (
        f"{path}:2: the line is longer than the 2 MB limit: split the record or shrink its content"
    )


def test_good_lines_blank_lines_and_unicode_pass(tmp_path: Path) -> None:
    assert _lines(tmp_path / "f.jsonl", '{"a": "猫"}\n\n{"b": [1.5, null]}\n'.encode()) == [
        {"a": "猫"}, {"b": [1.5, None]},
    ]  # fmt: skip


def test_documents_name_the_line_of_a_syntax_or_encoding_error(tmp_path: Path) -> None:
    path = tmp_path / "mmie.json"
    path.write_bytes(b'[\n {"id": "SA_1"},\n {"id": \n')
    with pytest.raises(InvalidRecord) as error:
        read_json_document(path)
    assert (
        str(error.value) == f"{path}:4: not valid JSON (Expecting value at column 1): fix the file"
    )
    path.write_bytes(b'[\n {"id": "SA_1"},\n {"id": "\xff"}]')
    with pytest.raises(InvalidRecord) as error:
        read_json_document(path)
    assert (
        str(error.value) == f"{path}:3: not UTF-8 text (invalid start byte): save the file as UTF-8"
    )
