"""Annotation protocols, defined once as data (PROTOCOLS.md).

A :class:`Protocol` says what a valid judgement looks like: a pointwise score on a scale
(``alignmmbench`` 1–10, ``mmie`` 0–6 reported as percent, ``score`` with a user scale) or a
pairwise preference (``pairwise``: A / B / tie). Everything else in CritiqueLab — validation on
import, the score buttons, judge prompts, output parsing, metrics — reads these objects instead
of repeating the numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from schemas.option_text import OptionError, OptionText

ProtocolName = Literal["alignmmbench", "mmie", "pairwise", "score"]
ProtocolKind = Literal["pointwise", "pairwise"]
Preference = Literal["A", "B", "tie"]

PROTOCOL_NAMES: tuple[str, ...] = ("alignmmbench", "mmie", "pairwise", "score")
MAX_CHOICES = 21
"""A discrete scale with more points than this is typed as a number rather than picked."""
PREFERENCES: tuple[str, ...] = get_args(Preference)
"""The one set of preference labels, in canonical order (A = first of the pair, B = second)."""


class InvalidJudgement(ValueError):
    """A score or preference that the protocol does not allow (never clamped, never guessed)."""


@dataclass(frozen=True)
class Band:
    """A stretch of the scale with the rubric text shown to annotators and judges."""

    low: float
    high: float
    description: str
    description_zh: str = ""

    def label(self) -> str:
        return (
            f"{_fmt(self.low)}" if self.low == self.high else f"{_fmt(self.low)}–{_fmt(self.high)}"
        )


@dataclass(frozen=True)
class Protocol:
    """One annotation protocol.

    Pointwise protocols have ``scale_min``/``scale_max`` and, when discrete, ``step``; a protocol
    without a step is continuous (any real value in range). Pairwise protocols have ``labels``.
    """

    name: str
    kind: ProtocolKind
    title: str
    scale_min: float | None = None
    scale_max: float | None = None
    step: float | None = None
    percent: bool = False
    bands: tuple[Band, ...] = ()
    labels: tuple[str, ...] = ()
    criteria: tuple[str, ...] = ()
    choice_guide: tuple[tuple[str, str], ...] = ()
    """Pairwise: (label, when to choose it) for each label, shown to annotators beside the
    buttons as the bands are for a scale."""

    @property
    def is_pointwise(self) -> bool:
        return self.kind == "pointwise"

    @property
    def is_discrete(self) -> bool:
        return self.is_pointwise and self.step is not None

    @property
    def bounds(self) -> tuple[float, float]:
        """The lowest and highest score of a pointwise protocol."""
        self._require_pointwise()
        if self.scale_min is None or self.scale_max is None:
            raise ValueError(f"protocol {self.name!r} is pointwise but has no scale bounds")
        return float(self.scale_min), float(self.scale_max)

    @property
    def scale_range(self) -> float:
        low, high = self.bounds
        return high - low

    @property
    def tolerance(self) -> float:
        """Values closer than this are equal: 1e-9 of the scale's range (PROTOCOLS.md §4)."""
        return 1e-9 * max(self.scale_range, 1.0)

    def scale_points(self) -> list[float]:
        """Every allowed value of a discrete scale, ascending."""
        self._require_pointwise()
        if self.step is None:
            raise ValueError(f"protocol {self.name!r} has a continuous scale: it has no points")
        low, step = self.bounds[0], self.step
        return [_clean(low + i * step) for i in range(round(self.scale_range / step) + 1)]

    def validate_score(self, value: object, *, field_name: str = "score") -> float:
        """Return ``value`` as a float on this scale, or raise :class:`InvalidJudgement`.

        Booleans, strings, NaN and values off the scale are refused with a message that says what
        the scale allows. Values within the tolerance of a scale point are snapped to it.
        """
        self._require_pointwise()
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidJudgement(
                f"`{field_name}` is {value!r} ({type(value).__name__}), but {self.name} scores "
                f"are numbers {self.describe_scale()}"
            )
        number = float(value)
        low, high = self.bounds
        tol = self.tolerance
        if math.isnan(number) or number < low - tol or number > high + tol:
            raise InvalidJudgement(
                f"`{field_name}` is {_fmt(number)}, but {self.name} scores are "
                f"{self.describe_scale()}"
            )
        if self.step is None:
            return min(max(number, low), high)  # only snaps values within the tolerance
        steps = (number - low) / self.step
        nearest = round(steps)
        if abs(steps - nearest) * self.step > tol:
            raise InvalidJudgement(
                f"`{field_name}` is {_fmt(number)}, but {self.name} scores are "
                f"{self.describe_scale()}"
            )
        return _clean(low + nearest * self.step)

    def validate_preference(self, value: object, *, field_name: str = "preference") -> str:
        """Return a canonical preference label or raise :class:`InvalidJudgement`."""
        if self.kind != "pairwise":
            raise ValueError(f"protocol {self.name!r} is pointwise: it has no preferences")
        if value not in self.labels:
            raise InvalidJudgement(
                f"`{field_name}` is {value!r}, but pairwise preferences are one of "
                + ", ".join(repr(label) for label in self.labels)
            )
        return str(value)

    def percent_of(self, score: float) -> float:
        """Score as percent of the scale maximum (MMIE reports points / 6 × 100)."""
        return float(score) / self.bounds[1] * 100.0

    def percent_label(self, low: float, high: float | None = None) -> str:
        """A score (or a band ``low``–``high``) as whole percent of the scale maximum, the one
        rule every page and report shows it by: ``50%``, ``17–33%`` (rounded half to even)."""
        shown = f"{self.percent_of(low):.0f}"
        if high is not None and high != low:
            shown += f"–{self.percent_of(high):.0f}"
        return shown + "%"

    def score_label(self, score: float) -> str:
        """A score as an annotator reads it: ``7``; on a percent scale with its percent, ``3
        (50%)`` (MMIE)."""
        shown = _fmt(score)
        return f"{shown} ({self.percent_label(score)})" if self.percent else shown

    def answer_label(self, score: float | None, preference: str | None) -> str:
        """An answer as shown: the preference label as given, else :meth:`score_label`."""
        if preference is not None:
            return preference
        return "—" if score is None else self.score_label(score)

    def band_for(self, score: float) -> Band | None:
        for band in self.bands:
            if band.low - self.tolerance <= score <= band.high + self.tolerance:
                return band
        return None

    def validate_expected_score(self, value: float) -> float:
        """Return ``value`` (an expected score Σ p(s)·s) when it lies within the scale's range,
        or raise :class:`InvalidJudgement`: an average of scale points is never outside it."""
        self._require_pointwise()
        low, high = self.bounds
        if not low - self.tolerance <= value <= high + self.tolerance:  # NaN fails too
            raise InvalidJudgement(
                f"`expected_score` is {_fmt(value)}, but an expected score (Σ p(s)·s) of "
                f"{self.name} lies from {_fmt(low)} to {_fmt(high)}"
            )
        return value

    def describe_scale(self) -> str:
        """Human-readable scale, e.g. ``integers 1–10`` or ``0–1 in steps of 0.1``."""
        if self.kind == "pairwise":
            return "/".join(self.labels)
        minimum, maximum = self.bounds
        low, high = _fmt(minimum), _fmt(maximum)
        if self.step is None:
            return f"any number from {low} to {high}"
        if self.step == 1 and minimum.is_integer():
            return f"integers {low}–{high}"
        return f"{low}–{high} in steps of {_fmt(self.step)}"

    def choices(self) -> list[float] | list[str]:
        """What an annotator picks from: the labels, or the points of a discrete scale of at most
        :data:`MAX_CHOICES` points; empty when the score is typed as a number instead."""
        if not self.is_pointwise:
            return list(self.labels)
        if self.step is None:
            return []
        points = self.scale_points()
        return points if len(points) <= MAX_CHOICES else []

    def choice_key(self, value: float | str) -> str | None:
        """The key that picks ``value`` (lower case), or None when no key does.

        Preferences: ``a``, ``b``, ``t``. Scores: the digit of each whole score 0–9; ``0`` picks
        10 when the scale has 10 but no 0 (AlignMMBench's 1–10). A typed scale has no keys.
        """
        if not self.is_pointwise:
            return {"A": "a", "B": "b", "tie": "t"}.get(str(value))
        points = self.choices()
        number = float(value)
        if number not in points or not number.is_integer():
            return None
        if 0 <= number <= 9:
            return str(int(number))
        return "0" if number == 10 and 0 not in points else None

    def key_hint(self) -> str:
        """What the keys pick on this protocol, in words: ``keys 1–9 choose scores 1–9, 0
        chooses 10`` (AlignMMBench), ``keys 0–6 choose scores 0–6`` (MMIE); empty without keys."""
        if not self.is_pointwise:
            return "keys a, b and t choose A, B and tie"
        points = [float(v) for v in self.choices()]
        keyed = [(v, key) for v in points if (key := self.choice_key(v)) is not None]
        same = [v for v, key in keyed if key == _fmt(v)]
        other = [f"{key} chooses {_fmt(v)}" for v, key in keyed if key != _fmt(v)]
        if not keyed:
            return ""
        if len(same) > 2 and self.step == 1:
            parts = [
                f"keys {_fmt(same[0])}–{_fmt(same[-1])} choose scores "
                f"{_fmt(same[0])}–{_fmt(same[-1])}"
            ]
        else:
            named = " and ".join(_fmt(v) for v in same)
            parts = [f"keys {named} choose scores {named}"] if same else []
        return ", ".join(parts + other)

    def _require_pointwise(self) -> None:
        if not self.is_pointwise:
            raise ValueError(f"protocol {self.name!r} is pairwise: it has no score scale")


def _fmt(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _clean(value: float) -> float:
    """Remove float noise from a computed scale point (0.30000000000000004 → 0.3)."""
    return float(f"{value:.12g}")


ALIGNMMBENCH = Protocol(
    name="alignmmbench",
    kind="pointwise",
    title="AlignMMBench score (1–10)",
    scale_min=1,
    scale_max=10,
    step=1,
    bands=(
        Band(1, 1, "Ignores the question or is off topic.", "答非所问或偏离主题。"),
        Band(2, 2, "Harmful, or unreadable.", "有害内容，或无法阅读。"),
        Band(3, 3, "On topic but entirely wrong.", "切题但完全错误。"),
        Band(4, 5, "More than half of the facts are wrong.", "一半以上的事实错误。"),
        Band(
            6, 6, "Fewer errors, or only part of the request met.", "错误较少，或只满足部分要求。"
        ),
        Band(7, 8, "Very few errors, or correct but too thin.", "错误很少，或正确但过于简略。"),
        Band(
            9,
            10,
            "Complete and correct; at most unimportant omissions.",
            "完整且正确，至多有无关紧要的遗漏。",
        ),
    ),
    criteria=(
        "Correctness: facts agree with the image and the reference answer.",
        "Relevance: the answer addresses what was asked.",
        "Level of detail: enough to be useful, nothing important missing.",
        "Equivalent wording and synonyms count as correct.",
        "Details that the reference lacks are not wrong by default.",
    ),
)

MMIE = Protocol(
    name="mmie",
    kind="pointwise",
    title="MMIE rubric (0–6, reported as percent)",
    scale_min=0,
    scale_max=6,
    step=1,
    percent=True,
    bands=(
        Band(0, 0, "Fails every criterion.", "所有标准均未满足。"),
        Band(1, 2, "Meets one or two criteria.", "满足一到两项标准。"),
        Band(3, 4, "Meets about half of the criteria.", "满足约一半的标准。"),
        Band(5, 5, "Meets nearly every criterion.", "几乎满足所有标准。"),
        Band(6, 6, "Meets every criterion.", "满足所有标准。"),
    ),
    criteria=(
        "Six positive criteria, each worth about one point; 0 is the floor.",
        "MSR: the final answer is checked against the ground truth.",
    ),
)

PAIRWISE = Protocol(
    name="pairwise",
    kind="pairwise",
    title="Pairwise preference (A / B / tie)",
    labels=PREFERENCES,
    criteria=(
        "Which response answers the question better: correctness first, then relevance, "
        "then helpful detail.",
        "Tie when neither is better.",
    ),
    choice_guide=(
        (
            "A",
            "it is more correct (facts agree with the image, the question and the reference); "
            "if both are equally correct, it answers more of what was asked, then with more "
            "useful detail. Length alone is not quality.",
        ),
        ("B", "the same tests the other way round; the side a response is shown on says nothing."),
        (
            "tie",
            "only when neither is better after those tests: both right and equally useful, or "
            "both wrong in equally serious ways. Not for a hard call: pick the smaller error.",
        ),
    ),
)


def score_protocol(scale_min: float, scale_max: float, step: float | None = None) -> Protocol:
    """A ``score`` protocol with a user scale (Likert 1–5, 0–1 in steps of 0.1, 0–100...)."""
    bounds = (scale_min, scale_max) if step is None else (scale_min, scale_max, step)
    if not all(math.isfinite(number) for number in bounds):
        raise ValueError(
            "the scale's minimum, maximum and step must be finite numbers, e.g. 1:5 or 0:1:0.1 "
            f"(got {':'.join(f'{number:g}' for number in bounds)})"
        )
    if not scale_min < scale_max:
        raise ValueError(f"scale minimum {scale_min} must be below the maximum {scale_max}")
    if step is not None:
        if step <= 0:
            raise ValueError(f"scale step {step} must be positive")
        count = (scale_max - scale_min) / step
        if abs(count - round(count)) > 1e-9 * max(count, 1.0):
            raise ValueError(f"scale step {step} does not divide {scale_min}–{scale_max}")
    return Protocol(
        name="score",
        kind="pointwise",
        title=f"Score ({_fmt(scale_min)}–{_fmt(scale_max)})",
        scale_min=float(scale_min),
        scale_max=float(scale_max),
        step=None if step is None else float(step),
    )


def parse_scale(text: str) -> tuple[float, float, float | None]:
    """Parse ``MIN:MAX[:STEP]`` as used by ``--scale`` (``1:5``, ``0:1:0.1``)."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"scale {text!r} must look like MIN:MAX or MIN:MAX:STEP, e.g. 1:5")
    try:
        numbers = [float(part) for part in parts]
    except ValueError:
        raise ValueError(f"scale {text!r} must contain numbers, e.g. 1:5 or 0:1:0.1") from None
    return numbers[0], numbers[1], (numbers[2] if len(numbers) == 3 else None)


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (ALIGNMMBENCH, MMIE, PAIRWISE)}


def protocol_on_scale(name: str, scale: tuple[float, float, float | None] | None) -> Protocol:
    """The protocol ``name`` that a user asked for with ``scale`` (``--scale``): the scale of a
    ``score`` protocol; refused for the others, whose scale is fixed (not silently ignored)."""
    if scale is not None and name != "score":
        raise OptionError(
            OptionText(
                "{scale} applies to the score protocol only; {protocol_name} has a fixed scale",
                protocol_name=name,
            )
        )
    low, high, step = scale or (None, None, None)
    return get_protocol(name, scale_min=low, scale_max=high, step=step)


def get_protocol(
    name: str,
    *,
    scale_min: float | None = None,
    scale_max: float | None = None,
    step: float | None = None,
) -> Protocol:
    """The protocol called ``name``; ``score`` needs its scale."""
    if name == "score":
        if scale_min is None or scale_max is None:
            raise OptionError(
                OptionText("protocol 'score' needs a scale: give {scale} MIN:MAX[:STEP]")
            )
        return score_protocol(scale_min, scale_max, step)
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ValueError(
            f"unknown protocol {name!r}: use one of " + ", ".join(PROTOCOL_NAMES)
        ) from None


def to_canonical(shown_label: str, *, swapped: bool) -> str:
    """Map a verdict about the shown order (A = shown first) back to the canonical order."""
    if shown_label == "tie" or not swapped:
        return shown_label
    return {"A": "B", "B": "A"}[shown_label]


def to_shown(canonical_label: str, *, swapped: bool) -> str:
    """Map a canonical-order verdict to the order that was shown (inverse of to_canonical)."""
    return to_canonical(canonical_label, swapped=swapped)
