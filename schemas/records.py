"""Typed records at the boundaries: files in and out (FORMATS.md) and frames for calibration.

These are plain pydantic models and column lists — no I/O. Importers validate into them,
exporters write them, and ``data`` turns a campaign into the :data:`JUDGEMENT_FRAME_COLUMNS`
frame that the pure functions of ``calibration`` read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.ids import ExternalId, ResponseId
from schemas.protocols import Preference

JudgeKind = Literal["model", "human"]


class JudgementRecord(BaseModel):
    """One line of a judgements file (FORMATS.md §3), human or model.

    Exactly one of ``response_id`` (pointwise) or ``pair`` (pairwise) names the unit.
    """

    model_config = ConfigDict(extra="forbid")

    judge: ExternalId = Field(description="judge name; humans are 'annotator:<name>'")
    judge_kind: JudgeKind = Field(description="model | human")
    protocol: str = Field(description="alignmmbench | mmie | pairwise | score")
    response_id: ResponseId | None = Field(default=None, description="pointwise unit")
    pair: tuple[ResponseId, ResponseId] | None = Field(
        default=None, description="pairwise unit, canonical order"
    )
    shown: tuple[ResponseId, ResponseId] | None = Field(
        default=None, description="order the judge saw"
    )
    score: float | None = Field(default=None, description="pointwise value; null if unparsed")
    score_percent: float | None = Field(default=None, description="score as percent (mmie)")
    preference: Preference | None = Field(
        default=None, description="canonical order; null if unparsed"
    )
    rationale: str = Field(default="", description="the written reason")
    raw_output: str | None = Field(default=None, description="model judgements: the raw text")
    parse_status: str | None = Field(default=None, description="ok | unparsed | out_of_scale ...")
    prompt_id: str | None = Field(default=None, description="template id@version")
    expected_score: float | None = Field(default=None, description="Σ p(s)·s, if computed")
    annotator: ExternalId | None = Field(default=None, description="human exports: the annotator")
    seconds: float | None = Field(default=None, description="human exports: active seconds")
    revision: int | None = Field(default=None, description="human exports: annotation revision")
    campaign: ExternalId | None = Field(
        default=None, description="campaign the judgement belongs to"
    )
    created_at: datetime | None = None
    meta: dict[str, Any] = Field(default_factory=dict, description="unknown keys, kept")


JUDGEMENT_FRAME_COLUMNS: dict[str, str] = {
    "unit": "str — unit key (schemas.ids): 'r:<response_id>' or 'p:<a>|<b>' (pairwise)",
    "rater": "str — judge name; humans 'annotator:<name>', models their judge name",
    "kind": "str — 'human' | 'model'",
    "value": "float (pointwise score) or str 'A'/'B'/'tie' in canonical order; NaN/None unparsed",
    "shown_order": "str — 'AB' | 'BA' (pairwise; 'AB' for pointwise)",
    "parse_status": "str — 'ok' for humans; the parser's status for models",
    "item_id": "str — the item's external id",
    "task": "str | None — AlignMMBench task, MMIE field, or None",
    "category": "str | None — category (AlignMMBench category, MMIE SA/PBL/MSR)",
    "group": "str | None — prompt-variant group (alignment score)",
    "model": "str | None — the evaluated model (pointwise); None for pairs",
    "rationale": "str — the written reason ('' when absent)",
    "expected_score": "float | NaN — Σ p(s)·s for critics that expose score probabilities",
}
"""Long-format judgement frame: one row per (unit, rater, shown order, sample).

This is the one shape ``calibration`` reads. ``data.readmodels.frames`` builds it from a campaign;
``calibration.io`` builds it from the records of judgement files. Adjudicated references travel
separately as a mapping ``unit -> value``. Extra columns (any ``meta`` key used with ``--by``)
may be added.
"""
