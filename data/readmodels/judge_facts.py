"""What the judge audits read besides the judgement frame: facts about the responses of a
campaign (model, length, list format) and the token usage and latency of its model judgements.

Both come from one set-based query each and are returned as the typed records of
:mod:`schemas.audit_records`.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import select
from sqlmodel import Session, col

from data.readmodels.frames import campaign_judgements
from data.services.monitor import content_text
from data.storage.campaign_lookup import get_campaign
from schemas.audit_records import JudgementUsage, ResponseFacts, response_lengths
from schemas.readouts import readout_source
from schemas.tables import Judgement, Pair, Response, Unit

_LIST_LINE = re.compile(r"^[ \t]*(?:[-*+•]|\d{1,3}[.)、])[ \t]+\S", re.MULTILINE)
"""A Markdown-style list item: a bullet or a number, then a space and text."""


def response_length(content: object) -> int:
    """Characters of the text of CONTENT (a string, or the text segments of a segment list)."""
    return len(content_text(content))


def contains_list(content: object) -> bool:
    """Whether some line of CONTENT's text is a list item (``- x``, ``* x``, ``1. x``, ``2) x``)."""
    return _LIST_LINE.search(content_text(content)) is not None


def campaign_response_facts(session: Session, campaign_id: int) -> list[ResponseFacts]:
    """Model, length and list format of every response judged in the campaign's units (both
    responses of a pair)."""
    units = select(col(Unit.response_pk)).where(col(Unit.campaign_id) == campaign_id)
    pks = {pk for pk in session.execute(units).scalars() if pk is not None}
    pair_rows = session.execute(
        select(col(Pair.response_a_pk), col(Pair.response_b_pk))
        .join(Unit, col(Unit.pair_pk) == col(Pair.id))
        .where(col(Unit.campaign_id) == campaign_id)
    ).all()
    for a, b in pair_rows:
        pks.update((a, b))
    if not pks:
        return []
    rows = session.execute(
        select(col(Response.response_id), col(Response.model), col(Response.content)).where(
            col(Response.id).in_(sorted(pks))
        )
    ).all()
    return sorted(
        (
            ResponseFacts(rid, model, response_length(content), contains_list(content))
            for rid, model, content in rows
        ),
        key=lambda facts: facts.response_id,
    )


def campaign_response_lengths(session: Session, campaign_id: int) -> dict[str, int]:
    """Response id → characters (:func:`response_length`) of every response of the campaign's
    units (:func:`schemas.audit_records.response_lengths`)."""
    return response_lengths(campaign_response_facts(session, campaign_id))


def dataset_response_facts(path: Path) -> list[ResponseFacts]:
    """Model, length and list format of every response of a dataset file (FORMATS.md §1), read
    and checked as ``import`` reads it (:class:`~data.io.importers.errors.InvalidFile` naming
    every problem)."""
    from data.io.importers.errors import Problems
    from data.io.importers.reader import read_dataset

    problems = Problems()
    facts = [
        ResponseFacts(r.response_id, r.model, response_length(r.content), contains_list(r.content))
        for plan in read_dataset(path, problems)
        for r in plan.responses
    ]
    problems.check()
    return sorted(facts, key=lambda fact: fact.response_id)


def campaign_judgement_usage(
    session: Session, campaign_id: int, judges: list[str] | None = None
) -> list[JudgementUsage]:
    """Token usage and latency of each model judgement of the campaign's units (the judgements
    :func:`data.readmodels.frames.campaign_judgement_frame` reads), as ``judge run`` and
    ``judgments import`` stored them. ``judges`` narrows the judges read; the judge a read-out
    (``<judge>-probs``, ``<judge>-debiased``) comes from is read with it, since the read-out
    is charged its calls (:mod:`calibration.cost`)."""
    campaign = get_campaign(session, campaign_id)
    statement = campaign_judgements(
        campaign,
        col(Judgement.judge),
        col(Judgement.unit_key),
        col(Judgement.usage),
        col(Judgement.meta),
    )
    if judges:
        sources = {source for judge in judges if (source := readout_source(judge))}
        statement = statement.where(col(Judgement.judge).in_(sorted(set(judges) | sources)))
    result = []
    rows = session.execute(statement.order_by(col(Judgement.id))).all()
    for judge, unit_key, usage, meta in rows:
        usage, meta = usage or {}, meta or {}
        result.append(
            JudgementUsage(
                judge=judge,
                unit=unit_key,
                input_tokens=_tokens(usage, "prompt_tokens", "input_tokens"),
                output_tokens=_tokens(usage, "completion_tokens", "output_tokens"),
                latency_s=_seconds(meta.get("latency")),
                cached=meta.get("cached") is True,
            )
        )
    return result


def _tokens(usage: dict, *keys: str) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _seconds(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


__all__ = [
    "campaign_judgement_usage",
    "campaign_response_facts",
    "dataset_response_facts",
    "contains_list",
    "response_length",
]
