"""Synthetic human annotations and judge outputs for the finished sample campaigns.

Annotations go in as the queue would have left them: one ``submitted`` assignment per annotator
and unit (slots 0..K-1), the live annotation that answers it, and the unit's ``slots_taken`` /
``n_submitted`` counters. Judgements go through :func:`data.services.judgements.insert_judgements`.
Every row is marked ``synthetic``; every value comes from the latent truth of
:mod:`data.sample.dataset` seen through the profiles of :mod:`data.sample.synthetic`.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert, update
from sqlmodel import Session, col, select

from data.sample.dataset import ResponseTruth
from data.sample.rationales import (
    human_pairwise_rationale,
    human_pointwise_rationale,
    pairwise_rationale,
    pointwise_rationale,
    spoken_tier,
)
from data.sample.seeds import ALIGNMMBENCH_TIERS, MMIE_TIERS
from data.sample.synthetic import (
    ANNOTATORS,
    JUDGES,
    SECOND_LOOK,
    STOCK_RATIONALES,
    AnnotatorProfile,
    JudgeProfile,
    active_seconds,
    careless_seconds,
    judge_usage,
    pairwise_raw_output,
    perceived_preference,
    perceived_score,
    pointwise_raw_output,
    rng_for,
)
from data.services.judgements import insert_judgements
from data.storage.campaign_lookup import unit_key_map
from schemas.core_tables import ANNOTATIONS, ASSIGNMENTS, UNITS
from schemas.ids import parse_unit_key
from schemas.protocols import get_protocol, to_canonical
from schemas.tables import Annotation, Campaign, Judgement, Unit

BASE_TIME = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
"""When the finished sample campaigns started (fixed, so that builds are identical)."""


@dataclass(frozen=True)
class _UnitTruth:
    unit_id: int
    unit_key: str
    response_pk: int | None
    pair_pk: int | None
    truths: tuple[ResponseTruth, ...]
    """One truth (pointwise) or two in canonical order (pairwise)."""


def prompt_id(protocol: str, language: str) -> str:
    """The template id the synthetic judges claim, shaped like the critic's built-in ones."""
    return f"{protocol}-{language}-text@1"


def add_annotations(
    session: Session,
    campaign: Campaign,
    annotator_ids: dict[str, int],
    truths: dict[str, ResponseTruth],
    labelled_share: float = 1.0,
) -> int:
    """Submit a synthetic annotation to every unit of ``campaign`` that has none yet, from each
    honest sample annotator and, in the last slot of an overlap-4 campaign, from
    :data:`~data.sample.synthetic.SECOND_LOOK` in turn (dave on even units, erin on odd ones);
    return how many were added. With ``labelled_share`` below 1 only a seeded random share of
    the units is labelled (a campaign whose budget ran out: the judges' scores on the others
    are what the prediction-powered model scores use)."""
    annotated = set(
        session.exec(select(Annotation.unit_id).where(Annotation.campaign_id == campaign.id))
    )
    every = [
        unit
        for unit in _unit_truths(session, campaign, truths)
        if labelled_share >= 1
        or rng_for("labelled", campaign.name, unit.unit_key).random() < labelled_share
    ]
    turn = {unit.unit_id: place % len(SECOND_LOOK) for place, unit in enumerate(every)}
    units = [u for u in every if u.unit_id not in annotated]
    honest = ANNOTATORS[: campaign.overlap]
    if not units:
        return 0
    assignments: list[dict[str, object]] = []
    annotations: list[dict[str, object]] = []
    written: set[str] = set()  # reasons so far: a person does not write another's sentences
    for index, unit in enumerate(units):
        extra = (SECOND_LOOK[turn[unit.unit_id]],) if campaign.overlap > len(honest) else ()
        on_unit: set[str] = set()
        for slot, annotator in enumerate(honest + extra):
            rng = rng_for("human", campaign.name, unit.unit_key, annotator.name)
            answer = _human_answer(rng, campaign.protocol, unit, annotator, (written, on_unit))
            written.add(answer.rationale)
            on_unit.add(answer.rationale)
            submitted = BASE_TIME + timedelta(minutes=7 * index + 3 * slot, seconds=rng.random())
            leased = submitted - timedelta(seconds=answer.seconds + 5)
            common = {
                "campaign_id": campaign.id,
                "unit_id": unit.unit_id,
                "annotator_id": annotator_ids[annotator.name],
            }
            assignments.append(
                {
                    **common,
                    "slot": slot,
                    "overlap": campaign.overlap,
                    "status": "submitted",
                    "shown_order": answer.shown_order,
                    "leased_at": leased,
                    "expires_at": leased + timedelta(seconds=campaign.lease_seconds),
                    "closed_at": submitted,
                }
            )
            annotations.append(
                {
                    **common,
                    "revision": 1,
                    "is_live": True,
                    "score": answer.score,
                    "preference": answer.preference,
                    "shown_order": answer.shown_order if answer.preference is not None else None,
                    "rationale": answer.rationale,
                    "seconds": answer.seconds,
                    "synthetic": True,
                    "created_at": submitted,
                    "meta": {"synthetic": True, "generator": "data.sample"},
                }
            )
    connection = session.connection()
    assignment_ids = connection.execute(
        insert(ASSIGNMENTS).returning(ASSIGNMENTS.c.id, sort_by_parameter_order=True),
        assignments,
    ).scalars()
    for annotation, assignment_id in zip(annotations, assignment_ids, strict=True):
        annotation["assignment_id"] = assignment_id
    connection.execute(insert(ANNOTATIONS), annotations)
    connection.execute(
        update(UNITS)
        .where(UNITS.c.id.in_([unit.unit_id for unit in units]))
        .values(slots_taken=campaign.overlap, n_submitted=campaign.overlap)
    )
    return len(annotations)


@dataclass(frozen=True)
class _HumanAnswer:
    score: float | None
    preference: str | None
    shown_order: str
    rationale: str
    seconds: float


def _human_answer(
    rng: random.Random,
    protocol_name: str,
    unit: _UnitTruth,
    annotator: AnnotatorProfile,
    taken: Sequence[Collection[str]],
) -> _HumanAnswer:
    protocol = get_protocol(protocol_name)
    if annotator.careless:
        return _careless_answer(rng, protocol_name)
    slow = 1.6 if protocol.name == "mmie" else 1.0
    seconds = active_seconds(rng, annotator.seconds * slow)
    if protocol.is_pointwise:
        truth = unit.truths[0]
        low, high = protocol.bounds
        score = perceived_score(rng, truth.quality, annotator.bias, annotator.noise, low, high)
        tiers = MMIE_TIERS if protocol.name == "mmie" else ALIGNMMBENCH_TIERS
        rationale = human_pointwise_rationale(
            rng, truth.language, tiers, truth.tier, score, truth.fact, taken
        )
        return _HumanAnswer(float(score), None, "AB", rationale, seconds)
    shown_order = rng.choice(("AB", "BA"))
    a, b = unit.truths
    preference = perceived_preference(
        rng, a.quality, b.quality, annotator.noise, annotator.tie_margin, 1.0
    )
    if annotator.position_bias and rng.random() < annotator.position_bias:
        preference = to_canonical("A", swapped=shown_order == "BA")  # the one shown first
    rationale = _pair_reason(rng, a, b, preference, shown_order, taken)
    return _HumanAnswer(None, preference, shown_order, rationale, seconds)


def _careless_answer(rng: random.Random, protocol_name: str) -> _HumanAnswer:
    """1–3 s, a random score (or preference) and a stock rationale."""
    protocol = get_protocol(protocol_name)
    seconds = careless_seconds(rng)
    rationale = rng.choice(STOCK_RATIONALES)
    if protocol.is_pointwise:
        low, high = protocol.bounds
        return _HumanAnswer(float(rng.randint(int(low), int(high))), None, "AB", rationale, seconds)
    shown_order = rng.choice(("AB", "BA"))
    return _HumanAnswer(None, rng.choice(("A", "B", "tie")), shown_order, rationale, seconds)


def add_judgements(session: Session, campaign: Campaign, truths: dict[str, ResponseTruth]) -> int:
    """Store the outputs of every synthetic judge on every unit of ``campaign`` (pairwise in both
    orders); judgements already stored are skipped. Returns how many were added."""
    units = _unit_truths(session, campaign, truths)
    stored = set(
        session.exec(
            select(Judgement.judge, Judgement.unit_key, Judgement.shown_order).where(
                col(Judgement.judge).in_([judge.name for judge in JUDGES]),
                col(Judgement.unit_key).in_([unit.unit_key for unit in units]),
            )
        )
    )
    orders = ("AB", "BA") if campaign.protocol == "pairwise" else ("AB",)
    rows = [
        _pair_judgement(judge, unit, order)
        if campaign.protocol == "pairwise"
        else _pointwise_judgement(judge, campaign.protocol, unit)
        for unit in units
        for judge in JUDGES
        for order in orders
        if (judge.name, unit.unit_key, order) not in stored
    ]
    return insert_judgements(session, rows)


def _pointwise_judgement(judge: JudgeProfile, protocol_name: str, unit: _UnitTruth) -> Judgement:
    protocol = get_protocol(protocol_name)
    truth = unit.truths[0]
    low, high = protocol.bounds
    rng = rng_for("judge", judge.name, unit.unit_key)
    draw = rng.random()
    status = "unparsed" if draw < judge.unparsed else "ok"
    if judge.unparsed <= draw < judge.unparsed + judge.out_of_scale:
        status = "out_of_scale"
    score = perceived_score(rng, truth.quality, judge.bias, judge.noise, low, high, judge.shrink)
    tiers = MMIE_TIERS if protocol.name == "mmie" else ALIGNMMBENCH_TIERS
    spoken = spoken_tier(tiers, truth.language, truth.tier, score)
    reason = pointwise_rationale(rng, truth.language, spoken, truth.fact)
    claimed = int(high) + rng.choice((2, 4)) if status == "out_of_scale" else score
    raw = pointwise_raw_output(rng, judge, protocol.name, claimed, reason, status, truth.language)
    usage, latency = judge_usage(rng_for("usage", judge.name, unit.unit_key), judge, raw, 1)
    return Judgement(
        judge=judge.name,
        protocol=protocol.name,
        unit_key=unit.unit_key,
        response_pk=unit.response_pk,
        shown_order="AB",
        sample=0,
        score=float(score) if status == "ok" else None,
        rationale=reason if status != "unparsed" else "",
        raw_output=raw,
        parse_status=status,
        prompt_id=prompt_id(protocol.name, truth.language),
        synthetic=True,
        usage=usage,
        created_at=BASE_TIME + timedelta(days=3),
        meta={"synthetic": True, "latency": latency},
    )


def _pair_judgement(judge: JudgeProfile, unit: _UnitTruth, shown_order: str) -> Judgement:
    rng = rng_for("judge", judge.name, unit.unit_key, shown_order)
    a, b = unit.truths
    first, second = (a, b) if shown_order == "AB" else (b, a)
    shown: str | None
    if rng.random() < judge.unparsed:
        shown = None
    elif rng.random() < judge.position_bias:
        shown = "A"
    else:
        shown = perceived_preference(
            rng, first.quality, second.quality, judge.noise, judge.tie_margin, 1.0
        )
    reason = (
        pairwise_rationale(rng, first.language, shown, first.tier, second.tier, first.fact)
        if shown is not None
        else ""
    )
    raw = pairwise_raw_output(rng, judge, shown, reason)
    usage, latency = judge_usage(
        rng_for("usage", judge.name, unit.unit_key, shown_order), judge, raw, 2
    )
    return Judgement(
        judge=judge.name,
        protocol="pairwise",
        unit_key=unit.unit_key,
        pair_pk=unit.pair_pk,
        shown_order=shown_order,
        sample=0,
        preference=None if shown is None else to_canonical(shown, swapped=shown_order == "BA"),
        rationale=reason,
        raw_output=raw,
        parse_status="ok" if shown is not None else "unparsed",
        prompt_id=prompt_id("pairwise", first.language),
        synthetic=True,
        usage=usage,
        created_at=BASE_TIME + timedelta(days=3),
        meta={"synthetic": True, "latency": latency},
    )


def _pair_reason(
    rng: random.Random,
    a: ResponseTruth,
    b: ResponseTruth,
    preference: str,
    shown_order: str,
    taken: Sequence[Collection[str]],
) -> str:
    """The annotator's reason, written about what they saw (first / second shown)."""
    first, second = (a, b) if shown_order == "AB" else (b, a)
    shown = to_canonical(preference, swapped=shown_order == "BA")  # the mapping is its own inverse
    return human_pairwise_rationale(rng, a.language, shown, first.tier, second.tier, a.fact, taken)


def _unit_truths(
    session: Session, campaign: Campaign, truths: dict[str, ResponseTruth]
) -> list[_UnitTruth]:
    assert campaign.id is not None
    keys = unit_key_map(session, campaign.id)
    units = session.exec(select(Unit).where(Unit.campaign_id == campaign.id).order_by(col(Unit.id)))
    result = []
    for unit in units:
        assert unit.id is not None
        key = keys[unit.id]
        response_ids = parse_unit_key(key).response_ids
        result.append(
            _UnitTruth(
                unit.id, key, unit.response_pk, unit.pair_pk, tuple(truths[r] for r in response_ids)
            )
        )
    return result
