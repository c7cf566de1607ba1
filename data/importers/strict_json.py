"""JSON as the import files must be: UTF-8, no NaN/Infinity literals, no NUL characters, lines of
bounded size, bounded nesting. Each problem is an :class:`InvalidRecord` naming line and field.

``NaN`` and ``Infinity`` are not JSON (RFC 8259) and break PostgreSQL's JSON type and every
export; a NUL character cannot be stored in PostgreSQL text. Both are refused, not cleaned.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from data.importers.errors import InvalidRecord

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest accepted JSON Lines line (16 MiB); longer ones are refused, not read whole."""
MAX_FILE_BYTES = 512 * 1024 * 1024
"""Largest accepted single-document JSON file (MMIE)."""


class _NonFinite(float):
    """Marks a NaN/Infinity literal found while parsing, so its field can be named."""

    def __new__(cls, literal: str) -> _NonFinite:
        value = super().__new__(cls, float(literal.replace("Infinity", "inf")))
        value.literal = literal  # type: ignore[attr-defined]
        return value


def read_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed object)`` for each non-blank line of a JSON Lines file."""
    source = str(path)
    try:
        handle = path.open("rb")
    except OSError as error:
        raise InvalidRecord(source, 0, None, f"cannot open the file ({error.strerror})") from None
    with handle:
        number = 0
        while True:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise InvalidRecord(
                    source, number, None,
                    f"the line is longer than the {MAX_LINE_BYTES // (1024 * 1024)} MB limit: "
                    "split the record or shrink its content",
                )  # fmt: skip
            text = _decoded(raw, source, number)
            if text.strip():
                yield number, loads(text.rstrip("\r\n"), source, number)


def read_json_document(path: Path) -> Any:
    """A whole-file JSON document (e.g. MMIE's list), with the same checks."""
    source = str(path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InvalidRecord(
            source, 1, None,
            f"the file is {size / 1e6:,.0f} MB, over the {MAX_FILE_BYTES // 1_000_000:,} MB "
            "limit: split it",
        )  # fmt: skip
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise InvalidRecord(
            source, line, None, f"not UTF-8 text ({error.reason}): save the file as UTF-8"
        ) from None
    return loads(text, source, 1, per_line=False)


def loads(text: str, source: str, location: int | str, *, per_line: bool = True) -> Any:
    """Parse ``text``; NaN/Infinity literals and NUL characters are errors naming their field.

    For a whole document (``per_line=False``) a JSON syntax error names its own line.
    """
    found_non_finite = False

    def non_finite(literal: str) -> _NonFinite:
        nonlocal found_non_finite
        found_non_finite = True
        return _NonFinite(literal)

    try:
        value = json.loads(text, parse_constant=non_finite)
    except json.JSONDecodeError as error:
        where = location if per_line else error.lineno
        fix = "fix the line" if per_line else "fix the file"
        raise InvalidRecord(
            source, where, None, f"not valid JSON ({error.msg} at column {error.colno}): {fix}"
        ) from None
    except RecursionError:
        raise InvalidRecord(
            source, location, None, "not valid JSON here: the value is nested too deeply"
        ) from None
    if found_non_finite:
        field, bad = _find(value, lambda v: isinstance(v, _NonFinite))
        raise InvalidRecord(
            source, location, field,
            f"`{field}` is {bad.literal}, which is not valid JSON: write a number or null",  # type: ignore[union-attr]
        )  # fmt: skip
    if "\x00" in text or "\\u0000" in text:
        field, _ = _find(value, lambda v: isinstance(v, str) and "\x00" in v)
        if field is not None:
            raise InvalidRecord(
                source, location, field,
                f"`{field}` contains a NUL character (\\u0000), which cannot be stored: remove it",
            )  # fmt: skip
    return value


def _decoded(raw: bytes, source: str, number: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidRecord(
            source, number, None,
            f"not UTF-8 text (byte {error.start + 1} of the line: {error.reason}): save the "
            "file as UTF-8",
        ) from None  # fmt: skip


def _find(value: Any, wanted: Any, path: str = "") -> tuple[str | None, Any]:
    """Path (``meta.weight``, ``responses[0].content``) and value of the first match."""
    if wanted(value):
        return path or "(line)", value
    children = (
        value.items() if isinstance(value, dict)
        else enumerate(value) if isinstance(value, list) else ()
    )  # fmt: skip
    for key, child in children:
        child_path = (
            f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)
        )
        found = _find(child, wanted, child_path)
        if found[0] is not None:
            return found
    return None, None
