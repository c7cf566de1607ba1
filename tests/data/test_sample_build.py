"""Building the sample project twice adds nothing; two builds are identical; a failed build
leaves the database as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

import data.sample.build
from data.sample import build_sample_project
from data.storage.engine import make_engine, upgrade_database
from schemas.tables import (
    Annotation,
    Assignment,
    AuditEvent,
    Campaign,
    Dataset,
    GoldAnswer,
    Item,
    Judgement,
    Pair,
    Response,
    Unit,
    User,
)
from tests.sample_template import SampleTemplate

pytestmark = pytest.mark.slow  # each test builds the sample project

TABLES = (User, Dataset, Item, Response, Pair, Campaign, Unit, Assignment, Annotation, Judgement,
          GoldAnswer, AuditEvent)  # fmt: skip


def _counts(engine: Engine) -> dict[str, int]:
    with Session(engine) as session:
        return {
            table.__name__: session.exec(select(func.count()).select_from(table)).one()
            for table in TABLES
        }


def test_building_twice_duplicates_nothing(any_engine: Engine) -> None:
    first = build_sample_project(any_engine)
    after_first = _counts(any_engine)
    second = build_sample_project(any_engine)
    assert first.created and not second.created
    assert second.added_annotations == second.added_judgements == 0
    assert _counts(any_engine) == after_first
    assert second.added_gold == 0 and second.gold_units == first.gold_units > 0
    totals = ("items", "responses", "pairs", "annotations", "judgements", "gold_units")
    assert [getattr(second, key) for key in totals] == [getattr(first, key) for key in totals]


def _snapshot(engine: Engine, files: Path) -> dict[str, Any]:
    """Everything a build decides, keyed by external ids (database ids may differ)."""
    with Session(engine) as session:
        responses = {r.id: r.response_id for r in session.exec(select(Response))}
        users = {u.id: u.name for u in session.exec(select(User))}
        units = {}
        for unit in session.exec(select(Unit)):
            if unit.pair_pk is None:
                units[unit.id] = responses[unit.response_pk]
            else:
                pair = session.get(Pair, unit.pair_pk)
                units[unit.id] = f"{responses[pair.response_a_pk]}|{responses[pair.response_b_pk]}"
        return {
            "items": sorted((i.item_id, i.task, i.group, str(i.question), str(i.reference),
                             str(i.history)) for i in session.exec(select(Item))),
            "responses": sorted((r.response_id, r.model, str(r.content))
                                for r in session.exec(select(Response))),
            "annotations": sorted((units[a.unit_id], users[a.annotator_id], str(a.score),
                                   str(a.preference), str(a.shown_order), a.rationale, a.seconds,
                                   a.created_at.isoformat())
                                  for a in session.exec(select(Annotation))),
            "judgements": sorted((j.judge, j.unit_key, j.shown_order, str(j.score),
                                  str(j.preference), j.raw_output, j.parse_status, j.prompt_id)
                                 for j in session.exec(select(Judgement))),
            "gold": sorted((units[g.unit_id], str(g.score), str(g.preference), g.explanation)
                           for g in session.exec(select(GoldAnswer))),
            "gold_settings": sorted((c.name, c.gold_rate, c.gold_feedback, c.qualification_gold,
                                     c.qualification_accuracy)
                                    for c in session.exec(select(Campaign))),
            "images": sorted((p.relative_to(files).as_posix(), p.read_bytes())
                             for p in files.rglob("*.png")),
        }  # fmt: skip


def test_two_builds_are_identical(tmp_path: Path, sample_template: SampleTemplate) -> None:
    """A build here against the session's sample project (:mod:`tests.sample_template`), built
    the same way earlier in the session, in another folder and perhaps another process."""
    sample_template.copy_to(tmp_path / "one.db", tmp_path / "one_files")
    engine = make_engine(f"sqlite:///{tmp_path / 'one.db'}")
    snapshots = [_snapshot(engine, tmp_path / "one_files")]
    engine.dispose()
    engine = make_engine(f"sqlite:///{tmp_path / 'two.db'}")
    upgrade_database(engine)
    build_sample_project(engine, data_dir=tmp_path / "two_files")
    snapshots.append(_snapshot(engine, tmp_path / "two_files"))
    engine.dispose()
    assert snapshots[0]["images"], "the build stored no images"
    assert snapshots[0]["gold"], "the build attached no gold answers"
    for key in snapshots[0]:
        assert snapshots[0][key] == snapshots[1][key], key


def test_a_failed_build_leaves_the_database_as_it_was(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _counts(engine)

    def broken(*_args: object) -> int:
        raise RuntimeError("judge outputs could not be written")

    monkeypatch.setattr(data.sample.build, "add_judgements", broken)
    with pytest.raises(RuntimeError, match="judge outputs"):
        build_sample_project(engine)
    assert _counts(engine) == before
