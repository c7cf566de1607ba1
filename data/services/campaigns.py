"""Annotation campaigns: create one with its units, find it, report its progress.

A campaign annotates one dataset under one protocol. Its units are built once, at creation:

* pointwise protocols (``alignmmbench``, ``mmie``, ``score``): one unit per selected response;
* ``pairwise``: one unit per pair — the pairs imported with the dataset (``pairs="dataset"``),
  every pair of an item's responses (``pairs="all"``), or a seeded random sample of K pairs per
  item (``pairs="sample"`` with ``pairs_per_item=K``). Generated pairs are stored in ``pair`` with
  ``source='generated'`` and canonical order = the two response ids sorted.
"""

from __future__ import annotations

import itertools
import random
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import Table, insert
from sqlmodel import Session, select

from data.storage.audit import record_event
from schemas.ids import PAIR_SEPARATOR, id_problem, pair_unit_key, response_unit_key
from schemas.protocols import Protocol, get_protocol
from schemas.tables import (
    Annotation,
    Assignment,
    Campaign,
    Dataset,
    Item,
    Pair,
    Response,
    Unit,
    User,
)

PairSampling = Literal["dataset", "all", "sample"]
PAIR_SAMPLING_MODES: tuple[str, ...] = ("dataset", "all", "sample")


class CampaignError(ValueError):
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


@dataclass(frozen=True)
class AnnotatorProgress:
    """One annotator's work in a campaign (live annotations only; revisions count once)."""

    annotator: str
    submitted: int
    leased: int
    skipped: int
    total_seconds: float
    median_seconds: float
    """Median active seconds per submitted unit; NaN when nothing is submitted."""


@dataclass(frozen=True)
class UnitProgress:
    """One unit: how many annotators submitted it out of the overlap, and the time they took."""

    unit_id: int
    unit_key: str
    item_id: str
    submitted: int
    leased: int
    flagged: bool
    median_seconds: float
    """Median active seconds of its live annotations; NaN when none."""


@dataclass(frozen=True)
class CampaignProgress:
    """Progress of a campaign: per annotator, per unit, and the totals."""

    campaign: str
    protocol: str
    status: str
    overlap: int
    units: int
    units_complete: int
    """Units with at least ``overlap`` live annotations."""
    annotations: int
    median_seconds_per_unit: float
    """Median active seconds over all live annotations; NaN when none."""
    by_annotator: list[AnnotatorProgress] = field(default_factory=list)
    by_unit: list[UnitProgress] = field(default_factory=list)

    @property
    def fraction_complete(self) -> float:
        return self.units_complete / self.units if self.units else float("nan")


def create_campaign(session: Session, spec: CampaignSpec, actor_id: int | None = None) -> Campaign:
    """Create the campaign of ``spec`` with all its units (and generated pairs) in ``session``.

    Raises :class:`CampaignError` when the name is taken, the dataset or protocol is unknown, a
    setting is out of range, or no unit would result.
    """
    _check_settings(spec)
    # Imported here: the queue package imports this module.
    from data.queue.routing import apply_routing, check_routing

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
    responses = _selected_responses(session, dataset.id, spec.models)
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
    if protocol.kind == "pairwise":
        _check_pairable(responses)
        units = _pair_units(session, campaign.id, dataset.id, responses, spec)
    else:
        units = [
            {"campaign_id": campaign.id, "item_pk": r.item_pk, "response_pk": r.id}
            for r in responses
        ]
    if not units:
        raise CampaignError(_no_units_message(spec))
    _bulk_insert(session, Unit, units)
    routed = apply_routing(session, campaign) if routing != "least-annotated" else None
    record_event(
        session, actor_id=actor_id, action="campaign.create", entity="campaign",
        entity_id=campaign.id,
        detail={"name": spec.name, "dataset": spec.dataset, "protocol": protocol.name,
                "overlap": spec.overlap, "units": len(units), "options": campaign.options,
                "routing": {"routing": routing, "judges": routing_judges, "share": routing_share,
                            "note": routed.note if routed else None}},
    )  # fmt: skip
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
    return list(session.exec(select(Campaign).order_by(Campaign.created_at, Campaign.id)))


def campaign_progress(session: Session, campaign_id: int) -> CampaignProgress:
    """Progress per annotator and per unit, with the active time spent per unit."""
    campaign = get_campaign(session, campaign_id)
    seconds_by_unit: dict[int, list[float]] = defaultdict(list)
    seconds_by_annotator: dict[str, list[float]] = defaultdict(list)
    live = session.exec(
        select(Annotation.unit_id, User.name, Annotation.seconds)
        .join(User, User.id == Annotation.annotator_id)
        .where(Annotation.campaign_id == campaign_id, Annotation.is_live)
    )
    for unit_id, annotator, seconds in live:
        seconds_by_unit[unit_id].append(float(seconds))
        seconds_by_annotator[annotator].append(float(seconds))
    status_counts: dict[tuple[str, str], int] = defaultdict(int)
    leased_by_unit: dict[int, int] = defaultdict(int)
    assignments = session.exec(
        select(Assignment.unit_id, User.name, Assignment.status)
        .join(User, User.id == Assignment.annotator_id)
        .where(Assignment.campaign_id == campaign_id)
    )
    for unit_id, annotator, status in assignments:
        status_counts[(annotator, status)] += 1
        if status == "leased":
            leased_by_unit[unit_id] += 1
    annotators = sorted(set(seconds_by_annotator) | {name for name, _ in status_counts})
    by_annotator = [
        AnnotatorProgress(
            annotator=name,
            submitted=len(seconds_by_annotator[name]),
            leased=status_counts[(name, "leased")],
            skipped=status_counts[(name, "skipped")],
            total_seconds=float(sum(seconds_by_annotator[name])),
            median_seconds=_median(seconds_by_annotator[name]),
        )
        for name in annotators
    ]
    by_unit = [
        UnitProgress(
            unit_id=unit_id,
            unit_key=unit_key,
            item_id=item_id,
            submitted=len(seconds_by_unit[unit_id]),
            leased=leased_by_unit[unit_id],
            flagged=flagged,
            median_seconds=_median(seconds_by_unit[unit_id]),
        )
        for unit_id, unit_key, item_id, flagged in _unit_keys(session, campaign_id)
    ]
    all_seconds = [s for values in seconds_by_unit.values() for s in values]
    return CampaignProgress(
        campaign=campaign.name,
        protocol=campaign.protocol,
        status=campaign.status,
        overlap=campaign.overlap,
        units=len(by_unit),
        units_complete=sum(1 for unit in by_unit if unit.submitted >= campaign.overlap),
        annotations=len(all_seconds),
        median_seconds_per_unit=_median(all_seconds),
        by_annotator=by_annotator,
        by_unit=by_unit,
    )


def unit_key_map(session: Session, campaign_id: int) -> dict[int, str]:
    """``unit id -> unit key`` (``r:<response_id>`` or ``p:<a>|<b>``) for a campaign."""
    return {unit_id: key for unit_id, key, _, _ in _unit_keys(session, campaign_id)}


def _unit_keys(session: Session, campaign_id: int) -> list[tuple[int, str, str, bool]]:
    """``(unit id, unit key, item id, flagged)`` for every unit of the campaign, by unit id."""
    responses: Table = Response.__table__  # type: ignore[attr-defined]
    ra, rb = responses.alias("ra"), responses.alias("rb")
    pointwise = session.exec(
        select(Unit.id, Response.response_id, Item.item_id, Unit.flagged)
        .join(Response, Response.id == Unit.response_pk)
        .join(Item, Item.id == Unit.item_pk)
        .where(Unit.campaign_id == campaign_id)
    )
    rows = [(u, response_unit_key(r), i, f) for u, r, i, f in pointwise]
    pairwise = session.exec(
        select(Unit.id, ra.c.response_id, rb.c.response_id, Item.item_id, Unit.flagged)
        .join(Pair, Pair.id == Unit.pair_pk)
        .join(ra, ra.c.id == Pair.response_a_pk)
        .join(rb, rb.c.id == Pair.response_b_pk)
        .join(Item, Item.id == Unit.item_pk)
        .where(Unit.campaign_id == campaign_id)
    )
    rows += [(u, pair_unit_key(a, b), i, f) for u, a, b, i, f in pairwise]
    return sorted(rows)


def _check_settings(spec: CampaignSpec) -> None:
    if not spec.name.strip():
        raise CampaignError("the campaign name is empty: give it a name")
    problem = id_problem(spec.name)
    if problem is not None:
        raise CampaignError(f"the campaign name {spec.name!r} {problem}")
    if spec.overlap < 1:
        raise CampaignError(f"overlap is {spec.overlap}, but each unit needs at least 1 annotator")
    if spec.rationale_min < 0:
        raise CampaignError(f"rationale_min is {spec.rationale_min}; use 0 for no minimum")
    if spec.lease_seconds <= 0:
        raise CampaignError(f"lease_seconds is {spec.lease_seconds}; it must be positive")
    if spec.pairs not in PAIR_SAMPLING_MODES:
        raise CampaignError(
            f"pair sampling {spec.pairs!r} is not one of: " + ", ".join(PAIR_SAMPLING_MODES)
        )
    if spec.pairs == "sample" and (spec.pairs_per_item is None or spec.pairs_per_item < 1):
        raise CampaignError("sampling pairs needs pairs_per_item >= 1 (--pairs K)")
    if spec.protocol != "score" and spec.scale is not None:
        raise CampaignError(
            f"--scale applies to the score protocol only; {spec.protocol} has a fixed scale"
        )


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


def _selected_responses(
    session: Session, dataset_id: int, models: tuple[str, ...] | None
) -> list[Response]:
    query = (
        select(Response)
        .join(Item, Item.id == Response.item_pk)
        .where(Item.dataset_id == dataset_id)
        .order_by(Item.id, Response.response_id)
    )
    if models:
        query = query.where(Response.model.in_(models))  # type: ignore[attr-defined]
    responses = list(session.exec(query))
    if models:
        missing = sorted(set(models) - {r.model for r in responses})
        if missing:
            raise CampaignError(
                "no responses of model(s) " + ", ".join(missing) + " in this dataset; "
                "check the model names or drop them from --models"
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
    existing = _dataset_pairs(session, dataset_id)
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
        existing = _dataset_pairs(session, dataset_id)
    units = []
    for item_pk, a, b in wanted:
        pair = existing.get((a, b)) or existing[(b, a)]
        units.append({"campaign_id": campaign_id, "item_pk": item_pk, "pair_pk": pair.id})
    return units


def _dataset_pairs(session: Session, dataset_id: int) -> dict[tuple[int, int], Pair]:
    query = select(Pair).join(Item, Item.id == Pair.item_pk).where(Item.dataset_id == dataset_id)
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
        wanted += [(item_pk, a.id, b.id) for a, b in combos]  # type: ignore[misc]
    return wanted


def _bulk_insert(session: Session, table: type, rows: list[dict[str, object]]) -> None:
    sa_table: Table = table.__table__  # type: ignore[attr-defined]
    session.connection().execute(insert(sa_table), rows)


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def _no_units_message(spec: CampaignSpec) -> str:
    what = f"dataset {spec.dataset!r}"
    if spec.models:
        what += " for models " + ", ".join(spec.models)
    if spec.protocol == "pairwise" and spec.pairs == "dataset":
        return (
            f"{what} has no imported pairs, so the campaign would have no units: "
            "use --pairs all or --pairs K to generate pairs from each item's responses"
        )
    if spec.protocol == "pairwise":
        return f"{what} has no item with two or more responses, so there are no pairs to compare"
    return f"{what} has no responses, so the campaign would have no units: import responses first"
