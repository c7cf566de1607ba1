"""The bounds of the whole-number settings: each is checked against its :class:`Bound` wherever it
enters (the command line, a page, a library call), so one value is accepted or refused everywhere.

Why bounds at all: the database stores these settings in 32-bit columns (PostgreSQL refused
10^20 with raw SQL, SQLite overflowed), a lease of 2^63 - 1 seconds was stored and then broke every
next unit (no date is that far away), and a bootstrap of 10^12 resamples runs for ever. The upper
bounds are far above any use: a wider need is a request, not a typo.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.option_text import OptionText


@dataclass(frozen=True)
class Bound:
    """A whole-number setting's range ``[low, high]``, named as the library names the option."""

    option: str
    """The option's library name (``lease_seconds``); a front end renders it its own way."""
    low: int
    high: int
    unit: str
    """What the number counts (``seconds``), for the message."""

    def problem(self, value: object) -> OptionText | None:
        """What is wrong with ``value`` for this setting (None when it is in range)."""
        if isinstance(value, bool) or not isinstance(value, int):
            return OptionText(self._named("{value}: give a whole number"), value=repr(value))
        if self.low <= value <= self.high:
            return None
        return OptionText(
            self._named("{value}; give a whole number from {low} to {high} ({unit})"),
            value=value,
            low=f"{self.low:,}",
            high=f"{self.high:,}",
            unit=self.unit,
        )

    def _named(self, rest: str) -> str:
        """``{option} is <rest>``: the option as a field the front end names its own way."""
        return "{" + self.option + "} is " + rest


OVERLAP = Bound("overlap", 1, 1_000, "annotators per unit")
RATIONALE_MIN = Bound("rationale_min", 0, 10_000, "characters")
LEASE_SECONDS = Bound("lease_seconds", 1, 7 * 24 * 3600, "seconds: at most a week")
BOOTSTRAP = Bound("bootstrap", 0, 1_000_000, "resamples; 0 = no intervals")
PAIRS_PER_ITEM = Bound("pairs_per_item", 1, 1_000_000, "pairs sampled per item")
CONCURRENCY = Bound("concurrency", 1, 256, "requests in flight")
MAX_RETRIES = Bound("max_retries", 0, 100, "retries per request")
MAX_TOKENS = Bound("max_tokens", 1, 1_000_000, "tokens per answer")
MAX_NEW_TOKENS = Bound("max_new_tokens", 1, 1_000_000, "tokens per answer")
BATCH_SIZE = Bound("batch_size", 1, 4_096, "prompts per batch")
SAMPLES = Bound("samples", 1, 1_000, "answers per unit")
LIMIT = Bound("limit", 1, 2**31 - 1, "units")
SEED = Bound("seed", 0, 2**32 - 1, "a seed: numpy's and torch's generators take 32 bits")
PORT = Bound("port", 1, 65_535, "a TCP port")
MAX_DISAGREEMENTS = Bound("max_disagreements", 0, 1_000_000, "disagreements per judge")
QUALIFY_UNITS = Bound("qualify", 0, 1_000, "gold units before any real unit")
ROW_ID = Bound("annotation_id", 1, 2**63 - 1, "a stored id")
MAX_PROMPT_TOKENS = Bound("max_prompt_tokens", 1, 10_000_000, "tokens per prompt")


def first_problem(*checks: tuple[Bound, object]) -> OptionText | None:
    """The first of ``(bound, value)`` whose value is out of range (None: all in range)."""
    for bound, value in checks:
        if (problem := bound.problem(value)) is not None:
            return problem
    return None
