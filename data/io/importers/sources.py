"""Bytes to rows: the one place where import files are opened and split into records.

Every reader of dataset and judgement files (``import``, ``judgments import``, ``calibrate
--judgments/--dataset``, the Data page) goes through here, so the same files are accepted and
refused everywhere:

- only regular files are read: a pipe, a device (``/dev/zero``) or a folder is refused before a
  byte is read, since such a file cannot be read twice or may never end;
- JSON Lines are split on ``\\n`` alone (U+2028, U+2029, U+0085 and ``\\r`` are text inside a
  string, as the exporters write them), each line parsed by
  :func:`~data.io.importers.strict_json.loads`;
- CSV is comma-separated UTF-8 (a byte-order mark is allowed) with one header line; Parquet is read
  with pyarrow; a Hugging Face ``datasets`` folder (``Dataset.save_to_disk``: ``state.json`` beside
  its Arrow files) with ``datasets``, its ``Image`` values undecoded (``{"bytes", "path"}``, as
  Parquet holds them). Rows are numbered as a text editor numbers lines (CSV) or from 1 (Parquet
  and ``datasets``, "row N").

A problem with one line is reported to the caller's :class:`~data.io.importers.errors.Problems` and
reading goes on; a problem with the file as a whole raises at once.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal

from data.io.importers.errors import InvalidRecord, Problems
from data.io.importers.strict_json import loads
from schemas.csv_cells import restored

FileKind = Literal["jsonl", "csv", "parquet", "datasets"]
FILE_KINDS: tuple[str, ...] = ("jsonl", "csv", "parquet", "datasets")
MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest accepted JSON Lines line or CSV field (16 MiB); longer ones are refused, not read."""
MAX_FILE_BYTES = 512 * 1024 * 1024
"""Largest accepted single-document JSON file (MMIE)."""
MAX_SMALL_FILE_BYTES = 4 * 1024 * 1024
"""Largest accepted small file given to an option: prices, families, campaign instructions, a
prompt template (4 MiB; such files are a few kilobytes)."""
FILE_SUFFIXES: dict[str, FileKind] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
}
"""The file types every reader of a dataset or judgements file takes, by extension (the CLI's
and the Data page's uploads alike)."""


def file_kind(path: Path) -> FileKind:
    """``jsonl``, ``csv`` or ``parquet`` from the file name (``.json`` and ``.ndjson`` are JSON
    Lines), ``datasets`` for a folder that ``Dataset.save_to_disk`` wrote. What is not a regular
    file (or such a folder) is refused first: its name says nothing about it."""
    if path.is_dir() and (path / "state.json").is_file():
        return "datasets"
    if path.is_dir() and (path / "dataset_dict.json").is_file():
        splits = sorted(child.name for child in path.iterdir() if (child / "state.json").is_file())
        raise InvalidRecord(
            str(path),
            None,
            None,
            "is a DatasetDict folder (several splits): give one split's folder, e.g. "
            + (str(path / splits[0]) if splits else f"{path}/train"),
        )
    regular_file(path)
    kind = FILE_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise InvalidRecord(
            str(path),
            None,
            None,
            f"unknown file type {path.suffix or '(no extension)'}: name it .jsonl, .csv or "
            ".parquet after what it holds",
        )
    return kind


def regular_file(path: Path) -> os.stat_result:
    """The file's status; a missing file, a folder, a pipe or a device raises
    :class:`InvalidRecord` (checked without opening it, so a named pipe cannot block)."""
    try:
        status = path.stat()
    except OSError as error:
        raise InvalidRecord(str(path), None, None, f"cannot read it ({error.strerror})") from None
    if not stat.S_ISREG(status.st_mode):
        raise InvalidRecord(
            str(path),
            None,
            None,
            f"is {_kind_of(status.st_mode)}, not a regular file: save the data to a file and "
            "give that file's path",
        )
    return status


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading in binary mode, after :func:`regular_file`."""
    regular_file(path)
    try:
        handle = path.open("rb")
    except OSError as error:
        raise InvalidRecord(str(path), None, None, f"cannot read it ({error.strerror})") from None
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # replaced between the two looks
        handle.close()
        raise InvalidRecord(str(path), None, None, "is not a regular file: give a file's path")
    return handle


def file_sha256(path: Path) -> str:
    """SHA-256 of the file's bytes."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def count_lines(path: Path) -> int:
    """Lines in a regular file (a progress bar's total), counted without parsing."""
    with open_regular(path) as handle:
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))


def progress_total(path: Path) -> int | None:
    """A progress bar's total for reading ``path``: its lines for JSON Lines, else unknown."""
    return count_lines(path) if file_kind(path) == "jsonl" else None


def read_json_lines(path: Path, problems: Problems | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line of a JSON Lines file.

    A UTF-8 byte-order mark at the start of the file is skipped, as CSV files' is (editors on
    Windows write one). A bad line goes to ``problems`` and is skipped (without ``problems`` it
    raises).
    """
    source = str(path)
    with open_regular(path) as handle:
        number = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    _skip_rest_of_line(handle)
                    raise InvalidRecord(
                        source,
                        number,
                        None,
                        f"the line is longer than the {MAX_LINE_BYTES // (1024 * 1024)} MB "
                        "limit: split the record or shrink its content",
                    )
                text = _decoded(raw, source, number)
                if text.strip(" \t\r\n"):
                    yield number, loads(text.rstrip("\r\n"), source, number)
            except InvalidRecord as error:
                report(problems, error)


def read_json_document(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """A whole-file JSON document (e.g. MMIE's list), with the same checks; at most
    ``max_bytes`` bytes are read."""
    return loads(read_text(path, max_bytes), str(path), 1, per_line=False)


def read_text(path: Path, max_bytes: int = MAX_SMALL_FILE_BYTES) -> str:
    """The text of a whole UTF-8 file of at most ``max_bytes`` bytes (a regular file only, as
    every file read here); a larger file is refused, not read."""
    source = str(path)
    with open_regular(path) as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise InvalidRecord(
            source, None, None, f"the file is over the {_size(max_bytes)} limit: split it"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise InvalidRecord(
            source, line, None, f"not UTF-8 text ({error.reason}): save the file as UTF-8"
        ) from None


def _size(limit: int) -> str:
    """``512 MB``, ``4 MB``: the limit as the messages state it (MiB, as they always did)."""
    return f"{limit // (1024 * 1024):,} MB"


def read_table_rows(
    path: Path, kind: FileKind, problems: Problems | None = None
) -> Iterator[tuple[int | str, dict[str, Any]]]:
    """``(location, row)`` of a CSV file (values are strings; an empty cell is ``None``) or a
    Parquet file or ``datasets`` folder (values as pyarrow gives them; a null is ``None``)."""
    if kind == "csv":
        yield from _csv_rows(path, problems)
    elif kind == "datasets":
        yield from _datasets_rows(path)
    else:
        yield from _parquet_rows(path)


def _csv_rows(path: Path, problems: Problems | None) -> Iterator[tuple[int, dict[str, Any]]]:
    source = str(path)
    csv.field_size_limit(MAX_LINE_BYTES)
    with open_regular(path) as raw, io.TextIOWrapper(raw, "utf-8-sig", newline="") as text:
        reader = csv.reader(text, strict=True)
        header: list[str] | None = None
        while True:
            start = reader.line_num + 1
            try:
                cells = next(reader, None)
            except UnicodeDecodeError as error:
                raise InvalidRecord(
                    source, start, None, f"not UTF-8 text ({error.reason}): save the file as UTF-8"
                ) from None
            except csv.Error as error:
                raise InvalidRecord(source, start, None, f"not valid CSV ({error})") from None
            if cells is None:
                if header is None:
                    raise InvalidRecord(source, None, None, "the file is empty: nothing to read")
                return
            if not cells or cells == [""]:
                continue
            if header is None:
                header = _header(cells, source)
                continue
            if len(cells) != len(header):
                report(
                    problems,
                    InvalidRecord(
                        source,
                        start,
                        None,
                        f"the line has {len(cells)} fields but the header has {len(header)}: quote "
                        "values that hold commas",
                    ),
                )
                continue
            yield (
                start,
                {
                    key: (restored(value) if value != "" else None)  # csv_cells.neutralised
                    for key, value in zip(header, cells, strict=True)
                },
            )


def _header(cells: list[str], source: str) -> list[str]:
    names = [cell.strip() for cell in cells]
    if len(names) == 1 and any(mark in names[0] for mark in (";", "\t", "|")):
        raise InvalidRecord(
            source,
            1,
            None,
            f"the header {names[0][:60]!r} is one column: the file is not comma-separated; save "
            "it as CSV with commas",
        )
    for index, name in enumerate(names):
        if not name:
            raise InvalidRecord(source, 1, None, f"column {index + 1} of the header has no name")
        if name in names[:index]:
            raise InvalidRecord(
                source, 1, name, f"the column `{name}` appears twice in the header: keep one"
            )
    return names


def _parquet_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = str(path)
    with open_regular(path) as handle:
        try:
            table = pq.ParquetFile(handle)
            batches = table.iter_batches(batch_size=4096)
            number = 0
            for batch in batches:
                for row in batch.to_pylist():
                    number += 1
                    yield f"row {number}", row
        except (pa.ArrowException, OSError) as error:
            raise InvalidRecord(
                source, None, None, f"not a readable Parquet file ({error})"
            ) from None


def _datasets_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """The rows of a ``save_to_disk`` folder in Arrow form, so that ``Image`` values stay
    ``{"bytes", "path"}`` structs (no image is decoded here; the import checks them)."""
    import datasets

    source = str(path)
    try:
        dataset = datasets.load_from_disk(str(path))
    except (OSError, ValueError) as error:
        raise InvalidRecord(
            source, None, None, f"not a readable Hugging Face datasets folder ({error})"
        ) from None
    if not isinstance(dataset, datasets.Dataset):
        raise InvalidRecord(source, None, None, "holds several splits: give one split's folder")
    number = 0
    for batch in dataset.with_format("arrow").iter(batch_size=4096):
        for row in batch.to_pylist():
            number += 1
            yield f"row {number}", row


def report(problems: Problems | None, error: InvalidRecord) -> None:
    """Add ``error`` to ``problems``; without a collector, raise it."""
    if problems is None:
        raise error
    problems.add(error)


def _skip_rest_of_line(handle: BinaryIO) -> None:
    while (chunk := handle.readline(1 << 20)) and not chunk.endswith(b"\n"):
        pass


def _decoded(raw: bytes, source: str, number: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidRecord(
            source,
            number,
            None,
            f"not UTF-8 text (byte {error.start + 1} of the line: {error.reason}): save the "
            "file as UTF-8",
        ) from None


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"
