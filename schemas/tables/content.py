"""What is annotated: datasets, their items, the models' responses and pairs of responses."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from schemas.tables.columns import json_field, time_field, utcnow


class Dataset(SQLModel, table=True):
    """A named collection of items with their responses, imported from one or more files."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    benchmark: str = Field(description="alignmmbench | mmie | generic")
    description: str = ""
    source: str = Field(default="", description="where it came from (file, adapter)")
    synthetic: bool = Field(default=False, description="generated data, not real annotations")
    created_at: datetime = time_field(nullable=False, default_factory=utcnow)
    meta: dict = json_field(default_factory=dict)


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
    history: list = json_field(default_factory=list, description="earlier turns: [{role, content}]")
    question: Any = json_field(description="CONTENT: a string or a list of segments")
    reference: Any | None = json_field(nullable=True, default=None, description="CONTENT or null")
    meta: dict = json_field(default_factory=dict, description="unknown keys, kept for round trips")
    content_sha256: str = Field(description="hash of the imported record, for idempotency")


class Response(SQLModel, table=True):
    """One model's answer to one item: the unit of pointwise protocols."""

    __table_args__ = (Index("ix_response_item_model", "item_pk", "model"),)

    id: int | None = Field(default=None, primary_key=True)
    response_id: str = Field(unique=True, index=True, description="external id, globally unique")
    item_pk: int = Field(foreign_key="item.id", index=True)
    model: str = Field(index=True)
    content: Any = json_field(description="CONTENT: a string or a list of segments")
    meta: dict = json_field(default_factory=dict)
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
