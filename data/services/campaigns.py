"""Annotation campaigns: what defines one (:class:`CampaignSpec`), and creating it with its units.

A campaign annotates one dataset under one protocol. Its units are built once, at creation:
pointwise, one unit per selected response; pairwise, one unit per pair — the pairs imported with
the dataset (``pairs="dataset"``), every pair of an item's responses (``pairs="all"``), or a
seeded random sample of K pairs per item (``pairs="sample"``). Generated pairs are stored in
``pair`` with ``source='generated'`` and canonical order = the two response ids sorted.

Finding a campaign is :mod:`data.storage.campaign_lookup`; its progress is
:mod:`data.services.campaign_progress`.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import insert
from sqlmodel import Session, SQLModel, col, select

from data.services.disagreements import OPTIONS_KEY, check_review_settings, settings_options
from data.services.routing import apply_routing, check_routing
from data.storage.audit import record_event
from data.storage.campaign_lookup import CampaignError
from schemas.bounds import LEASE_SECONDS, OVERLAP, PAIRS_PER_ITEM, RATIONALE_MIN
from schemas.core import core_table, stored_id
from schemas.ids import PAIR_SEPARATOR, id_problem
from schemas.option_text import OptionText
from schemas.protocols import Protocol, protocol_on_scale
from schemas.tables import Campaign, Dataset, Item, Pair, Response, Unit

PairSampling = Literal["dataset", "all", "sample"]
PAIR_SAMPLING_MODES: tuple[str, ...] = ("dataset", "all", "sample")


@dataclass(frozen=True)
class CampaignSpec:
    """Everything that defines a campaign; the fields feed :class:`schemas.tables.Campaign`."""

    name: str
    dataset: str
    """Name of the dataset whose responses are annotated."""
    protocol: str
    """alignmmbench | mmie | pairwise | score."""
    scale: tuple[float, float, float | None] | None = None
    """``(min, max, step)`` for the ``score`` protocol (step None = continuous)."""
    overlap: int = 3
    """Annotators per unit (K)."""
    rationale_min: int = 20
    """Minimum rationale length in characters."""
    lease_seconds: int = 900
    """How long a unit is held for one annotator before it goes back to the queue."""
    show_reference: bool = True
    show_others_after_submit: bool = False
    instructions: str = ""
    models: tuple[str, ...] | None = None
    """Only responses of these models (None = all models)."""
    pairs: PairSampling = "dataset"
    """Pairwise only: pairs from the dataset file, all pairs per item, or a sample per item."""
    pairs_per_item: int | None = None
    """Pairwise with ``pairs="sample"``: K pairs per item."""
    seed: int = 0
    """Seed of the pair sample."""
    synthetic: bool = False
    """A demo campaign with synthetic labels."""
    disagreement_threshold: float | None = None
    """Disagreement review: the smallest |judge − reference| reviewers see (default 20% of the
    scale's width); pairwise campaigns have none (:mod:`data.services.disagreements`)."""
    taxonomy: tuple[str, ...] | None = None
    """Disagreement review: the causes reviewers tag (default
    :data:`schemas.disagreements.DEFAULT_TAXONOMY`)."""
    routing: str = "least-annotated"
    """Which units are served first: least-annotated | judge-disagreement | judge-uncertainty |
    stratified (:mod:`data.queue.priority`)."""
    routing_judges: tuple[str, ...] | None = None
    """The judges whose outputs order the queue (judge-guided routings only)."""
    routing_share: float | None = None
    """Stratified routing: the share of units served in random order (default 0.2)."""


def pair_sampling_text(campaign: Campaign) -> str | None:
    """How a pairwise campaign's pairs were made, in words, from what :func:`create_campaign`
    stored in its options; None for a pointwise campaign."""
    stored = (campaign.options or {}).get("pairs")
    if not stored:
        return None
    if stored["mode"] == "sample":
        return f"{stored['k']} pairs per item (seed {stored['seed']})"
    return {"dataset": "pairs from the dataset", "all": "all pairs per item"}[stored["mode"]]


def create_campaign(session: Session, spec: CampaignSpec, actor_id: int | None = None) -> Campaign:
    """Create the campaign of ``spec`` with all its units (and generated pairs) in ``session``.

    Raises :class:`CampaignError` when the name is taken, the dataset or protocol is unknown, a
    setting is out of range, or no unit would result.
    """
    _check_settings(spec)
    routing, routing_judges, routing_share = check_routing(
        spec.routing, spec.routing_judges, spec.routing_share
    )
    protocol = protocol_on_scale(spec.protocol, spec.scale)
    review = check_review_settings(protocol, spec.disagreement_threshold, spec.taxonomy)
    if session.exec(select(Campaign).where(Campaign.name == spec.name)).first() is not None:
        raise CampaignError(f"campaign {spec.name!r} already exists: choose another name")
    dataset = session.exec(select(Dataset).where(Dataset.name == spec.dataset)).first()
    if dataset is None:
        raise CampaignError(
            f"no dataset called {spec.dataset!r}: import one first (critiquelab import ...)"
        )
    assert dataset.id is not None
    responses = selected_responses(session, dataset.id, spec.models)
    campaign = Campaign(
        name=spec.name,
        dataset_id=dataset.id,
        protocol=protocol.name,
        scale_min=protocol.scale_min if protocol.name == "score" else None,
        scale_max=protocol.scale_max if protocol.name == "score" else None,
        scale_step=protocol.step if protocol.name == "score" else None,
        overlap=spec.overlap,
        rationale_min=spec.rationale_min,
        lease_seconds=spec.lease_seconds,
        show_reference=spec.show_reference,
        show_others_after_submit=spec.show_others_after_submit,
        instructions=spec.instructions,
        synthetic=spec.synthetic,
        created_by=actor_id,
        routing=routing,
        routing_judges=routing_judges,
        routing_share=routing_share,
        options={
            "models": list(spec.models) if spec.models else None,
            "pairs": {"mode": spec.pairs, "k": spec.pairs_per_item, "seed": spec.seed}
            if protocol.kind == "pairwise"
            else None,
            OPTIONS_KEY: settings_options(review),
        },
    )
    session.add(campaign)
    session.flush()
    assert campaign.id is not None
    units = insert_units(session, campaign.id, dataset.id, responses, spec, protocol)
    plan = apply_routing(session, campaign)  # least-annotated too: its random tie-break
    routed = plan if routing != "least-annotated" else None
    routing_detail = {
        "routing": routing,
        "judges": routing_judges,
        "share": routing_share,
        "note": routed.note if routed else None,
    }
    record_event(
        session,
        actor_id=actor_id,
        action="campaign.create",
        entity="campaign",
        entity_id=campaign.id,
        detail={
            "name": spec.name,
            "dataset": spec.dataset,
            "protocol": protocol.name,
            "overlap": spec.overlap,
            "units": units,
            "options": campaign.options,
            "routing": routing_detail,
        },
    )
    return campaign


def _check_settings(spec: CampaignSpec) -> None:
    if not spec.name.strip():
        raise CampaignError("the campaign name is empty: give it a name")
    problem = id_problem(spec.name)
    if problem is not None:
        raise CampaignError(f"the campaign name {spec.name!r} {problem}")
    for bound, value in (
        (OVERLAP, spec.overlap),
        (RATIONALE_MIN, spec.rationale_min),
        (LEASE_SECONDS, spec.lease_seconds),
    ):
        if (out_of_range := bound.problem(value)) is not None:
            raise CampaignError(out_of_range)
    if spec.pairs not in PAIR_SAMPLING_MODES:
        raise CampaignError(
            f"pair sampling {spec.pairs!r} is not one of: " + ", ".join(PAIR_SAMPLING_MODES)
        )
    if spec.pairs == "sample":
        if spec.pairs_per_item is None:
            raise CampaignError(OptionText("sampling pairs needs {pairs_per_item} of 1 or more"))
        if (out_of_range := PAIRS_PER_ITEM.problem(spec.pairs_per_item)) is not None:
            raise CampaignError(out_of_range)


def insert_units(
    session: Session,
    campaign_id: int,
    dataset_id: int,
    responses: list[Response],
    spec: CampaignSpec,
    protocol: Protocol,
) -> int:
    """Write the units of a new campaign (and the pairs they need); return how many.

    Raises :class:`~data.storage.campaign_lookup.CampaignError` when no unit would result.
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
