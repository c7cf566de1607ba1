"""A new campaign's units: the responses it covers and, for pairwise campaigns, its pairs.

Pointwise: one unit per selected response. Pairwise: one unit per pair — the pairs imported with
the dataset (``pairs="dataset"``), every pair of an item's responses (``pairs="all"``), or a
seeded random sample of K pairs per item (``pairs="sample"``). Generated pairs are stored in
``pair`` with ``source='generated'`` and canonical order = the two response ids sorted.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

from sqlalchemy import insert
from sqlmodel import Session, SQLModel, col, select

from data.services.campaigns import CampaignError, CampaignSpec
from schemas.core import core_table, stored_id
from schemas.ids import PAIR_SEPARATOR
from schemas.option_text import OptionText
from schemas.protocols import Protocol
from schemas.tables import Item, Pair, Response, Unit


def insert_units(
    session: Session,
    campaign_id: int,
    dataset_id: int,
    responses: list[Response],
    spec: CampaignSpec,
    protocol: Protocol,
) -> int:
    """Write the units of a new campaign (and the pairs they need); return how many.

    Raises :class:`~data.services.campaigns.CampaignError` when no unit would result.
    """
    if protocol.is_pointwise:
        units: list[dict[str, object]] = [
            {"campaign_id": campaign_id, "item_pk": r.item_pk, "response_pk": r.id}
            for r in responses
        ]
    else:
        _check_pairable(responses)
        units = _pair_units(session, campaign_id, dataset_id, responses, spec)
    if not units:
        raise CampaignError(_no_units_message(spec))
    _bulk_insert(session, Unit, units)
    return len(units)


def _check_pairable(responses: list[Response]) -> None:
    """Refuse response ids that could make two pairs share a unit key (``p:<a>|<b>``).

    Imports refuse them (:mod:`schemas.ids`); a database filled before that rule may hold some.
    """
    for response in responses:
        if PAIR_SEPARATOR in response.response_id:
            raise CampaignError(
                f"response {response.response_id!r} holds '|', which separates the two ids of "
                "a pair (p:<a>|<b>), so two pairs could share a unit key: give it another id"
            )


def selected_responses(
    session: Session, dataset_id: int, models: tuple[str, ...] | None
) -> list[Response]:
    """The dataset's responses (of ``models`` only, when given), by item and response id."""
    query = (
        select(Response)
        .join(Item, col(Item.id) == col(Response.item_pk))
        .where(Item.dataset_id == dataset_id)
        .order_by(col(Item.id), col(Response.response_id))
    )
    if models:
        query = query.where(col(Response.model).in_(models))
    responses = list(session.exec(query))
    if models:
        missing = sorted(set(models) - {r.model for r in responses})
        if missing:
            raise CampaignError(
                OptionText(
                    "no responses of model(s) {missing} in this dataset; check the model names "
                    "or drop them from {models}",
                    missing=", ".join(missing),
                )
            )
    return responses


def _pair_units(
    session: Session,
    campaign_id: int,
    dataset_id: int,
    responses: list[Response],
    spec: CampaignSpec,
) -> list[dict[str, object]]:
    selected = {r.id for r in responses}
    existing = dataset_pairs(session, dataset_id)
    if spec.pairs == "dataset":
        pairs = [
            p
            for p in existing.values()
            if p.source == "import" and p.response_a_pk in selected and p.response_b_pk in selected
        ]
        pairs.sort(key=lambda p: (p.item_pk, p.id))
        return [{"campaign_id": campaign_id, "item_pk": p.item_pk, "pair_pk": p.id} for p in pairs]
    wanted = _generate_pairs(responses, spec)
    missing = [(i, a, b) for i, a, b in wanted if (a, b) not in existing and (b, a) not in existing]
    if missing:
        _bulk_insert(
            session,
            Pair,
            [
                {"item_pk": i, "response_a_pk": a, "response_b_pk": b, "source": "generated"}
                for i, a, b in missing
            ],
        )
        existing = dataset_pairs(session, dataset_id)
    units: list[dict[str, object]] = []
    for item_pk, a, b in wanted:
        pair = existing.get((a, b)) or existing[(b, a)]
        units.append({"campaign_id": campaign_id, "item_pk": item_pk, "pair_pk": pair.id})
    return units


def dataset_pairs(session: Session, dataset_id: int) -> dict[tuple[int, int], Pair]:
    """The stored pairs of a dataset's items by ``(response a pk, response b pk)``: the one
    look-up of a unit's pair, for new campaigns and for imported labels."""
    query = (
        select(Pair)
        .join(Item, col(Item.id) == col(Pair.item_pk))
        .where(Item.dataset_id == dataset_id)
    )
    return {(pair.response_a_pk, pair.response_b_pk): pair for pair in session.exec(query)}


def _generate_pairs(responses: list[Response], spec: CampaignSpec) -> list[tuple[int, int, int]]:
    """``(item pk, response a pk, response b pk)`` in canonical order (response ids sorted)."""
    by_item: dict[int, list[Response]] = defaultdict(list)
    for response in responses:
        by_item[response.item_pk].append(response)
    wanted: list[tuple[int, int, int]] = []
    for item_pk in sorted(by_item):
        ordered = sorted(by_item[item_pk], key=lambda r: r.response_id)
        combos = list(itertools.combinations(ordered, 2))
        if spec.pairs == "sample":
            assert spec.pairs_per_item is not None
            rng = random.Random(f"{spec.seed}:{item_pk}")
            picked = sorted(rng.sample(range(len(combos)), min(spec.pairs_per_item, len(combos))))
            combos = [combos[i] for i in picked]
        wanted += [(item_pk, stored_id(a), stored_id(b)) for a, b in combos]
    return wanted


def _bulk_insert(session: Session, table: type[SQLModel], rows: list[dict[str, object]]) -> None:
    session.connection().execute(insert(core_table(table)), rows)


def _no_units_message(spec: CampaignSpec) -> str | OptionText:
    what = f"dataset {spec.dataset!r}"
    if spec.models:
        what += " for models " + ", ".join(spec.models)
    if spec.protocol == "pairwise" and spec.pairs == "dataset":
        return OptionText(
            "{what} has no imported pairs, so the campaign would have no units: use {pairs} all "
            "or {pairs_per_item} to generate pairs from each item's responses",
            what=what,
        )
    if spec.protocol == "pairwise":
        return f"{what} has no item with two or more responses, so there are no pairs to compare"
    return f"{what} has no responses, so the campaign would have no units: import responses first"
