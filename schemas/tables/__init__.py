"""SQLModel tables: the whole data model of CritiqueLab, no I/O.

Import tables from here (``from schemas.tables import Campaign``); importing this package
registers every table on ``SQLModel.metadata``, which the migrations compare against. The tables
live in one module per area: :mod:`.accounts` (people, logins, audit), :mod:`.content`
(datasets, items, responses, pairs), :mod:`.campaigns` (campaigns, units, assignments, drafts,
annotations), :mod:`.judges` (judgements, the judge cache), :mod:`.review` (adjudications, flags,
disagreement tags), with what they share in :mod:`.columns`.

Rules that matter for correctness live in the database itself, so that they hold under
concurrency on SQLite and PostgreSQL alike:

* unique external ids (``item.item_id`` per dataset, ``response.response_id`` everywhere);
* a unit is never leased twice to the same annotator (``assignment`` unique on unit + annotator);
* overlap K is never exceeded: a live assignment occupies one of the unit's ``slot`` numbers,
  unique among live assignments and checked ``0 <= slot < overlap``;
* one live annotation per annotator per unit (partial unique index on ``is_live``);
* human annotations, adjudications and audit events are append-only: an edit is a new row;
* a gold unit's known answer is a score or a preference, never both (``gold_answer``); one
  standing per annotator and campaign (``annotator_standing``), in a closed set of states;
* a rejected answer gives its slot back (assignment status ``rejected``, outside the live
  statuses), so another annotator can take it and K still holds; one live review decision per
  answer, and a rejection has a comment (``review_decision``).

Times are stored in UTC (see :func:`utcnow`).
"""

from schemas.tables.accounts import AuditEvent, AuthSession, LoginAttempt, User
from schemas.tables.campaigns import (
    GOLD_OVERLAP,
    GOLD_PREFERENCES,
    Annotation,
    AnnotatorStanding,
    Assignment,
    Campaign,
    CampaignImport,
    Draft,
    GoldAnswer,
    Unit,
)
from schemas.tables.columns import (
    ASSIGNMENT_STATUSES,
    CAMPAIGN_STATUSES,
    LIVE_ASSIGNMENT_STATUSES,
    PARSE_STATUSES,
    REVIEW_DECISIONS,
    ROLES,
    SHOWN_ORDERS,
    STANDINGS,
    utcnow,
)
from schemas.tables.content import Dataset, Item, Pair, Response
from schemas.tables.judges import JudgeCache, Judgement
from schemas.tables.review import Adjudication, DisagreementTag, Flag, ReviewDecision

__all__ = [
    "ASSIGNMENT_STATUSES",
    "CAMPAIGN_STATUSES",
    "GOLD_OVERLAP",
    "GOLD_PREFERENCES",
    "LIVE_ASSIGNMENT_STATUSES",
    "PARSE_STATUSES",
    "REVIEW_DECISIONS",
    "ROLES",
    "SHOWN_ORDERS",
    "STANDINGS",
    "Adjudication",
    "Annotation",
    "AnnotatorStanding",
    "Assignment",
    "AuditEvent",
    "AuthSession",
    "Campaign",
    "CampaignImport",
    "Dataset",
    "DisagreementTag",
    "Draft",
    "Flag",
    "GoldAnswer",
    "Item",
    "JudgeCache",
    "Judgement",
    "LoginAttempt",
    "Pair",
    "Response",
    "ReviewDecision",
    "Unit",
    "User",
    "utcnow",
]
