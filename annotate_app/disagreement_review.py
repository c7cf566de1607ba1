"""Disagreement review: one function per user action, shared by the *Disagreements* page, the
Calibration page (its block and HTML download) and ``critiquelab calibrate --html``.

Why here: the queue (:mod:`data.services.disagreements`) needs the judge's disagreements, and the
rule that finds them, with the reference it compares with (adjudication, else the humans'
consensus), is :mod:`calibration`'s, which ``data`` may not import. This plain module (no
Streamlit, no Typer) sits above both: it reads the campaign as its calibration report reads it
(:func:`annotate_app.campaign_calibration.load_campaign`: under stratified routing the estimation
sample, held and retired annotators out of the reference), asks calibration for the
disagreements with the report's default options and the campaign's threshold, and hands them to
the queue, so the page reviews exactly the disagreements the report counts, in its order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import Session

from annotate_app.campaign_calibration import reference_exclusions
from calibration import CalibrationOptions
from calibration.analysis import CalibrationReport, DisagreementList, find_disagreements
from calibration.audits import JudgeAudit
from calibration.compare import JudgeComparison
from calibration.consistency import ConsistencyReport
from calibration.disagreement import disagreement_rule_text
from calibration.disagreement_tags import JudgeTags, summarise_tags
from calibration.report_audits import audit_section, consistency_section
from calibration.report_html import render_html
from calibration.report_tags import tags_section
from data.readmodels.campaign_input import read_calibration_input
from data.services.disagreements import (
    REVIEWER_ROLES,
    Disagreement,
    ReviewSettings,
    campaign_tags,
    disagreement_queue,
    review_settings,
)
from data.services.roles import require_actor_role
from data.storage.campaign_lookup import get_campaign
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.disagreements import JudgeDisagreement


@dataclass(frozen=True)
class DisagreementQueue:
    """What the page shows for one campaign and judge."""

    settings: ReviewSettings
    references: int
    """Units with a reference label (the others cannot disagree)."""
    rule: str
    """The rule in words, e.g. ``|gpt-4 − reference| ≥ 1.8``."""
    found: int
    """How many disagreements the judge has, tagged ones included (the report's count)."""
    entries: list[Disagreement]


def campaign_disagreements(session: Session, campaign: str | int, judge: str) -> DisagreementList:
    """Every disagreement of ``judge`` on ``campaign`` (:mod:`calibration.disagreement`), on the
    units and against the reference of the campaign's calibration report with its default
    options, and with the campaign's threshold: the report lists the first of these."""
    source = read_calibration_input(session, campaign, judges=[judge])
    excluded = reference_exclusions(source, {})
    options = CalibrationOptions(
        protocol=source.protocol,
        disagreement_threshold=source.disagreement_threshold,
        exclude_annotators=excluded["exclude_annotators"],
        exclusion_reasons=excluded["exclusion_reasons"],
    )
    has_humans = not source.frame.empty and bool((source.frame["kind"] == "human").any())
    if not has_humans:  # nobody has answered yet: no reference, so no disagreement
        return DisagreementList(judge, source.disagreement_threshold, 0, ())
    return find_disagreements(source.frame, options, judge, overrides=source.overrides)


def disagreement_entries(
    session: Session, campaign_id: int, judge: str
) -> tuple[JudgeDisagreement, ...]:
    """The entries of :func:`campaign_disagreements` (the sample builder's reader)."""
    return campaign_disagreements(session, campaign_id, judge).entries


def open_disagreements(
    engine: Engine, actor_id: int | None, campaign_id: int, judge: str, *, include_tagged: bool
) -> DisagreementQueue:
    """The judge's disagreements with the reference, largest gap first (reviewers, admins)."""
    with session_scope(engine) as session:
        require_actor_role(session, actor_id, *REVIEWER_ROLES)  # before the campaign is read
        found = campaign_disagreements(session, campaign_id, judge)
        entries = disagreement_queue(
            session, actor_id, campaign_id, judge, found.entries, include_tagged=include_tagged
        )
        settings = review_settings(get_campaign(session, campaign_id))
    rule = disagreement_rule_text(judge, found.threshold)
    return DisagreementQueue(settings, found.references, rule, len(found.entries), entries)


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
