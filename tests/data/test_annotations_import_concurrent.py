"""An ``annotations import`` next to annotators at work on the same SQLite database: it writes in
short transactions, so a submit made during it is not refused, and it hides the campaign until the
last one; an import that fails half-way leaves nothing behind."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import pytest
from pairwise_import_items import pairwise_items, pairwise_labels, write_jsonl
from sqlmodel import Session, select

from data import queue
from data.io.importers import annotation_rows, import_jsonl
from data.io.importers.annotations import import_annotations
from data.services.campaigns import CampaignSpec, create_campaign
from data.services.users import create_user
from data.storage import engine as engine_module
from data.storage.campaign_imports import begin_import
from data.storage.campaign_lookup import CampaignNotFound, get_campaign, list_campaigns
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.tables import Annotation, Assignment, AuditEvent, Campaign, Unit, User

ITEMS = pairwise_items(4)
LABELS = pairwise_labels(4)
RATIONALE = "A counts the apples right, B does not."
GUARD_SECONDS = 120  # only so a broken import cannot hang the run; no step relies on it


def _counts(engine) -> dict[str, int]:
    with Session(engine) as session:
        return {
            table.__name__: len(session.exec(select(table)).all())
            for table in (Campaign, Unit, Assignment, Annotation, User, AuditEvent)
        }


@pytest.fixture
def live(engine, tmp_path) -> tuple[int, int]:
    """A dataset, an open pairwise campaign over it and an annotator holding a unit of it:
    (annotator id, assignment id)."""
    with session_scope(engine) as session:
        import_jsonl(session, write_jsonl(tmp_path / "data.jsonl", ITEMS), dataset="d")
        annotator = create_user(session, "alice", "a long password 123", "annotator")
        campaign = create_campaign(
            session, CampaignSpec(name="live", dataset="d", protocol="pairwise", overlap=1)
        )
        view = queue.next_unit(session, stored_id(campaign), stored_id(annotator))
        assert view is not None
        return stored_id(annotator), view.assignment_id


def test_a_submit_made_during_an_import_is_saved_and_the_campaign_stays_hidden(
    engine, tmp_path, monkeypatch, live
):
    annotator_id, assignment_id = live
    monkeypatch.setattr(annotation_rows, "ROWS_PER_TRANSACTION", 3, raising=False)
    between_transactions = threading.Event()  # unit 1 is committed, the turn handed over
    submitted = threading.Event()
    import_over = threading.Event()
    seen: dict[str, object] = {}
    real_outside_turn = getattr(engine_module, "outside_turn", None)
    gaps = {"n": 0}

    @contextmanager
    def outside_turn(session):
        with real_outside_turn(session):
            gaps["n"] += 1
            if gaps["n"] == 3:  # after the checks, the campaign row and unit 1
                between_transactions.set()
                assert submitted.wait(GUARD_SECONDS), "the annotator's submit never finished"
            yield

    def annotator() -> None:
        if not between_transactions.wait(GUARD_SECONDS) or import_over.is_set():
            seen["error"] = "the import never let other sessions in before its end"
            submitted.set()
            return
        try:
            with session_scope(engine) as session:
                queue.submit_and_next(
                    session, assignment_id, annotator_id, preference="A",
                    rationale=RATIONALE,
                )  # fmt: skip
            with Session(engine) as session:
                seen["listed"] = [c.name for c in list_campaigns(session)]
                with pytest.raises(CampaignNotFound, match="still being imported"):
                    get_campaign(session, "ext")
        except BaseException as error:  # noqa: BLE001 - reported by the test below
            seen["error"] = f"{type(error).__name__}: {error}"
        submitted.set()

    monkeypatch.setattr(annotation_rows, "outside_turn", outside_turn, raising=False)
    thread = threading.Thread(target=annotator)
    thread.start()
    try:
        with session_scope(engine) as session:
            summary = import_annotations(
                session, write_jsonl(tmp_path / "h.jsonl", LABELS), campaign="ext"
            )
    finally:
        import_over.set()
        between_transactions.set()
        thread.join()
    assert "error" not in seen, seen["error"]
    assert seen["listed"] == ["live"]  # the half-written campaign was not listed
    assert (summary.units, summary.annotations) == (4, 12)
    with Session(engine) as session:
        answers = session.exec(
            select(Annotation).where(Annotation.assignment_id == assignment_id)
        ).all()
        assert [(a.annotator_id, a.rationale) for a in answers] == [(annotator_id, RATIONALE)]
        assert [c.name for c in list_campaigns(session)] == ["live", "ext"]
        assert get_campaign(session, "ext").status == "closed"


def test_an_import_that_fails_half_way_leaves_nothing(any_engine, tmp_path, monkeypatch):
    engine = any_engine
    with session_scope(engine) as session:
        import_jsonl(session, write_jsonl(tmp_path / "data.jsonl", ITEMS), dataset="d")
    monkeypatch.setattr(annotation_rows, "ROWS_PER_TRANSACTION", 3, raising=False)
    before = _counts(engine)
    real_insert = annotation_rows._insert
    answers = {"rows": 0}

    def insert(session, table, rows):  # the disk fills up half-way through the answers
        if table.name == "annotation":
            answers["rows"] += len(rows)
            if answers["rows"] >= len(LABELS) // 2:
                raise OSError("database or disk is full")
        return real_insert(session, table, rows)

    monkeypatch.setattr(annotation_rows, "_insert", insert)
    with pytest.raises(OSError, match="disk is full"), session_scope(engine) as session:
        import_annotations(session, write_jsonl(tmp_path / "h.jsonl", LABELS), campaign="ext")
    assert _counts(engine) == before
    monkeypatch.setattr(annotation_rows, "_insert", real_insert)
    with session_scope(engine) as session:  # and the same import then succeeds
        summary = import_annotations(session, tmp_path / "h.jsonl", campaign="ext")
    assert summary.created and summary.annotations == 12


def test_a_campaign_another_import_is_writing_is_not_imported_again(engine, tmp_path, live):
    from data.io.importers.annotation_labels import AnnotationImportError

    path = write_jsonl(tmp_path / "h.jsonl", LABELS)
    with session_scope(engine) as session:
        import_annotations(session, path, campaign="ext")
    with session_scope(engine) as session:  # as an import running in this process leaves it
        campaign = session.exec(select(Campaign).where(Campaign.name == "ext")).one()
        begin_import(session, stored_id(campaign), [])
    before = _counts(engine)
    with (
        pytest.raises(AnnotationImportError, match="being written by another import"),
        session_scope(engine) as session,
    ):
        import_annotations(session, path, campaign="ext")
    assert _counts(engine) == before
