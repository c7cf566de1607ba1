"""The Core table of each table model, for statements that read or write columns without the ORM
(bulk inserts, column reads of large campaigns, the queue's locking queries).

One handle per table, shared by every module that needs it.
"""

from __future__ import annotations

from sqlalchemy import Table

from schemas.core import core_table
from schemas.tables import (
    Annotation,
    AnnotatorStanding,
    Assignment,
    AuditEvent,
    Campaign,
    Draft,
    GoldAnswer,
    Item,
    JudgeCache,
    Judgement,
    Pair,
    Response,
    ReviewDecision,
    Unit,
    User,
)

ANNOTATIONS: Table = core_table(Annotation)
AUDIT_EVENTS: Table = core_table(AuditEvent)
ASSIGNMENTS: Table = core_table(Assignment)
GOLD_ANSWERS: Table = core_table(GoldAnswer)
STANDINGS: Table = core_table(AnnotatorStanding)
CAMPAIGNS: Table = core_table(Campaign)
DRAFTS: Table = core_table(Draft)
ITEMS: Table = core_table(Item)
JUDGE_CACHE: Table = core_table(JudgeCache)
JUDGEMENTS: Table = core_table(Judgement)
PAIRS: Table = core_table(Pair)
RESPONSES: Table = core_table(Response)
REVIEW_DECISIONS: Table = core_table(ReviewDecision)
UNITS: Table = core_table(Unit)
USERS: Table = core_table(User)
