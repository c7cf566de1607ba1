"""The sample project's synthetic disagreement tags (data.sample.tags), built as ``critiquelab
demo`` builds them: made through the Disagreements page's queue and tag functions, shown by the
per-judge summary, seeded, and never added twice.

A build without the Disagreements reader is the session's sample project
(:mod:`tests.sample_template`, built exactly so); the tests copy it rather than build it again.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from annotate_app.disagreement_review import disagreement_entries, open_disagreements, tag_summaries
from data.readmodels.frames import campaign_judges
from data.sample import build_sample_project
from data.sample.tags import TAGGED_CAMPAIGN, TAGS_PER_JUDGE
from data.services.disagreements import campaign_tags, tag_disagreement
from data.services.users import get_user
from data.storage.campaign_lookup import get_campaign
from data.storage.engine import make_engine, session_scope
from schemas.tables import AuditEvent, DisagreementTag
from tests.sample_template import SampleTemplate

pytestmark = pytest.mark.slow  # each test builds the sample project (or its tags)


def _tags(engine: Engine) -> list[tuple[str, str, str, str, str]]:
    with session_scope(engine) as session:
        return [
            (r.unit_key, r.judge, r.cause, r.note, r.created_at.isoformat())
            for r in campaign_tags(session, TAGGED_CAMPAIGN, live_only=False)
        ]


def _count(engine: Engine, table: type) -> int:
    with session_scope(engine) as session:
        return int(session.exec(select(func.count()).select_from(table)).one())


def test_demo_build_tags_disagreements_through_the_review_queue(any_engine: Engine) -> None:
    summary = build_sample_project(any_engine, disagreements=disagreement_entries)
    with session_scope(any_engine) as session:
        campaign = get_campaign(session, TAGGED_CAMPAIGN)
        judges = campaign_judges(session, campaign.id)
        reviewer = get_user(session, "demo-reviewer")
        tags = session.exec(select(DisagreementTag)).all()
        events = session.exec(
            select(func.count()).where(AuditEvent.action == "disagreement.tag")
        ).one()
        assert {tag.reviewer_id for tag in tags} == {reviewer.id}
        assert all(tag.note.startswith("Synthetic demo tag") and tag.is_live for tag in tags)
    assert len(judges) == 2 and summary.added_tags == summary.disagreement_tags == len(tags)
    assert len(tags) == events == TAGS_PER_JUDGE * len(judges)
    for judge in judges:
        # every tag is on a unit the Disagreements page lists for that judge, with its cause
        queue = open_disagreements(any_engine, reviewer.id, campaign.id, judge, include_tagged=True)
        listed = {entry.unit_id: entry.cause for entry in queue.entries}
        mine = {tag.unit_id: tag.cause for tag in tags if tag.judge == judge}
        assert len(mine) == TAGS_PER_JUDGE and {u: listed[u] for u in mine} == mine
    shown = {row.judge: row.tagged for row in tag_summaries(any_engine, TAGGED_CAMPAIGN)}
    assert shown == dict.fromkeys(judges, TAGS_PER_JUDGE)

    again = build_sample_project(any_engine, disagreements=disagreement_entries)
    assert not again.created and again.added_tags == 0
    assert again.disagreement_tags == len(tags) == _count(any_engine, DisagreementTag)


def _copy(template: SampleTemplate, folder: Path) -> Engine:
    """A copy of the session's sample project (built without the Disagreements reader)."""
    folder.mkdir(exist_ok=True)
    template.copy_to(folder / "sample.db", folder / "sample_files")
    return make_engine(f"sqlite:///{folder / 'sample.db'}")


def test_tags_are_seeded_and_need_the_reference(
    tmp_path: Path, sample_template: SampleTemplate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds with the reader, each on its own copy of the sample project built without it
    (two full builds are identical otherwise: ``test_sample_build.py``), make the same tags."""
    built = []
    for name in ("one", "two"):
        monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / name / "sample_files"))
        engine = _copy(sample_template, tmp_path / name)
        # without calibration's reference (data cannot compute it) the build made no tags
        assert _tags(engine) == []
        build_sample_project(engine, disagreements=disagreement_entries)
        built.append(_tags(engine))
        engine.dispose()
    assert built[0] and built[0] == built[1]
    causes = {cause for _, _, cause, _, _ in built[0]}
    assert causes & {"too lenient", "too harsh"}, causes


def test_a_reviewers_own_tag_keeps_the_judge_out_of_the_synthetic_tags(
    tmp_path: Path, sample_template: SampleTemplate, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "sample_files"))
    engine = _copy(sample_template, tmp_path)  # the sample without tags
    with session_scope(engine) as session:
        campaign = get_campaign(session, TAGGED_CAMPAIGN)
        reviewer = get_user(session, "demo-reviewer")
        first, second = campaign_judges(session, campaign.id)
    entry = open_disagreements(engine, reviewer.id, campaign.id, first, include_tagged=False)
    with session_scope(engine) as session:
        tag_disagreement(session, reviewer.id, entry.entries[0], cause="human error")
    summary = build_sample_project(engine, disagreements=disagreement_entries)
    assert summary.added_tags == TAGS_PER_JUDGE  # only the untagged judge
    with session_scope(engine) as session:
        per_judge = dict(
            session.exec(
                select(DisagreementTag.judge, func.count())
                .where(col(DisagreementTag.is_live))
                .group_by(DisagreementTag.judge)
            ).all()
        )
    assert per_judge == {first: 1, second: TAGS_PER_JUDGE}
    engine.dispose()
