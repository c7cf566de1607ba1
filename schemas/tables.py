"""SQLModel tables: the whole data model of CritiqueLab, no I/O.

Rules that matter for correctness live in the database itself, so that they hold under
concurrency on SQLite and PostgreSQL alike:

* unique external ids (``item.item_id`` per dataset, ``response.response_id`` everywhere);
* a unit is never leased twice to the same annotator (``assignment`` unique on unit + annotator);
* overlap K is never exceeded: a live assignment occupies one of the unit's ``slot`` numbers,
  unique among live assignments and checked ``0 <= slot < overlap``;
* one live annotation per annotator per unit (partial unique index on ``is_live``);
* human annotations, adjudications and audit events are append-only: an edit is a new row.

Times are stored in UTC (see :func:`utcnow`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Index,
    UniqueConstraint,
    text,
)
from sqlmodel import Field, SQLModel

ROLES: tuple[str, ...] = ("annotator", "reviewer", "admin")
CAMPAIGN_STATUSES: tuple[str, ...] = ("active", "paused", "closed")
ASSIGNMENT_STATUSES: tuple[str, ...] = ("leased", "submitted", "expired", "skipped", "released")
LIVE_ASSIGNMENT_STATUSES: tuple[str, ...] = ("leased", "submitted")
PARSE_STATUSES: tuple[str, ...] = ("ok", "unparsed", "out_of_scale", "error", "skipped")
SHOWN_ORDERS: tuple[str, ...] = ("AB", "BA")


def utcnow() -> datetime:
    """Now, timezone-aware UTC."""
    return datetime.now(UTC)


def _time(*, nullable: bool, default_factory: Any = None, index: bool = False) -> Any:
    column = Column(DateTime(timezone=True), nullable=nullable, index=index)
    if default_factory is None:
        return Field(default=None, sa_column=column)
    return Field(default_factory=default_factory, sa_column=column)


def _json(**kwargs: Any) -> Any:
    nullable = kwargs.pop("nullable", False)
    return Field(sa_column=Column(JSON, nullable=nullable), **kwargs)


class User(SQLModel, table=True):
    """A person who logs in: annotator, reviewer or admin."""

    __tablename__ = "user_account"
    __table_args__ = (
        CheckConstraint("role IN ('annotator','reviewer','admin')", name="ck_user_role"),
    )

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True, max_length=64, description="login name")
    password_hash: str = Field(description="argon2 hash; the password itself is never stored")
    role: str = Field(description="annotator | reviewer | admin")
    active: bool = Field(default=True, description="disabled accounts cannot log in")
    synthetic: bool = Field(default=False, description="a demo account of the sample project")
    external: bool = Field(
        default=False,
        description="an annotator whose labels were imported (annotations import); never logs in",
    )
    created_at: datetime = _time(nullable=False, default_factory=utcnow)
    password_changed_at: datetime | None = _time(nullable=True)
    """When an admin last reset the password; failed logins before it no longer lock the name."""


class AuthSession(SQLModel, table=True):
    """A login session; the browser keeps only the token, the database only its hash."""

    __tablename__ = "auth_session"

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(unique=True, index=True, description="sha256 of the session token")
    user_id: int = Field(foreign_key="user_account.id", index=True)
    created_at: datetime = _time(nullable=False, default_factory=utcnow)
    expires_at: datetime = _time(nullable=False, default_factory=utcnow)
    revoked_at: datetime | None = _time(nullable=True)


class LoginAttempt(SQLModel, table=True):
    """Every login try, for rate limiting and the audit trail."""

    __tablename__ = "login_attempt"
    __table_args__ = (
        Index("ix_login_attempt_name_at", "user_name", "at"),
        Index("ix_login_attempt_client_at", "client", "at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    user_name: str = Field(max_length=64)
    ok: bool
    at: datetime = _time(nullable=False, default_factory=utcnow)
    client: str | None = Field(default=None, max_length=64)
    """The client's address as the server saw it; None for a try that did not come over HTTP."""


class Dataset(SQLModel, table=True):
    """A named collection of items with their responses, imported from one or more files."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    benchmark: str = Field(description="alignmmbench | mmie | generic")
    description: str = ""
    source: str = Field(default="", description="where it came from (file, adapter)")
    synthetic: bool = Field(default=False, description="generated data, not real annotations")
    created_at: datetime = _time(nullable=False, default_factory=utcnow)
    meta: dict = _json(default_factory=dict)


class Item(SQLModel, table=True):
    """A question (with images, earlier turns and an optional reference answer)."""

    __table_args__ = (
        UniqueConstraint("dataset_id", "item_id", name="uq_item_dataset_item_id"),
        Index("ix_item_dataset_task", "dataset_id", "task"),
    )

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    item_id: str = Field(description="external id, unique within the dataset")
    benchmark: str = Field(description="alignmmbench | mmie | generic")
    task: str | None = None
    category: str | None = None
    group: str | None = Field(default=None, description="prompt-variant group (alignment score)")
    history: list = _json(default_factory=list, description="earlier turns: [{role, content}]")
    question: Any = _json(description="CONTENT: a string or a list of segments")
    reference: Any | None = _json(nullable=True, default=None, description="CONTENT or null")
    meta: dict = _json(default_factory=dict, description="unknown keys, kept for round trips")
    content_sha256: str = Field(description="hash of the imported record, for idempotency")


class Response(SQLModel, table=True):
    """One model's answer to one item: the unit of pointwise protocols."""

    __table_args__ = (Index("ix_response_item_model", "item_pk", "model"),)

    id: int | None = Field(default=None, primary_key=True)
    response_id: str = Field(unique=True, index=True, description="external id, globally unique")
    item_pk: int = Field(foreign_key="item.id", index=True)
    model: str = Field(index=True)
    content: Any = _json(description="CONTENT: a string or a list of segments")
    meta: dict = _json(default_factory=dict)
    content_sha256: str


class Pair(SQLModel, table=True):
    """Two responses to the same item in canonical order (response_a, response_b)."""

    __table_args__ = (
        UniqueConstraint("response_a_pk", "response_b_pk", name="uq_pair_responses"),
        CheckConstraint("response_a_pk <> response_b_pk", name="ck_pair_distinct"),
    )

    id: int | None = Field(default=None, primary_key=True)
    item_pk: int = Field(foreign_key="item.id", index=True)
    response_a_pk: int = Field(foreign_key="response.id", index=True)
    response_b_pk: int = Field(foreign_key="response.id", index=True)
    source: str = Field(default="import", description="import | generated")


class Campaign(SQLModel, table=True):
    """An annotation campaign: which units, which protocol, how many annotators each."""

    __table_args__ = (
        CheckConstraint("overlap >= 1", name="ck_campaign_overlap"),
        CheckConstraint("rationale_min >= 0", name="ck_campaign_rationale_min"),
        CheckConstraint("lease_seconds > 0", name="ck_campaign_lease"),
        CheckConstraint("status IN ('active','paused','closed')", name="ck_campaign_status"),
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
    created_at: datetime = _time(nullable=False, default_factory=utcnow)
    options: dict = _json(
        default_factory=dict,
        description="models, pair sampling {mode, k, seed}, other settings that shaped the units",
    )
    routing: str = Field(
        default="least-annotated",
        sa_column_kwargs={"server_default": "least-annotated"},
        description="least-annotated | judge-disagreement | judge-uncertainty | stratified",
    )
    routing_judges: list | None = _json(
        nullable=True, default=None, description="the judges whose outputs order the queue"
    )
    routing_share: float | None = Field(
        default=None, description="stratified: the share of units served in random order"
    )


class Unit(SQLModel, table=True):
    """One thing to annotate in a campaign: a response (pointwise) or a pair (pairwise).

    ``slots_taken`` counts live assignments (leased or submitted) and drives least-annotated-first
    assignment; the hard overlap rule is the assignment slot constraint, not this counter.
    """

    __table_args__ = (
        UniqueConstraint("campaign_id", "response_pk", name="uq_unit_campaign_response"),
        UniqueConstraint("campaign_id", "pair_pk", name="uq_unit_campaign_pair"),
        CheckConstraint(
            "(response_pk IS NULL) <> (pair_pk IS NULL)", name="ck_unit_response_xor_pair"
        ),
        Index("ix_unit_queue", "campaign_id", "slots_taken", "id"),
        Index("ix_unit_route", "campaign_id", "slots_taken", "priority", "id"),
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


class Assignment(SQLModel, table=True):
    """A lease of one overlap slot of a unit to one annotator.

    ``leased`` until it expires, then ``expired``; ``submitted`` when answered; ``skipped``
    (with a reason) or ``released`` give the slot back. The row is kept either way, so the same
    annotator never gets the unit again.
    """

    __table_args__ = (
        UniqueConstraint("unit_id", "annotator_id", name="uq_assignment_unit_annotator"),
        CheckConstraint("slot >= 0 AND slot < overlap", name="ck_assignment_slot_in_overlap"),
        CheckConstraint(
            "status IN ('leased','submitted','expired','skipped','released')",
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
    leased_at: datetime = _time(nullable=False, default_factory=utcnow)
    expires_at: datetime = _time(nullable=False, default_factory=utcnow)
    closed_at: datetime | None = _time(nullable=True)
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
    updated_at: datetime = _time(nullable=False, default_factory=utcnow)


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
    created_at: datetime = _time(nullable=False, default_factory=utcnow)
    meta: dict = _json(default_factory=dict)


class Judgement(SQLModel, table=True):
    """A model judge's verdict on a response or a pair, with its raw output.

    ``unit_key`` names what was judged (``r:<response_id>`` or ``p:<a>|<b>``); together with the
    judge, prompt, shown order and sample number it makes re-imports and re-runs idempotent.
    """

    __table_args__ = (
        UniqueConstraint(
            "judge", "prompt_id", "unit_key", "shown_order", "sample", name="uq_judgement_key"
        ),
        CheckConstraint(
            "(response_pk IS NULL) <> (pair_pk IS NULL)", name="ck_judgement_response_xor_pair"
        ),
        Index("ix_judgement_judge", "judge", "protocol"),
    )

    id: int | None = Field(default=None, primary_key=True)
    judge: str = Field(description="judge name, e.g. gpt-4 or critic-v1")
    protocol: str
    unit_key: str = Field(index=True)
    response_pk: int | None = Field(default=None, foreign_key="response.id", index=True)
    pair_pk: int | None = Field(default=None, foreign_key="pair.id", index=True)
    shown_order: str = Field(default="AB", description="AB canonical order shown, BA swapped")
    sample: int = Field(default=0, description="sample number when a judge is sampled repeatedly")
    score: float | None = None
    preference: str | None = Field(default=None, description="canonical order; null if unparsed")
    expected_score: float | None = Field(default=None, description="Σ p(s)·s when computed")
    rationale: str = ""
    raw_output: str = ""
    parse_status: str = "ok"
    prompt_id: str = Field(default="", description="template id@version that produced it")
    input_sha256: str = Field(default="", description="hash of the exact judge input")
    usage: dict = _json(default_factory=dict, description="token counts of remote judges")
    synthetic: bool = Field(default=False, description="generated for the demo")
    created_at: datetime = _time(nullable=False, default_factory=utcnow)
    meta: dict = _json(default_factory=dict)


class Adjudication(SQLModel, table=True):
    """A reviewer's final label for a unit; the reference for calibration. Append-only."""

    __table_args__ = (
        Index(
            "uq_adjudication_live",
            "unit_id",
            unique=True,
            sqlite_where=text("is_live"),
            postgresql_where=text("is_live"),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    unit_id: int = Field(foreign_key="unit.id", index=True)
    reviewer_id: int = Field(foreign_key="user_account.id")
    score: float | None = None
    preference: str | None = Field(default=None, description="canonical order")
    note: str = ""
    is_live: bool = True
    created_at: datetime = _time(nullable=False, default_factory=utcnow)


class Flag(SQLModel, table=True):
    """A unit reported as broken by an annotator; reviewers resolve it."""

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    unit_id: int = Field(foreign_key="unit.id", index=True)
    user_id: int = Field(foreign_key="user_account.id")
    reason: str
    created_at: datetime = _time(nullable=False, default_factory=utcnow)
    resolved_by: int | None = Field(default=None, foreign_key="user_account.id")
    resolved_at: datetime | None = _time(nullable=True)
    resolution: str | None = None


class AuditEvent(SQLModel, table=True):
    """Who changed what, when: annotation revisions, adjudications, roles, campaign settings."""

    __tablename__ = "audit_event"
    __table_args__ = (Index("ix_audit_entity", "entity", "entity_id"),)

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = _time(nullable=False, default_factory=utcnow, index=True)
    actor_id: int | None = Field(default=None, foreign_key="user_account.id")
    action: str = Field(description="e.g. annotation.revise, user.role, campaign.update")
    entity: str = Field(description="table name of the thing changed")
    entity_id: str
    detail: dict = _json(default_factory=dict, description="before / after values")


class JudgeCache(SQLModel, table=True):
    """Remote judge answers keyed by (model, template, input hash): a re-run costs nothing."""

    __tablename__ = "judge_cache"
    __table_args__ = (
        UniqueConstraint("model", "prompt_id", "input_sha256", name="uq_judge_cache_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    model: str
    prompt_id: str
    input_sha256: str
    output: str
    usage: dict = _json(default_factory=dict)
    created_at: datetime = _time(nullable=False, default_factory=utcnow)


class DisagreementTag(SQLModel, table=True):
    """A reviewer's cause for a judge's disagreement with the human reference on one unit.

    Append-only like adjudications: a new tag for the same unit and judge retires the live one
    (``is_live`` false) and both stay. ``judge_value`` and ``reference_value`` keep what the
    reviewer saw when tagging (a score as ``%g``, or A / B / tie; a split pairwise verdict as
    e.g. ``A×1 B×1``).
    """

    __tablename__ = "disagreement_tag"
    __table_args__ = (
        Index(
            "uq_disagreement_tag_live",
            "unit_id",
            "judge",
            unique=True,
            sqlite_where=text("is_live"),
            postgresql_where=text("is_live"),
        ),
        Index("ix_disagreement_tag_campaign", "campaign_id", "judge", "is_live"),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id")
    unit_id: int = Field(foreign_key="unit.id", index=True)
    judge: str = Field(description="the model judge whose verdict was reviewed")
    reviewer_id: int = Field(foreign_key="user_account.id")
    cause: str = Field(description="one label of the campaign's disagreement taxonomy")
    note: str = ""
    judge_value: str = Field(default="", description="the judge's verdict as shown")
    reference_value: str = Field(default="", description="the human reference as shown")
    gap: float = Field(default=0.0, description="|judge − reference|, or share of verdicts off")
    is_live: bool = True
    created_at: datetime = _time(nullable=False, default_factory=utcnow)
