"""Disagreement review: one function per user action, shared by the *Disagreements* page, the
Calibration page (its block and HTML download) and ``critiquelab calibrate --html``.

Why here: the queue (:mod:`data.services.disagreements`) needs the reference label of every unit,
and the
rule that makes it (adjudication, else the humans' consensus) is :mod:`calibration`'s, which
``data`` may not import. This plain module (no Streamlit, no Typer) sits above both: it reads
the campaign's frame, asks calibration for the reference, and hands it to the queue, so the page
reviews exactly the disagreements the calibration report counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import Session

from calibration.analysis import CalibrationReport
from calibration.audits import JudgeAudit
from calibration.compare import JudgeComparison
from calibration.consistency import ConsistencyReport
from calibration.disagreement_tags import JudgeTags, summarise_tags, unit_references
from calibration.errors import CalibrationInputError
from calibration.report_audits import audit_section, consistency_section
from calibration.report_html import render_html
from calibration.report_tags import tags_section
from data.io.frames import campaign_judgement_frame, campaign_reference_overrides
from data.services.campaigns import campaign_protocol, get_campaign
from data.services.disagreements import (
    Disagreement,
    ReviewSettings,
    campaign_tags,
    disagreement_queue,
    review_settings,
)
from data.storage.engine import session_scope
from schemas.core import stored_id


@dataclass(frozen=True)
class DisagreementQueue:
    """What the page shows for one campaign and judge."""

    settings: ReviewSettings
    references: int
    """Units with a reference label (the others cannot disagree)."""
    entries: list[Disagreement]
    """The disagreements shown: every one, or only the untagged ones."""
    total: int
    """Every disagreement of the judge, tagged or not (whether or not ``entries`` holds them)."""
    untagged: int
    """Disagreements without a live tag."""


def campaign_reference(session: Session, campaign: str | int) -> dict[str, float | str]:
    """Unit key → the reference label calibration uses (empty while nobody has answered)."""
    found = get_campaign(session, campaign)
    assert found.id is not None
    frame = campaign_judgement_frame(session, found.id)
    if frame.empty or not (frame["kind"] == "human").any():
        return {}
    overrides = campaign_reference_overrides(session, found.id)
    try:
        return unit_references(frame, campaign_protocol(found), overrides=overrides)
    except CalibrationInputError:
        return {}


def open_disagreements(
    engine: Engine, actor_id: int | None, campaign_id: int, judge: str, *, include_tagged: bool
) -> DisagreementQueue:
    """The judge's disagreements with the reference, largest gap first (reviewers, admins);
    the tagged ones only with ``include_tagged``, though always counted."""
    with session_scope(engine) as session:
        reference = campaign_reference(session, campaign_id)
        every = disagreement_queue(
            session, actor_id, campaign_id, judge, reference, include_tagged=True
        )
        settings = review_settings(get_campaign(session, campaign_id))
    untagged = [entry for entry in every if entry.cause is None]
    shown = every if include_tagged else untagged
    return DisagreementQueue(settings, len(reference), shown, len(every), len(untagged))


def tag_summaries(engine: Engine, campaign: str | int) -> list[JudgeTags]:
    """Per judge, the live tags' causes with Wilson intervals and two examples each."""
    with session_scope(engine) as session:
        found = get_campaign(session, campaign)
        tags = campaign_tags(session, stored_id(found))
        taxonomy = review_settings(found).taxonomy
    return summarise_tags(tags, taxonomy)


def report_html(
    report: CalibrationReport,
    engine: Engine,
    campaign: str | int,
    *,
    comparisons: Sequence[JudgeComparison] = (),
    judge_audit: JudgeAudit | None = None,
    consistency: ConsistencyReport | None = None,
) -> str:
    """A campaign's calibration HTML report: the comparisons, the audits given, and the
    reviewers' "Why judges disagree" section after them (``critiquelab calibrate --campaign
    --html``, the Calibration and Campaigns pages)."""
    sections = [consistency_section(consistency), audit_section(judge_audit)]
    return render_html(
        report, comparisons, extra_sections=[*sections, *tag_report_sections(engine, campaign)]
    )


def tag_report_sections(engine: Engine, campaign: str | int) -> list[str]:
    """The HTML report's "Why judges disagree" section; none while nothing is tagged."""
    section = tags_section(tag_summaries(engine, campaign))
    return [section] if section else []
