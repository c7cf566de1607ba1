"""Adjudication: where reviewers settle disagreements (flags: :mod:`data.services.flags`).

A reviewer's final label for a unit is an :class:`~schemas.tables.Adjudication` row. The table is
append-only: a new adjudication retires the live one (``is_live`` false) and both stay. The live
adjudication is the calibration reference for its unit (METRICS.md "Reference label"); the
calibration side reads it from the table (``data.readmodels.frames.campaign_reference_overrides``).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from data.queue import review_info
from data.readmodels.frames import item_content
from data.services.counted_answers import not_rejected
from data.services.monitor import unit_infos
from data.services.roles import require_actor_role
from data.storage.audit import record_event
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from schemas.core import stored_id
from schemas.items import ResponseContent, UnitContent
from schemas.protocols import Protocol
from schemas.tables import (
    Adjudication,
    Annotation,
    Item,
    Judgement,
    Pair,
    Response,
    Unit,
    User,
)

REVIEWER_ROLES: tuple[str, ...] = ("reviewer", "admin")


class AdjudicationError(ValueError):
    """An adjudication or flag resolution that cannot be accepted, with what to do instead."""


@dataclass(frozen=True)
class QueueEntry:
    """A unit waiting for a reviewer, with how much its annotators disagree."""

    unit_id: int
    unit_key: str
    item_id: str
    task: str | None
    answers: int
    disagreement: float
    """scores: max − min in points; pairwise: 1 − share of the most common label"""
    summary: str
    """the answers at a glance, e.g. ``3, 7, 8`` or ``A×2, B×1``"""
    adjudicated: bool


@dataclass(frozen=True)
class HumanAnswer:
    annotator: str
    score: float | None
    preference: str | None
    """canonical order"""
    shown_order: str | None
    rationale: str
    seconds: float
    revision: int
    created_at: datetime
    annotation_id: int | None = None
    review: str = "pending"
    """pending | accepted | rejected | resubmitted (:data:`data.queue.REVIEW_STATES`)"""
    review_comment: str = ""
    """the rejection's comment, for a rejected or resubmitted answer"""

    @property
    def counts(self) -> bool:
        """Whether the answer is in the human reference (not rejected, nor resubmitted)."""
        return self.review not in ("rejected", "resubmitted")


@dataclass(frozen=True)
class JudgeOutput:
    judge: str
    score: float | None
    preference: str | None
    """canonical order; None when unparsed"""
    shown_order: str
    sample: int
    parse_status: str
    rationale: str
    raw_output: str
    prompt_id: str


@dataclass(frozen=True)
class AdjudicationView:
    id: int
    reviewer: str
    score: float | None
    preference: str | None
    note: str
    is_live: bool
    created_at: datetime


@dataclass(frozen=True)
class UnitReview:
    """Everything a reviewer sees for one unit."""

    unit_id: int
    campaign_id: int
    protocol: Protocol
    content: UnitContent
    """The unit key, the item (reference answer included) and one response (pointwise) or the
    pair in canonical order (A, B), with their models: the same record the Calibration page's
    unit viewer shows (:func:`data.readmodels.frames.unit_content`)."""
    answers: tuple[HumanAnswer, ...]
    judges: tuple[JudgeOutput, ...]
    adjudications: tuple[AdjudicationView, ...]
    """newest first; at most one is live"""

    @property
    def live_adjudication(self) -> AdjudicationView | None:
        return next((entry for entry in self.adjudications if entry.is_live), None)

    @property
    def human_mean(self) -> float | None:
        """Mean of the live human scores that count (not rejected); None for pairwise units or
        without a score."""
        scores = [a.score for a in self.answers if a.score is not None and a.counts]
        return statistics.fmean(scores) if scores else None

    @property
    def human_median(self) -> float | None:
        """Median of the live human scores (mean of the middle two when even); None as above."""
        scores = [a.score for a in self.answers if a.score is not None and a.counts]
        return float(statistics.median(scores)) if scores else None

    @property
    def preference_counts(self) -> dict[str, int]:
        """How many live human answers chose each preference (canonical order), A, B, tie."""
        counts = Counter(
            a.preference for a in self.answers if a.preference is not None and a.counts
        )
        return {label: counts[label] for label in self.protocol.labels if counts[label]}


def adjudication_queue(
    session: Session,
    campaign_id: int,
    *,
    min_answers: int = 2,
    include_adjudicated: bool = False,
) -> list[QueueEntry]:
    """Units with at least ``min_answers`` live answers, most disagreement first.

    Ties are broken by more answers first, then unit id, so the order is stable.
    """
    if min_answers < 1:
        raise ValueError(f"min_answers is {min_answers}: a unit needs an answer to be reviewed")
    answers: dict[int, list[Annotation]] = defaultdict(list)
    for annotation in session.exec(
        select(Annotation)
        .join(Unit, col(Unit.id) == col(Annotation.unit_id))
        .where(Annotation.campaign_id == campaign_id, Annotation.is_live)
        .where(col(Unit.gold).is_(False))  # a gold unit's answer is known: nothing to adjudicate
        .where(not_rejected(col(Annotation.assignment_id), campaign_id))  # out of the reference
    ):
        answers[annotation.unit_id].append(annotation)
    adjudicated = set(
        session.exec(
            select(Adjudication.unit_id).where(
                Adjudication.campaign_id == campaign_id, Adjudication.is_live
            )
        )
    )
    wanted = [
        unit_id
        for unit_id, given in answers.items()
        if len(given) >= min_answers and (include_adjudicated or unit_id not in adjudicated)
    ]
    infos = unit_infos(session, campaign_id, wanted)
    entries = []
    for unit_id in wanted:
        disagreement, summary = _disagreement(answers[unit_id])
        info = infos[unit_id]
        entries.append(
            QueueEntry(
                unit_id,
                info.unit_key,
                info.item_id,
                info.task,
                len(answers[unit_id]),
                disagreement,
                summary,
                unit_id in adjudicated,
            )
        )
    return sorted(entries, key=lambda entry: (-entry.disagreement, -entry.answers, entry.unit_id))


def _disagreement(answers: list[Annotation]) -> tuple[float, str]:
    labels = [answer.preference for answer in answers if answer.preference is not None]
    if labels:
        counts = Counter(labels)
        share = counts.most_common(1)[0][1] / len(labels)
        return 1.0 - share, ", ".join(f"{label}×{counts[label]}" for label in sorted(counts))
    scores = sorted(answer.score for answer in answers if answer.score is not None)
    if not scores:
        return 0.0, ""
    return float(scores[-1] - scores[0]), ", ".join(f"{score:g}" for score in scores)


def unit_review(session: Session, unit_id: int) -> UnitReview:
    """The unit, every live human answer with its rationale, every judge output, past rulings."""
    unit = session.get(Unit, unit_id)
    if unit is None:
        raise AdjudicationError(f"no unit #{unit_id}: pick one from the queue")
    campaign = get_campaign(session, unit.campaign_id)
    item = session.get(Item, unit.item_pk)
    assert item is not None
    info = unit_infos(session, unit.campaign_id, [unit_id])[unit_id]
    response_pks: list[int] = []
    if unit.pair_pk is not None:
        pair = session.get(Pair, unit.pair_pk)
        assert pair is not None
        response_pks = [pair.response_a_pk, pair.response_b_pk]
    elif unit.response_pk is not None:  # a unit has one of the two (ck_unit_response_xor_pair)
        response_pks = [unit.response_pk]
    responses = tuple(
        ResponseContent(response.response_id, response.model, response.content, response.id)
        for response in (session.get(Response, pk) for pk in response_pks)
        if response is not None
    )
    live = session.exec(
        select(Annotation, User.name)
        .join(User, col(User.id) == col(Annotation.annotator_id))
        .where(Annotation.unit_id == unit_id, Annotation.is_live)
        .order_by(col(User.name))
    ).all()
    reviews = review_info(session, [stored_id(a) for a, _ in live])
    answers = tuple(
        HumanAnswer(
            annotator=name,
            score=a.score,
            preference=a.preference,
            shown_order=a.shown_order,
            rationale=a.rationale,
            seconds=a.seconds,
            revision=a.revision,
            created_at=a.created_at,
            annotation_id=stored_id(a),
            review=reviews[stored_id(a)].state,
            review_comment=reviews[stored_id(a)].comment,
        )
        for a, name in live
    )
    return UnitReview(
        unit_id=unit_id,
        campaign_id=unit.campaign_id,
        protocol=campaign_protocol(campaign),
        content=UnitContent(info.unit_key, item_content(item), responses),
        answers=answers,
        judges=_judge_outputs(session, unit),
        adjudications=tuple(_adjudication_history(session, unit_id)),
    )


def _judge_outputs(session: Session, unit: Unit) -> tuple[JudgeOutput, ...]:
    matches = (
        Judgement.pair_pk == unit.pair_pk
        if unit.pair_pk is not None
        else Judgement.response_pk == unit.response_pk
    )
    rows = session.exec(
        select(Judgement)
        .where(matches)
        .order_by(col(Judgement.judge), col(Judgement.shown_order), col(Judgement.sample))
    )
    return tuple(
        JudgeOutput(
            j.judge,
            j.score,
            j.preference,
            j.shown_order,
            j.sample,
            j.parse_status,
            j.rationale,
            j.raw_output,
            j.prompt_id,
        )
        for j in rows
    )


def _adjudication_history(session: Session, unit_id: int) -> list[AdjudicationView]:
    rows = session.exec(
        select(Adjudication, User.name)
        .join(User, col(User.id) == col(Adjudication.reviewer_id))
        .where(Adjudication.unit_id == unit_id)
        .order_by(col(Adjudication.id).desc())
    )
    return [
        AdjudicationView(stored_id(a), name, a.score, a.preference, a.note, a.is_live, a.created_at)
        for a, name in rows
    ]


def adjudicate(
    session: Session,
    actor_id: int | None,
    unit_id: int,
    *,
    score: float | None = None,
    preference: str | None = None,
    note: str,
) -> Adjudication:
    """Record the final label of a unit (reviewers and admins); it retires the live one.

    Scores must lie on the campaign's scale and preferences be A, B or tie (canonical order); a
    note saying why is required. The change is an ``adjudication.create`` audit event with the
    label before and after.
    """
    reviewer = require_actor_role(session, actor_id, *REVIEWER_ROLES)
    # the row lock serialises two reviewers ruling on one unit (PostgreSQL; SQLite's writes are)
    unit = session.exec(select(Unit).where(Unit.id == unit_id).with_for_update()).first()
    if unit is None:
        raise AdjudicationError(f"no unit #{unit_id}: pick one from the queue")
    campaign = get_campaign(session, unit.campaign_id)
    protocol = campaign_protocol(campaign)
    if protocol.is_pointwise:
        if preference is not None:
            raise AdjudicationError(f"a {protocol.name} unit needs a score, not a preference")
        if score is None:
            raise AdjudicationError(
                f"choose a score ({protocol.describe_scale()}): a {protocol.name} unit needs a "
                "score before its final label can be recorded"
            )
        score = protocol.validate_score(score)
    else:
        if score is not None:
            raise AdjudicationError("a pairwise unit needs a preference (A, B or tie), not a score")
        if preference is None:
            raise AdjudicationError(
                "choose the better response (A, B or tie): a pairwise unit needs a preference "
                "before its final label can be recorded"
            )
        preference = protocol.validate_preference(preference)
    if not note.strip():
        raise AdjudicationError("write a note that says why this is the final label")
    live = session.exec(
        select(Adjudication).where(Adjudication.unit_id == unit_id, Adjudication.is_live)
    ).first()
    before = None if live is None else {"score": live.score, "preference": live.preference}
    if live is not None:
        live.is_live = False
        session.add(live)
        session.flush()
    ruling = Adjudication(
        campaign_id=unit.campaign_id,
        unit_id=unit_id,
        reviewer_id=stored_id(reviewer),
        score=score,
        preference=preference,
        note=note.strip(),
    )
    session.add(ruling)
    session.flush()
    record_event(
        session,
        actor_id=actor_id,
        action="adjudication.create",
        entity="adjudication",
        entity_id=stored_id(ruling),
        detail={
            "unit_id": unit_id,
            "campaign_id": unit.campaign_id,
            "before": before,
            "after": {"score": score, "preference": preference},
            "note": ruling.note,
            "retired": None if live is None else live.id,
        },
    )
    return ruling
