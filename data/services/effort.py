"""Low-effort signals: answers given faster than the unit can be read, rationales that repeat
across different units or are pasted from the response, and annotators who mostly write stock
phrases.

Pure functions over :class:`EffortAnswer` records (no database): :mod:`data.services.monitor`
reads a campaign's live answers into them, and the synthetic measurement
(``tests/data/test_effort_measure.py``, figures in METRICS.md "Low-effort flags") feeds them
generated annotators. Every flag says in words why it was raised, with its numbers.

Per answer:

* ``too_fast``: active seconds below ``max(ABS_MIN_SECONDS, SECONDS_PER_1000_CHARS × characters
  shown / 1000 + IMAGE_SECONDS × images shown)``. The characters are the question (with earlier
  turns) and the response(s) the annotator had to read. An answer with no recorded time
  (``seconds`` 0: labels imported without one) is not judged.
* ``duplicate_rationale``: the rationale is near-identical (Jaccard similarity of
  ``SHINGLE``-word shingles ≥ ``DUPLICATE_JACCARD``) to the same annotator's rationale on a
  *different* unit that shows different response text. Stock rationales (shorter than
  ``MIN_RATIONALE_CHARS`` or one of :data:`STOCK_PHRASES`) are never duplicates of each other;
  using them a lot is the per-annotator ``stock_rationales`` flag instead. The same reason for the
  same response text (one answer shown under two prompt variants, say) is consistency, not
  copying.
* ``copied_rationale``: at least ``COPY_FRACTION`` of the rationale's ``COPY_SHINGLE``-character
  shingles occur in the response being judged (either response of a pair).

Per annotator (from ``MIN_ANSWERS`` answers on): ``too_fast``, ``duplicate_rationale`` and
``copied_rationale`` when at least ``ANNOTATOR_SHARE`` of their answers carry that flag, and
``stock_rationales`` when more than ``STOCK_SHARE`` of their rationales are stock phrases.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

WORDS_PER_MINUTE_SKIMMING = 700
"""The top of the skimming range: readers who skim go at about 400–700 words per minute, at a
clear loss of comprehension (Rayner, Schotter, Masson, Potter & Treiman 2016, "So much to read, so
little time", Psychological Science in the Public Interest 17(1); careful reading is 200–400)."""
CHARACTERS_PER_WORD = 6
"""An English word with its space is about 6 characters (4.7 letters on average, plus one)."""
SECONDS_PER_1000_CHARS = 14.0
"""The reading floor: 1,000 characters at 700 words per minute of 6 characters take
1000 / (700 × 6 / 60) = 14.3 s, rounded down. An answer below it was given without even skimming
the text. Chinese text reads at fewer characters per second (a character is nearer a word), so
for it the floor is lenient."""
IMAGE_SECONDS = 1.5
"""Allowance per image shown (the item's and the responses'): a glance to check an answer against
a picture. Small on purpose: it only keeps a short text with several pictures from looking fast."""
ABS_MIN_SECONDS = 5.0
"""No considered answer takes less, however short the unit: finding the question, the answer and
the scale, and choosing."""

SHINGLE = 3
"""Rationales are compared as sets of 3-word shingles of the normalised text (case, punctuation
and spacing ignored). Chinese and Japanese, written without spaces, count each character as a
word; the text is padded at both ends, so that every word is in three shingles. One changed word
removes three shingles, so two sentences that share a frame but
differ in what they say about the unit stay apart."""
COPY_SHINGLE = 8
"""Copying is checked on 8-character shingles (as before): pasted text matches letter for
letter."""
DUPLICATE_JACCARD = 0.8
"""Two rationales are near-identical when their shingle sets overlap this much (Jaccard)."""
MIN_RATIONALE_CHARS = 25
"""A normalised rationale shorter than this (about five English words) is a stock phrase."""
STOCK_PHRASES: frozenset[str] = frozenset(
    {
        "looks good",
        "looks fine",
        "looks fine to me",
        "good answer",
        "good response",
        "bad answer",
        "bad response",
        "correct",
        "incorrect",
        "fine",
        "ok",
        "okay",
        "n a",
        "na",
        "none",
        "no comment",
        "same as above",
        "see above",
        "agree",
        "not bad",
        "the answer is correct",
        "the answer is wrong",
        "the answer is fine",
        "the response is fine",
        "the response is good",
        "the response is accurate",
        "both are fine",
        "both are good",
        "a is better",
        "b is better",
        "response a is better",
        "response b is better",
        "good enough",
        "mostly correct",
        "partially correct",
        "不错",
        "很好",
        "正确",
        "错误",
        "还行",
        "一般",
    }
)
"""Normalised generic phrases that are stock however long they are (the short ones are stock by
length anyway; the list names them so that the documentation can)."""
COPY_FRACTION = 0.8
"""A rationale is 'copied' when this fraction of its shingles occur in a response."""
MIN_COPY_CHARS = 16
"""Rationales shorter than this (normalised) are not checked for copying."""

MIN_ANSWERS = 10
"""Answers an annotator needs before a per-annotator flag is raised."""
ANNOTATOR_SHARE = 0.2
"""Per-annotator ``too_fast`` / ``duplicate_rationale`` / ``copied_rationale``: at least this share
of their answers carry that answer flag (an honest annotator has a few at most)."""
STOCK_SHARE = 0.5
"""Per-annotator ``stock_rationales``: more than this share of their rationales are stock."""

EffortReason = Literal["too_fast", "duplicate_rationale", "copied_rationale"]
EFFORT_REASONS: tuple[EffortReason, ...] = ("too_fast", "duplicate_rationale", "copied_rationale")
EFFORT_REASON_NAMES: dict[EffortReason, str] = {
    "too_fast": "too fast",
    "duplicate_rationale": "duplicate rationale",
    "copied_rationale": "copied rationale",
}
"""Each answer flag in words, for tables (the keys stay in files and METRICS.md)."""
EFFORT_REASON_TEXT: dict[EffortReason, str] = {
    "too_fast": "answered faster than the text can be skimmed",
    "duplicate_rationale": "wrote a near-identical rationale on another unit",
    "copied_rationale": "pasted the rationale from the response",
}
"""What each answer flag says about the annotator."""
AnnotatorEffortKind = Literal[
    "too_fast", "duplicate_rationale", "copied_rationale", "stock_rationales"
]


@dataclass(frozen=True)
class EffortAnswer:
    """One live answer with what the annotator was shown."""

    annotation_id: int
    unit_id: int
    unit_key: str
    annotator: str
    seconds: float
    """active seconds on the unit; 0 = not recorded"""
    rationale: str
    shown_chars: int
    """characters of the question (with earlier turns) and the response(s)"""
    images: int
    """images shown (the item's and the responses')"""
    response_texts: tuple[str, ...]
    """the plain text of the response(s), canonical order"""


@dataclass(frozen=True)
class EffortFlag:
    """A live answer that looks like low-effort work, and why (in words, with the numbers)."""

    annotation_id: int
    unit_id: int
    unit_key: str
    annotator: str
    reason: EffortReason
    detail: str


@dataclass(frozen=True)
class AnnotatorEffortFlag:
    kind: AnnotatorEffortKind
    reason: str


@dataclass(frozen=True)
class AnnotatorEffort:
    """One annotator's low-effort figures and flags."""

    annotator: str
    answers: int
    flagged: int
    """answers with at least one answer flag"""
    counts: dict[str, int]
    """answers per answer flag (``too_fast``, ``duplicate_rationale``, ``copied_rationale``)"""
    stock: int
    """answers whose rationale is a stock phrase"""
    flags: tuple[AnnotatorEffortFlag, ...]


@dataclass(frozen=True)
class EffortReport:
    flags: list[EffortFlag]
    """answer flags, by annotator, unit, reason"""
    annotators: list[AnnotatorEffort]
    """one row per annotator with answers, by name"""


def reading_floor(shown_chars: int, images: int) -> float:
    """The fewest seconds an honest answer to a unit showing this much can take."""
    reading = SECONDS_PER_1000_CHARS * shown_chars / 1000 + IMAGE_SECONDS * images
    return max(ABS_MIN_SECONDS, reading)


def normalise(text: str) -> str:
    """Case folded, punctuation and spacing reduced to single spaces."""
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


def is_stock(normalised_rationale: str) -> bool:
    """A short or generic rationale (an empty one is not a rationale and is not stock)."""
    if not normalised_rationale:
        return False
    return len(normalised_rationale) < MIN_RATIONALE_CHARS or normalised_rationale in STOCK_PHRASES


_CJK = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")


def word_shingles(normalised_text: str) -> frozenset[tuple[str, ...]]:
    """The ``SHINGLE``-word shingles of a normalised text (a CJK character is a word)."""
    found = _TOKEN.findall(normalised_text)
    if not found:
        return frozenset()
    edge = [""] * (SHINGLE - 1)  # so that the first and last words are in as many shingles
    words = [*edge, *found, *edge]
    return frozenset(tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1))


def _char_shingles(text: str) -> frozenset[str]:
    return frozenset(text[i : i + COPY_SHINGLE] for i in range(len(text) - COPY_SHINGLE + 1))


def jaccard(first: frozenset[tuple[str, ...]], second: frozenset[tuple[str, ...]]) -> float:
    if not first or not second:
        return 0.0
    common = len(first & second)
    return common / (len(first) + len(second) - common)


def copied_fraction(normalised_rationale: str, response_text: str) -> float:
    """Share of the rationale's shingles that occur in the response text."""
    if len(normalised_rationale) < MIN_COPY_CHARS:
        return 0.0
    own = _char_shingles(normalised_rationale)
    return len(own & _char_shingles(normalise(response_text))) / len(own)


def assess(answers: Iterable[EffortAnswer]) -> EffortReport:
    """Answer and annotator flags of ``answers`` (one campaign's live answers)."""
    by_annotator: dict[str, list[EffortAnswer]] = defaultdict(list)
    for answer in answers:
        by_annotator[answer.annotator].append(answer)
    flags: list[EffortFlag] = []
    rows: list[AnnotatorEffort] = []
    for annotator in sorted(by_annotator):
        own = by_annotator[annotator]
        found = _answer_flags(own)
        flags += found
        rows.append(_annotator_row(annotator, own, found))
    flags.sort(key=lambda flag: (flag.annotator, flag.unit_id, flag.reason))
    return EffortReport(flags, rows)


def _answer_flags(own: Sequence[EffortAnswer]) -> list[EffortFlag]:
    texts = [normalise(answer.rationale) for answer in own]
    duplicates = _duplicates(own, texts)
    flags: list[EffortFlag] = []
    for index, answer in enumerate(own):
        reasons: list[tuple[EffortReason, str]] = []
        floor = reading_floor(answer.shown_chars, answer.images)
        if 0 < answer.seconds < floor:
            reasons.append(("too_fast", _too_fast_detail(answer, floor)))
        if index in duplicates:
            other, similarity = duplicates[index]
            reasons.append(
                (
                    "duplicate_rationale",
                    f"{similarity:.0%} the same as their rationale on {other} (a different unit "
                    f"with different response text)",
                )
            )
        copied = max((copied_fraction(texts[index], t) for t in answer.response_texts), default=0)
        if copied >= COPY_FRACTION:
            reasons.append(("copied_rationale", f"{copied:.0%} of it occurs in the response"))
        flags += [
            EffortFlag(answer.annotation_id, answer.unit_id, answer.unit_key, answer.annotator, *r)
            for r in reasons
        ]
    return flags


def _too_fast_detail(answer: EffortAnswer, floor: float) -> str:
    shown = f"{answer.shown_chars:,} characters"
    if answer.images:
        shown += f" and {answer.images} image{'s' if answer.images > 1 else ''}"
    reading = SECONDS_PER_1000_CHARS * answer.shown_chars / 1000 + IMAGE_SECONDS * answer.images
    why = (
        f"skimming them takes at least {floor:.0f} s"
        if reading >= ABS_MIN_SECONDS
        else f"no answer takes under {ABS_MIN_SECONDS:.0f} s"
    )
    return f"{answer.seconds:.1f} s for {shown}; {why}"


def _duplicates(own: Sequence[EffortAnswer], texts: Sequence[str]) -> dict[int, tuple[str, float]]:
    """Index → (unit key of a near-identical rationale on another unit, similarity).

    Candidates are compared in order of shingle count, and only while the smaller set is at least
    ``DUPLICATE_JACCARD`` of the larger (Jaccard ≥ J needs that), so similar-length rationales
    only are compared.
    """
    candidates = [
        (len(sets), index, sets)
        for index, text in enumerate(texts)
        if text and not is_stock(text)
        for sets in (word_shingles(text),)
    ]
    candidates.sort()
    shown = [tuple(sorted(normalise(t) for t in answer.response_texts)) for answer in own]
    found: dict[int, tuple[str, float]] = {}
    for position, (size, i, first) in enumerate(candidates):
        for other_size, j, second in candidates[position + 1 :]:
            if size < DUPLICATE_JACCARD * other_size:
                break
            if own[i].unit_id == own[j].unit_id or shown[i] == shown[j]:
                continue
            similarity = jaccard(first, second)
            if similarity >= DUPLICATE_JACCARD:
                if i not in found or similarity > found[i][1]:
                    found[i] = (own[j].unit_key, similarity)
                if j not in found or similarity > found[j][1]:
                    found[j] = (own[i].unit_key, similarity)
    return found


def _annotator_row(
    annotator: str, own: Sequence[EffortAnswer], found: Sequence[EffortFlag]
) -> AnnotatorEffort:
    counts: dict[str, int] = {reason: 0 for reason in EFFORT_REASONS}
    for flag in found:
        counts[flag.reason] += 1
    flagged = len({flag.annotation_id for flag in found})
    stock = sum(is_stock(normalise(answer.rationale)) for answer in own)
    n = len(own)
    kinds: list[AnnotatorEffortFlag] = []
    if n >= MIN_ANSWERS:
        for reason in EFFORT_REASONS:
            if counts[reason] >= ANNOTATOR_SHARE * n:
                kinds.append(
                    AnnotatorEffortFlag(
                        reason,
                        f"{EFFORT_REASON_TEXT[reason]} on {counts[reason]} of {n} answers "
                        f"({counts[reason] / n:.0%}; flagged from {ANNOTATOR_SHARE:.0%})",
                    )
                )
        if stock > STOCK_SHARE * n:
            kinds.append(
                AnnotatorEffortFlag(
                    "stock_rationales",
                    f"a stock phrase or a rationale under {MIN_RATIONALE_CHARS} characters on "
                    f"{stock} of {n} answers ({stock / n:.0%}; flagged above {STOCK_SHARE:.0%})",
                )
            )
    return AnnotatorEffort(annotator, n, flagged, counts, stock, tuple(kinds))
