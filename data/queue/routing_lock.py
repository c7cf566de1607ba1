"""The lock that keeps a campaign's re-ranking apart from its annotators' steps (PostgreSQL).

A routing change (:func:`data.services.routing.apply_routing`) writes ``Unit.priority`` on every
unit of the campaign in one transaction, so it holds every unit row until it commits. An
annotator's step (:func:`data.queue.answers.submit_and_next`, :func:`data.queue.leases.
next_unit`) locks unit rows one by one too: the unit it leases, the unit whose answer it counts,
a unit it waits for. Both orders are arbitrary with respect to each other (the re-rank's
``UPDATE`` meets the rows in the order of its scan), so the two could each hold a unit the other
waited for: PostgreSQL cancelled one of them (``deadlock_detected``) and the annotator read
"nothing was saved". And a lease that found every unit held by the re-rank (``SKIP LOCKED``)
waited for units that could not come free before its own transaction ended, passed them over
and answered "no unit" while the campaign had work left (issue 25).

So the two take one lock per campaign *first*, before any unit row: a PostgreSQL transaction-level
advisory lock on ``(QUEUE_LOCK_SPACE, campaign id)``, shared by the annotators' steps (they run
side by side as before) and exclusive for a re-rank. A re-rank waits until the steps in flight
have committed, and the steps that start meanwhile wait until it has committed; then they read
its ranks. Neither holds a unit row while it waits for this lock, so no wait for it closes a
cycle, and while a re-rank holds units no lease is looking at them. Advisory locks live in the
server's lock table, not on a row: taking the shared lock writes nothing (a ``FOR SHARE`` on the
campaign's row would rewrite that row on every step) and joins the deadlock detector's graph
like any other lock. Both are released when their transaction ends, however it ends.

SQLite runs one write transaction at a time (``BEGIN IMMEDIATE``), so there is nothing to order
and these functions do nothing.
"""

from __future__ import annotations

from sqlalchemy import bindparam, text
from sqlmodel import Session

from schemas.core_tables import ASSIGNMENTS

QUEUE_LOCK_SPACE = 0x434C  # "CL"
"""The first key of a campaign queue's advisory lock, the campaign id the second (PostgreSQL's
two-``integer`` form of advisory locks)."""

_SHARE = text(
    "SELECT pg_advisory_xact_lock_shared(CAST(:space AS integer), CAST(:campaign AS integer))"
).bindparams(bindparam("space", QUEUE_LOCK_SPACE))
_SHARE_OF_ASSIGNMENT = text(
    "SELECT pg_advisory_xact_lock_shared(CAST(:space AS integer), campaign_id) "
    f"FROM {ASSIGNMENTS.name} WHERE id = :assignment"
).bindparams(bindparam("space", QUEUE_LOCK_SPACE))
_HOLD = text(
    "SELECT pg_advisory_xact_lock(CAST(:space AS integer), CAST(:campaign AS integer))"
).bindparams(bindparam("space", QUEUE_LOCK_SPACE))


def _postgresql(session: Session) -> bool:
    return session.connection().dialect.name == "postgresql"


def share_campaign_queue(session: Session, campaign_id: int) -> None:
    """An annotator's step on the campaign's queue: wait for a re-rank in progress, then keep
    re-ranks out until the transaction ends. Call it before the transaction locks any unit."""
    if _postgresql(session):
        session.connection().execute(_SHARE, {"campaign": campaign_id})


def share_queue_of_assignment(session: Session, assignment_id: int) -> None:
    """:func:`share_campaign_queue` for the campaign of an assignment (one statement; nothing
    when there is no such assignment: the caller refuses that)."""
    if _postgresql(session):
        session.connection().execute(_SHARE_OF_ASSIGNMENT, {"assignment": assignment_id})


def hold_campaign_queue(session: Session, campaign_id: int) -> None:
    """A re-rank of the campaign's units: wait for the annotators' steps in flight, then keep new
    ones waiting until the transaction ends. Call it before the transaction locks any unit."""
    if _postgresql(session):
        session.connection().execute(_HOLD, {"campaign": campaign_id})
