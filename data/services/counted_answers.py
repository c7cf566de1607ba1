"""Which stored answers count: the one filter that every reader of a campaign's answers applies.

An answer a reviewer rejected (:mod:`data.queue.review`) stays its annotator's live answer (they
may revise it), but it counts nowhere: not in the human reference, the SFT export or the judge
metrics (:mod:`data.readmodels.frames`, :mod:`data.readmodels.critic_io`,
:mod:`data.io.exporters.records`), nor in the Monitor's agreement so far, Annotators table and
low-effort report (:mod:`data.services.monitor`), nor in a campaign's progress
(:mod:`data.services.campaign_progress`, and the Home page's, :mod:`data.services.home`). So
does a revision of it until a reviewer accepts it.

Why a module of its own: it sits below :mod:`data.readmodels`, :mod:`data.io` and the other
services (it imports none of them), so that the calibration frame and the Monitor read the same
definition.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, exists, or_, select
from sqlmodel import col

from schemas.tables import Assignment


def not_rejected(assignment_id: Any, campaign_id: int) -> ColumnElement[bool]:
    """True for an answer (its ``assignment_id`` column) that counts: its assignment is not
    ``rejected`` by a reviewer (:mod:`data.queue.review`).

    A rejected answer stays its annotator's live answer (they may revise it), but it left the
    human reference, the SFT export and the judge metrics, and so did a revision of it until a
    reviewer accepts it. Written as ``NOT IN`` the campaign's few rejected assignments (found by
    ``ix_assignment_expiry``), so a campaign's read does not join every assignment.
    """
    rejected = select(col(Assignment.id)).where(
        col(Assignment.campaign_id) == campaign_id, col(Assignment.status) == "rejected"
    )
    return or_(assignment_id.is_(None), assignment_id.not_in(rejected))


def not_rejected_anywhere(assignment_id: Any) -> ColumnElement[bool]:
    """:func:`not_rejected` for a read across campaigns (the Home page's progress): the answer's
    own assignment looked up by its primary key, instead of one campaign's rejected ones."""
    return ~exists().where(
        col(Assignment.id) == assignment_id, col(Assignment.status) == "rejected"
    )
