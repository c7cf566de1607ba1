"""External ids and unit keys: the one rule for ids, the one way to name a unit (FORMATS.md §1).

An id names an item, a response, a dataset, a campaign, a judge or an annotator in files, on
screen and in unit keys. It must read the same everywhere, so it is refused when it holds
something a reader cannot see or that changes how the text around it is shown: control
characters (C0, C1, DEL), line or paragraph separators, lone surrogates, byte-order marks and
the Unicode bidirectional controls (the "Trojan Source" characters, CVE-2021-42574); and when it
is empty, has leading or trailing white space, or is longer than :data:`MAX_ID_LENGTH`.

A unit key names what is judged: ``r:<response_id>`` for one response, ``p:<a>|<b>`` for a pair
in canonical order. A response id may not contain ``|``, so that no two pairs share a key
(``x|y`` + ``z`` and ``x`` + ``y|z`` would both be ``p:x|y|z``).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

MAX_ID_LENGTH = 512
PAIR_SEPARATOR = "|"
HUMAN_PREFIX = "annotator:"
"""A human rater's name among judges and in the campaign frame: ``annotator:<account name>``."""


def account_name(rater: str) -> str:
    """A human rater's account name, as pages show it (``annotator:ann1`` → ``ann1``)."""
    return rater.removeprefix(HUMAN_PREFIX)


# Unicode bidirectional formatting characters (UAX #9): embeddings, overrides, isolates, marks.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cs": "a lone surrogate",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}


def id_problem(value: str, *, response: bool = False) -> str | None:
    """What is wrong with ``value`` as an id (None when it is a valid id).

    ``response=True`` adds the rule for response ids: no ``|`` (it separates a pair's ids).
    """
    if not value:
        return "is empty"
    if len(value) > MAX_ID_LENGTH:
        return f"has {len(value)} characters; ids have at most {MAX_ID_LENGTH}"
    if value != value.strip():
        return "starts or ends with white space: remove it"
    # No refused character is printable ASCII: most ids skip the per-character look-up.
    refused = None if value.isascii() and value.isprintable() else _refused_character(value)
    return refused or _pipe_problem(value, response)


def _refused_character(value: str) -> str | None:
    for position, character in enumerate(value, start=1):
        category = unicodedata.category(character)
        if character in _BIDI_CONTROLS:
            kind = "a bidirectional control"
        elif character == "\ufeff":
            kind = "a byte-order mark"
        elif category in _REFUSED_CATEGORIES:
            kind = _REFUSED_CATEGORIES[category]
        else:
            continue
        return f"holds {kind} (U+{ord(character):04X}) at character {position}: remove it"
    return None


def _pipe_problem(value: str, response: bool) -> str | None:
    if response and PAIR_SEPARATOR in value:
        return (
            f"holds {PAIR_SEPARATOR!r}, which separates the two ids of a pair "
            "(p:<a>|<b>): use another character"
        )
    return None


def check_id(value: str) -> str:
    """``value`` if it is a valid id (:func:`id_problem`), else :class:`ValueError`."""
    problem = id_problem(value)
    if problem is not None:
        raise ValueError(f"the id {_shown(value)} {problem}")
    return value


def check_response_id(value: str) -> str:
    """``value`` if it is a valid response id (an id without ``|``), else :class:`ValueError`."""
    problem = id_problem(value, response=True)
    if problem is not None:
        raise ValueError(f"the response id {_shown(value)} {problem}")
    return value


def _shown(value: str) -> str:
    """The id for a message: escaped (``ascii``) so what cannot be seen can be, and shortened."""
    text = ascii(value)
    return text if len(text) <= 60 else text[:57] + "..."


ExternalId = Annotated[str, AfterValidator(check_id)]
"""A string field holding an id: validated by :func:`check_id`."""

ResponseId = Annotated[str, AfterValidator(check_response_id)]
"""A string field holding a response id: validated by :func:`check_response_id`."""


@dataclass(frozen=True)
class UnitKey:
    """A parsed unit key: one response (``response_id``) or a pair (``pair``), never both."""

    response_id: str | None = None
    pair: tuple[str, str] | None = None

    @property
    def response_ids(self) -> tuple[str, ...]:
        """The response ids the unit shows: one, or the pair in canonical order."""
        if self.pair is not None:
            return self.pair
        assert self.response_id is not None
        return (self.response_id,)


def response_unit_key(response_id: str) -> str:
    """Unit key of a pointwise unit: ``r:<response_id>``."""
    return f"r:{response_id}"


def pair_unit_key(response_a: str, response_b: str) -> str:
    """Unit key of a pair in canonical order: ``p:<a>|<b>`` (response ids hold no ``|``)."""
    return f"p:{response_a}{PAIR_SEPARATOR}{response_b}"


def unit_key(response_id: str | None, pair: tuple[str, str] | None) -> str:
    """The key of a pointwise unit (``response_id``) or of a pair (``pair``)."""
    if pair is not None:
        return pair_unit_key(*pair)
    if response_id is None:
        raise ValueError("a unit is a response or a pair: name one")
    return response_unit_key(response_id)


def parse_unit_key(key: str) -> UnitKey:
    """The response id or pair named by ``key`` (:func:`response_unit_key`,
    :func:`pair_unit_key`); :class:`ValueError` for anything else."""
    if key.startswith("r:") and len(key) > 2:
        return UnitKey(response_id=key[2:])
    if key.startswith("p:"):
        parts = key[2:].split(PAIR_SEPARATOR)
        if len(parts) == 2 and all(parts):
            return UnitKey(pair=(parts[0], parts[1]))
    raise ValueError(
        f"unit key {_shown(key)} must be r:<response_id> or p:<a>|<b> (response ids hold no '|')"
    )
