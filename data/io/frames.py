"""A campaign as the long judgement frame that :mod:`calibration` reads.

Three set-based queries (units with their item and responses, live annotations, model
judgements on the campaign's responses or pairs), joined in pandas: no query per row. Columns are
:data:`schemas.records.JUDGEMENT_FRAME_COLUMNS` plus the scalar keys of the items' and responses'
``meta`` (usable with ``--by``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from data.services.campaigns import get_campaign, unit_key_map
from schemas.ids import pair_unit_key, parse_unit_key, response_unit_key
from schemas.items import ItemContent, ResponseContent, UnitContent
from schemas.records import JUDGEMENT_FRAME_COLUMNS
from schemas.tables import (
    Adjudication,
    Annotation,
    Campaign,
    Item,
    Judgement,
    Pair,
    Response,
    Unit,
    User,
)


def campaign_judges(session: Session, campaign_id: int) -> list[str]:
    """Names of the model judges that scored units of the campaign under its protocol (the
    judgements :func:`campaign_judgement_frame` reads)."""
    campaign = get_campaign(session, campaign_id)
    judges = campaign_judgements(campaign, Judgement.judge).distinct()
    return list(session.execute(judges.order_by(Judgement.judge)).scalars())


def campaign_judgement_frame(
    session: Session, campaign_id: int, judges: list[str] | None = None
) -> pd.DataFrame:
    """One row per live annotation and per model judgement of the campaign's units."""
    campaign = get_campaign(session, campaign_id)
    units = _unit_table(session, campaign)
    humans = _annotations(session, campaign)
    models = _judgements(session, campaign, judges)
    frame = pd.concat([humans, models], ignore_index=True)
    if frame.empty:
        return pd.DataFrame(columns=[*JUDGEMENT_FRAME_COLUMNS, "unit_id"])
    frame = frame.merge(units, on="unit_id", how="left")
    ordered = [c for c in JUDGEMENT_FRAME_COLUMNS if c in frame.columns]
    rest = [c for c in frame.columns if c not in ordered and c != "unit_id"]
    return frame[ordered + rest].reset_index(drop=True)


def campaign_reference_overrides(session: Session, campaign_id: int) -> dict[str, object]:
    """Live adjudications of the campaign: unit key → adjudicated score or preference."""
    keys = unit_key_map(session, campaign_id)
    rows = session.execute(
        select(Adjudication.unit_id, Adjudication.score, Adjudication.preference).where(
            Adjudication.campaign_id == campaign_id, Adjudication.is_live.is_(True)
        )
    ).all()
    result: dict[str, object] = {}
    for unit_id, score, preference in rows:
        value = score if score is not None else preference
        if value is not None and unit_id in keys:
            result[keys[unit_id]] = value
    return result


def unit_content(session: Session, campaign_id: int, unit_key: str) -> UnitContent:
    """The item and response(s) behind ``unit_key`` (``r:<response_id>`` or ``p:<a>|<b>``)."""
    response_ids = list(parse_unit_key(unit_key).response_ids)
    rows = session.execute(
        select(Response, Item)
        .join(Item, Item.id == Response.item_pk)
        .where(Response.response_id.in_(response_ids))
    ).all()
    by_id = {response.response_id: (response, item) for response, item in rows}
    missing = [rid for rid in response_ids if rid not in by_id]
    if missing:
        raise ValueError(f"unit {unit_key}: response(s) {', '.join(missing)} not in the database")
    item = by_id[response_ids[0]][1]
    responses = tuple(
        ResponseContent(rid, by_id[rid][0].model, by_id[rid][0].content, by_id[rid][0].id)
        for rid in response_ids
    )
    return UnitContent(unit_key, item_content(item), responses)


def item_content(item: Item) -> ItemContent:
    """The stored item as an :class:`~schemas.items.ItemContent`."""
    return ItemContent(
        item_id=item.item_id,
        benchmark=item.benchmark,
        task=item.task,
        category=item.category,
        group=item.group,
        history=list(item.history or []),
        question=item.question,
        reference=item.reference,
    )


def _unit_table(session: Session, campaign: Campaign) -> pd.DataFrame:
    response, response_a, response_b = aliased(Response), aliased(Response), aliased(Response)
    statement = (
        select(
            Unit.id,
            Item.item_id,
            Item.task,
            Item.category,
            Item.group,
            Item.meta,
            response.response_id,
            response.model,
            response.meta,
            response_a.response_id,
            response_b.response_id,
        )
        .join(Item, Item.id == Unit.item_pk)
        .outerjoin(response, response.id == Unit.response_pk)
        .outerjoin(Pair, Pair.id == Unit.pair_pk)
        .outerjoin(response_a, response_a.id == Pair.response_a_pk)
        .outerjoin(response_b, response_b.id == Pair.response_b_pk)
        .where(Unit.campaign_id == campaign.id)
    )
    records = []
    for row in session.execute(statement).all():
        unit_id, item_id, task, category, group, item_meta, rid, model, rmeta, ra, rb = row
        record = _scalars(item_meta) | _scalars(rmeta)
        record |= {
            "unit_id": unit_id,
            "unit": response_unit_key(rid) if rid is not None else pair_unit_key(ra, rb),
            "item_id": item_id,
            "task": task,
            "category": category,
            "group": group,
            "model": model,
        }
        records.append(record)
    columns = ["unit_id", "unit", "item_id", "task", "category", "group", "model"]
    return pd.DataFrame(records, columns=None if records else columns)


def _annotations(session: Session, campaign: Campaign) -> pd.DataFrame:
    statement = (
        select(
            Annotation.unit_id,
            User.name,
            Annotation.score,
            Annotation.preference,
            Annotation.shown_order,
            Annotation.rationale,
        )
        .join(User, User.id == Annotation.annotator_id)
        .where(Annotation.campaign_id == campaign.id, Annotation.is_live.is_(True))
    )
    rows = session.execute(statement).all()
    pointwise = campaign.protocol != "pairwise"
    return pd.DataFrame(
        {
            "unit_id": [r[0] for r in rows],
            "rater": [f"annotator:{r[1]}" for r in rows],
            "kind": "human",
            "value": pd.Series([r[2] if pointwise else r[3] for r in rows], dtype=object),
            "shown_order": [r[4] or "AB" for r in rows],
            "parse_status": "ok",
            "rationale": [r[5] or "" for r in rows],
            "expected_score": np.nan,
        }
    )


def _judgements(session: Session, campaign: Campaign, judges: list[str] | None) -> pd.DataFrame:
    statement = campaign_judgements(
        campaign,
        Judgement.judge,
        Judgement.score,
        Judgement.preference,
        Judgement.shown_order,
        Judgement.parse_status,
        Judgement.rationale,
        Judgement.expected_score,
        unit_id=True,
    )
    if judges:
        statement = statement.where(Judgement.judge.in_(judges))
    rows = session.execute(statement.order_by("unit_id", Judgement.id)).all()
    pointwise = campaign.protocol != "pairwise"
    return pd.DataFrame(
        {
            "unit_id": [r[0] for r in rows],
            "rater": [r[1] for r in rows],
            "kind": "model",
            "value": pd.Series([r[2] if pointwise else r[3] for r in rows], dtype=object),
            "shown_order": [r[4] or "AB" for r in rows],
            "parse_status": [r[5] for r in rows],
            "rationale": [r[6] or "" for r in rows],
            "expected_score": pd.Series([r[7] for r in rows], dtype=np.float64),
        }
    )


def campaign_judgements(campaign: Campaign, *columns: Any, unit_id: bool = False) -> Any:
    """``SELECT [unit_id,] *columns`` over the model judgements of the campaign's units made
    under the campaign's protocol (a judge may have scored the same responses under another)."""
    units = (
        select(Unit.id, Unit.response_pk, Unit.pair_pk)
        .where(Unit.campaign_id == campaign.id)
        .subquery()
    )
    link = (
        Judgement.pair_pk == units.c.pair_pk
        if campaign.protocol == "pairwise"
        else Judgement.response_pk == units.c.response_pk
    )
    return (
        select(*([units.c.id.label("unit_id")] if unit_id else []), *columns)
        .join(units, link)
        .where(Judgement.protocol == campaign.protocol)
    )


def _scalars(meta: dict | None) -> dict:
    reserved = set(JUDGEMENT_FRAME_COLUMNS) | {"unit_id"}
    return {
        str(k): v
        for k, v in (meta or {}).items()
        if isinstance(v, str | int | float | bool) and str(k) not in reserved
    }
