"""JSON as the import files must be: no NaN/Infinity (nor numbers too large for a float), no
duplicate keys, no NUL characters, no lone surrogates, bounded nesting. Each problem is an
:class:`InvalidRecord` naming the line and, where it can, the field.

``NaN`` and ``Infinity`` are not JSON (RFC 8259) and break PostgreSQL's JSON type and every
export; ``1e309`` would be read as Infinity. A duplicate key would silently keep the last value
(RFC 8259 §4 leaves it undefined). A NUL character cannot be stored in PostgreSQL text and a lone
surrogate (``"\\ud800"``) is not text at all: it cannot be encoded as UTF-8. All are refused, not
cleaned.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

from data.io.importers.errors import InvalidRecord


class _NonFinite(float):
    """Marks a NaN/Infinity literal found while parsing, so its field can be named."""

    literal: str

    def __new__(cls, literal: str) -> _NonFinite:
        value = super().__new__(cls, float(literal.replace("Infinity", "inf")))
        value.literal = literal
        return value


class _Refused(ValueError):
    """Raised from inside the JSON parser's hooks; becomes an :class:`InvalidRecord`."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        keys = [k for k, _ in pairs]
        key = next(k for index, k in enumerate(keys) if k in keys[:index])
        raise _Refused(
            key,
            f"the key `{key}` appears twice in one object; JSON readers disagree on which "
            "value wins: keep one",
        )
    return value


class _TooLarge(float):
    """Marks a number literal too large for a float (``1e309``), so its field can be named."""

    literal: str

    def __new__(cls, literal: str) -> _TooLarge:
        value = super().__new__(cls, math.inf)
        value.literal = literal
        return value


class _Parser:
    """A JSON decoder with the hooks above, built once per thread (building one per line costs
    more than the parsing) and flags that say what the last document held."""

    def __init__(self) -> None:
        self.non_finite = self.too_large = False
        self.decoder = json.JSONDecoder(
            parse_constant=self._constant, parse_float=self._float, object_pairs_hook=_object
        )

    def _constant(self, literal: str) -> _NonFinite:
        self.non_finite = True
        return _NonFinite(literal)

    def _float(self, literal: str) -> float:
        value = float(literal)
        if math.isinf(value):
            self.too_large = True
            return _TooLarge(literal)
        return value

    def decode(self, text: str) -> Any:
        self.non_finite = self.too_large = False
        return self.decoder.decode(text)


_PARSERS = threading.local()  # the app parses uploads on several threads at once


def loads(text: str, source: str, location: int | str | None, *, per_line: bool = True) -> Any:
    """Parse ``text`` with the checks above; an error names ``source:location`` and the field.

    For a whole document (``per_line=False``) a JSON syntax error names its own line.
    """
    parser: _Parser | None = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = _Parser()
    fix = "fix the line" if per_line else "fix the file"
    try:
        value = parser.decode(text)
    except json.JSONDecodeError as error:
        where = location if per_line else error.lineno
        raise InvalidRecord(
            source, where, None, f"not valid JSON ({error.msg} at column {error.colno}): {fix}"
        ) from None
    except _Refused as error:
        raise InvalidRecord(source, location, error.field, error.message) from None
    except RecursionError:
        raise InvalidRecord(
            source, location, None, "not valid JSON here: the value is nested too deeply"
        ) from None
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        raise InvalidRecord(
            source, location, None, f"not valid JSON here ({error}): {fix}"
        ) from None
    found_non_finite, found_too_large = parser.non_finite, parser.too_large
    if found_non_finite:
        field, bad = find(value, lambda v: isinstance(v, _NonFinite))
        raise InvalidRecord(
            source,
            location,
            field,
            f"`{field}` is {bad.literal}, which is not valid JSON: write a number or null",
        )
    if found_too_large:
        field, bad = find(value, lambda v: isinstance(v, _TooLarge))
        raise InvalidRecord(
            source,
            location,
            field,
            f"`{field}` is {bad.literal[:40]}, too large for a 64-bit float (it would be read as "
            "Infinity): write a smaller number",
        )
    if "\x00" in text or "\\u0000" in text:
        field, _ = find(value, lambda v: isinstance(v, str) and "\x00" in v)
        if field is not None:
            raise InvalidRecord(
                source,
                location,
                field,
                f"`{field}` contains a NUL character (\\u0000), which cannot be stored: remove it",
            )
    if "\\ud" in text or "\\uD" in text:  # surrogates only come from escapes in valid UTF-8
        field, _ = find(value, _has_lone_surrogate)
        if field is not None:
            raise InvalidRecord(
                source,
                location,
                field,
                f"`{field}` contains a lone surrogate escape (\\ud800–\\udfff without its pair), "
                "which is not text: remove it or write the whole character",
            )
    return value


def _has_lone_surrogate(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def find(value: Any, wanted: Any, path: str = "") -> tuple[str | None, Any]:
    """Path (``meta.weight``, ``responses[0].content``) and value of the first match; keys
    are searched too (a key is a string like any other)."""
    if wanted(value):
        return path or "(line)", value
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in children:
        child_path = (
            f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)
        )
        if isinstance(key, str) and wanted(key):
            return child_path, key
        found = find(child, wanted, child_path)
        if found[0] is not None:
            return found
    return None, None
