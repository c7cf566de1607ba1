"""A campaign's routing setting, stored as a serving rank on each unit (the queue serves by it).

:func:`apply_routing` reads the chosen judges' judgements on the campaign's units, orders the
units with :func:`data.queue.priority.plan_routing` and writes the order to ``Unit.priority``
(lowest first; ``least-annotated``: a seeded random key that breaks its ties; null when no judge
gave a signal, served least-annotated first, ties by id), so that the lease
query stays an index-ordered pick (:mod:`data.queue.leases`). It runs when a campaign is created,
when its routing is set (:func:`set_routing`) and when judgements of a routing judge are stored
(:func:`refresh_routing_for_judgements`). Overlap, leases and blindness are untouched: the
order only decides which free slot is offered first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, text, update
from sqlmodel import Session, col, select

from data.queue.priority import (
    DEFAULT_STRATIFIED_SHARE,
    PREFERENCE_AXIS,
    ROUTING_MODES,
    JudgeReading,
    RoutingPlan,
    estimation_sample,
    expected_score_spread,
    plan_routing,
    probability_spread,
    routing_guide,
    serving_key,
    unit_signal,
)
from data.queue.routing_lock import hold_campaign_queue
from data.storage.audit import record_event
from data.storage.campaign_imports import NOT_IMPORTING
from data.storage.campaign_lookup import CampaignError, campaign_protocol, get_campaign
from schemas.core import stored_id
from schemas.core_tables import UNITS
from schemas.ids import id_problem
from schemas.option_text import OptionText
from schemas.tables import Campaign, Judgement, Unit

_SET_PRIORITY = (
    update(UNITS).where(UNITS.c.id == bindparam("b_id")).values(priority=bindparam("b_rank"))
)


def check_routing(
    routing: str, judges: Sequence[str] | None, share: float | None
) -> tuple[str, list[str] | None, float | None]:
    """The routing setting as stored: ``(routing, judges, share)``; :class:`CampaignError` when
    the combination makes no sense (nothing is guessed or clamped)."""
    if routing not in ROUTING_MODES:
        raise CampaignError(
            OptionText(
                "unknown routing {value!r}: choose one of {modes} ({routing})",
                value=routing,
                modes=", ".join(ROUTING_MODES),
            )
        )
    names = [name.strip() for name in judges or ()]
    if "" in names:  # "a,,b": a typo, not a judge (it was dropped)
        raise CampaignError(
            OptionText("{routing_judges} has an empty name: leave it out or name the judge")
        )
    for name in names:
        if (problem := id_problem(name)) is not None:
            raise CampaignError(
                OptionText(
                    "{routing_judges}: judge {name} {problem}", name=repr(name), problem=problem
                )
            )
    if len(set(names)) != len(names):
        raise CampaignError(
            OptionText("{routing_judges} name a judge twice: {names}", names=", ".join(names))
        )
    if routing == "least-annotated":
        if names or share is not None:
            raise CampaignError(
                OptionText(
                    "least-annotated routing uses no judges and no stratified share: leave them "
                    "out ({routing_judges}, {routing_share})"
                )
            )
        return routing, None, None
    if not names:
        raise CampaignError(
            OptionText(
                "{value} routing needs the judges whose outputs order the queue ({routing_judges})",
                value=routing,
            )
        )
    if routing == "judge-disagreement" and len(names) < 2:
        raise CampaignError(
            OptionText(
                "judge-disagreement routing needs at least two judges to compare ({routing_judges})"
            )
        )
    if routing != "stratified":
        if share is not None:
            raise CampaignError(
                OptionText(
                    "a stratified share applies only to stratified routing ({routing_share})"
                )
            )
        return routing, names, None
    share = DEFAULT_STRATIFIED_SHARE if share is None else float(share)
    if not 0 < share < 1:
        raise CampaignError(
            OptionText(
                "the stratified share is {value}, but it must be between 0 and 1 (exclusive), "
                "e.g. 0.2 for one unit in five served in random order ({routing_share})",
                value=share,
            )
        )
    return routing, names, share


def set_routing(
    session: Session,
    campaign: str | int,
    routing: str,
    judges: Sequence[str] | None = None,
    share: float | None = None,
    actor_id: int | None = None,
) -> RoutingPlan:
    """Change a campaign's routing and re-rank its units; the plan says what ordered them."""
    found = get_campaign(session, campaign)
    routing, names, share = check_routing(routing, judges, share)
    before = {
        "routing": found.routing,
        "judges": found.routing_judges,
        "share": found.routing_share,
    }
    found.routing, found.routing_judges, found.routing_share = routing, names, share
    session.add(found)
    plan = apply_routing(session, found)
    record_event(
        session,
        actor_id=actor_id,
        action="campaign.routing",
        entity="campaign",
        entity_id=stored_id(found),
        detail={
            "before": before,
            "after": {"routing": routing, "judges": names, "share": share},
            "note": plan.note,
        },
    )
    return plan


def routing_plan(session: Session, campaign: Campaign) -> RoutingPlan:
    """The serving order of the campaign's units under its routing setting (nothing written)."""
    session.flush()
    units = list(session.exec(select(col(Unit.id)).where(Unit.campaign_id == campaign.id)))
    judges = list(campaign.routing_judges or ())
    readings = judge_readings(session, campaign, judges) if judges else {}
    return plan_routing(
        campaign.routing,
        [unit for unit in units if unit is not None],  # stored rows: every id is set
        readings,
        judges=judges,
        share=campaign.routing_share,
        seed=stored_id(campaign),
    )


def apply_routing(session: Session, campaign: Campaign) -> RoutingPlan:
    """Rank the campaign's units under its routing setting and store the ranks.

    The ranks are computed first (they depend on the units and the judgements, not on what is
    leased); then the campaign's queue is held (:func:`data.queue.routing_lock.
    hold_campaign_queue`) for the writes alone: they touch every unit row, and no annotator's step
    may hold one of them meanwhile (a deadlock) nor look for a unit among them (a false "no
    unit"), so the steps wait for the writes, not for the planning."""
    plan = routing_plan(session, campaign)
    hold_campaign_queue(session, stored_id(campaign))
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        ranked = list(plan.priorities)
        connection.execute(_UNRANK_OTHERS, {"b_campaign": campaign.id, "b_ids": ranked})
        if ranked:
            ranks = list(plan.priorities.values())
            connection.execute(_RANK_UNITS, {"b_ids": ranked, "b_ranks": ranks})
        return plan
    connection.execute(
        update(UNITS).where(UNITS.c.campaign_id == campaign.id).values(priority=None)
    )
    if plan.priorities:
        rows = [{"b_id": unit, "b_rank": rank} for unit, rank in plan.priorities.items()]
        connection.execute(_SET_PRIORITY, rows)
    return plan


_UNRANK_OTHERS = text(
    f"UPDATE {UNITS.name} SET priority = NULL WHERE campaign_id = :b_campaign "
    "AND priority IS NOT NULL AND id <> ALL(CAST(:b_ids AS integer[]))"
)
_RANK_UNITS = text(
    f"UPDATE {UNITS.name} SET priority = ranked.rank "
    "FROM unnest(CAST(:b_ids AS integer[]), CAST(:b_ranks AS bigint[])) AS ranked(id, rank) "
    f"WHERE {UNITS.name}.id = ranked.id AND {UNITS.name}.priority IS DISTINCT FROM ranked.rank"
)
"""PostgreSQL: the ranks in one statement each, and only the rows whose rank changes (a row
written is a new row version and new index entries; ``executemany`` of one update per unit, after
setting every rank to null, took seconds for 20,000 units on a loaded machine)."""


_INCREMENTAL_LIMIT = 2000
"""New judgements on more units than this re-rank the whole campaign (one bulk import)."""


def refresh_routing_for_judgements(session: Session, rows: Sequence[Judgement]) -> None:
    """Re-rank what new judgements change in every campaign routed by their judges.

    Under ``judge-disagreement`` and ``judge-uncertainty`` a unit's key depends on its own
    judgements only (:func:`~data.queue.priority.serving_key`), so only the units the rows are
    about are re-keyed: a judge that stores its outputs batch by batch does not re-rank the whole
    campaign each time. ``stratified`` (a global interleave), a campaign that had no signal yet
    (its units unranked) and large batches re-rank the whole campaign.
    """
    judges = {row.judge for row in rows}
    responses = {row.response_pk for row in rows if row.response_pk is not None}
    pairs = {row.pair_pk for row in rows if row.pair_pk is not None}
    routed = session.exec(  # in id order: two imports hold the campaigns' queues in one order
        select(Campaign)
        .where(col(Campaign.routing) != "least-annotated", NOT_IMPORTING)
        .order_by(col(Campaign.id))
    )
    for campaign in list(routed):
        if not judges & set(campaign.routing_judges or ()):
            continue
        link = col(Unit.pair_pk) if campaign.protocol == "pairwise" else col(Unit.response_pk)
        touched = pairs if campaign.protocol == "pairwise" else responses
        if len(touched) > _INCREMENTAL_LIMIT:
            apply_routing(session, campaign)
            continue
        units = session.exec(
            select(Unit.id).where(Unit.campaign_id == campaign.id, link.in_(touched))
        ).all()
        if not units:
            continue  # the judgements are about another dataset's responses
        unranked = session.exec(
            select(Unit.id).where(Unit.campaign_id == campaign.id, col(Unit.priority).is_(None))
        ).first()
        if campaign.routing == "stratified" or unranked is not None:
            apply_routing(session, campaign)
        else:
            _rekey(session, campaign, [unit for unit in units if unit is not None], touched)


def _rekey(session: Session, campaign: Campaign, units: list[int], touched: set[int]) -> None:
    judges = list(campaign.routing_judges or ())
    guide = routing_guide(campaign.routing, judges)
    judged = Judgement.pair_pk if campaign.protocol == "pairwise" else Judgement.response_pk
    readings = judge_readings(session, campaign, judges, col(judged).in_(touched))
    campaign_id = stored_id(campaign)
    keys = [
        {
            "b_id": unit,
            "b_rank": serving_key(
                unit_signal(guide, readings.get(unit, {}), judges), campaign_id, unit
            ),
        }
        for unit in units
    ]
    hold_campaign_queue(session, campaign_id)  # for the writes, as apply_routing does
    session.connection().execute(_SET_PRIORITY, keys)


def judge_readings(
    session: Session, campaign: Campaign, judges: Sequence[str], *where: Any
) -> dict[int, dict[str, JudgeReading]]:
    """unit id → judge → what that judge stored about the unit (verdicts on the 0–1 axis, and
    its stored spread where it kept probabilities or an expected score); ``where`` narrows the
    judgements read (conditions on :class:`Judgement` columns)."""
    # data.readmodels.frames imports pandas; importing it here keeps routing, and the importers that
    # call refresh_routing_for_judgements, free of it until a judge actually routes a campaign
    from data.readmodels.frames import campaign_judgements

    protocol = campaign_protocol(campaign)
    pairwise = not protocol.is_pointwise
    scale = (0.0, 1.0) if pairwise else protocol.bounds
    query = campaign_judgements(
        campaign,
        Judgement.judge,
        Judgement.score,
        Judgement.preference,
        Judgement.expected_score,
        Judgement.meta,
        unit_id=True,
    ).where(col(Judgement.judge).in_(judges), *where)
    verdicts: dict[tuple[int, str], list[float]] = defaultdict(list)
    spreads: dict[tuple[int, str], list[float]] = defaultdict(list)
    for unit_id, judge, score, preference, expected, meta in session.execute(query):
        key = (unit_id, judge)
        if pairwise and preference in PREFERENCE_AXIS:
            verdicts[key].append(PREFERENCE_AXIS[preference])
        elif not pairwise and score is not None:
            verdicts[key].append((float(score) - scale[0]) / (scale[1] - scale[0]))
        spread = _stored_spread(meta, score, expected, pairwise, scale)
        if spread is not None:
            spreads[key].append(spread)
    readings: dict[int, dict[str, JudgeReading]] = defaultdict(dict)
    for unit_id, judge in set(verdicts) | set(spreads):
        stored = spreads.get((unit_id, judge))
        readings[unit_id][judge] = JudgeReading(
            tuple(verdicts.get((unit_id, judge), ())),
            sum(stored) / len(stored) if stored else None,
        )
    return dict(readings)


def _stored_spread(
    meta: dict | None,
    score: float | None,
    expected: float | None,
    pairwise: bool,
    scale: tuple[float, float],
) -> float | None:
    probs = (meta or {}).get("probs")
    if isinstance(probs, dict):
        spread = probability_spread(probs, pairwise, scale)
        if spread is not None:
            return spread
    if not pairwise and score is not None and expected is not None:
        return expected_score_spread(float(score), float(expected), scale)
    return None


def campaign_estimation_sample(session: Session, campaign: str | int) -> list[int]:
    """Unit ids of a stratified campaign's estimation sample (:func:`~data.queue.priority.
    estimation_sample`): complete units, a simple random sample of the campaign's units."""
    found = get_campaign(session, campaign)
    if found.routing != "stratified":
        raise CampaignError(
            f"campaign {found.name!r} is routed {found.routing}, not stratified: every complete "
            "unit is part of its estimate"
        )
    rows = session.exec(
        select(Unit.id, Unit.n_submitted).where(Unit.campaign_id == found.id, ~col(Unit.flagged))
    ).all()
    units = [(unit, submitted) for unit, submitted in rows if unit is not None]  # stored: all set
    complete = {unit for unit, submitted in units if submitted >= found.overlap}
    return estimation_sample([unit for unit, _ in units], complete, stored_id(found))
