"""Strict JSON for import files: UTF-8, no NaN/Infinity, no NUL, bounded lines and nesting."""

from __future__ import annotations

from pathlib import Path

import pytest

from data.io.importers import InvalidRecord
from data.io.importers.sources import read_json_document, read_json_lines


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
        (b'{"score": 1, "score": 2}', "the key `score` appears twice in one object; JSON "
         "readers disagree on which value wins: keep one"),
        (b'{"expected_score": 1e309}', "`expected_score` is 1e309, too large for a 64-bit float "
         "(it would be read as Infinity): write a smaller number"),
        (b'{"meta": {"note": "a\\ud800b"}}', "`meta.note` contains a lone surrogate escape "
         "(\\ud800\u2013\\udfff without its pair), which is not text: remove it or write the "
         "whole character"),
        (b'{"n": ' + b"9" * 5000 + b"}", "not valid JSON here (Exceeds the limit (4300 digits) "
         "for integer string conversion: value has 5000 digits; use "
         "sys.set_int_max_str_digits() to increase the limit): fix the line"),
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
    monkeypatch.setattr("data.io.importers.sources.MAX_LINE_BYTES", 2 * 1024 * 1024)
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


def test_lines_are_split_on_newline_alone(tmp_path: Path) -> None:
    """U+2028, U+2029, U+0085 and a raw CR are text, not line ends (the exporters write them
    raw inside strings); str.splitlines() would cut the line at each of them."""
    text = "a\u2028b\u2029c\u0085d\re"
    data = ('{"r": "' + text.replace("\r", "\\r") + '"}\n{"r": "x\u2028"}\r\n').encode()
    assert _lines(tmp_path / "f.jsonl", data) == [{"r": text}, {"r": "x\u2028"}]


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "fifo", "folder"])
def test_only_regular_files_are_read(tmp_path: Path, special: str) -> None:
    """A device may never end (/dev/zero), a pipe may block forever: neither is opened."""
    import os

    path = Path(special)
    if special == "fifo":
        path = tmp_path / "pipe.jsonl"
        os.mkfifo(path)
    elif special == "folder":
        path = tmp_path / "folder.jsonl"
        path.mkdir()
    kind = {"/dev/zero": "a device", "/dev/null": "a device", "fifo": "a pipe"}.get(special)
    with pytest.raises(InvalidRecord) as error:
        list(read_json_lines(path))
    assert str(error.value) == (
        f"{path}: is {kind or 'a folder'}, not a regular file: save the data to a file and give "
        "that file's path"
    )
    with pytest.raises(InvalidRecord):
        read_json_document(path)
