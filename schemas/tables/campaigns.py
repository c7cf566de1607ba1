"""Collecting human labels: campaigns, their units, leases (assignments), drafts and annotations.

The overlap rule lives here: a live assignment holds one of its unit's ``slot`` numbers, unique
among live assignments and checked ``0 <= slot < overlap``; one live annotation per annotator and
unit; annotations are append-only (an edit is a new revision).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, Index, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from schemas.tables.columns import json_field, time_field, utcnow


class Campaign(SQLModel, table=True):
    """An annotation campaign: which units, which protocol, how many annotators each."""

    __table_args__ = (
        CheckConstraint("overlap >= 1", name="ck_campaign_overlap"),
        CheckConstraint("rationale_min >= 0", name="ck_campaign_rationale_min"),
        CheckConstraint("lease_seconds > 0", name="ck_campaign_lease"),
        CheckConstraint("status IN ('active','paused','closed')", name="ck_campaign_status"),
        CheckConstraint("gold_rate >= 0 AND gold_rate <= 0.5", name="ck_campaign_gold_rate"),
        CheckConstraint("qualification_gold >= 0", name="ck_campaign_qualification_gold"),
        CheckConstraint(
            "qualification_accuracy >= 0 AND qualification_accuracy <= 1",
            name="ck_campaign_qualification_accuracy",
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    protocol: str = Field(description="alignmmbench | mmie | pairwise | score")
    scale_min: float | None = Field(default=None, description="score protocol only")
    scale_max: float | None = Field(default=None, description="score protocol only")
    scale_step: float | None = Field(default=None, description="score protocol; null = continuous")
    overlap: int = Field(default=3, description="annotators per unit (K)")
    rationale_min: int = Field(default=20, description="minimum rationale length in characters")
    lease_seconds: int = Field(default=900, description="how long a unit is held for one annotator")
    show_reference: bool = True
    show_others_after_submit: bool = False
    instructions: str = Field(default="", description="markdown shown beside the rubric")
    status: str = "active"
    synthetic: bool = Field(default=False, description="a demo campaign with synthetic labels")
    created_by: int | None = Field(default=None, foreign_key="user_account.id")
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)
    options: dict = json_field(
        default_factory=dict,
        description="models, pair sampling {mode, k, seed}, other settings that shaped the units",
    )
    routing: str = Field(
        default="least-annotated",
        sa_column_kwargs={"server_default": "least-annotated"},
        description="least-annotated | judge-disagreement | judge-uncertainty | stratified",
    )
    routing_judges: list | None = json_field(
        nullable=True, default=None, description="the judges whose outputs order the queue"
    )
    routing_share: float | None = Field(
        default=None, description="stratified: the share of units served in random order"
    )
    gold_rate: float = Field(
        default=0.0,
        sa_column_kwargs={"server_default": "0"},
        description="share of units served that are gold, after qualification (0 = none, ≤ 0.5)",
    )
    gold_feedback: bool = Field(
        default=False,
        sa_column_kwargs={"server_default": "false"},
        description="show the expected answer after a gold unit (training campaigns)",
    )
    qualification_gold: int = Field(
        default=0,
        sa_column_kwargs={"server_default": "0"},
        description="gold units an annotator answers before any real unit (N; 0 = no test)",
    )
    qualification_accuracy: float = Field(
        default=0.0,
        sa_column_kwargs={"server_default": "0"},
        description="share of the N qualification answers that must be right (T)",
    )


class CampaignImport(SQLModel, table=True):
    """A campaign an ``annotations import`` is still writing: while this row exists the campaign
    is in the *importing* state, which every look-up and listing of :mod:`data` treats as "no
    such campaign" (``data.storage.campaign_imports``). The import deletes the row in the same
    transaction as its last rows; a row whose import process is gone marks a half campaign that
    the next command rolls back. ``host`` / ``pid`` name the importing process, ``heartbeat_at``
    is renewed with each of its transactions, ``accounts`` lists the external accounts it
    added (rolled back with it)."""

    __tablename__ = "campaign_import"

    campaign_id: int = Field(primary_key=True, foreign_key="campaign.id")
    host: str
    pid: int
    started_at: datetime = time_field(nullable=False, default_factory=utcnow)
    heartbeat_at: datetime = time_field(nullable=False, default_factory=utcnow)
    accounts: list[int] = json_field(default_factory=list)


class Unit(SQLModel, table=True):
    """One thing to annotate in a campaign: a response (pointwise) or a pair (pairwise).

    ``slots_taken`` counts live assignments (leased or submitted) and drives least-annotated-first
    assignment; the hard overlap rule is the assignment slot constraint, not this counter.

    A ``gold`` unit has a known answer (:class:`GoldAnswer`). It is never served by the
    least-annotated or routed queue; :mod:`data.queue.gold` serves it to every annotator at most
    once, on a slot of its own (``slot`` = the annotator's id, ``overlap`` =
    :data:`GOLD_OVERLAP`), so it takes none of the K slots that the constraints guard.
    """

    __table_args__ = (
        UniqueConstraint("campaign_id", "response_pk", name="uq_unit_campaign_response"),
        UniqueConstraint("campaign_id", "pair_pk", name="uq_unit_campaign_pair"),
        CheckConstraint(
            "(response_pk IS NULL) <> (pair_pk IS NULL)", name="ck_unit_response_xor_pair"
        ),
        Index("ix_unit_queue", "campaign_id", "slots_taken", "id"),
        Index("ix_unit_route", "campaign_id", "slots_taken", "priority", "id"),
        Index(
            "ix_unit_gold",
            "campaign_id",
            "id",
            sqlite_where=text("gold"),
            postgresql_where=text("gold"),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id")
    item_pk: int = Field(foreign_key="item.id", index=True)
    response_pk: int | None = Field(default=None, foreign_key="response.id")
    pair_pk: int | None = Field(default=None, foreign_key="pair.id")
    slots_taken: int = Field(default=0, description="live assignments (leased + submitted)")
    n_submitted: int = Field(default=0, description="annotators who submitted")
    flagged: bool = Field(default=False, description="reported broken; out of the queue")
    priority: int | None = Field(
        default=None,
        sa_type=BigInteger,
        description="routed campaigns: serving key, lowest first; null otherwise",
    )
    gold: bool = Field(
        default=False,
        sa_column_kwargs={"server_default": "false"},
        description="a unit with a known answer (GoldAnswer): served blind, never counted",
    )


GOLD_OVERLAP = 2_147_483_647
"""The ``overlap`` written on a gold unit's assignment (its slot is the annotator's id, unique
per unit since an annotator gets a unit once): gold units are not bounded by K."""


class Assignment(SQLModel, table=True):
    """A lease of one overlap slot of a unit to one annotator.

    ``leased`` until it expires, then ``expired``; ``submitted`` when answered; ``skipped``
    (with a reason) or ``released`` give the slot back; ``rejected`` when a reviewer rejected the
    answer (:mod:`data.queue.review`): the slot is given back and the answer leaves the human
    reference, until a reviewer accepts it or undoes the rejection on a free slot. The row is
    kept either way, so the same annotator never gets the unit again.
    """

    __table_args__ = (
        UniqueConstraint("unit_id", "annotator_id", name="uq_assignment_unit_annotator"),
        CheckConstraint("slot >= 0 AND slot < overlap", name="ck_assignment_slot_in_overlap"),
        CheckConstraint(
            "status IN ('leased','submitted','expired','skipped','released','rejected')",
            name="ck_assignment_status",
        ),
        CheckConstraint("shown_order IN ('AB','BA')", name="ck_assignment_shown_order"),
        Index(
            "uq_assignment_live_slot",
            "unit_id",
            "slot",
            unique=True,
            sqlite_where=text("status IN ('leased','submitted')"),
            postgresql_where=text("status IN ('leased','submitted')"),
        ),
        Index("ix_assignment_annotator", "campaign_id", "annotator_id", "status"),
        Index("ix_assignment_expiry", "campaign_id", "status", "expires_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id")
    unit_id: int = Field(foreign_key="unit.id")
    annotator_id: int = Field(foreign_key="user_account.id")
    slot: int = Field(description="overlap slot 0..K-1 this lease occupies")
    overlap: int = Field(description="the campaign's K when leased, for the slot check")
    status: str = "leased"
    shown_order: str = Field(default="AB", description="pairwise: AB canonical, BA swapped")
    leased_at: datetime = time_field(nullable=False, default_factory=utcnow)
    expires_at: datetime = time_field(nullable=False, default_factory=utcnow)
    closed_at: datetime | None = time_field(nullable=True)
    skip_reason: str | None = None


class Draft(SQLModel, table=True):
    """An unsubmitted answer, saved as the annotator types, restored when they come back."""

    __table_args__ = (UniqueConstraint("unit_id", "annotator_id", name="uq_draft_unit_annotator"),)

    id: int | None = Field(default=None, primary_key=True)
    unit_id: int = Field(foreign_key="unit.id")
    annotator_id: int = Field(foreign_key="user_account.id", index=True)
    score: float | None = None
    preference: str | None = Field(default=None, description="in the order shown: A | B | tie")
    rationale: str = ""
    active_seconds: float = 0.0
    updated_at: datetime = time_field(nullable=False, default_factory=utcnow)


class Annotation(SQLModel, table=True):
    """A human judgement. Append-only: an edit adds a revision and retires the live one."""

    __table_args__ = (
        UniqueConstraint("unit_id", "annotator_id", "revision", name="uq_annotation_revision"),
        Index(
            "uq_annotation_live",
            "unit_id",
            "annotator_id",
            unique=True,
            sqlite_where=text("is_live"),
            postgresql_where=text("is_live"),
        ),
        CheckConstraint("revision >= 1", name="ck_annotation_revision"),
        CheckConstraint(
            "preference IS NULL OR preference IN ('A','B','tie')", name="ck_annotation_preference"
        ),
        Index("ix_annotation_campaign_live", "campaign_id", "is_live"),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id")
    unit_id: int = Field(foreign_key="unit.id", index=True)
    annotator_id: int = Field(foreign_key="user_account.id", index=True)
    assignment_id: int | None = Field(default=None, foreign_key="assignment.id")
    revision: int = 1
    is_live: bool = True
    score: float | None = Field(default=None, description="pointwise value on the scale")
    preference: str | None = Field(default=None, description="pairwise, canonical order")
    shown_order: str | None = Field(default=None, description="pairwise: AB | BA as shown")
    rationale: str
    seconds: float = Field(default=0.0, description="active seconds on the unit")
    synthetic: bool = Field(default=False, description="generated for the demo, not a person")
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)
    meta: dict = json_field(default_factory=dict)


GOLD_PREFERENCES: tuple[str, ...] = ("A", "B", "tie")


class GoldAnswer(SQLModel, table=True):
    """The known answer of a gold unit: a score on the campaign's scale, or A / B / tie in the
    canonical order, with an optional explanation shown as feedback (training campaigns)."""

    __tablename__ = "gold_answer"
    __table_args__ = (
        CheckConstraint("(score IS NULL) <> (preference IS NULL)", name="ck_gold_score_xor_pref"),
        CheckConstraint(
            "preference IS NULL OR preference IN ('A','B','tie')", name="ck_gold_preference"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    unit_id: int = Field(foreign_key="unit.id", unique=True)
    score: float | None = Field(default=None, description="pointwise: the expected score")
    preference: str | None = Field(default=None, description="pairwise, canonical order")
    explanation: str = Field(default="", description="why; shown with feedback on")
    created_by: int | None = Field(default=None, foreign_key="user_account.id")
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)


class AnnotatorStanding(SQLModel, table=True):
    """An annotator's standing in a campaign; no row = not decided yet (``qualifying`` when the
    campaign asks for qualification, else free to work).

    ``qualified`` / ``held`` are decided by the queue after the N-th qualification answer
    (``by_queue`` true, ``decided_by`` null); ``released`` / ``retired`` / ``held`` by an admin
    (``by_queue`` false; ``decided_by`` their account, or null from the command line without
    ``--by``), with their ``reason`` if they gave one. Every change is audited
    (``standing.<status>``).
    """

    __tablename__ = "annotator_standing"
    __table_args__ = (
        UniqueConstraint("campaign_id", "annotator_id", name="uq_standing_campaign_annotator"),
        CheckConstraint(
            "status IN ('qualifying','qualified','held','released','retired')",
            name="ck_standing_status",
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id")
    annotator_id: int = Field(foreign_key="user_account.id", index=True)
    status: str = Field(description="qualifying | qualified | held | released | retired")
    accuracy: float | None = Field(default=None, description="qualification accuracy, if decided")
    decided_by: int | None = Field(default=None, foreign_key="user_account.id")
    decided_at: datetime = time_field(nullable=False, default_factory=utcnow)
    by_queue: bool = Field(
        default=False,
        sa_column_kwargs={"server_default": "false"},
        description="decided by the queue (qualification), not by an admin",
    )
    reason: str | None = Field(
        default=None, description="the admin's reason, shown to the annotator; null = none given"
    )
