"""One judgement (FORMATS.md §3) from a parsed line or table row into a typed record.

The rules are the same whatever the file type: the closed sets of values (``judge_kind``,
``protocol``, ``preference``, ``parse_status``) are checked; numbers are JSON numbers (not
``true``, not ``"7"``) and finite; an optional field given as null is the field left out; the
unit is one ``response_id`` (pointwise protocols) or a ``pair`` of two different responses
(pairwise), and ``shown`` is that pair in either order; a value goes with ``parse_status`` "ok"
and none with any other status; unknown keys are kept in ``meta``.

In CSV every value is text: numbers are written as JSON numbers, ``pair``, ``shown`` and ``meta``
as JSON text, and an empty cell is a missing value. In Parquet ``pair`` and ``shown`` are lists
(or JSON text) and ``meta`` JSON text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from data.io.importers.errors import InvalidRecord
from data.io.importers.strict_json import loads
from schemas.option_text import Message, OptionError
from schemas.protocols import PREFERENCES, PROTOCOL_NAMES, Protocol, get_protocol
from schemas.records import JudgementRecord
from schemas.tables import PARSE_STATUSES

RECORD_FIELDS = frozenset(JudgementRecord.model_fields)
REQUIRED: tuple[str, ...] = ("judge", "judge_kind", "protocol")
TEXT_FIELDS = frozenset(
    ("judge", "response_id", "rationale", "raw_output", "prompt_id", "annotator", "campaign")
)
NUMBER_FIELDS = frozenset(("score", "score_percent", "expected_score", "seconds"))
CLOSED_FIELDS: dict[str, tuple[str, ...]] = {
    "judge_kind": ("model", "human"),
    "protocol": PROTOCOL_NAMES,
    "preference": PREFERENCES,
    "parse_status": PARSE_STATUSES,
}
JSON_TEXT_FIELDS = frozenset(("pair", "shown", "meta"))
MAX_SAMPLE = 2**31 - 1
"""Largest ``meta.sample``: the column is a 32-bit integer on every database."""
_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_Fail = Callable[[str | None, Message], InvalidRecord]


def decode_table_row(
    row: dict[str, Any], kind: str, source: str, location: int | str
) -> dict[str, Any]:
    """A CSV or Parquet row as the JSON object it stands for; empty cells and nulls left out."""
    decoded: dict[str, Any] = {}
    for key, value in row.items():
        if value is None:
            continue
        if key in JSON_TEXT_FIELDS and isinstance(value, str):
            value = _json_text(key, value, source, location)
        elif kind == "csv" and key in NUMBER_FIELDS:
            value = _csv_number(key, value, source, location)
        elif kind == "csv" and key == "revision":
            value = int(value) if value.isdigit() else value  # a non-integer is named below
        decoded[key] = value
    return decoded


def parse_judgement(raw: Any, source: str, location: int | str) -> JudgementRecord:
    """Check one judgement object; return its record or raise :class:`InvalidRecord`."""

    def fail(field: str | None, message: Message) -> InvalidRecord:
        return InvalidRecord(source, location, field, message)

    if not isinstance(raw, dict):
        raise fail(None, f"the line is {_kind(raw)}, but each line must be an object (a judgement)")
    meta = raw.get("meta")
    if meta is None:
        meta = {}
    elif not isinstance(meta, dict):
        raise fail("meta", f"`meta` is {_kind(meta)}, but it must be an object")
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "meta":
            continue
        if key not in RECORD_FIELDS:
            extra[key] = value
        elif value is not None:  # null means the same as the field left out
            values[key] = _checked(key, value, fail)
    clash = sorted(set(extra) & set(meta))
    if clash:
        raise fail("meta", f"`{clash[0]}` appears both as a key and inside `meta`: keep one")
    for key in REQUIRED:
        if key not in values:
            raise fail(key, f"`{key}` is missing, but it is required: add it to the line")
    _check_unit(values, fail)
    _check_status(values, fail)
    merged = {**meta, **extra}
    if merged.get("sample") is None:  # null is the same as left out
        merged.pop("sample", None)
    else:
        _check_sample(merged["sample"], fail)
    try:
        return JudgementRecord(**values, meta=merged)
    except ValidationError as error:  # rules of the record type itself (e.g. what an id may hold)
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        raise fail(field, f"`{field}` is {_kind(first.get('input'))}: {first['msg']}") from None


def judgement_key(record: JudgementRecord) -> tuple[Any, ...]:
    """What identifies a judgement: judge, prompt, unit, shown order and sample number (and,
    for human exports, the campaign and the revision)."""
    unit = record.pair if record.pair is not None else record.response_id
    swapped = record.shown is not None and record.pair is not None and record.shown != record.pair
    return (
        record.judge,
        record.prompt_id or "",
        unit,
        swapped,
        record.meta.get("sample", 0),
        record.campaign,
        record.revision,
    )


def _checked(key: str, value: Any, fail: _Fail) -> Any:
    if key in TEXT_FIELDS:
        if not isinstance(value, str) or (key == "judge" and not value.strip()):
            raise fail(key, f"`{key}` is {_kind(value)}, but it must be a non-empty string")
        return value
    if key in NUMBER_FIELDS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail(key, f"`{key}` is {_kind(value)}, but it must be a number (or null)")
        if not math.isfinite(value):
            raise fail(key, f"`{key}` is {value}, which is not a number: write a number or null")
        if key == "seconds" and value < 0:
            raise fail(key, f"`seconds` is {value}, but time spent cannot be negative")
        return float(value)
    if key in CLOSED_FIELDS:
        if value not in CLOSED_FIELDS[key] or not isinstance(value, str):
            raise fail(
                key, f"`{key}` is {_kind(value)}; use one of " + ", ".join(CLOSED_FIELDS[key])
            )
        return value
    if key in ("pair", "shown"):
        if not (
            isinstance(value, list | tuple)
            and len(value) == 2
            and all(isinstance(part, str) and part for part in value)
        ):
            raise fail(key, f"`{key}` is {_kind(value)}, but it must be two response ids")
        return tuple(value)
    if key == "revision":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SAMPLE:
            raise fail(key, f"`revision` is {_kind(value)}, but it must be a whole number ≥ 1")
        return value
    if key == "created_at":
        return _moment(value, fail)
    raise AssertionError(f"field {key} has no rule")  # a new JudgementRecord field needs one


def _check_unit(values: dict[str, Any], fail: _Fail) -> None:
    protocol = values["protocol"]
    if protocol == "pairwise":
        if "pair" not in values or "response_id" in values:
            raise fail(
                "pair", "pairwise judgements name a `pair` (and no `response_id`): fix the line"
            )
        if "score" in values:
            raise fail("score", "pairwise judgements carry a `preference`, not a `score`")
        a, b = values["pair"]
        if a == b:
            raise fail("pair", f"`pair` compares {a!r} with itself: name two responses")
        if "shown" in values and values["shown"] not in ((a, b), (b, a)):
            raise fail(
                "shown",
                f"`shown` is {list(values['shown'])}, but it must be the pair {[a, b]} in either "
                "order",
            )
        return
    if "response_id" not in values or "pair" in values or "shown" in values:
        raise fail(
            "response_id",
            f"{protocol} judgements name one `response_id` (and no `pair` or `shown`): fix the "
            "line",
        )
    if "preference" in values:
        raise fail("preference", f"{protocol} judgements carry a `score`, not a `preference`")


def _check_status(values: dict[str, Any], fail: _Fail) -> None:
    field = "preference" if values["protocol"] == "pairwise" else "score"
    status = values.get("parse_status")
    if status == "ok" and field not in values:
        raise fail(
            field,
            f"`{field}` is missing but `parse_status` is 'ok': give the value or set "
            "parse_status to 'unparsed'",
        )
    if status not in (None, "ok") and field in values:
        raise fail(
            "parse_status",
            f"`parse_status` is {status!r} but `{field}` is {values[field]!r}: a judgement with "
            "a value was parsed ('ok'); drop the value or the status",
        )


def _check_sample(value: Any, fail: _Fail) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
        or not 0 <= value <= MAX_SAMPLE
    ):
        raise fail(
            "meta.sample",
            f"`meta.sample` is {_kind(value)}, but it must be a whole number from 0 to "
            f"{MAX_SAMPLE:,}",
        )


def _moment(value: Any, fail: _Fail) -> datetime:
    """An ISO 8601 time in UTC (a time without offset is taken as UTC)."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise fail(
                "created_at",
                f"`created_at` is {_kind(value)}, but it must be an ISO 8601 date and time such "
                "as 2026-11-29T07:00:00Z",
            ) from None
    else:
        raise fail("created_at", f"`created_at` is {_kind(value)}, but it must be a date string")
    try:
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except OverflowError:
        raise fail(
            "created_at", f"`created_at` is {value!s}, which is out of range once moved to UTC"
        ) from None


def _json_text(key: str, value: str, source: str, location: int | str) -> Any:
    try:
        return loads(value, source, location)
    except InvalidRecord as error:
        raise InvalidRecord(
            source, location, key, f"`{key}` is not valid JSON text ({error.message})"
        ) from None


def _csv_number(key: str, value: str, source: str, location: int | str) -> Any:
    if not _JSON_NUMBER.fullmatch(value):
        return value  # refused by parse_judgement, which names the field and the value
    number = float(value)
    if not math.isfinite(number):
        raise InvalidRecord(
            source, location, key, f"`{key}` is {value[:40]}, too large for a 64-bit float"
        )
    return number


def _kind(value: Any) -> str:
    if value is None:
        return "missing"
    text = repr(value)
    return f"{text} ({type(value).__name__})" if len(text) <= 40 else f"a {type(value).__name__}"


Scale = tuple[float, float, float | None]
"""A ``score`` protocol's scale: minimum, maximum and step (None: any value between)."""


def import_protocol(
    name: str, scale: Scale | None, source: str, location: int | str | None
) -> Protocol:
    """The protocol ``name`` (with ``scale`` when it is ``score``) that an import reads a file
    with: forced for every line, or named by one; an unknown name or a ``score`` without its
    scale is the line's (or, forced, the file's) problem. One rule for ``judgments import`` and
    ``annotations import``."""
    low, high, step = scale if scale else (None, None, None)
    try:
        return get_protocol(name, scale_min=low, scale_max=high, step=step)
    except OptionError as error:  # its option named by the front end ("--scale" in the CLI)
        message = error.args[0] if len(error.args) == 1 else str(error)
        raise InvalidRecord(source, location, "protocol", message) from None
    except ValueError as error:
        raise InvalidRecord(source, location, "protocol", str(error)) from None
