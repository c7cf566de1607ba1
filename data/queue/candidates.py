"""Which unit a lease tries next: least-annotated or judge-routed, and on PostgreSQL the wait for
a unit that other transactions hold.

On PostgreSQL the first pass (:func:`candidate`) locks its pick with ``SKIP LOCKED``,
so that concurrent annotators spread over different units instead of queueing on one. But a unit
row is locked not only while another annotator leases the unit: a submit in flight counts its
answer on the unit's row, and a unit with overlap K > 1 may well have a free slot left that this
annotator may take. Skipping such a unit and answering "nothing" would send an annotator away
while work remains (issue 11). So when the first pass finds nothing, :func:`wait_for_candidate`
reads the candidates without locking and waits for the lock of the best one, then checks it again.
"Nothing" then means that no unit with a free slot this annotator never had is left, or that the
wait (:data:`WAIT_SECONDS` for the whole lease) ran out.

The wait runs in a savepoint with a ``lock_timeout``. Waiting can form a cycle when a
transaction holds a unit while it waits (two annotators, each having submitted, in a transaction
still open, the unit that is the other's last one); PostgreSQL then cancels one wait
(``deadlock_detected``) after its ``deadlock_timeout``, and that lease passes over the unit for
the next one. If there is none it answers "nothing now" although the other's unit may come free,
since that unit cannot come free before this transaction (holding the unit the other waits for)
ends. The annotation page's step, :func:`data.queue.answers.submit_and_next`, avoids this: it
counts its answer on the unit's row after the lease and orders its waits by unit id
(:func:`data.queue.leases._lease_then_count`), so its waits form no cycle.

Only the savepoint is rolled back: the caller's submit, made before the savepoint, stays in the
transaction and commits with it. A whole transaction must never be rolled back here, since its
submit would then vanish while the caller reports it stored. Units are locked
``FOR NO KEY UPDATE`` (a lease never changes a unit's key), which a submit's foreign-key check on
the unit (``FOR KEY SHARE``) does not wait for: with ``FOR UPDATE``, a submit queued behind a
waiting lease could close a cycle outside any savepoint and fail. SQLite runs one write
transaction at a time (``BEGIN IMMEDIATE``): nothing is ever locked by another transaction there,
so it has no second pass.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from sqlalchemy import bindparam, exists, func, literal_column, text
from sqlalchemy import select as core_select
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from schemas.core_tables import ASSIGNMENTS, UNITS

WAIT_SECONDS = 10.0
"""The longest one lease waits for units that other transactions hold (PostgreSQL). Those are
short app transactions (a submit and the next lease, milliseconds); the bound is for a long one,
such as re-ranking a whole campaign, after which "nothing now" is answered."""

_LOCK_FAILURES = frozenset({"55P03", "40P01"})
"""SQLSTATEs of a wait that failed: ``lock_not_available`` (lock_timeout), ``deadlock_detected``."""

_CANDIDATE_READ = (
    core_select(UNITS.c.id, UNITS.c.slots_taken)
    .where(
        UNITS.c.campaign_id == bindparam("campaign_id"),
        UNITS.c.slots_taken < bindparam("overlap"),
    )
    .where(~UNITS.c.flagged, ~UNITS.c.gold)
    .where(
        ~exists().where(
            ASSIGNMENTS.c.unit_id == UNITS.c.id,
            ASSIGNMENTS.c.annotator_id == bindparam("annotator_id"),
        )
    )
    .order_by(UNITS.c.slots_taken, UNITS.c.priority, UNITS.c.id)
    .limit(1)
)
"""The least-annotated unit with a free slot that the annotator never had (no lock), ties broken
by the seeded random key in ``priority`` (:func:`data.queue.priority.plan_routing`; a campaign
created before it has none: lowest id); gold units are served apart (:mod:`data.queue.gold`)."""

_CORE_CANDIDATE = _CANDIDATE_READ.with_for_update(skip_locked=True, of=UNITS, key_share=True)
""":data:`_CANDIDATE_READ`, locked (PostgreSQL) and skipped if another transaction holds it."""


def candidate(session: Session, campaign: Any, annotator_id: int, tried: set[int]) -> Any:
    """The next unit to try (``id``, ``slots_taken``), or None when none is free of locks.

    On PostgreSQL the unit is locked; units held by other transactions are skipped (see the module
    docstring for what :func:`wait_for_candidate` then does). ``tried``: units not to offer again.
    """
    if campaign.routing != "least-annotated":
        return _routed_candidate(session, campaign, annotator_id, tried)
    query = _CORE_CANDIDATE.where(UNITS.c.id.not_in(tried)) if tried else _CORE_CANDIDATE
    params = {"campaign_id": campaign.id, "overlap": campaign.overlap, "annotator_id": annotator_id}
    return session.connection().execute(query, params).first()


def wait_for_candidate(
    session: Session, campaign: Any, annotator_id: int, tried: set[int], deadline: float
) -> Any:
    """After :func:`candidate` found nothing: the best unit with a free slot, waited for.

    Returns the unit locked (``id``, ``slots_taken`` as of now), or None when no such unit is
    left, or when ``deadline`` (``time.monotonic()``) passed or a wait timed out. A unit whose
    wait was cancelled as a deadlock is passed over for the next. SQLite: always None.
    """
    connection = session.connection()
    if connection.dialect.name != "postgresql":
        return None
    passed_over = set(tried)
    while (remaining := deadline - time.monotonic()) > 0:
        pick = unlocked_pick(session, campaign, annotator_id, passed_over)
        if pick is None:
            return None
        try:
            locked = lock_waiting(session, pick.id, campaign.overlap, remaining)
        except WaitFailed as failure:
            if failure.sqlstate != "40P01":  # timed out: the deadline is spent
                return None
            locked = None
        if locked is not None:
            return locked
        passed_over.add(pick.id)  # filled while we waited, or a deadlock: the next one
    return None


def unlocked_pick(session: Session, campaign: Any, annotator_id: int, passed_over: set[int]) -> Any:
    """The unit :func:`candidate` would give if nothing were locked (a plain read)."""
    params: dict[str, Any] = {"campaign_id": campaign.id, "annotator_id": annotator_id}
    if campaign.routing != "least-annotated":
        if passed_over:
            params["tried"] = sorted(passed_over)
        statement = _routed_statement(campaign.overlap, bool(passed_over))
    else:
        params["overlap"] = campaign.overlap
        statement = _CANDIDATE_READ
        if passed_over:
            statement = statement.where(UNITS.c.id.not_in(passed_over))
    return session.connection().execute(statement, params).first()


class WaitFailed(Exception):
    """A lock wait that PostgreSQL ended (``sqlstate``); its savepoint is rolled back."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


_LOCK_TIMEOUT = core_select(func.current_setting("lock_timeout"))
_SET_LOCK_TIMEOUT = core_select(func.set_config("lock_timeout", bindparam("value"), True))
_LOCK_WAITING = (
    core_select(UNITS.c.id, UNITS.c.slots_taken)
    .where(UNITS.c.id == bindparam("unit_id"), UNITS.c.slots_taken < bindparam("overlap"))
    .where(~UNITS.c.flagged, ~UNITS.c.gold)
    .with_for_update(key_share=True)
)
"""Lock one unit, waiting for the transactions that hold it, and read its count again."""


def lock_waiting(session: Session, unit_id: int, overlap: int, seconds: float) -> Any:
    """:data:`_LOCK_WAITING` in a savepoint, waiting at most ``seconds``.

    The lock timeout is set for the savepoint only and put back before it is released, so that
    nothing after this wait in the caller's transaction runs under it. A failed wait rolls back
    the savepoint alone (raised as :class:`WaitFailed`); any other error propagates.
    """
    previous = session.connection().execute(_LOCK_TIMEOUT).scalar_one()
    timeout = f"{max(1, round(seconds * 1000))}ms"
    try:
        with session.begin_nested():
            # Asked for inside the block: the session emits SAVEPOINT when the nested transaction
            # first asks for its connection. A connection taken before the block would run these
            # statements outside the savepoint, and a failed wait would abort the whole
            # transaction, whose COMMIT PostgreSQL then turns into a silent ROLLBACK.
            connection = session.connection()
            connection.execute(_SET_LOCK_TIMEOUT, {"value": timeout})
            row = connection.execute(_LOCK_WAITING, {"unit_id": unit_id, "overlap": overlap})
            locked = row.first()
            connection.execute(_SET_LOCK_TIMEOUT, {"value": previous})
    except OperationalError as error:
        sqlstate = getattr(error.orig, "sqlstate", None)
        if sqlstate not in _LOCK_FAILURES:
            raise
        # The transaction must be usable again (only the savepoint rolled back); if it were not,
        # this raises here instead of letting the caller commit nothing while it reports success.
        session.connection().execute(_LOCK_TIMEOUT).scalar_one()
        raise WaitFailed(sqlstate) from None
    return locked


ROUTED_WINDOW = 64
"""Units a fill level above 0 looks at, best-ranked first, for one the annotator never had."""


def _routed_level(slots_taken: int, tried: bool) -> Any:
    """The best-ranked unit with ``slots_taken`` live slots that the annotator never had.

    Above level 0 only the best :data:`ROUTED_WINDOW` units of the level are looked at: an
    annotator's own answered units wait there for others, and without a window a lone annotator
    would step over all of them on every lease. Past the window they start a fresh unit instead
    (still in rank order); with K or more annotators at work the levels empty quickly. The window
    is read first (at most 64 index entries), so a lease never scans a whole level. Constants are
    written into the SQL: the same text every time, with fewer parameters.
    """
    units = core_select(UNITS.c.id, UNITS.c.slots_taken, UNITS.c.priority).where(
        UNITS.c.campaign_id == bindparam("campaign_id"),
        UNITS.c.slots_taken == literal_column(str(slots_taken)),
        ~UNITS.c.flagged,
        ~UNITS.c.gold,
    )
    if slots_taken > 0:
        window = (
            units.order_by(UNITS.c.priority, UNITS.c.id)
            .limit(literal_column(str(ROUTED_WINDOW)))
            .subquery()
        )
        units = core_select(window.c.id, window.c.slots_taken, window.c.priority)
        unit_id, priority = window.c.id, window.c.priority
    else:
        unit_id, priority = UNITS.c.id, UNITS.c.priority
    query = units.where(
        ~exists().where(
            ASSIGNMENTS.c.unit_id == unit_id,
            ASSIGNMENTS.c.annotator_id == bindparam("annotator_id"),
        )
    )
    if tried:
        query = query.where(unit_id.not_in(bindparam("tried", expanding=True)))
    return query.order_by(priority, unit_id).limit(literal_column("1")).subquery()


@functools.cache
def _routed_statement(overlap: int, tried: bool) -> Any:
    """The best-ranked free unit of a routed campaign: one index seek per fill level.

    ``ix_unit_route`` (campaign, slots_taken, priority, id) gives each level's best unit
    without a sort; the best of those K is the unit of lowest ``Unit.priority`` with a free slot,
    however many units are already full. Ranks are all set or all null (:mod:`data.queue.
    routing`); all null orders as least-annotated first. Built once per (K, tried?).

    Without ``tried`` (nearly every lease) the statement is kept as its SQL text, with its
    constants written in: 2 named parameters instead of 21, and no per-execution look-up of a
    nested K-level statement in SQLAlchemy's compiled cache. Issue 15 (routed lease within 20% of
    least-annotated): the candidate query's median went from 48 to 43 µs (least-annotated 27 µs)
    replaying 20 annotators in turn in one thread on 20,000 units, SQLite, load average 5. The
    text uses only SQL that SQLite and PostgreSQL read alike (the routing tests run it on both).
    """
    levels = [core_select(_routed_level(level, tried)) for level in range(overlap)]
    union = levels[0].union_all(*levels[1:]).subquery()
    statement = (
        core_select(union.c.id, union.c.slots_taken)
        .order_by(union.c.priority, union.c.slots_taken, union.c.id)
        .limit(literal_column("1"))
    )
    return statement if tried else text(str(statement.compile()))


_LOCK_UNIT = (
    core_select(UNITS.c.id, UNITS.c.slots_taken)
    .where(UNITS.c.id == bindparam("unit_id"), UNITS.c.slots_taken < bindparam("overlap"))
    .with_for_update(skip_locked=True, key_share=True)
)
"""Lock a routed candidate and read its live-slot count again: the pick was read without a
lock, and a lease that committed since would make its count stale (a stale count would try a
slot whose holder may be submitting right now, and wait on that holder while holding the
unit: a deadlock)."""


def _routed_candidate(session: Session, campaign: Any, annotator_id: int, tried: set[int]) -> Any:
    """:func:`candidate` for a judge-routed campaign: the free unit of best rank. On PostgreSQL
    it is then locked with ``SKIP LOCKED`` as the least-annotated query locks its pick (a locked
    unit is skipped for the next one), so concurrent annotators spread as they do there."""
    connection = session.connection()
    params: dict[str, Any] = {"campaign_id": campaign.id, "annotator_id": annotator_id}
    skipped = set(tried)
    while True:
        if skipped:
            params["tried"] = sorted(skipped)
        statement = _routed_statement(campaign.overlap, bool(skipped))
        found = connection.execute(statement, params).first()
        if found is None or connection.dialect.name != "postgresql":
            return found
        lock = {"unit_id": found.id, "overlap": campaign.overlap}
        locked = connection.execute(_LOCK_UNIT, lock).first()
        if locked is not None:
            return locked
        skipped.add(found.id)
