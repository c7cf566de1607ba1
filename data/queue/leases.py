"""Leases: which unit an annotator gets next, expiry, retaking an expired lease, the unit view."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, text, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from data.queue.candidates import WAIT_SECONDS, candidate, wait_for_candidate
from data.queue.common import (
    _ASSIGNMENTS,
    _DRAFTS,
    _ITEMS,
    _PAIRS,
    _RESPONSES,
    _UNITS,
    _campaign_row,
    _change_slots,
    campaign_protocol,
)
from data.queue.records import DraftView, ResponseView, UnitView
from data.services.campaigns import get_campaign
from schemas.tables import LIVE_ASSIGNMENT_STATUSES, Assignment, Campaign, Draft, Unit, utcnow

_MAX_TRIES = 50

_OWN_OPEN_ASSIGNMENTS = (
    select(Assignment, Draft)
    .outerjoin(
        Draft,
        (col(Draft.unit_id) == Assignment.unit_id)
        & (col(Draft.annotator_id) == bindparam("annotator_id")),
    )
    .where(
        Assignment.campaign_id == bindparam("campaign_id"),
        Assignment.annotator_id == bindparam("annotator_id"),
    )
    .where(
        (col(Assignment.status) == "leased")
        | ((col(Assignment.status) == "expired") & col(Draft.id).is_not(None))
    )
    .order_by(col(Assignment.status).desc(), col(Assignment.leased_at))
)
"""The annotator's live lease, then expired ones that hold a draft (statement built once)."""


def next_unit(
    session: Session, campaign_id: int, annotator_id: int, now: datetime | None = None
) -> UnitView | None:
    """The annotator's current lease, or a new one on the least-annotated unit; None when done.

    A paused or closed campaign gives no unit. An own lease that expired is renewed if its slot is
    still free, so a draft is not lost over a long break.
    """
    now = now or utcnow()
    session.flush()  # what the ORM statements below used to autoflush (a no-op when clean)
    return _next_unit(session, _campaign_row(session, campaign_id), annotator_id, now)


def _next_unit(
    session: Session, campaign: Any, annotator_id: int, now: datetime
) -> UnitView | None:
    """:func:`next_unit` for a campaign already read (an ORM object or a Core row)."""
    if campaign.status != "active":
        return None
    campaign_id = campaign.id
    expire_leases(session, campaign_id, now)
    params = {"campaign_id": campaign_id, "annotator_id": annotator_id}
    if session.connection().execute(_HAS_OWN_OPEN, params).first() is not None:
        # Rare: a lease to renew, or an expired one with a draft to retake (ORM objects).
        own = session.exec(_OWN_OPEN_ASSIGNMENTS, params=params).all()
        chosen, draft = next(
            ((a, d) for a, d in own if a.status == "leased" or _retake(session, a)),
            (None, None),
        )
        if chosen is not None:
            chosen.expires_at = now + timedelta(seconds=campaign.lease_seconds)
            session.add(chosen)
            return _unit_view(session, campaign, _Leased.of(chosen), draft)
    fresh = _lease_new(session, campaign, annotator_id, now)
    return None if fresh is None else _unit_view(session, campaign, fresh, None)


_HAS_OWN_OPEN = (
    core_select(_ASSIGNMENTS.c.id)
    .outerjoin(
        _DRAFTS,
        (_DRAFTS.c.unit_id == _ASSIGNMENTS.c.unit_id)
        & (_DRAFTS.c.annotator_id == bindparam("annotator_id")),
    )
    .where(
        _ASSIGNMENTS.c.campaign_id == bindparam("campaign_id"),
        _ASSIGNMENTS.c.annotator_id == bindparam("annotator_id"),
    )
    .where(
        (_ASSIGNMENTS.c.status == "leased")
        | ((_ASSIGNMENTS.c.status == "expired") & _DRAFTS.c.id.is_not(None))
    )
    .limit(1)
)
"""Whether :data:`_OWN_OPEN_ASSIGNMENTS` has a row (Core: no ORM loading in the common case)."""


@dataclass(frozen=True)
class _Leased:
    """What the unit view needs of a lease."""

    id: int
    unit_id: int
    shown_order: str
    expires_at: datetime

    @classmethod
    def of(cls, assignment: Assignment) -> _Leased:
        return cls(
            assignment.id,  # type: ignore[arg-type]
            assignment.unit_id,
            assignment.shown_order,
            assignment.expires_at,
        )


_EXPIRE = (
    update(_ASSIGNMENTS)
    .where(_ASSIGNMENTS.c.campaign_id == bindparam("b_campaign"), _ASSIGNMENTS.c.status == "leased")
    .where(_ASSIGNMENTS.c.expires_at <= bindparam("b_now"))
    .values(status="expired", closed_at=bindparam("b_now"))
    .returning(_ASSIGNMENTS.c.unit_id)
)


def expire_leases(session: Session, campaign_id: int, now: datetime | None = None) -> int:
    """Return expired leases of the campaign to the pool; the number returned."""
    now = now or utcnow()
    session.flush()  # as the ORM-enabled update did (a no-op when clean)
    expired = session.connection().execute(_EXPIRE, {"b_campaign": campaign_id, "b_now": now}).all()
    for (unit_id,) in expired:
        _change_slots(session, unit_id, -1)
    return len(expired)


_CORE_LIVE_SLOTS = core_select(_ASSIGNMENTS.c.slot).where(
    _ASSIGNMENTS.c.unit_id == bindparam("unit_id"),
    _ASSIGNMENTS.c.status.in_(LIVE_ASSIGNMENT_STATUSES),
)


def _free_slot(session: Session, unit_id: int, overlap: int) -> int | None:
    taken = set(session.connection().execute(_CORE_LIVE_SLOTS, {"unit_id": unit_id}).scalars())
    return next((slot for slot in range(overlap) if slot not in taken), None)


def _lock_unit(session: Session, unit_id: int) -> Unit | None:
    return session.exec(select(Unit).where(Unit.id == unit_id).with_for_update()).first()


def _retake(session: Session, assignment: Assignment) -> bool:
    """Put an expired or released own assignment back on a free slot of its unit, if any."""
    campaign = get_campaign(session, assignment.campaign_id)
    unit = _lock_unit(session, assignment.unit_id)
    if unit is None or unit.flagged or campaign.status == "closed":
        return False
    slot = _free_slot(session, assignment.unit_id, campaign.overlap)
    if slot is None:
        return False
    try:
        with session.begin_nested():
            assignment.status, assignment.slot, assignment.closed_at = "leased", slot, None
            assignment.overlap = campaign.overlap
            session.add(assignment)
            session.flush()
    except IntegrityError:
        session.refresh(assignment)
        return False
    _change_slots(session, assignment.unit_id, +1)
    return True


_LEASE_COLUMNS = (
    "campaign_id", "unit_id", "annotator_id", "slot", "overlap", "status", "shown_order",
    "leased_at", "expires_at",
)  # fmt: skip
_LEASE = text(
    f"INSERT INTO {_ASSIGNMENTS.name} ({', '.join(_LEASE_COLUMNS)}) "
    f"VALUES ({', '.join(':' + name for name in _LEASE_COLUMNS)}) "
    "ON CONFLICT DO NOTHING RETURNING id"
).bindparams(*(bindparam(name, type_=_ASSIGNMENTS.c[name].type) for name in _LEASE_COLUMNS))
"""A lease that a unique constraint refuses inserts nothing and returns no id (SQLite and
PostgreSQL alike, so no savepoint is needed to go on).

Written as text because SQLAlchemy does not cache the compiled form of its dialects'
``insert().on_conflict_do_nothing()`` (it would be compiled again on every lease).
"""


def _lease_new(session: Session, campaign: Any, annotator_id: int, now: datetime) -> _Leased | None:
    """Lease the least-annotated (or best-routed) unit this annotator never had; None when none
    is left.

    The unique constraints decide: a refused insert returns no id and the next candidate is
    tried. Slots fill from 0 up, so the unit's count of live slots is tried first; only when that
    slot is taken (a lower one was given back) is the free one looked up. On PostgreSQL, units
    that other transactions hold are waited for before "none" is answered
    (:func:`data.queue.candidates.wait_for_candidate`).
    """
    tried: set[int] = set()
    expires_at = now + timedelta(seconds=campaign.lease_seconds)
    deadline = time.monotonic() + WAIT_SECONDS
    for _ in range(_MAX_TRIES):
        found = candidate(session, campaign, annotator_id, tried)
        if found is None:  # PostgreSQL: units held by other transactions may remain
            found = wait_for_candidate(session, campaign, annotator_id, tried, deadline)
        if found is None:
            return None
        unit_id = found.id
        tried.add(unit_id)
        shown_order = _random_order(campaign)
        values = dict(
            campaign_id=campaign.id, unit_id=unit_id, annotator_id=annotator_id,
            slot=found.slots_taken, overlap=campaign.overlap, status="leased",
            shown_order=shown_order, leased_at=now, expires_at=expires_at,
        )  # fmt: skip
        assignment_id = session.connection().execute(_LEASE, values).scalar()
        if assignment_id is None:
            values["slot"] = _free_slot(session, unit_id, campaign.overlap)
            if values["slot"] is None:
                continue
            assignment_id = session.connection().execute(_LEASE, values).scalar()
        if assignment_id is None:  # a concurrent lease took the slot, or this annotator has it
            continue
        _change_slots(session, unit_id, +1)
        return _Leased(assignment_id, unit_id, shown_order, expires_at)
    return None


def _random_order(campaign: Campaign) -> str:
    return random.choice(("AB", "BA")) if campaign.protocol == "pairwise" else "AB"


_R_FIRST, _R_SECOND, _R_SINGLE = _RESPONSES.alias(), _RESPONSES.alias(), _RESPONSES.alias()

_CORE_UNIT_CONTENT = (
    core_select(
        _UNITS.c.id,
        _ITEMS.c.item_id,
        _ITEMS.c.benchmark,
        _ITEMS.c.task,
        _ITEMS.c.category,
        _ITEMS.c.history,
        _ITEMS.c.question,
        _ITEMS.c.reference,
        _R_FIRST.c.response_id.label("a_id"),
        _R_FIRST.c.content.label("a_content"),
        _R_SECOND.c.response_id.label("b_id"),
        _R_SECOND.c.content.label("b_content"),
        _R_SINGLE.c.response_id.label("single_id"),
        _R_SINGLE.c.content.label("single_content"),
    )
    .select_from(_UNITS)
    .join(_ITEMS, _ITEMS.c.id == _UNITS.c.item_pk)
    .outerjoin(_PAIRS, _PAIRS.c.id == _UNITS.c.pair_pk)
    .outerjoin(_R_FIRST, _R_FIRST.c.id == _PAIRS.c.response_a_pk)
    .outerjoin(_R_SECOND, _R_SECOND.c.id == _PAIRS.c.response_b_pk)
    .outerjoin(_R_SINGLE, _R_SINGLE.c.id == _UNITS.c.response_pk)
    .where(_UNITS.c.id == bindparam("unit_id"))
)
"""Item and response(s) of one unit in one Core query (no ORM objects to build)."""


def _unit_view(
    session: Session, campaign: Any, assignment: _Leased, draft: Draft | None
) -> UnitView:
    item = session.connection().execute(_CORE_UNIT_CONTENT, {"unit_id": assignment.unit_id}).one()
    unit_id = item.id
    responses: tuple[ResponseView, ...]
    if item.single_id is None:
        assert item.a_id is not None and item.b_id is not None
        first, second = (item.a_id, item.a_content), (item.b_id, item.b_content)
        shown = (first, second) if assignment.shown_order == "AB" else (second, first)
        responses = (ResponseView(*shown[0], "A"), ResponseView(*shown[1], "B"))
    else:
        responses = (ResponseView(item.single_id, item.single_content, None),)
    return UnitView(
        assignment_id=assignment.id, unit_id=unit_id, campaign_id=campaign.id,
        campaign_name=campaign.name, protocol=campaign_protocol(campaign),
        rationale_min=campaign.rationale_min, instructions=campaign.instructions,
        item_id=item.item_id, benchmark=item.benchmark, task=item.task, category=item.category,
        history=list(item.history or []), question=item.question,
        reference=item.reference if campaign.show_reference else None,
        responses=responses, shown_order=assignment.shown_order,
        expires_at=assignment.expires_at,
        draft=None if draft is None else DraftView(
            draft.score, draft.preference, draft.rationale, draft.active_seconds,
            draft.updated_at,
        ),
    )  # fmt: skip
