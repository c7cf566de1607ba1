"""Leases: which unit an annotator gets next, expiry, retaking an expired lease (what the lease
shows: :mod:`data.queue.unit_view`)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, text, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from data.queue import gold
from data.queue.candidates import (
    WAIT_SECONDS,
    WaitFailed,
    candidate,
    lock_waiting,
    unlocked_pick,
    wait_for_candidate,
)
from data.queue.common import change_slots, require_active_annotator
from data.queue.records import UnitView
from data.queue.routing_lock import share_campaign_queue
from data.queue.unit_view import LeaseFacts, view_of_unit
from data.storage.campaign_lookup import campaign_row, get_campaign
from schemas.core_tables import ASSIGNMENTS, DRAFTS, UNITS
from schemas.tables import (
    GOLD_OVERLAP,
    LIVE_ASSIGNMENT_STATUSES,
    Assignment,
    Campaign,
    Draft,
    Unit,
    utcnow,
)

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
    still free, so a draft is not lost over a long break. An annotator held or retired in the
    campaign gets :class:`~data.queue.records.AnnotatorHeld` (its text is for them); one who
    must qualify first gets gold units only (:mod:`data.queue.gold`).
    """
    now = now or utcnow()
    require_active_annotator(session, annotator_id)
    share_campaign_queue(session, campaign_id)  # first: a re-rank in progress ends before
    session.flush()  # what the ORM statements below used to autoflush (a no-op when clean)
    campaign = campaign_row(session, campaign_id)
    if campaign.status == "active":
        stopped = gold.gate(session, campaign, annotator_id)
        if stopped.mode == "stopped":
            raise stopped.refusal()
    view = next_unit_of_campaign(session, campaign, annotator_id, now)
    if view is None and campaign.status == "active":
        decided = gold.gate(session, campaign, annotator_id)  # held by this very call?
        if decided.mode == "stopped":
            raise decided.refusal()
    return view


@dataclass(frozen=True)
class Counting:
    """An answer to count on its unit's row (``unit_id``) after the lease, in the same
    transaction (:func:`data.queue.answers.submit_and_next`); ``count`` runs the update."""

    unit_id: int
    count: Callable[[], None]


def next_unit_of_campaign(
    session: Session,
    campaign: Any,
    annotator_id: int,
    now: datetime,
    counting: Counting | None = None,
) -> UnitView | None:
    """:func:`next_unit` for a campaign already read (an ORM object or a Core row); with
    ``counting``, the answer is counted too (see :func:`_lease_then_count`).

    The annotator's standing decides first (:func:`data.queue.gold.gate`): held or retired, None
    (the answer still counted); qualifying, gold units only, and the qualification decided when
    its N-th answer is in. Then an own open lease, a gold unit at the campaign's gold rate, or
    the next real unit.
    """
    if campaign.status != "active":
        return None
    campaign_id = campaign.id
    share_campaign_queue(session, campaign_id)  # a no-op when the caller took it, as it should
    expire_leases(session, campaign_id, now)
    entry = gold.gate(session, campaign, annotator_id)
    if entry.mode == "qualifying":
        entry = gold.decide_qualification(session, campaign, annotator_id)
    if entry.mode == "stopped":
        if counting is not None:
            counting.count()
        return None
    params = {"campaign_id": campaign_id, "annotator_id": annotator_id}
    if session.connection().execute(_HAS_OWN_OPEN, params).first() is not None:
        # Rare: a lease to renew, or an expired one with a draft to retake (ORM objects).
        own = session.exec(_OWN_OPEN_ASSIGNMENTS, params=params).all()
        if entry.mode == "qualifying":  # only gold units until qualified
            golden = gold.gold_units_of(session, [a.unit_id for a, _ in own])
            own = [(a, d) for a, d in own if a.unit_id in golden]
        chosen, draft = next(
            ((a, d) for a, d in own if a.status == "leased" or retake_assignment(session, a)),
            (None, None),
        )
        if chosen is not None:
            chosen.expires_at = now + timedelta(seconds=campaign.lease_seconds)
            session.add(chosen)
            if counting is not None:
                counting.count()
            return view_of_unit(session, campaign, LeaseFacts.of(chosen), draft)
    if entry.mode == "qualifying" or gold.gold_turn(session, campaign, annotator_id):
        if counting is not None:  # counted first: a gold lease locks only gold units
            counting.count()
            counting = None
        golden_lease = _lease_gold(session, campaign, annotator_id, now)
        if golden_lease is not None:
            return view_of_unit(session, campaign, golden_lease, None)
        if entry.mode == "qualifying":  # no gold unit left for them: decide on what they gave
            entry = gold.decide_qualification(session, campaign, annotator_id, out_of_gold=True)
            if entry.mode != "open":
                return None
    if counting is not None:
        fresh = _lease_then_count(session, campaign, annotator_id, now, counting)
    else:
        fresh = _lease_new(session, campaign, annotator_id, now)
    return None if fresh is None else view_of_unit(session, campaign, fresh, None)


_HAS_OWN_OPEN = (
    core_select(ASSIGNMENTS.c.id)
    .outerjoin(
        DRAFTS,
        (DRAFTS.c.unit_id == ASSIGNMENTS.c.unit_id)
        & (DRAFTS.c.annotator_id == bindparam("annotator_id")),
    )
    .where(
        ASSIGNMENTS.c.campaign_id == bindparam("campaign_id"),
        ASSIGNMENTS.c.annotator_id == bindparam("annotator_id"),
    )
    .where(
        (ASSIGNMENTS.c.status == "leased")
        | ((ASSIGNMENTS.c.status == "expired") & DRAFTS.c.id.is_not(None))
    )
    .limit(1)
)
"""Whether :data:`_OWN_OPEN_ASSIGNMENTS` has a row (Core: no ORM loading in the common case)."""


_EXPIRE = (
    update(ASSIGNMENTS)
    .where(ASSIGNMENTS.c.campaign_id == bindparam("b_campaign"), ASSIGNMENTS.c.status == "leased")
    .where(ASSIGNMENTS.c.expires_at <= bindparam("b_now"))
    .values(status="expired", closed_at=bindparam("b_now"))
    .returning(ASSIGNMENTS.c.unit_id)
)


def expire_leases(session: Session, campaign_id: int, now: datetime | None = None) -> int:
    """Return expired leases of the campaign to the pool; the number returned."""
    now = now or utcnow()
    share_campaign_queue(session, campaign_id)
    session.flush()  # as the ORM-enabled update did (a no-op when clean)
    expired = session.connection().execute(_EXPIRE, {"b_campaign": campaign_id, "b_now": now}).all()
    for (unit_id,) in expired:
        change_slots(session, unit_id, -1)
    return len(expired)


_CORE_LIVE_SLOTS = core_select(ASSIGNMENTS.c.slot).where(
    ASSIGNMENTS.c.unit_id == bindparam("unit_id"),
    ASSIGNMENTS.c.status.in_(LIVE_ASSIGNMENT_STATUSES),
)


def _free_slot(session: Session, unit_id: int, overlap: int) -> int | None:
    taken = set(session.connection().execute(_CORE_LIVE_SLOTS, {"unit_id": unit_id}).scalars())
    return next((slot for slot in range(overlap) if slot not in taken), None)


def _lease_gold(
    session: Session, campaign: Any, annotator_id: int, now: datetime
) -> LeaseFacts | None:
    """Lease a gold unit the annotator never had (:func:`data.queue.gold.gold_candidates`);
    None when none is left.

    The lease's slot is the annotator's id and its overlap :data:`GOLD_OVERLAP`: unique per unit
    as the annotator is (``uq_assignment_unit_annotator``), so gold leases never compete for the
    K slots of a real unit, and a refused insert means only that this annotator has it already
    (another tab).
    """
    expires_at = now + timedelta(seconds=campaign.lease_seconds)
    for unit_id in gold.gold_candidates(session, campaign.id, annotator_id):
        shown_order = _random_order(campaign)
        values = dict(
            campaign_id=campaign.id,
            unit_id=unit_id,
            annotator_id=annotator_id,
            slot=annotator_id,
            overlap=GOLD_OVERLAP,
            status="leased",
            shown_order=shown_order,
            leased_at=now,
            expires_at=expires_at,
        )
        assignment_id = session.connection().execute(_LEASE, values).scalar()
        if assignment_id is not None:
            change_slots(session, unit_id, +1)
            return LeaseFacts(assignment_id, unit_id, shown_order, expires_at)
    return None


def _lock_unit(session: Session, unit_id: int) -> Unit | None:
    return session.exec(select(Unit).where(Unit.id == unit_id).with_for_update()).first()


def retake_assignment(session: Session, assignment: Assignment) -> bool:
    """Put an expired or released own assignment back on a free slot of its unit, if any."""
    if assignment.status == "rejected":  # back only through a reviewer (data.queue.review)
        return False
    campaign = get_campaign(session, assignment.campaign_id)
    unit = _lock_unit(session, assignment.unit_id)
    if unit is None or unit.flagged or campaign.status == "closed":
        return False
    slot: int | None
    if unit.gold:  # its own slot, outside the K that real units have
        slot, overlap = assignment.annotator_id, GOLD_OVERLAP
    else:
        slot, overlap = _free_slot(session, assignment.unit_id, campaign.overlap), campaign.overlap
    if slot is None:
        return False
    try:
        with session.begin_nested():
            assignment.status, assignment.slot, assignment.closed_at = "leased", slot, None
            assignment.overlap = overlap
            session.add(assignment)
            session.flush()
    except IntegrityError:
        session.refresh(assignment)
        return False
    change_slots(session, assignment.unit_id, +1)
    return True


_LEASE_COLUMNS = (
    "campaign_id",
    "unit_id",
    "annotator_id",
    "slot",
    "overlap",
    "status",
    "shown_order",
    "leased_at",
    "expires_at",
)
_LEASE = text(
    f"INSERT INTO {ASSIGNMENTS.name} ({', '.join(_LEASE_COLUMNS)}) "
    f"VALUES ({', '.join(':' + name for name in _LEASE_COLUMNS)}) "
    "ON CONFLICT DO NOTHING RETURNING id"
).bindparams(*(bindparam(name, type_=ASSIGNMENTS.c[name].type) for name in _LEASE_COLUMNS))
"""A lease that a unique constraint refuses inserts nothing and returns no id (SQLite and
PostgreSQL alike, so no savepoint is needed to go on).

Written as text because SQLAlchemy does not cache the compiled form of its dialects'
``insert().on_conflict_do_nothing()`` (it would be compiled again on every lease).
"""


def _lease_new(
    session: Session, campaign: Any, annotator_id: int, now: datetime
) -> LeaseFacts | None:
    """Lease the least-annotated (or best-routed) unit this annotator never had; None when none
    is left.

    The unique constraints decide: a refused insert returns no id and the next candidate is
    tried (:func:`_insert_lease`). On PostgreSQL, units that other transactions hold are waited
    for before "none" is answered (:func:`data.queue.candidates.wait_for_candidate`).
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
        tried.add(found.id)
        leased = _insert_lease(session, campaign, annotator_id, found, now, expires_at)
        if leased is not None:
            return leased
    return None


def _insert_lease(
    session: Session,
    campaign: Any,
    annotator_id: int,
    found: Any,
    now: datetime,
    expires_at: datetime,
) -> LeaseFacts | None:
    """Lease ``found`` (``id``, ``slots_taken``), locked; None if the constraints refuse it.

    On SQLite slots fill from 0 up, so the unit's count of live slots is tried first; only when
    that slot is taken (a lower one was given back) is the free one looked up. On PostgreSQL the
    free slot is read first: a guess that hits a live slot whose assignment another transaction
    is changing (a submit, a skip, in flight) makes the insert's unique check wait for that
    transaction, which may be waiting for this unit's row, held here: a deadlock (issue 25, seen
    under routing churn once twelve steps resumed together). A slot free in the read has no live
    assignment that anyone but a holder of this unit's row could be inserting.
    """
    unit_id = found.id
    slot, read_first = found.slots_taken, session.connection().dialect.name == "postgresql"
    if read_first:
        slot = _free_slot(session, unit_id, campaign.overlap)
        if slot is None:
            return None
    shown_order = _random_order(campaign)
    values = dict(
        campaign_id=campaign.id,
        unit_id=unit_id,
        annotator_id=annotator_id,
        slot=slot,
        overlap=campaign.overlap,
        status="leased",
        shown_order=shown_order,
        leased_at=now,
        expires_at=expires_at,
    )
    assignment_id = session.connection().execute(_LEASE, values).scalar()
    if assignment_id is None and not read_first:
        values["slot"] = _free_slot(session, unit_id, campaign.overlap)
        if values["slot"] is None:
            return None
        assignment_id = session.connection().execute(_LEASE, values).scalar()
    if assignment_id is None:  # a concurrent lease took the slot, or this annotator has it
        return None
    change_slots(session, unit_id, +1)
    return LeaseFacts(assignment_id, unit_id, shown_order, expires_at)


_LOCK_IF_FREE = (
    core_select(UNITS.c.id)
    .where(UNITS.c.id == bindparam("unit_id"))
    .with_for_update(skip_locked=True, key_share=True)
)


def _lease_then_count(
    session: Session, campaign: Any, annotator_id: int, now: datetime, counting: Counting
) -> LeaseFacts | None:
    """:func:`_lease_new`, and the answer counted on its unit's row, with cycle-free waits.

    On PostgreSQL the count locks the submitted unit's row and a lease may wait for a unit that
    another transaction holds. Counting first and then waiting let two annotators, each
    submitting the other's next unit, wait for each other until the deadlock detector cancelled
    one wait, whose annotator heard "nothing now" while the unit remained. Here a transaction
    waits for a unit only while every unit it holds has a smaller id, so no wait closes a cycle
    (along one the ids would have to grow and come back):

    1. without waiting, in a savepoint: a unit free of locks (``SKIP LOCKED``), kept if the
       submitted unit is free too (then counted at once). Otherwise the savepoint is rolled back.
       That also gives back the rows the ``SKIP LOCKED`` query may have locked without returning
       them (rows another transaction changed since the query's snapshot): their ids are unknown,
       so nothing may be waited for while they are held;
    2. the best unit, waited for if it is below the submitted one; the submitted unit counted
       (waited for) before any unit above it is. A unit locked by waiting stays held for the
       other transactions that wait for it until this one ends (PostgreSQL has them wait for the
       whole transaction once the wait's savepoint is released), so only units above all of
       those are waited for next; one that is not above is passed over (rare: a unit filled
       while it was waited for).

    SQLite runs one writer at a time: the lease, then the count.
    """
    if session.connection().dialect.name != "postgresql":
        leased = _lease_new(session, campaign, annotator_id, now)
        counting.count()
        return leased
    expires_at = now + timedelta(seconds=campaign.lease_seconds)
    submitted = counting.unit_id
    refused: set[int] = set()  # refused by the constraints: not offered again
    first = session.begin_nested()
    for _ in range(_MAX_TRIES):
        found = candidate(session, campaign, annotator_id, refused)
        if found is None:
            break
        leased = _insert_lease(session, campaign, annotator_id, found, now, expires_at)
        if leased is not None:
            lock = {"unit_id": submitted}
            if session.connection().execute(_LOCK_IF_FREE, lock).first() is None:
                break  # held by another transaction, which may wait for the unit just leased
            counting.count()
            first.commit()
            return leased
        refused.add(found.id)
    first.rollback()
    return _wait_in_order(session, campaign, annotator_id, now, counting, refused)


def _wait_in_order(
    session: Session,
    campaign: Any,
    annotator_id: int,
    now: datetime,
    counting: Counting,
    passed_over: set[int],
) -> LeaseFacts | None:
    """Step 2 of :func:`_lease_then_count`, holding no unit yet."""
    expires_at = now + timedelta(seconds=campaign.lease_seconds)
    deadline = time.monotonic() + WAIT_SECONDS
    submitted, counted = counting.unit_id, False
    held: set[int] = set()  # units locked by waiting
    while (remaining := deadline - time.monotonic()) > 0:
        pick = unlocked_pick(session, campaign, annotator_id, passed_over)
        if not counted and (pick is None or pick.id > submitted):
            counting.count()  # every unit held is below it
            counted = True
            continue
        if pick is None:
            break
        passed_over.add(pick.id)
        if pick.id <= max(held | ({submitted} if counted else set()), default=-1):
            continue  # waiting for it could close a cycle
        try:
            locked = lock_waiting(session, pick.id, campaign.overlap, remaining)
        except WaitFailed as failure:
            if failure.sqlstate != "40P01":  # timed out: the deadline is spent
                break
            continue
        held.add(pick.id)  # locked even if found full after the wait (then not returned)
        leased = (
            None
            if locked is None
            else _insert_lease(session, campaign, annotator_id, locked, now, expires_at)
        )
        if leased is not None:
            if not counted:
                counting.count()  # above every unit held (the leased one among them)
            return leased
    if not counted:
        counting.count()  # every unit held is below it (only those were waited for)
    return None


def _random_order(campaign: Campaign) -> str:
    return random.choice(("AB", "BA")) if campaign.protocol == "pairwise" else "AB"
