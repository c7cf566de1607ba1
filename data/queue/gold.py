"""Gold units in the queue: who may be served what (standing, qualification), when a gold unit
is served, how a gold answer is graded, and the feedback after one.

A gold unit (``Unit.gold``, its known answer in ``gold_answer``) is never served by the
least-annotated or routed queue (:mod:`~data.queue.candidates` leaves it out). This module
decides, for each lease (:func:`data.queue.leases.next_unit_of_campaign`):

* :func:`gate`: an annotator ``held`` or ``retired`` in the campaign gets nothing
  (:class:`~data.queue.records.AnnotatorHeld` from :func:`data.queue.next_unit`); one still
  ``qualifying`` (the campaign asks for N > 0 qualification answers and they have no decided
  standing) gets gold units only. After the N-th answer (or when no gold unit is left for them)
  :func:`decide_qualification` writes ``qualified`` (accuracy ≥ T) or ``held``, audited.
* :func:`gold_turn`: after qualification, whether this lease is a gold one: one lease in every
  ``round(1 / gold_rate)`` of the annotator's, at a position drawn per block from a seed of
  (campaign, annotator, block), so it is deterministic and never two blocks alike.

Grading (:func:`grade`): the annotator's first answer to a gold unit (revision 1) counts; a
revision made after feedback does not change it. Pointwise: ``exact`` (equal within the scale's
tolerance) and ``within_one`` (at most one scale step off; a continuous scale's step is a tenth
of its range). Pairwise: the canonical preference equals the expected one (a tie expected and a
tie given agree; a tie against A or B does not), and ``within_one`` is the same as ``exact``.
Qualification counts an answer as right when it is ``within_one``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import bindparam, exists, func, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from data.queue.common import change_slots, shown_preference
from data.queue.records import AnnotatorHeld, GoldFeedback
from data.storage.audit import record_event
from data.storage.campaign_lookup import campaign_protocol
from schemas.core_tables import ANNOTATIONS, ASSIGNMENTS, GOLD_ANSWERS, STANDINGS, UNITS
from schemas.protocols import Protocol
from schemas.tables import AnnotatorStanding, utcnow

HELD_MESSAGE = (
    "Your qualification answers did not reach the campaign's bar; an admin will review them."
)
ADMIN_HELD_MESSAGE = "An admin has paused your work in this campaign; they will get back to you."
RETIRED_MESSAGE = "An admin has ended your work in this campaign. Your answers are kept. Thank you."

_STANDING = core_select(
    STANDINGS.c.status, STANDINGS.c.decided_by, STANDINGS.c.by_queue, STANDINGS.c.reason
).where(
    STANDINGS.c.campaign_id == bindparam("campaign_id"),
    STANDINGS.c.annotator_id == bindparam("annotator_id"),
)


@dataclass(frozen=True)
class Gate:
    """What the annotator may be served now: ``open`` (real units, gold at the campaign's rate),
    ``qualifying`` (gold units only) or ``stopped`` (nothing; ``message`` says why)."""

    mode: Literal["open", "qualifying", "stopped"]
    status: str | None = None
    message: str = ""

    def refusal(self) -> AnnotatorHeld:
        return AnnotatorHeld(self.status or "held", self.message)


def standing(session: Session, campaign_id: int, annotator_id: int) -> Any:
    """The annotator's standing row (``status``, ``decided_by``, ``by_queue``, ``reason``) in the
    campaign, or None."""
    params = {"campaign_id": campaign_id, "annotator_id": annotator_id}
    return session.connection().execute(_STANDING, params).first()


def gate(session: Session, campaign: Any, annotator_id: int) -> Gate:
    """:class:`Gate` of the annotator in ``campaign`` (an ORM object or a Core row)."""
    row = standing(session, campaign.id, annotator_id)
    status = None if row is None else row.status
    if status == "retired":
        return Gate("stopped", status, _with_reason(RETIRED_MESSAGE, row.reason))
    if status == "held":
        if row.by_queue:
            return Gate("stopped", status, HELD_MESSAGE)
        return Gate("stopped", status, _with_reason(ADMIN_HELD_MESSAGE, row.reason))
    if campaign.qualification_gold > 0 and status in (None, "qualifying"):
        return Gate("qualifying", status)
    return Gate("open", status)


def _with_reason(message: str, reason: str | None) -> str:
    return message if not reason else f"{message} Their reason: {reason}"


def is_gold(session: Session, unit_id: int) -> bool:
    """Whether the unit is a gold unit."""
    query = core_select(UNITS.c.gold).where(UNITS.c.id == bindparam("unit_id"))
    return bool(session.connection().execute(query, {"unit_id": unit_id}).scalar())


def gold_units_of(session: Session, unit_ids: list[int]) -> set[int]:
    """Which of ``unit_ids`` are gold units."""
    if not unit_ids:
        return set()
    query = core_select(UNITS.c.id).where(UNITS.c.id.in_(unit_ids), UNITS.c.gold.is_(True))
    return set(session.connection().execute(query).scalars())


_GIVEN = (
    core_select(func.count())
    .select_from(ASSIGNMENTS)
    .where(
        ASSIGNMENTS.c.campaign_id == bindparam("campaign_id"),
        ASSIGNMENTS.c.annotator_id == bindparam("annotator_id"),
    )
)


def gold_spacing(rate: float) -> int:
    """One gold unit in every this many leases at ``rate`` (0 < rate ≤ 0.5)."""
    return max(2, round(1 / rate))


def gold_turn(session: Session, campaign: Any, annotator_id: int) -> bool:
    """Whether the annotator's next lease is a gold one (see the module docstring)."""
    if not campaign.gold_rate:
        return False
    spacing = gold_spacing(campaign.gold_rate)
    params = {"campaign_id": campaign.id, "annotator_id": annotator_id}
    given = int(session.connection().execute(_GIVEN, params).scalar_one())
    block, position = divmod(given, spacing)
    return position == random.Random(f"{campaign.id}:{annotator_id}:{block}").randrange(spacing)


_GOLD_LEFT = (
    core_select(UNITS.c.id)
    .where(
        UNITS.c.campaign_id == bindparam("campaign_id"),
        UNITS.c.gold.is_(True),
        UNITS.c.flagged.is_(False),
    )
    .where(
        ~exists().where(
            ASSIGNMENTS.c.unit_id == UNITS.c.id,
            ASSIGNMENTS.c.annotator_id == bindparam("annotator_id"),
        )
    )
    .order_by(UNITS.c.id)
)


def gold_candidates(session: Session, campaign_id: int, annotator_id: int) -> list[int]:
    """The campaign's gold units the annotator never had, in the order to offer them: a
    shuffle seeded by (campaign, annotator), so that each annotator meets them in their own
    order and never twice."""
    params = {"campaign_id": campaign_id, "annotator_id": annotator_id}
    left = list(session.connection().execute(_GOLD_LEFT, params).scalars())
    random.Random(f"gold:{campaign_id}:{annotator_id}:{len(left)}").shuffle(left)
    return left


# --- grading -------------------------------------------------------------------------------


def step_of(protocol: Protocol) -> float:
    """One step of a pointwise scale: its step, or a tenth of a continuous scale's range."""
    return protocol.step if protocol.step is not None else protocol.scale_range / 10


def grade(
    protocol: Protocol,
    expected_score: float | None,
    expected_preference: str | None,
    score: float | None,
    preference: str | None,
) -> tuple[bool, bool]:
    """``(exact, within_one)`` of an answer against a gold answer (canonical preferences)."""
    if not protocol.is_pointwise:
        same = preference is not None and preference == expected_preference
        return same, same
    if score is None or expected_score is None:
        return False, False
    gap = abs(score - expected_score)
    return gap <= protocol.tolerance, gap <= step_of(protocol) + protocol.tolerance


@dataclass(frozen=True)
class GoldAnswerRow:
    """One first answer to a gold unit, graded."""

    annotator_id: int
    unit_id: int
    exact: bool
    within_one: bool


_FIRST_GOLD_ANSWERS = (
    core_select(
        ANNOTATIONS.c.annotator_id,
        ANNOTATIONS.c.unit_id,
        ANNOTATIONS.c.score,
        ANNOTATIONS.c.preference,
        GOLD_ANSWERS.c.score.label("expected_score"),
        GOLD_ANSWERS.c.preference.label("expected_preference"),
    )
    .join(GOLD_ANSWERS, GOLD_ANSWERS.c.unit_id == ANNOTATIONS.c.unit_id)
    .where(ANNOTATIONS.c.campaign_id == bindparam("campaign_id"), ANNOTATIONS.c.revision == 1)
    .order_by(ANNOTATIONS.c.id)
)


def graded_gold_answers(
    session: Session, campaign: Any, annotator_id: int | None = None
) -> list[GoldAnswerRow]:
    """Every first answer to a gold unit of the campaign (of one annotator, if given), graded,
    in the order they were given."""
    query = _FIRST_GOLD_ANSWERS
    if annotator_id is not None:
        query = query.where(ANNOTATIONS.c.annotator_id == annotator_id)
    protocol = campaign_protocol(campaign)
    rows = session.connection().execute(query, {"campaign_id": campaign.id}).all()
    return [
        GoldAnswerRow(
            row.annotator_id,
            row.unit_id,
            *grade(
                protocol, row.expected_score, row.expected_preference, row.score, row.preference
            ),
        )
        for row in rows
    ]


# --- qualification --------------------------------------------------------------------------


def decide_qualification(
    session: Session, campaign: Any, annotator_id: int, *, out_of_gold: bool = False
) -> Gate:
    """Decide a qualifying annotator's standing once N gold units are answered (or none is left
    to serve them: the missing answers count as wrong); the gate after it.

    Right = within one step (pointwise) or the same preference (pairwise), over the first N
    answers. ``qualified`` when right / N ≥ T, else ``held``; written once and audited.
    """
    needed = campaign.qualification_gold
    answers = graded_gold_answers(session, campaign, annotator_id)[:needed]
    if len(answers) < needed and not out_of_gold:
        return Gate("qualifying")
    right = sum(answer.within_one for answer in answers)
    accuracy = right / needed
    status = "qualified" if accuracy >= campaign.qualification_accuracy - 1e-12 else "held"
    set_standing(
        session,
        campaign.id,
        annotator_id,
        status,
        actor_id=None,
        by_queue=True,
        accuracy=accuracy,
        detail={"answered": len(answers), "right": right, "needed": needed},
    )
    return gate(session, campaign, annotator_id)


def set_standing(
    session: Session,
    campaign_id: int,
    annotator_id: int,
    status: str,
    *,
    actor_id: int | None,
    by_queue: bool = False,
    reason: str | None = None,
    accuracy: float | None = None,
    detail: dict[str, Any] | None = None,
) -> str | None:
    """Write the annotator's standing (one row per campaign and annotator), audited as
    ``standing.<status>`` with the one before; the status before (None: no row).

    Held or retired: their open leases are given back at once, so that the K slots they held
    go to others. ``by_queue``: decided by the queue (qualification), else by an admin
    (``actor_id``, None from the command line) for ``reason`` (None: none given).
    """
    now = utcnow()
    before = standing(session, campaign_id, annotator_id)
    if before is None:
        try:
            with session.begin_nested():
                session.add(
                    AnnotatorStanding(
                        campaign_id=campaign_id,
                        annotator_id=annotator_id,
                        status=status,
                        accuracy=accuracy,
                        decided_by=actor_id,
                        decided_at=now,
                        by_queue=by_queue,
                        reason=reason,
                    )
                )
                session.flush()
        except IntegrityError:  # decided meanwhile (another tab): update it instead
            before = standing(session, campaign_id, annotator_id)
    if before is not None:
        values: dict[str, Any] = {
            "status": status,
            "decided_by": actor_id,
            "decided_at": now,
            "by_queue": by_queue,
            "reason": reason,
        }
        if accuracy is not None:
            values["accuracy"] = accuracy
        session.connection().execute(
            update(STANDINGS)
            .where(STANDINGS.c.campaign_id == campaign_id, STANDINGS.c.annotator_id == annotator_id)
            .values(**values)
        )
    if status in ("held", "retired"):
        _give_back_leases(session, campaign_id, annotator_id, now)
    record_event(
        session,
        actor_id=actor_id,
        action=f"standing.{status}",
        entity="annotator_standing",
        entity_id=f"{campaign_id}:{annotator_id}",
        detail={
            "campaign_id": campaign_id,
            "annotator_id": annotator_id,
            "before": None if before is None else before.status,
            "after": status,
            "by_queue": by_queue,
            "reason": reason,
            "accuracy": accuracy,
            **(detail or {}),
        },
    )
    return None if before is None else before.status


def _give_back_leases(session: Session, campaign_id: int, annotator_id: int, now: Any) -> None:
    released = session.connection().execute(
        update(ASSIGNMENTS)
        .where(
            ASSIGNMENTS.c.campaign_id == campaign_id,
            ASSIGNMENTS.c.annotator_id == annotator_id,
            ASSIGNMENTS.c.status == "leased",
        )
        .values(status="released", closed_at=now, skip_reason="annotator held")
        .returning(ASSIGNMENTS.c.unit_id)
    )
    for (unit_id,) in released.all():
        change_slots(session, unit_id, -1)


# --- feedback -------------------------------------------------------------------------------

_GOLD_OF_UNIT = core_select(
    GOLD_ANSWERS.c.score, GOLD_ANSWERS.c.preference, GOLD_ANSWERS.c.explanation
).where(GOLD_ANSWERS.c.unit_id == bindparam("unit_id"))


def feedback(
    session: Session,
    campaign: Any,
    unit_id: int,
    score: float | None,
    preference: str | None,
    shown_order: str | None,
) -> GoldFeedback | None:
    """The expected answer after an answer (canonical ``preference``) to ``unit_id``: only when
    the campaign gives feedback and the unit is gold; None in every other case."""
    if not campaign.gold_feedback:
        return None
    row = session.connection().execute(_GOLD_OF_UNIT, {"unit_id": unit_id}).first()
    if row is None:
        return None
    exact, within_one = grade(
        campaign_protocol(campaign), row.score, row.preference, score, preference
    )
    return GoldFeedback(
        expected_score=row.score,
        expected_preference_shown=shown_preference(row.preference, shown_order),
        explanation=row.explanation,
        agrees=within_one,
        exact=exact,
    )
