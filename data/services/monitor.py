"""Campaign monitoring beyond progress: human label matrices, low-effort signals, skips, flags.

Low-effort signals are :mod:`data.services.effort`'s, on the campaign's live answers
(:func:`low_effort_report`). Every figure here reads the answers calibration reads: live answers
to real units that no reviewer rejected (:func:`~data.services.counted_answers.not_rejected`, the
calibration frame's own filter), so the Monitor's agreement so far and Annotators table match
``critiquelab calibrate``.

Progress per annotator and per unit is ``data.services.campaign_progress``. These are read-only
queries that return typed records; the monitor page renders them. Agreement is not
computed here (``data`` never imports ``calibration``): :func:`human_rating_matrices` returns the
annotators × units matrices that the page hands to the calibration package.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import numpy as np
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, select

from data.services.counted_answers import not_rejected
from data.services.effort import EffortAnswer, EffortFlag, EffortReport, assess
from schemas.core import stored_id
from schemas.ids import pair_unit_key, response_unit_key
from schemas.protocols import PREFERENCES
from schemas.tables import (
    Annotation,
    Assignment,
    Flag,
    Item,
    Pair,
    Response,
    Unit,
    User,
)

NO_TASK = "(no task)"
MAX_ID_FILTER = 1000


@dataclass(frozen=True)
class UnitInfo:
    """What identifies a unit on screen: its key (``r:<response_id>`` / ``p:<a>|<b>``) and item."""

    unit_id: int
    unit_key: str
    item_id: str
    task: str | None
    model: str | None
    """the evaluated model (pointwise); None for pairs"""
    response_texts: tuple[str, ...]
    """the plain text of the response(s), canonical order"""
    question_text: str = ""
    """the plain text of the question and its earlier turns, as the annotator reads them"""
    images: int = 0
    """images shown with the unit (the item's, its earlier turns' and the responses')"""


@dataclass(frozen=True)
class RatingMatrix:
    """Human labels of one task as annotators × units (NaN = not rated).

    Pairwise labels are coded 0 = A, 1 = B, 2 = tie (``level`` is then ``nominal``); scores are
    the values themselves (``level`` ``interval``).
    """

    task: str
    level: Literal["interval", "nominal"]
    annotators: tuple[str, ...]
    units: tuple[str, ...]
    values: np.ndarray
    swapped: np.ndarray | None = None
    """Annotators × units: True where the pair was shown in the order B, A (pairwise)."""
    order: np.ndarray | None = None
    """Annotators × units: the answer's place in submission order (NaN = not rated)."""


@dataclass(frozen=True)
class UnitIssue:
    """A unit that an annotator skipped or flagged, with the reason they gave."""

    kind: Literal["skipped", "flagged"]
    unit_id: int
    unit_key: str
    item_id: str
    user: str
    reason: str
    at: datetime | None
    resolution: str | None
    """flags: the reviewer's note once resolved"""


@dataclass(frozen=True)
class _Answer:
    annotation: Annotation
    annotator: str


def content_text(content: object) -> str:
    """The plain text of CONTENT (a string, or the text segments of a segment list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(segment.get("text", ""))
            for segment in content
            if isinstance(segment, dict) and segment.get("type") == "text"
        )
    return ""


def unit_infos(
    session: Session, campaign_id: int, unit_ids: Collection[int] | None = None
) -> dict[int, UnitInfo]:
    """The units of the campaign (all, or those in ``unit_ids``) by id, with key, item, text.

    Up to :data:`MAX_ID_FILTER` ids are filtered in SQL; more are read with the whole campaign
    (a query holds at most 65,535 parameters on PostgreSQL).
    """
    response_a, response_b = aliased(Response), aliased(Response)
    wanted = col(Unit.campaign_id) == campaign_id
    if unit_ids is not None and len(unit_ids) <= MAX_ID_FILTER:
        wanted = wanted & col(Unit.id).in_(list(unit_ids))
    pointwise = session.exec(
        select(Unit, Item, Response)
        .join(Item, col(Item.id) == col(Unit.item_pk))
        .join(Response, col(Response.id) == col(Unit.response_pk))
        .where(wanted)
    )
    infos = {
        stored_id(unit): UnitInfo(
            stored_id(unit),
            response_unit_key(response.response_id),
            item.item_id,
            item.task,
            response.model,
            (content_text(response.content),),
            _question_text(item),
            _images(item, response.content),
        )
        for unit, item, response in pointwise
    }
    pairwise = session.exec(
        select(Unit, Item, response_a, response_b)
        .join(Item, col(Item.id) == col(Unit.item_pk))
        .join(Pair, col(Pair.id) == col(Unit.pair_pk))
        .join(response_a, col(response_a.id) == col(Pair.response_a_pk))
        .join(response_b, col(response_b.id) == col(Pair.response_b_pk))
        .where(wanted)
    )
    for unit, item, first, second in pairwise:
        infos[stored_id(unit)] = UnitInfo(
            stored_id(unit),
            pair_unit_key(first.response_id, second.response_id),
            item.item_id,
            item.task,
            None,
            (content_text(first.content), content_text(second.content)),
            _question_text(item),
            _images(item, first.content, second.content),
        )
    return infos


def _question_text(item: Item) -> str:
    turns = [turn.get("content") for turn in item.history or [] if isinstance(turn, dict)]
    return "\n".join(content_text(content) for content in (*turns, item.question))


def _images(item: Item, *responses: object) -> int:
    turns = [turn.get("content") for turn in item.history or [] if isinstance(turn, dict)]
    return sum(_image_count(content) for content in (*turns, item.question, *responses))


def _image_count(content: object) -> int:
    if not isinstance(content, list):
        return 0
    return sum(isinstance(s, dict) and s.get("type") == "image" for s in content)


def _live_answers(session: Session, campaign_id: int) -> list[_Answer]:
    """Live answers to the campaign's real units that count: gold answers and answers a reviewer
    rejected (and revisions of them not accepted yet) are left out, as in the calibration frame."""
    rows = session.exec(
        select(Annotation, User.name)
        .join(User, col(User.id) == col(Annotation.annotator_id))
        .join(Unit, col(Unit.id) == col(Annotation.unit_id))
        .where(Annotation.campaign_id == campaign_id, Annotation.is_live)
        .where(col(Unit.gold).is_(False))  # gold answers: the gold accuracy, not agreement
        .where(not_rejected(col(Annotation.assignment_id), campaign_id))
        .order_by(col(Annotation.id))
    )
    return [_Answer(annotation, name) for annotation, name in rows]


def human_rating_matrices(session: Session, campaign_id: int) -> dict[str, RatingMatrix]:
    """Live human labels per task as annotators × units matrices, for agreement statistics
    (rejected answers left out: :func:`_live_answers`)."""
    infos = unit_infos(session, campaign_id)
    by_task: dict[str, list[tuple[str, str, float, bool, int]]] = defaultdict(list)
    level: Literal["interval", "nominal"] = "interval"
    for place, answer in enumerate(_live_answers(session, campaign_id)):  # submission order
        annotation = answer.annotation
        info = infos[annotation.unit_id]
        if annotation.preference is not None:
            level = "nominal"
            value = float(PREFERENCES.index(annotation.preference))
        elif annotation.score is not None:
            value = float(annotation.score)
        else:
            continue
        swapped = annotation.shown_order == "BA"
        by_task[info.task or NO_TASK].append(
            (answer.annotator, info.unit_key, value, swapped, place)
        )
    matrices = {}
    for task, labels in sorted(by_task.items()):
        annotators = tuple(sorted({label[0] for label in labels}))
        units = tuple(sorted({label[1] for label in labels}))
        row = {name: i for i, name in enumerate(annotators)}
        column = {unit: j for j, unit in enumerate(units)}
        values = np.full((len(annotators), len(units)), np.nan)
        shown = np.zeros(values.shape, dtype=bool)
        order = np.full(values.shape, np.nan)
        for annotator, unit, value, swapped, place in labels:
            cell = row[annotator], column[unit]
            values[cell], shown[cell], order[cell] = value, swapped, place
        matrices[task] = RatingMatrix(task, level, annotators, units, values, shown, order)
    return matrices


def low_effort_report(session: Session, campaign_id: int) -> EffortReport:
    """Low-effort flags of the campaign's live answers (gold and rejected answers left out), per
    answer and per annotator (:func:`data.services.effort.assess`: too fast for the text shown,
    near-duplicate rationales across different units, rationales copied from the response, stock
    rationales)."""
    infos = unit_infos(session, campaign_id)
    answers = []
    for answer in _live_answers(session, campaign_id):
        annotation, info = answer.annotation, infos[answer.annotation.unit_id]
        shown = len(info.question_text) + sum(len(text) for text in info.response_texts)
        answers.append(
            EffortAnswer(
                stored_id(annotation),
                annotation.unit_id,
                info.unit_key,
                answer.annotator,
                annotation.seconds,
                annotation.rationale or "",
                shown,
                info.images,
                info.response_texts,
            )
        )
    return assess(answers)


def low_effort_flags(session: Session, campaign_id: int) -> list[EffortFlag]:
    """The answer flags of :func:`low_effort_report`."""
    return low_effort_report(session, campaign_id).flags


def unit_issues(session: Session, campaign_id: int) -> list[UnitIssue]:
    """Every skip (with its reason) and every flag (with its resolution), newest first."""
    infos = unit_infos(session, campaign_id)
    issues = [
        UnitIssue(
            "skipped",
            assignment.unit_id,
            infos[assignment.unit_id].unit_key,
            infos[assignment.unit_id].item_id,
            name,
            assignment.skip_reason or "",
            assignment.closed_at,
            None,
        )
        for assignment, name in session.exec(
            select(Assignment, User.name)
            .join(User, col(User.id) == col(Assignment.annotator_id))
            .where(Assignment.campaign_id == campaign_id, Assignment.status == "skipped")
        )
    ]
    issues += [
        UnitIssue(
            "flagged",
            flag.unit_id,
            infos[flag.unit_id].unit_key,
            infos[flag.unit_id].item_id,
            name,
            flag.reason,
            flag.created_at,
            flag.resolution,
        )
        for flag, name in session.exec(
            select(Flag, User.name)
            .join(User, col(User.id) == col(Flag.user_id))
            .where(Flag.campaign_id == campaign_id)
        )
    ]
    return sorted(issues, key=lambda issue: _aware(issue.at) if issue.at else _EPOCH, reverse=True)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _aware(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes for UTC columns; make them comparable."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
