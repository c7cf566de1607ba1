"""Model judges: their verdicts (judgements) and the cache of remote judge answers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from schemas.tables.columns import json_field, time_field, utcnow


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
    usage: dict = json_field(default_factory=dict, description="token counts of remote judges")
    synthetic: bool = Field(default=False, description="generated for the demo")
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)
    meta: dict = json_field(default_factory=dict)


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
    usage: dict = json_field(default_factory=dict)
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)
