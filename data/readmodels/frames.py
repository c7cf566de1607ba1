"""A campaign as the long judgement frame that :mod:`calibration` reads.

Gold units (known answers, :mod:`data.queue.gold`) are not in it: not their units, their human
answers, their judgements nor their adjudications, so they never count toward the reference or
the judge metrics. Nor are answers a reviewer rejected
(:func:`~data.services.counted_answers.not_rejected`, the filter the Monitor and the campaign's
progress apply too): a rejected answer, and a revision of it that no reviewer has accepted yet,
count nowhere.

Three set-based queries (units with their item and responses, live annotations, model
judgements on the campaign's responses or pairs), joined in pandas: no query per row. Columns are
:data:`schemas.records.JUDGEMENT_FRAME_COLUMNS` but ``rationale`` (:data:`FRAME_COLUMNS`), plus the
scalar keys of the items' and responses' ``meta`` (usable with ``--by``). The rationales of the
few units a report lists are read apart (:func:`campaign_rationales`): a frame of every row's
text would not fit a million-unit campaign's page.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any, TypeVarTuple

import numpy as np
import pandas as pd
from sqlalchemy import (
    Select,
    Subquery,
    Text,
    cast,
    literal,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.orm import aliased
from sqlmodel import Session, col

from data.services.counted_answers import not_rejected
from data.storage.campaign_lookup import get_campaign, unit_key_map
from schemas.ids import HUMAN_PREFIX, pair_unit_key, parse_unit_key, response_unit_key
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

FRAME_COLUMNS: tuple[str, ...] = tuple(c for c in JUDGEMENT_FRAME_COLUMNS if c != "rationale")
"""The columns of a campaign's frame, in order (before the units' meta keys)."""


def campaign_judges(session: Session, campaign_id: int) -> list[str]:
    """Names of the model judges that scored units of the campaign under its protocol (the
    judgements :func:`campaign_judgement_frame` reads)."""
    campaign = get_campaign(session, campaign_id)
    judges = campaign_judgements(campaign, col(Judgement.judge)).distinct()
    return list(session.execute(judges.order_by(col(Judgement.judge))).scalars())


def campaign_judgement_frame(
    session: Session, campaign_id: int, judges: list[str] | None = None
) -> pd.DataFrame:
    """One row per live annotation and per model judgement of the campaign's units.

    Only what the metrics read (unit, rater, kind, value, shown order, parse status, expected
    score, the units' metadata): no ``rationale`` column, whose long texts would dominate the
    memory of a large campaign's read; :func:`campaign_rationales` reads them for listed units.
    """
    campaign = get_campaign(session, campaign_id)
    units = _unit_table(session, campaign)
    humans = _annotations(session, campaign)
    models = _judgements(session, campaign, judges)
    frame = pd.concat([humans, models], ignore_index=True)
    if frame.empty:
        return pd.DataFrame(columns=[*FRAME_COLUMNS, "unit_id"])
    frame = frame.merge(units, on="unit_id", how="left")
    ordered = [c for c in FRAME_COLUMNS if c in frame.columns]
    rest = [c for c in frame.columns if c not in ordered and c != "unit_id"]
    return frame[ordered + rest].reset_index(drop=True)


def campaign_reference_overrides(session: Session, campaign_id: int) -> dict[str, object]:
    """Live adjudications of the campaign's real units: unit key → adjudicated score or
    preference (gold units are left out, as everywhere in the campaign's frame)."""
    keys = unit_key_map(session, campaign_id)
    rows = session.execute(
        select(col(Adjudication.unit_id), col(Adjudication.score), col(Adjudication.preference))
        .join(Unit, col(Unit.id) == col(Adjudication.unit_id))
        .where(col(Adjudication.campaign_id) == campaign_id, col(Adjudication.is_live).is_(True))
        .where(col(Unit.gold).is_(False))
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
        .join(Item, col(Item.id) == col(Response.item_pk))
        .where(col(Response.response_id).in_(response_ids))
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
    """One row per unit: its key, item, task, category, group, model (a pair's: ``model_a`` and
    ``model_b``) and the scalar keys of the item's and response's ``meta``.

    Built column by column from a Core result (no ORM row processing), with each distinct
    ``meta`` text decoded once: at a million units the per-row objects were most of the read.
    """
    response, response_a, response_b = aliased(Response), aliased(Response), aliased(Response)
    statement = (
        select(
            col(Unit.id),
            col(Item.item_id),
            col(Item.task),
            col(Item.category),
            col(Item.group),
            cast(col(Item.meta), Text),
            col(response.response_id),
            col(response.model),
            cast(col(response.meta), Text),
            col(response_a.response_id),
            col(response_b.response_id),
            col(response_a.model),
            col(response_b.model),
        )
        .join(Item, col(Item.id) == col(Unit.item_pk))
        .outerjoin(response, col(response.id) == col(Unit.response_pk))
        .outerjoin(Pair, col(Pair.id) == col(Unit.pair_pk))
        .outerjoin(response_a, col(response_a.id) == col(Pair.response_a_pk))
        .outerjoin(response_b, col(response_b.id) == col(Pair.response_b_pk))
        .where(col(Unit.campaign_id) == campaign.id, col(Unit.gold).is_(False))
    )
    rows = session.connection().execute(statement).all()
    columns = _columns(rows, 13)
    unit_id, item_id, task, category, group, item_meta, rid, model, rmeta, ra, rb = columns[:11]
    model_a, model_b = columns[11:]
    table = pd.DataFrame(
        {
            "unit_id": pd.Series(unit_id, dtype=np.int64),
            "unit": pd.Series(
                [
                    response_unit_key(r) if r is not None else pair_unit_key(a, b)
                    for r, a, b in zip(rid, ra, rb, strict=True)
                ],
                dtype=object,
            ),
            "item_id": pd.Series(item_id, dtype=object),
            "task": pd.Series(task, dtype=object),
            "category": pd.Series(category, dtype=object),
            "group": pd.Series(group, dtype=object),
            "model": pd.Series(model, dtype=object),
        }
    )
    if any(a is not None for a in ra):  # a pair's models: the win rates (model_estimates)
        table["model_a"] = pd.Series(model_a, dtype=object)
        table["model_b"] = pd.Series(model_b, dtype=object)
    decoded: dict[str | None, dict] = {None: {}, "{}": {}, "null": {}}
    extras = [
        _scalars(decoded, i) | _scalars(decoded, r) for i, r in zip(item_meta, rmeta, strict=True)
    ]
    if any(extras):
        table = pd.concat([pd.DataFrame(extras, index=table.index), table], axis=1)
    return table


def _annotations(session: Session, campaign: Campaign) -> pd.DataFrame:
    statement = _live_annotations(select(col(Annotation.unit_id), *_ANNOTATION_COLUMNS), campaign)
    # in submission order: the annotators table reads each one's answers in it (straight-lining)
    rows = session.connection().execute(statement.order_by(col(Annotation.id))).all()
    unit_id, name, score, preference, shown = _columns(rows, 5)
    status = np.empty(len(unit_id), dtype=object)
    status.fill("ok")  # one string object for every row (np.full would copy it into each)
    return _frame_columns(
        unit_id,
        _shared(name, prefix=HUMAN_PREFIX),
        "human",
        score if campaign.protocol != "pairwise" else preference,
        shown,
        pd.Series(status, dtype=object),
        np.nan,
    )


def _judgements(session: Session, campaign: Campaign, judges: list[str] | None) -> pd.DataFrame:
    statement = campaign_judgements(campaign, *_JUDGEMENT_COLUMNS, unit_id=True)
    if judges:
        statement = statement.where(col(Judgement.judge).in_(judges))
    rows = session.connection().execute(statement.order_by("unit_id", col(Judgement.id))).all()
    unit_id, judge, score, preference, shown, status, expected = _columns(rows, 7)
    return _frame_columns(
        unit_id,
        _shared(judge),
        "model",
        score if campaign.protocol != "pairwise" else preference,
        shown,
        pd.Series(_shared(status), dtype=object),
        pd.Series(expected, dtype=np.float64),
    )


_ANNOTATION_COLUMNS = (
    col(User.name),
    col(Annotation.score),
    col(Annotation.preference),
    col(Annotation.shown_order),
)
_JUDGEMENT_COLUMNS = (
    col(Judgement.judge),
    col(Judgement.score),
    col(Judgement.preference),
    col(Judgement.shown_order),
    col(Judgement.parse_status),
    col(Judgement.expected_score),
)
"""What the metrics read of an answer or a judgement: no rationale (long text, read only for
the few units a report lists: :func:`campaign_rationales`)."""


_Columns = TypeVarTuple("_Columns")
"""The types of a SELECT's columns (kept by :func:`_live_annotations`)."""


def _live_annotations(statement: Select[*_Columns], campaign: Campaign) -> Select[*_Columns]:
    """Live answers to the campaign's real units that no reviewer rejected: gold units' answers
    measure the annotators, not the models, and never enter the reference
    (:mod:`data.queue.gold`); rejected ones left it
    (:func:`~data.services.counted_answers.not_rejected`)."""
    assert campaign.id is not None  # a stored campaign
    return (
        statement.join(User, col(User.id) == col(Annotation.annotator_id))
        .join(Unit, col(Unit.id) == col(Annotation.unit_id))
        .where(
            col(Annotation.campaign_id) == campaign.id,
            col(Annotation.is_live).is_(True),
            col(Unit.gold).is_(False),
            not_rejected(col(Annotation.assignment_id), campaign.id),
        )
    )


def _columns(rows: Sequence[Any], width: int) -> list[Sequence[Any]]:
    """Result rows as columns (tuples), ``width`` empty ones when there are no rows."""
    return list(zip(*rows, strict=True)) if rows else [()] * width


def _shared(values: Sequence[str], prefix: str = "") -> np.ndarray:
    """``prefix`` + each of ``values`` (none None), as an object array in which equal texts are
    one string object.

    Why: the driver returns a new string for every row, and a million-unit campaign has five
    million rows of a handful of rater names, parse statuses and orders: hundreds of MB of
    copies of the same few texts.
    """
    codes, distinct = pd.factorize(np.asarray(values, dtype=object))
    texts = np.array([prefix + text for text in distinct], dtype=object)
    return texts[codes]


def _frame_columns(
    unit_id: Sequence[Any],
    rater: np.ndarray,
    kind: str,
    value: Sequence[Any],
    shown_order: Sequence[Any],
    parse_status: object,
    expected_score: object,
) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "unit_id": pd.Series(unit_id, dtype=np.int64),
            "rater": pd.Series(rater, dtype=object),
            "kind": kind,
            "value": pd.Series(value, dtype=object),
            "shown_order": pd.Series(_shared([s or "AB" for s in shown_order]), dtype=object),
            "parse_status": parse_status,
            "expected_score": expected_score,
        }
    )


def campaign_rationales(
    session: Session,
    campaign: str | int,
    units: Collection[str],
    judges: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The rationales of the listed units only: their live annotations and their judgements
    (only ``judges``' when given), in one query.

    Why a second read: the frame that the metrics read leaves the rationales out, so that opening
    a million-unit campaign does not load millions of long texts; a report shows the texts of the
    few units it lists (its largest disagreements). Columns: ``unit``, ``rater``, ``kind``,
    ``value``, ``shown_order`` and ``rationale`` as in the judgement frame; humans first, then
    the judgements, each in the order it was stored.
    """
    found = get_campaign(session, campaign)
    columns = ["unit", "rater", "kind", "value", "shown_order", "rationale"]
    keys = sorted(set(units))
    if not keys:
        return pd.DataFrame(columns=columns)
    listed = _listed_units(found, keys)
    pointwise = found.protocol != "pairwise"
    humans = _live_annotations(
        select(
            *listed.c,
            literal(0).label("kind"),
            col(Annotation.id).label("row"),
            col(User.name).label("rater"),
            (col(Annotation.score) if pointwise else col(Annotation.preference)).label("value"),
            col(Annotation.shown_order),
            col(Annotation.rationale),
        ).join(listed, listed.c.id == col(Annotation.unit_id)),
        found,
    )
    link = (
        col(Judgement.response_pk) == listed.c.response_pk
        if pointwise
        else col(Judgement.pair_pk) == listed.c.pair_pk
    )
    models = (
        select(
            *listed.c,
            literal(1).label("kind"),
            col(Judgement.id).label("row"),
            col(Judgement.judge).label("rater"),
            (col(Judgement.score) if pointwise else col(Judgement.preference)).label("value"),
            col(Judgement.shown_order),
            col(Judgement.rationale),
        )
        .join(listed, link)
        .where(col(Judgement.protocol) == found.protocol)
    )
    if judges is not None:
        models = models.where(col(Judgement.judge).in_(list(judges)))
    both = union_all(humans, models).subquery()
    rows = session.execute(select(both).order_by(both.c.kind, both.c.row)).all()
    records = [
        (
            response_unit_key(r.rid) if pointwise else pair_unit_key(r.ra, r.rb),
            r.rater if r.kind else HUMAN_PREFIX + r.rater,
            "model" if r.kind else "human",
            r.value,
            r.shown_order or "AB",
            r.rationale or "",
        )
        for r in rows
    ]
    return pd.DataFrame(records, columns=columns, dtype=object)


def _listed_units(campaign: Campaign, keys: list[str]) -> Subquery:
    """The campaign's units with these keys, as a subquery: ``id``, ``response_pk``,
    ``pair_pk`` and the response ids that make the key (``rid``; pairs ``ra``, ``rb``)."""
    named = [parse_unit_key(key).response_ids for key in keys]
    if campaign.protocol != "pairwise":
        return (
            select(
                col(Unit.id),
                col(Unit.response_pk),
                col(Unit.pair_pk),
                col(Response.response_id).label("rid"),
            )
            .join(Response, col(Response.id) == col(Unit.response_pk))
            .where(
                col(Unit.campaign_id) == campaign.id,
                col(Response.response_id).in_([n[0] for n in named]),
            )
            .subquery()
        )
    response_a, response_b = aliased(Response), aliased(Response)
    return (
        select(
            col(Unit.id),
            col(Unit.response_pk),
            col(Unit.pair_pk),
            col(response_a.response_id).label("ra"),
            col(response_b.response_id).label("rb"),
        )
        .join(Pair, col(Pair.id) == col(Unit.pair_pk))
        .join(response_a, col(response_a.id) == col(Pair.response_a_pk))
        .join(response_b, col(response_b.id) == col(Pair.response_b_pk))
        .where(
            col(Unit.campaign_id) == campaign.id,
            tuple_(col(response_a.response_id), col(response_b.response_id)).in_(
                [tuple(n[:2]) for n in named]
            ),
        )
        .subquery()
    )


def campaign_judgements(campaign: Campaign, *columns: Any, unit_id: bool = False) -> Any:
    """``SELECT [unit_id,] *columns`` over the model judgements of the campaign's units made
    under the campaign's protocol (a judge may have scored the same responses under another)."""
    units = (
        select(col(Unit.id), col(Unit.response_pk), col(Unit.pair_pk))
        .where(col(Unit.campaign_id) == campaign.id, col(Unit.gold).is_(False))
        .subquery()
    )
    link = (
        col(Judgement.pair_pk) == units.c.pair_pk
        if campaign.protocol == "pairwise"
        else col(Judgement.response_pk) == units.c.response_pk
    )
    return (
        select(*([units.c.id.label("unit_id")] if unit_id else []), *columns)
        .join(units, link)
        .where(col(Judgement.protocol) == campaign.protocol)
    )


def _scalars(decoded: dict[str | None, dict], text: str | None) -> dict:
    """The scalar entries of a stored ``meta`` JSON text, usable as frame columns (frame columns'
    names left out); ``decoded`` remembers each distinct text's result."""
    if text not in decoded:
        reserved = set(JUDGEMENT_FRAME_COLUMNS) | {"unit_id"}
        meta = json.loads(text) if text is not None else None
        decoded[text] = {
            str(k): v
            for k, v in (meta if isinstance(meta, dict) else {}).items()
            if isinstance(v, str | int | float | bool) and str(k) not in reserved
        }
    return decoded[text]
