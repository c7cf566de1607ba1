"""What calibrating a campaign reads from the database, in one typed record.

:func:`read_calibration_input` is the one place that assembles a campaign's judgement frame, its
adjudicated references, its protocol and its judges; ``critiquelab calibrate --campaign``, the
Calibration page and the Campaigns page all start from it (through
:mod:`annotate_app.campaign_calibration`, which adds the calibration itself: this layer does not
import :mod:`calibration`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd
from sqlalchemy import func, select
from sqlmodel import Session, col

from data.readmodels.frames import (
    HUMAN_PREFIX,
    campaign_judgement_frame,
    campaign_judges,
    campaign_reference_overrides,
)
from data.readmodels.judge_facts import campaign_response_facts
from data.services.counted_answers import not_rejected
from data.services.disagreements import review_settings
from data.services.monitor import unit_infos
from data.services.routing import campaign_estimation_sample
from data.storage.campaign_lookup import campaign_protocol, get_campaign, unit_key_map
from schemas.audit_records import ResponseFacts, response_lengths
from schemas.core import core_table
from schemas.protocols import Protocol
from schemas.tables import (
    Adjudication,
    Annotation,
    AnnotatorStanding,
    AuditEvent,
    Judgement,
    Unit,
    User,
)

EXCLUDED_STANDINGS: tuple[str, ...] = ("held", "retired")
"""Standings whose annotators the reference leaves out by itself (METRICS.md)."""


@dataclass(frozen=True)
class CampaignCalibrationInput:
    """A campaign as calibration reads it."""

    campaign: str
    """The campaign's name."""
    protocol: Protocol
    """The campaign's protocol (with its own scale), unless the reader was given another."""
    frame: pd.DataFrame
    """One row per live annotation and per model judgement (:func:`campaign_judgement_frame`)."""
    overrides: dict[str, object]
    """Unit key → adjudicated score or preference (live adjudications)."""
    judges: list[str]
    """Every model judge that scored the campaign under its protocol, in name order (also those
    left out of ``frame`` by a ``judges`` filter)."""
    estimation_units: int | None = None
    """Stratified routing: how many units the frame holds, the estimation sample (PROTOCOLS.md,
    *Routing*: a simple random sample, so the estimate needs no weights); None otherwise."""
    routing: str = "least-annotated"
    """The campaign's routing mode: which labelled units are a random sample (PROTOCOLS.md,
    "Which labelled units count"); judge-guided routing gives the model estimates no interval."""
    outside_sample: pd.DataFrame | None = None
    """Stratified routing: the judges' rows on the units outside the estimation sample (their
    human labels left out), the unlabelled units of the prediction-powered model scores; None
    otherwise."""
    standing_exclusions: dict[str, str] = field(default_factory=dict)
    """Annotators of the frame (``annotator:<login>``) whose standing in the campaign is held or
    retired → that standing: the reference leaves them out without being asked to."""
    disagreement_threshold: float | None = None
    """Pointwise: the campaign's disagreement threshold (its review settings), which its report's
    list of largest disagreements and the *Disagreements* page both apply; None for pairwise, or
    when the reader was given another protocol (another scale: the default threshold then)."""
    response_facts: tuple[ResponseFacts, ...] = ()
    """Preferences: the model, length and list format of each response of the campaign's pairs
    (:func:`data.readmodels.judge_facts.campaign_response_facts`), for the Annotators table's
    ``length`` figure and the shortcut baseline; empty for scores (the baseline reads them)."""
    rejected_units: tuple[str, ...] = ()
    """The unit key of each answer a reviewer rejected (or revision of one not accepted yet) on
    the units read: not in ``frame``, counted in the JSON's ``reference.rejected_answers``."""

    @property
    def response_lengths(self) -> dict[str, int]:
        """Response id → characters, from :attr:`response_facts` (empty for scores)."""
        return response_lengths(self.response_facts)

    def rejected_answers(self) -> int:
        """How many of :attr:`rejected_units` fall on the units of ``frame`` (after a filter of
        the Calibration page, on the units it kept)."""
        units = set(self.frame["unit"].astype(str)) if not self.frame.empty else set()
        return sum(unit in units for unit in self.rejected_units)


def read_calibration_input(
    session: Session,
    campaign: str | int,
    *,
    judges: Sequence[str] | None = None,
    protocol: Protocol | None = None,
) -> CampaignCalibrationInput:
    """Read ``campaign`` (name or id) for calibration.

    ``judges``: only these model judges' rows in the frame (humans always kept); ``protocol``:
    read the values under this protocol instead of the campaign's (e.g. another scale).
    """
    found = get_campaign(session, campaign)
    assert found.id is not None  # a stored campaign has its id
    frame = campaign_judgement_frame(
        session, found.id, judges=list(judges) if judges is not None else None
    )
    sample = None
    outside = None
    if found.routing == "stratified":  # judge-routed units are harder than average: left out
        keys = unit_key_map(session, found.id)
        sample = {keys[unit] for unit in campaign_estimation_sample(session, found.id)}
        inside = frame["unit"].isin(sample)
        outside = frame[~inside & (frame["kind"] == "model")].reset_index(drop=True)
        frame = frame[inside].reset_index(drop=True)
    present = set(frame.loc[frame["kind"] == "human", "rater"].astype(str))
    standing = {
        f"{HUMAN_PREFIX}{name}": status
        for name, status in standing_exclusions(session, found.id).items()
        if f"{HUMAN_PREFIX}{name}" in present
    }
    rejected = rejected_answer_units(session, found.id)
    if sample is not None:
        rejected = tuple(unit for unit in rejected if unit in sample)
    chosen = protocol if protocol is not None else campaign_protocol(found)
    facts = () if chosen.is_pointwise else tuple(campaign_response_facts(session, found.id))
    return CampaignCalibrationInput(
        response_facts=facts,
        standing_exclusions=standing,
        rejected_units=rejected,
        campaign=found.name,
        protocol=chosen,
        frame=frame,
        overrides=campaign_reference_overrides(session, found.id),
        judges=campaign_judges(session, found.id),
        estimation_units=None if sample is None else len(sample),
        routing=found.routing,
        outside_sample=outside,
        disagreement_threshold=review_settings(found).threshold if protocol is None else None,
    )


def rejected_answer_units(session: Session, campaign_id: int) -> tuple[str, ...]:
    """The unit key of each live answer to a real unit of the campaign that does not count
    (:func:`~data.services.counted_answers.not_rejected`: a reviewer rejected it, or it revises
    a rejected answer and waits for review), in answer order. A campaign has few of them."""
    unit_ids = list(
        session.execute(
            select(col(Annotation.unit_id))
            .join(Unit, col(Unit.id) == col(Annotation.unit_id))
            .where(col(Annotation.campaign_id) == campaign_id, col(Annotation.is_live))
            .where(col(Unit.gold).is_(False))
            .where(~not_rejected(col(Annotation.assignment_id), campaign_id))
            .order_by(col(Annotation.id))
        ).scalars()
    )
    if not unit_ids:
        return ()
    infos = unit_infos(session, campaign_id, set(unit_ids))
    return tuple(infos[unit_id].unit_key for unit_id in unit_ids)


def standing_exclusions(session: Session, campaign_id: int) -> dict[str, str]:
    """Login name → standing of the campaign's annotators who are held or retired now: their
    answers stay stored, but the human reference, the human ceiling and the SFT export leave
    them out by themselves (and say so)."""
    rows = session.execute(
        select(User.name, AnnotatorStanding.status)  # type: ignore[call-overload]
        .join(User, col(User.id) == col(AnnotatorStanding.annotator_id))
        .where(col(AnnotatorStanding.campaign_id) == campaign_id)
        .where(col(AnnotatorStanding.status).in_(EXCLUDED_STANDINGS))
        .order_by(col(User.name))
    ).all()
    return {str(name): str(status) for name, status in rows}


def campaign_version(session: Session, campaign: str | int) -> tuple[int, ...]:
    """A key that changes whenever what :func:`read_calibration_input` reads may have changed.

    Why: the Calibration page caches a campaign's calibration under this key instead of hashing
    a frame of millions of rows. Answers, revisions and adjudications only ever add rows (a
    revision retires the old row in the transaction that adds the new one), and so do model
    judgements, except an import with ``--update``, which records an audit event, as do changes
    to a campaign's settings (routing, overlap). So the key is the campaign and the largest id of
    each of those tables: a primary-key look-up each, however large the campaign. It also
    changes with work on other campaigns; that only costs a recalculation.
    """
    found = get_campaign(session, campaign)
    largest = [
        session.execute(select(func.max(core_table(table).c.id))).scalar() or 0
        for table in (Annotation, Adjudication, Judgement, AuditEvent)
    ]
    return (int(found.id or 0), *map(int, largest))
