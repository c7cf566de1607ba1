"""Read a judge's free text back into a value, a rationale and a parse status (PROTOCOLS.md).

One parser per protocol kind, both total: they never raise and never return a value the protocol
does not allow.

* :func:`parse_score` — JSON ``{"Rating": 8, "Reason": "..."}`` (rating also in quotes, keys in
  any case, ``Score`` / ``评分`` too; also cut short when the judge ran out of tokens),
  ``[[8]]``, ``### Score\\n5``, ``Final Score: 85``, ``Rating: 8``, ``Score: 8``, ``评分：8``.
  A number off the protocol's scale is ``out_of_scale`` (its own status, value None); no number
  at all is ``unparsed``.
* :func:`parse_preference` — ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (C = tie), ``Response A is
  better``, ``Answer 2 is better``, ``The better response: first``, ``Two responses are equally
  good``, ``Tie`` (and Chinese equivalents). The label is in the order the judge was *shown*;
  map it back with :func:`schemas.protocols.to_canonical`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from schemas.protocols import InvalidJudgement, Protocol

ParseStatus = Literal["ok", "unparsed", "out_of_scale"]

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_SCORE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\[\[\s*" + _NUMBER + r"\s*\]\]"),
    re.compile(r"#+\s*(?:final\s+)?score\s*[:：]?\s*\n\s*\**\s*" + _NUMBER, re.IGNORECASE),
    re.compile(r"final\s+score\s*(?:is)?\s*[:：=]?\s*\**\s*" + _NUMBER, re.IGNORECASE),
    re.compile(
        r"(?:rating|score|评分|分数|得分)\"?\s*\**\s*(?:is)?\s*[:：=]\s*\**\s*\"?" + _NUMBER,
        re.IGNORECASE,
    ),
)
_SCORE_KEYS = ("rating", "score", "评分", "分数", "得分")
_REASON_KEYS = ("reason", "rationale", "explanation", "理由", "原因")
_REASON_WORD = r"(?:reason|rationale|explanation|理由)"
_CUT_JSON_REASON = re.compile(
    r"\"(?:reason|rationale|explanation|理由)\"\s*:\s*\"(.*)", re.I | re.S
)
"""The reason of a JSON answer cut short (no closing quote): the judge ran out of tokens."""
_REASON_HEADER = re.compile(
    rf"^\s*(?:#+\s*{_REASON_WORD}\s*[:：]?|{_REASON_WORD}\s*[:：])\s*", re.IGNORECASE
)

_SHOWN_LABELS = {
    "a": "A",
    "1": "A",
    "first": "A",
    "b": "B",
    "2": "B",
    "second": "B",
    "c": "tie",
    "tie": "tie",
}
_SIDE = r"(A|B|1|2|first|second)"
_PREFERENCE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\[\[\s*(A|B|C|tie)\s*\]\]", re.IGNORECASE),
    re.compile(
        r"(?:preference|verdict|winner|better)\"?\s*[:：]\s*\"?\s*(A|B|C|tie)\b", re.IGNORECASE
    ),
    re.compile(
        r"\b(?:response|answer|assistant|output)\s*" + _SIDE + r"\b\s*(?:is|was)?\s*"
        r"(?:clearly\s+|slightly\s+|much\s+)?(?:better|superior|preferred|stronger)",
        re.IGNORECASE,
    ),
    re.compile(
        r"\bthe\s+better\s+(?:response|answer|one)\s*(?:is)?\s*[:：]?\s*"
        r"(?:the\s+)?(?:response\s+|answer\s+)?" + _SIDE + r"\b",
        re.IGNORECASE,
    ),
    re.compile(r"(?:回答|答案)\s*(A|B|1|2)\s*更好"),
)
_TIE_PATTERN = re.compile(
    r"\b(?:equally\s+(?:good|bad|helpful)|it'?s\s+a\s+tie|tie|neither\s+is\s+better|"
    r"both\s+(?:are\s+)?(?:equally\s+)?(?:good|bad))\b|平局|一样好|不分高下",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ParsedJudgement:
    """What a judge said: ``value`` (score or A/B/tie in shown order), rationale, status."""

    value: float | str | None
    rationale: str
    status: ParseStatus


def parse_judgement(text: str, protocol: Protocol) -> ParsedJudgement:
    """Parse ``text`` with the parser of ``protocol``'s kind."""
    if protocol.is_pointwise:
        return parse_score(text, protocol)
    return parse_preference(text)


def parse_score(text: str, protocol: Protocol) -> ParsedJudgement:
    """Parse a pointwise judgement; see the module docstring for the accepted forms."""
    found = _score_from_json(text) or _score_from_patterns(text)
    if found is None:
        return ParsedJudgement(None, text.strip(), "unparsed")
    number, rationale = found
    try:
        value = protocol.validate_score(number)
    except (InvalidJudgement, OverflowError):
        return ParsedJudgement(None, rationale, "out_of_scale")
    return ParsedJudgement(value, rationale, "ok")


def parse_preference(text: str) -> ParsedJudgement:
    """Parse a pairwise verdict (A / B / tie in the order shown); see the module docstring."""
    for pattern in _PREFERENCE_PATTERNS:
        matches = list(pattern.finditer(text))
        if not matches:
            continue
        labels = {_SHOWN_LABELS[match.group(1).lower()] for match in matches}
        if len(labels) > 1 and pattern is not _PREFERENCE_PATTERNS[0]:
            return ParsedJudgement(None, text.strip(), "unparsed")
        last = matches[-1]
        return ParsedJudgement(_SHOWN_LABELS[last.group(1).lower()], _rest(text, last), "ok")
    tie = _TIE_PATTERN.search(text)
    if tie:
        return ParsedJudgement("tie", text.strip(), "ok")
    return ParsedJudgement(None, text.strip(), "unparsed")


def _score_from_json(text: str) -> tuple[float, str] | None:
    decoder = json.JSONDecoder()
    for start in (index for index, char in enumerate(text) if char == "{"):
        try:
            obj, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if not isinstance(obj, dict):
            continue
        lowered = {str(key).strip().lower(): value for key, value in obj.items()}
        for key in _SCORE_KEYS:
            if key in lowered:
                number = _number(lowered[key])
                if number is not None:
                    reason = next((lowered[k] for k in _REASON_KEYS if k in lowered), "")
                    return number, str(reason).strip()
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:
            return float("inf")
    if isinstance(value, str):
        match = re.match(r"\s*" + _NUMBER, value)
        return float(match.group(1)) if match else None
    return None


def _score_from_patterns(text: str) -> tuple[float, str] | None:
    for pattern in _SCORE_PATTERNS:
        matches = list(pattern.finditer(text))
        if matches:
            last = matches[-1]
            cut = _CUT_JSON_REASON.search(text, last.end())
            return float(last.group(1)), cut.group(1).strip() if cut else _rest(text, last)
    return None


def _rest(text: str, match: re.Match[str]) -> str:
    """The text around the verdict, without it and without a leading ``Reason:`` header."""
    rest = (text[: match.start()].strip() + "\n" + text[match.end() :].strip()).strip()
    return _REASON_HEADER.sub("", rest, count=1).strip()
