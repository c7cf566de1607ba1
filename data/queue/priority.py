"""Judge-guided routing: the order in which a campaign's units are served, from what judges said.

Pure functions of the judges' readings (no database), shared by the queue (which serves units in
the order :mod:`data.services.routing` stores as ``Unit.priority``) and by
``bench/routing_sim.py``, which replays human labels in this order: one implementation, so the
simulation measures the queue.

A judge's verdict on a unit is put on one axis from 0 to 1: a pointwise score as
``(score - scale_min) / (scale_max - scale_min)``; a pairwise preference as A = 1, tie = 0.5,
B = 0 (canonical order). Then:

* ``judge-disagreement``: the spread (max - min) of the chosen judges' mean verdicts, as a
  share of :data:`CERTAIN_DISAGREEMENT` and capped at 1 (:func:`unit_disagreement`); units that
  fewer than two of them judged have no signal.
* ``judge-uncertainty``: the mean over the chosen judges of how unsure each one was, from what
  it stored (:class:`JudgeReading`); units with nothing usable have no signal.
* ``stratified``: the judge-guided order (disagreement with two or more judges, else
  uncertainty) with a fixed share of its positions given to a seeded random order of all units.
  The first ``floor(share * m)`` units of that random order are always among the first ``m``
  served, so they are a simple random sample of the campaign: the estimation sample
  (:func:`estimation_sample`), on which a judge's accuracy or MAE is estimated without bias.

Units with a signal come first, largest first; ties and units without a signal follow a seeded
random key (not the import order). ``least-annotated`` gives no order: the queue's own
least-annotated-first rule applies, as it does when no unit has a signal (the plan says so); its
ties are broken by a seeded random key per unit (:func:`random_key`, stored as the priority).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from schemas.disagreements import DEFAULT_THRESHOLD_SHARE

Routing = Literal["least-annotated", "judge-disagreement", "judge-uncertainty", "stratified"]
ROUTING_MODES: tuple[str, ...] = (
    "least-annotated",
    "judge-disagreement",
    "judge-uncertainty",
    "stratified",
)
DEFAULT_STRATIFIED_SHARE = 0.2
PREFERENCE_AXIS: dict[str, float] = {"A": 1.0, "tie": 0.5, "B": 0.0}
"""A canonical pairwise preference on the 0–1 verdict axis."""
CERTAIN_DISAGREEMENT = 2 * DEFAULT_THRESHOLD_SHARE
"""A spread of mean verdicts (0–1 axis) at which at least one judge certainly errs: a judge errs
on a unit when its verdict is :data:`~schemas.disagreements.DEFAULT_THRESHOLD_SHARE` (20% of the
scale) or more from the reference (pairwise: a different label, 0.5 or 1 away), and two verdicts
twice that far apart cannot both be closer than that to one reference."""


@dataclass(frozen=True)
class JudgeReading:
    """What one judge said about one unit."""

    verdicts: tuple[float, ...]
    """Its parsed verdicts on the 0–1 axis (several when it judged both shown orders or was
    sampled repeatedly)."""
    stored_spread: float | None = None
    """How unsure it said it was, 0–1, from stored probabilities or an expected score
    (:func:`probability_spread`, :func:`expected_score_spread`); None when nothing was stored."""

    @property
    def mean(self) -> float | None:
        return sum(self.verdicts) / len(self.verdicts) if self.verdicts else None

    @property
    def uncertainty(self) -> float | None:
        """The stored spread, else the range of its repeated verdicts, else None."""
        if self.stored_spread is not None:
            return self.stored_spread
        if len(self.verdicts) >= 2:
            return max(self.verdicts) - min(self.verdicts)
        return None


@dataclass(frozen=True)
class RoutingPlan:
    """The serving order a routing gives, and what it was based on."""

    routing: str
    order: tuple[int, ...]
    """Unit ids, first served first; empty when the least-annotated rule applies."""
    guide: str | None
    """``disagreement`` or ``uncertainty``: the signal that ordered the judged units."""
    units_with_signal: int
    note: str
    """One line for the user: what ordered the units, or why routing fell back."""
    priorities: Mapping[int, int] = field(default_factory=dict)
    """What ``Unit.priority`` stores, lowest first: :func:`serving_key` of each unit, under
    ``stratified`` its position (the interleave is a global order), under ``least-annotated`` a
    seeded random key that breaks ties among the least-annotated units; empty when there is
    none (a routing that fell back)."""

    @property
    def fell_back(self) -> bool:
        return self.routing != "least-annotated" and not self.order


def probability_spread(
    probs: Mapping[str, float], pairwise: bool, scale: tuple[float, float]
) -> float | None:
    """How spread a stored distribution is, 0 (certain) to 1 (most spread).

    Pairwise (keys ``A``, ``B``, ``tie``, renormalised over them): ``(1 - max p) / (2/3)``, 2/3
    being its largest value. Pointwise (keys are scale values): the standard deviation over half
    the scale's range, the largest standard deviation a distribution on the scale can have.
    None when no usable mass is stored.
    """
    if pairwise:
        mass = {k: float(probs[k]) for k in PREFERENCE_AXIS if k in probs}
        total = sum(mass.values())
        return None if total <= 0 else (1 - max(mass.values()) / total) / (2 / 3)
    points = []
    for key, value in probs.items():
        try:
            points.append((float(key), float(value)))
        except (TypeError, ValueError):
            continue  # bookkeeping keys such as "_mass"
    total = sum(p for _, p in points)
    low, high = scale
    if total <= 0 or high <= low:
        return None
    mean = sum(v * p for v, p in points) / total
    variance = sum(p * (v - mean) ** 2 for v, p in points) / total
    return min(1.0, math.sqrt(variance) / ((high - low) / 2))


def expected_score_spread(score: float, expected: float, scale: tuple[float, float]) -> float:
    """``|score - expected| / (half the range)``, capped at 1: a distribution whose expected
    value is far from its most likely score is spread (a lower bound on its spread)."""
    low, high = scale
    return min(1.0, abs(score - expected) / ((high - low) / 2))


def unit_disagreement(readings: Mapping[str, JudgeReading]) -> float | None:
    """How surely one of the judges errs, 0–1: the spread (max - min) of their mean verdicts over
    :data:`CERTAIN_DISAGREEMENT`, capped at 1; None when fewer than two judges judged.

    The cap is what routing is for: a unit is worth a human label when a judge there is wrong,
    and beyond that spread one of them is wrong for certain, so a wider spread finds no more
    errors (only larger ones). Pairwise, where the spread is a label apart, any two different
    labels (A against B, or a tie against A or B) are a certain disagreement, as for
    ``acc_with_tie``, which counts a tie as a class of its own; pointwise, a spread of 40% of the
    scale and more.
    """
    means = [m for m in (r.mean for r in readings.values()) if m is not None]
    if len(means) < 2:
        return None
    return min(1.0, (max(means) - min(means)) / CERTAIN_DISAGREEMENT)


def unit_uncertainty(readings: Mapping[str, JudgeReading]) -> float | None:
    """Mean uncertainty of the judges that stored something usable; None when none did."""
    values = [u for u in (r.uncertainty for r in readings.values()) if u is not None]
    return sum(values) / len(values) if values else None


def random_key(seed: int, unit_id: int, stream: str = "tie") -> int:
    """A stable pseudo-random key of a unit (the same in every process, unlike ``hash``)."""
    digest = hashlib.blake2b(f"{seed}:{stream}:{unit_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def random_order(units: Sequence[int], seed: int) -> list[int]:
    """The stratified random stream: all units in a seeded random order."""
    return sorted(units, key=lambda unit: random_key(seed, unit, "random"))


def plan_routing(
    routing: str,
    units: Sequence[int],
    readings: Mapping[int, Mapping[str, JudgeReading]],
    *,
    judges: Sequence[str] = (),
    share: float | None = None,
    seed: int = 0,
) -> RoutingPlan:
    """The serving order of ``units`` under ``routing`` given the judges' ``readings``
    (unit id → judge → reading; only the ``judges`` named are used)."""
    if routing not in ROUTING_MODES:
        raise ValueError(f"unknown routing {routing!r}: choose one of {', '.join(ROUTING_MODES)}")
    if routing == "least-annotated":
        # ties among the least-annotated units in a seeded random order: a campaign stopped
        # part-way has then labelled a simple random sample (what PPI needs), not the first
        # units imported
        ties = {unit: random_key(seed, unit) >> (64 - _TIE_BITS) for unit in units}
        note = "least-annotated first, ties in a seeded random order (no judge signal used)"
        return RoutingPlan(routing, (), None, 0, note, ties)
    guide = routing_guide(routing, judges)
    signal = {unit: unit_signal(guide, readings.get(unit, {}), judges) for unit in units}
    scored = sum(value is not None for value in signal.values())
    if scored == 0:
        return RoutingPlan(routing, (), guide, 0, _fallback_note(guide, judges))
    keys = {unit: serving_key(signal[unit], seed, unit) for unit in units}
    guided = sorted(units, key=keys.__getitem__)
    note = f"{scored} of {len(units)} units ordered by judge {guide} ({', '.join(judges)})"
    if routing == "stratified":
        assert share is not None
        guided = _interleave(guided, random_order(units, seed), share)
        note += f"; {share:.0%} of the positions serve units in random order"
        keys = {unit: position for position, unit in enumerate(guided)}
    return RoutingPlan(routing, tuple(guided), guide, scored, note, keys)


def routing_guide(routing: str, judges: Sequence[str]) -> str:
    """The signal a judge-guided routing orders by: ``disagreement`` or ``uncertainty``."""
    if routing == "judge-disagreement" or (routing == "stratified" and len(judges) >= 2):
        return "disagreement"
    return "uncertainty"


def unit_signal(
    guide: str, readings: Mapping[str, JudgeReading], judges: Sequence[str]
) -> float | None:
    """One unit's disagreement or uncertainty among the chosen ``judges``."""
    chosen = {judge: reading for judge, reading in readings.items() if judge in judges}
    return (unit_disagreement if guide == "disagreement" else unit_uncertainty)(chosen)


_SIGNAL_STEPS = 1_000_000
_TIE_BITS = 40


def serving_key(signal: float | None, seed: int, unit: int) -> int:
    """A unit's place in a judge-guided order as one integer, lowest served first: the signal
    (largest first, in steps of 1e-6), then :func:`random_key`; units without a signal last.

    A unit's key depends on its own judgements only, so new judgements re-key just the units they
    are about (:func:`data.services.routing.refresh_routing_for_judgements`). Fits a signed 64-bit
    integer: at most (10^6 + 1) · 2^40 + 2^40 < 2^61.
    """
    level = _SIGNAL_STEPS + 1 if signal is None else _SIGNAL_STEPS - round(signal * _SIGNAL_STEPS)
    return (level << _TIE_BITS) | (random_key(seed, unit) >> (64 - _TIE_BITS))


def _fallback_note(guide: str, judges: Sequence[str]) -> str:
    if guide == "disagreement":
        why = "no unit was judged by two of the chosen judges"
    else:
        why = (
            "no chosen judge stored probabilities, an expected score or repeated verdicts "
            "(both shown orders, or samples) on these units"
        )
    return (
        f"{why} ({', '.join(judges) or 'none chosen'}): served least-annotated first instead, "
        "ties by unit id, until a judge's readings arrive"
    )


def is_random_position(position: int, share: float) -> bool:
    """Whether 0-based serving position ``position`` belongs to the random stream: position
    ``t`` is random when ``floor((t + 1) * share) > floor(t * share)``, so the first ``m``
    positions hold exactly ``floor(m * share)`` random ones."""
    return math.floor((position + 1) * share) > math.floor(position * share)


def _interleave(guided: list[int], randomised: list[int], share: float) -> list[int]:
    served: set[int] = set()
    order: list[int] = []
    streams = {True: iter(randomised), False: iter(guided)}
    for position in range(len(guided)):
        stream = streams[is_random_position(position, share)]
        unit = next(u for u in stream if u not in served)
        served.add(unit)
        order.append(unit)
    return order


def estimation_sample(units: Sequence[int], complete: set[int], seed: int) -> list[int]:
    """The stratified estimation sample: the longest prefix of the random stream
    (:func:`random_order`) whose units are all complete.

    It always contains the first ``floor(share * m)`` random-order units once ``m`` units are
    served and complete, and its length does not depend on any label, so it is a simple random
    sample of the campaign's units: a judge's accuracy or MAE on it estimates the campaign's
    value without bias, with no weights.
    """
    sample = []
    for unit in random_order(units, seed):
        if unit not in complete:
            break
        sample.append(unit)
    return sample
