"""Read judgement files (FORMATS.md §3) as JSON Lines, CSV or Parquet into typed records.

The same reader serves ``judgments import`` and the round-trip checks of the exporters: whatever
``export annotations`` / ``export judgments`` writes, :func:`read_judgement_records` reads back as
the same :class:`~schemas.records.JudgementRecord` objects. In CSV, ``pair``, ``shown`` and
``meta`` are JSON text; in Parquet, ``pair`` and ``shown`` are lists and ``meta`` JSON text.
Keys the format does not know are kept in ``meta``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from data.importers.errors import InvalidRecord
from data.importers.strict_json import loads, read_json_lines
from schemas.records import JudgementRecord

RECORD_FIELDS = frozenset(JudgementRecord.model_fields)
JSON_TEXT_COLUMNS = ("pair", "shown", "meta")
FORMATS: tuple[str, ...] = ("jsonl", "csv", "parquet")


def file_format(path: Path) -> str:
    """``jsonl``, ``csv`` or ``parquet`` from the file extension (``.json`` counts as jsonl)."""
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("jsonl", "json", "ndjson"):
        return "jsonl"
    if suffix in ("csv", "parquet"):
        return suffix
    raise InvalidRecord(
        str(path), 0, None, f"unknown file type .{suffix}: use .jsonl, .csv or .parquet"
    )


def read_judgement_records(path: Path) -> Iterator[tuple[int | str, JudgementRecord]]:
    """``(line, record)`` for every judgement in ``path``; a malformed one raises
    :class:`InvalidRecord` naming the line and field."""
    for location, raw in _raw_rows(path):
        yield location, parse_judgement(raw, str(path), location)


def parse_judgement(raw: Any, source: str, location: int | str) -> JudgementRecord:
    """One judgement line as a record; unknown keys go to ``meta``."""
    if not isinstance(raw, dict):
        raise InvalidRecord(source, location, None, "the line must be an object (a judgement)")
    meta = raw.get("meta") or {}
    if not isinstance(meta, dict):
        raise InvalidRecord(source, location, "meta", f"`meta` is {meta!r}, it must be an object")
    extra = {key: value for key, value in raw.items() if key not in RECORD_FIELDS}
    known = {key: value for key, value in raw.items() if key in RECORD_FIELDS and key != "meta"}
    try:
        return JudgementRecord(**known, meta={**meta, **extra})
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InvalidRecord(
            source, location, field,
            f"`{field}` is {first.get('input')!r}: {first['msg'][:1].lower()}{first['msg'][1:]}",
        ) from None  # fmt: skip


def _raw_rows(path: Path) -> Iterator[tuple[int | str, dict[str, Any]]]:
    kind = file_format(path)
    if kind == "jsonl":
        yield from read_json_lines(path)
        return
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False) if kind == "csv" else (
            pd.read_parquet(path)
        )  # fmt: skip
    except Exception as error:  # pandas/pyarrow raise many types for unreadable files
        raise InvalidRecord(str(path), 0, None, f"cannot read the {kind} file: {error}") from None
    first_row = 2 if kind == "csv" else 1  # CSV line 1 is the header
    for offset, row in enumerate(frame.to_dict(orient="records")):
        location = first_row + offset
        yield location, _decoded(row, kind, str(path), location)


def _decoded(row: dict[str, Any], kind: str, source: str, location: int) -> dict[str, Any]:
    decoded: dict[str, Any] = {}
    for key, value in row.items():
        if kind == "csv":
            value = _csv_value(key, value, source, location)
        elif key in JSON_TEXT_COLUMNS and isinstance(value, str):
            value = _json_text(key, value, source, location)
        elif hasattr(value, "tolist"):
            value = value.tolist()
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        decoded[key] = value
    return decoded


def _csv_value(key: str, value: str, source: str, location: int) -> Any:
    if value == "":
        return None
    if key in JSON_TEXT_COLUMNS:
        return _json_text(key, value, source, location)
    if key in ("score", "score_percent", "expected_score", "seconds"):
        try:
            return float(value)
        except ValueError:
            return value  # left to the record's validation, which names the field
    if key == "revision":
        return int(value) if value.isdigit() else value
    return value


def _json_text(key: str, value: str, source: str, location: int) -> Any:
    try:
        return loads(value, source, location)
    except InvalidRecord as error:
        raise InvalidRecord(
            source, location, key, f"`{key}` is not valid JSON text ({error.message})"
        ) from None
