"""Calibrating a campaign, and the annotators' agreement so far: one function per user action,
shared by ``critiquelab calibrate --campaign``, the Calibration page, the Campaigns page and the
Monitor page (the whole report of a campaign is assembled from these by
:mod:`annotate_app.campaign_report`).

Why here: combining a campaign read from the database (:mod:`data`) with the metrics
(:mod:`calibration`) needs a layer above both. :mod:`critic` is above both too, but it owns judge
prompts, training and judging; a campaign's calibration is a reporting action of the app, so it
lives in ``annotate_app`` as a plain module (no Streamlit, no Typer), which pages and commands
call and tests reach without a browser.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from sqlalchemy.engine import Engine

from calibration import CalibrationOptions, CalibrationReport, calibrate, krippendorff_alpha
from calibration.analysis import check_judges, with_shortcut_baseline
from calibration.annotators import AnnotatorTable, annotator_reliability, longer_responses
from calibration.audits import JudgeAudit, audit_judges
from calibration.consistency import ConsistencyReport, cross_protocol_consistency
from calibration.cost import Prices
from calibration.errors import CalibrationInputError
from calibration.reference import NoMajorityRule
from calibration.scale import Scale
from calibration.tables import select_units
from data.readmodels.campaign_input import (
    CampaignCalibrationInput,
    read_calibration_input,
    standing_exclusions,
)
from data.readmodels.frames import (
    campaign_judgement_frame,
    campaign_rationales,
    campaign_reference_overrides,
)
from data.readmodels.judge_facts import (
    campaign_judgement_usage,
    campaign_response_facts,
    campaign_response_lengths,
)
from data.services.monitor import human_rating_matrices
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from data.storage.engine import read_scope
from schemas.core import stored_id
from schemas.protocols import Protocol
from schemas.tables import Campaign


@dataclass(frozen=True)
class CampaignCalibration:
    """A campaign's calibration: what was read, the options used, and the report."""

    source: CampaignCalibrationInput
    options: CalibrationOptions
    report: CalibrationReport


def load_campaign(
    engine: Engine,
    campaign: str | int,
    *,
    judges: Sequence[str] | None = None,
    protocol: Protocol | None = None,
) -> CampaignCalibrationInput:
    """Read ``campaign`` for calibration in one read-only snapshot (:func:`read_calibration_input`):
    a large campaign's read neither waits for annotators' submits nor holds them up."""
    with read_scope(engine) as session:
        source = read_calibration_input(session, campaign, judges=judges, protocol=protocol)
    if judges:  # the frame holds only these: name the campaign's judges, not what was read
        check_judges(judges, source.judges)
    return source


def only_units(
    source: CampaignCalibrationInput,
    *,
    tasks: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
) -> CampaignCalibrationInput:
    """``source`` restricted to the units of these tasks and models (None: no restriction); its
    held and retired annotators only those with a label left (an exclusion names a rater of the
    frame)."""
    frame, outside = source.frame, source.outside_sample
    if tasks is not None:
        frame = select_units(frame, "task", tasks)
        outside = None if outside is None else select_units(outside, "task", tasks)
    if models is not None:
        frame = select_units(frame, "model", models)
        outside = None if outside is None else select_units(outside, "model", models)
    if frame is source.frame:
        return source
    present = set(frame.loc[frame["kind"] == "human", "rater"].astype(str))
    standing = {k: v for k, v in source.standing_exclusions.items() if k in present}
    return replace(source, frame=frame, standing_exclusions=standing, outside_sample=outside)


def calibrate_campaign(
    engine: Engine,
    source: CampaignCalibrationInput,
    *,
    progress: Callable[[int], None] | None = None,
    **options: Any,
) -> CampaignCalibration:
    """Calibrate what :func:`load_campaign` read: ``critiquelab calibrate --campaign``, the
    Calibration page and the Campaigns page's report.

    ``options``: fields of :class:`~calibration.CalibrationOptions` other than ``protocol``
    (``judges``, ``by``, ``unparsed``, ``bootstrap``...), which is the source's; the
    disagreement threshold is the campaign's unless given. The campaign's
    frame holds no rationales (a million units' texts would not fit in a page), so the texts of
    the units the report lists as largest disagreements are read apart, in one query
    (:func:`data.readmodels.frames.campaign_rationales`) in a read-only snapshot. Annotators held or
    retired in the campaign are left out of the reference without being listed
    (:func:`reference_exclusions`); answers a reviewer rejected are not in the frame at all, and
    the result's ``reference.rejected_answers`` says how many there were on its units.
    """
    options = {
        "disagreement_threshold": source.disagreement_threshold,
        "routing": source.routing,
        **options,
        **reference_exclusions(source, options),
    }
    chosen = CalibrationOptions(protocol=source.protocol, **options)
    report = calibrate(
        source.frame,
        chosen,
        overrides=source.overrides,
        response_lengths=source.response_lengths or None,
        progress=progress,
        unlabelled=source.outside_sample,
    )
    units = report.listed_units()
    if units:
        with read_scope(engine) as session:
            rows = campaign_rationales(session, source.campaign, units, judges=list(report.details))
        report = report.with_rationales(rows)
    result = report.result
    reference = result.reference.model_copy(update={"rejected_answers": source.rejected_answers()})
    report = replace(report, result=result.model_copy(update={"reference": reference}))
    return CampaignCalibration(source, chosen, report)


def with_shortcut_baseline_source(
    engine: Engine, source: CampaignCalibrationInput, options: CalibrationOptions
) -> CampaignCalibrationInput:
    """``source`` with the shortcut baseline as one more judge of its frame
    (:func:`calibration.analysis.with_shortcut_baseline`), fitted on the reference of
    ``options`` from the lengths, list items and models of the campaign's responses (read with
    the preferences, read here for scores)."""
    facts = list(source.response_facts)
    if not facts:
        with read_scope(engine) as session:
            campaign_id = stored_id(get_campaign(session, source.campaign))
            facts = campaign_response_facts(session, campaign_id)
    frame = with_shortcut_baseline(source.frame, options, facts, overrides=source.overrides)
    return replace(source, frame=frame)


def reference_exclusions(
    source: CampaignCalibrationInput, options: dict[str, Any]
) -> dict[str, tuple]:
    """The options ``exclude_annotators`` and ``exclusion_reasons`` for ``source``: the
    annotators the user listed (``options``), and those held or retired in the campaign, whom
    the reference leaves out by itself and names with their standing (METRICS.md). Applying it
    again changes nothing."""
    listed = tuple(options.get("exclude_annotators") or ())
    reasons = dict(options.get("exclusion_reasons") or ())
    reasons.update(source.standing_exclusions)
    added = tuple(name for name in source.standing_exclusions if name not in listed)
    return {
        "exclude_annotators": listed + added,
        "exclusion_reasons": tuple(sorted(reasons.items())),
    }


def judge_audit(
    engine: Engine,
    source: CampaignCalibrationInput,
    *,
    judges: Sequence[str] | None = None,
    families: dict[str, str] | None = None,
    prices: dict[str, Prices] | Prices | None = None,
    no_majority: NoMajorityRule = "tie",
    bootstrap: int = 1000,
    seed: int = 0,
) -> JudgeAudit:
    """The judges' bias and cost audit (:func:`calibration.audits.audit_judges`) of what
    :func:`load_campaign` read: ``judge_audit`` of ``critiquelab calibrate --campaign``, the
    Calibration page's audit and the Campaigns page's report.

    It audits the units calibration reads, no others: under stratified routing the estimation
    sample (PROTOCOLS.md, *Estimates under routing*), after the Calibration page's filters the
    units they keep. Only the responses' lengths and the judgements' token usage are read here.
    ``families`` and ``prices`` as ``--families`` and ``--prices``.
    """
    wanted = list(judges) if judges else None
    with read_scope(engine) as session:
        campaign_id = stored_id(get_campaign(session, source.campaign))
        facts = campaign_response_facts(session, campaign_id)
        usage = campaign_judgement_usage(session, campaign_id, judges=wanted)
    units = set(source.frame["unit"].astype(str))
    return audit_judges(
        source.frame,
        source.protocol,
        facts,
        [row for row in usage if row.unit in units],
        families=families or {},
        prices=prices,
        judges=wanted,
        no_majority=no_majority,
        overrides=source.overrides,
        bootstrap=bootstrap,
        seed=seed,
    )


def check_one_dataset(scores: Campaign, preferences: Campaign) -> None:
    """:class:`CalibrationInputError` unless the two campaigns judge the same dataset."""
    if scores.dataset_id != preferences.dataset_id:
        raise CalibrationInputError(
            f"{scores.name} and {preferences.name} are campaigns of different datasets; "
            "give a pointwise and a pairwise campaign of one dataset"
        )


def campaign_consistency(
    engine: Engine,
    pointwise: str | int,
    pairwise: str | int,
    *,
    delta: float | None = None,
    no_majority: NoMajorityRule = "tie",
    judges: Sequence[str] | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
) -> ConsistencyReport:
    """Do ``pairwise``'s preferences agree with ``pointwise``'s scores? Two campaigns of one
    dataset, read in one read-only snapshot (:func:`calibration.consistency.
    cross_protocol_consistency`): ``consistency`` of ``critiquelab calibrate``, and the
    Calibration page's block."""
    with read_scope(engine) as session:
        scores, preferences = get_campaign(session, pointwise), get_campaign(session, pairwise)
        check_one_dataset(scores, preferences)
        ids = stored_id(scores), stored_id(preferences)
        frames = [campaign_judgement_frame(session, campaign_id) for campaign_id in ids]
        overrides = tuple(campaign_reference_overrides(session, i) for i in ids)
        protocol = campaign_protocol(scores)
        names = scores.name, preferences.name
    return cross_protocol_consistency(
        frames[0],
        frames[1],
        protocol,
        names=names,
        delta=delta,
        no_majority=no_majority,
        overrides=(overrides[0], overrides[1]),
        judges=tuple(judges) if judges else None,
        bootstrap=bootstrap,
        seed=seed,
    )


@dataclass(frozen=True)
class TaskAgreement:
    """Krippendorff's alpha among the human annotators of one task."""

    task: str
    annotators: int
    units: int
    alpha: float
    """NaN while fewer than two answers can be paired, or while the paired ones do not vary."""
    level: Literal["interval", "nominal"]
    """interval for scores, nominal for preferences."""
    paired_units: int = 0
    """Units with at least two answers (the ones alpha reads)."""

    @property
    def alpha_text(self) -> str:
        """Alpha to 3 decimals, or ``n/a`` with the reason it is undefined."""
        if not math.isnan(self.alpha):
            return f"{self.alpha:.3f}"
        if self.paired_units == 0:
            return "n/a: no unit has two answers yet"
        return "n/a: the paired answers do not vary (alpha needs some disagreement to scale by)"


def task_agreement(engine: Engine, campaign_id: int) -> list[TaskAgreement]:
    """Alpha among the humans per task of the campaign, tasks in name order (Monitor page).

    Krippendorff (2011), "Computing Krippendorff's alpha-reliability", on the live human labels
    that calibration reads (:func:`data.services.monitor.human_rating_matrices`: no rejected
    answer), without the annotators held or retired in the campaign, as the human ceiling of
    ``critiquelab calibrate`` leaves them out (:func:`reference_exclusions`).
    """
    with read_scope(engine) as session:
        matrices = human_rating_matrices(session, campaign_id)
        excluded = standing_exclusions(session, campaign_id)
    agreement = []
    for matrix in matrices.values():
        kept = [name not in excluded for name in matrix.annotators]
        values = matrix.values[kept]
        units = int((~np.isnan(values)).any(axis=0).sum())
        agreement.append(
            TaskAgreement(
                task=matrix.task,
                annotators=sum(kept),
                units=units,
                alpha=krippendorff_alpha(values, matrix.level) if units else float("nan"),
                level=matrix.level,
                paired_units=int(((~np.isnan(values)).sum(axis=0) >= 2).sum()),
            )
        )
    return agreement


def campaign_annotators(
    engine: Engine, campaign_id: int, *, bootstrap: int = 1000, seed: int = 0
) -> AnnotatorTable | None:
    """The Annotators table of the campaign's live human labels (Monitor page): every task's
    units side by side (:func:`calibration.annotators.annotator_reliability`); None before the
    first label. The labels are those calibration reads (no rejected answer), and annotators
    held or retired in the campaign are marked excluded and left out of the others' consensus,
    as ``critiquelab calibrate`` does (:func:`campaign_annotator_exclusions` says why)."""
    with read_scope(engine) as session:
        matrices = list(human_rating_matrices(session, campaign_id).values())
        protocol = campaign_protocol(get_campaign(session, campaign_id))
        excluded = standing_exclusions(session, campaign_id)
        lengths = None if protocol.is_pointwise else campaign_response_lengths(session, campaign_id)
    if not matrices:
        return None
    names = sorted({name for matrix in matrices for name in matrix.annotators})
    row = {name: i for i, name in enumerate(names)}
    blocks = []
    for matrix in matrices:
        rows = [row[name] for name in matrix.annotators]
        block = np.full((3, len(names), len(matrix.units)), np.nan)
        block[0, rows] = matrix.values
        if matrix.swapped is not None:
            block[1, rows] = matrix.swapped
        if matrix.order is not None:
            block[2, rows] = matrix.order
        blocks.append(block)
    values, swapped, order = np.concatenate(blocks, axis=2)
    units = [unit for matrix in matrices for unit in matrix.units]
    return annotator_reliability(
        values,
        names,
        scale=Scale.of(protocol) if protocol.is_pointwise else None,
        swapped=swapped == 1,
        order=order,
        longer=None if lengths is None else longer_responses(units, lengths),
        bootstrap=bootstrap,
        seed=seed,
        excluded=[name for name in names if name in excluded],
    )


def campaign_annotator_exclusions(engine: Engine, campaign_id: int) -> dict[str, str]:
    """Login name → standing (held, retired) of the campaign's annotators whom the reference
    leaves out by itself: the Monitor's Annotators table marks them excluded with this reason."""
    with read_scope(engine) as session:
        return standing_exclusions(session, campaign_id)
