"""Annotation campaigns: what defines one (:class:`CampaignSpec`), creating it, finding it.

A campaign annotates one dataset under one protocol. Its units are built once, at creation
(:mod:`data.services.campaign_units`); its progress is :mod:`data.services.campaign_progress`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select as core_select
from sqlmodel import Session, col, select

from data.storage.audit import record_event
from schemas.bounds import LEASE_SECONDS, OVERLAP, PAIRS_PER_ITEM, RATIONALE_MIN
from schemas.core_tables import RESPONSES
from schemas.ids import id_problem, pair_unit_key, response_unit_key
from schemas.option_text import OptionError, OptionText
from schemas.protocols import Protocol, get_protocol
from schemas.tables import Campaign, Dataset, Item, Pair, Response, Unit

PairSampling = Literal["dataset", "all", "sample"]
PAIR_SAMPLING_MODES: tuple[str, ...] = ("dataset", "all", "sample")


class CampaignError(OptionError):
    """A campaign that cannot be created or found as asked, with what to do instead."""


class CampaignNotFound(CampaignError):
    """No campaign with that name or id."""


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


def create_campaign(session: Session, spec: CampaignSpec, actor_id: int | None = None) -> Campaign:
    """Create the campaign of ``spec`` with all its units (and generated pairs) in ``session``.

    Raises :class:`CampaignError` when the name is taken, the dataset or protocol is unknown, a
    setting is out of range, or no unit would result.
    """
    _check_settings(spec)
    # Imported here: the queue package and campaign_units import this module.
    from data.queue.routing import apply_routing, check_routing
    from data.services.campaign_units import insert_units, selected_responses

    routing, routing_judges, routing_share = check_routing(
        spec.routing, spec.routing_judges, spec.routing_share
    )
    protocol = get_protocol(
        spec.protocol,
        scale_min=spec.scale[0] if spec.scale else None,
        scale_max=spec.scale[1] if spec.scale else None,
        step=spec.scale[2] if spec.scale else None,
    )
    # Imported here: data.services.disagreements imports this module.
    from data.services.disagreements import OPTIONS_KEY, check_review_settings, settings_options

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
    routed = apply_routing(session, campaign) if routing != "least-annotated" else None
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


def campaign_protocol(campaign: Campaign) -> Protocol:
    """The campaign's :class:`Protocol`, with its own scale for ``score`` campaigns."""
    return get_protocol(
        campaign.protocol,
        scale_min=campaign.scale_min,
        scale_max=campaign.scale_max,
        step=campaign.scale_step,
    )


def get_campaign(session: Session, campaign: str | int) -> Campaign:
    """The one campaign look-up: by name, or by id (an ``int``, or a string of digits that is no
    campaign's name). :class:`CampaignNotFound` naming the known campaigns if there is none."""
    found = None
    if isinstance(campaign, str):
        found = session.exec(select(Campaign).where(Campaign.name == campaign)).first()
    if found is None and str(campaign).isdigit():
        found = session.get(Campaign, int(campaign))
    if found is None:
        known = list(session.exec(select(Campaign.name).order_by(Campaign.name).limit(20)))
        hint = "known campaigns: " + ", ".join(known) if known else "there are no campaigns yet"
        what = f"called {campaign!r}" if isinstance(campaign, str) else f"with id {campaign}"
        raise CampaignNotFound(
            f"no campaign {what} ({hint}); create one with critiquelab campaign create"
        )
    return found


def list_campaigns(session: Session) -> list[Campaign]:
    return list(session.exec(select(Campaign).order_by(col(Campaign.created_at), col(Campaign.id))))


def unit_key_map(session: Session, campaign_id: int) -> dict[int, str]:
    """``unit id -> unit key`` (``r:<response_id>`` or ``p:<a>|<b>``) for a campaign."""
    return {unit_id: key for unit_id, key, _, _ in unit_keys(session, campaign_id)}


def unit_keys(session: Session, campaign_id: int) -> list[tuple[int, str, str, bool]]:
    """``(unit id, unit key, item id, flagged)`` for every unit of the campaign, by unit id."""
    ra, rb = RESPONSES.alias("ra"), RESPONSES.alias("rb")
    pointwise = session.exec(
        select(Unit.id, Response.response_id, Item.item_id, Unit.flagged)
        .join(Response, col(Response.id) == col(Unit.response_pk))
        .join(Item, col(Item.id) == col(Unit.item_pk))
        .where(Unit.campaign_id == campaign_id)
    )
    # Stored rows: every unit id is set.
    rows = [(u, response_unit_key(r), i, f) for u, r, i, f in pointwise if u is not None]
    # SQLModel types select() and Session.exec() for at most four columns, so this five-column
    # query is SQLAlchemy's select() run by Session.execute() (same statement, same rows).
    pairwise = session.execute(
        core_select(
            col(Unit.id), ra.c.response_id, rb.c.response_id, col(Item.item_id), col(Unit.flagged)
        )
        .join(Pair, col(Pair.id) == col(Unit.pair_pk))
        .join(ra, ra.c.id == col(Pair.response_a_pk))
        .join(rb, rb.c.id == col(Pair.response_b_pk))
        .join(Item, col(Item.id) == col(Unit.item_pk))
        .where(col(Unit.campaign_id) == campaign_id)
    )
    rows += [(u, pair_unit_key(a, b), i, f) for u, a, b, i, f in pairwise]
    return sorted(rows)


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
    if spec.protocol != "score" and spec.scale is not None:
        raise CampaignError(
            OptionText(
                "{scale} applies to the score protocol only; {protocol_name} has a fixed scale",
                protocol_name=spec.protocol,
            )
        )
