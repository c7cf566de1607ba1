"""The unit a tab already shows (``assignment_view``): two tabs of one annotator on one unit."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from data import queue
from data.storage.engine import session_scope
from schemas.tables import Annotation, Assignment, Campaign, Draft, Unit, utcnow
from tests.data.test_queue import RATIONALE, build_campaign


def test_a_tab_gets_back_the_unit_another_tab_answered_and_its_answer_is_a_revision(
    any_engine: Engine,
) -> None:
    """Tab 1 submits; tab 2's draft is refused and the queue's current lease has moved on, yet
    tab 2 can still show its unit and send its different answer, which becomes revision 2."""
    campaign_id, (ann, _) = build_campaign(any_engine, items=2)
    with session_scope(any_engine) as session:
        shown = queue.next_unit(session, campaign_id, ann)  # both tabs show this one
    assert shown is not None
    with session_scope(any_engine) as session:  # tab 1: Ctrl+Enter
        step = queue.submit_and_next(
            session, shown.assignment_id, ann, score=4, rationale="FIRST TAB " + RATIONALE
        )
    assert step.next_unit is not None
    with session_scope(any_engine) as session:  # tab 2 types on: the server takes no draft
        refused = queue.save_draft(
            session, shown.assignment_id, ann, score=9, rationale="SECOND TAB " + RATIONALE
        )
        current = queue.next_unit(session, campaign_id, ann)
        again = queue.assignment_view(session, shown.assignment_id, ann)
    assert refused is None
    assert current is not None and current.assignment_id == step.next_unit.assignment_id
    assert again is not None  # what tab 2 shows on its rerun: its own unit, not the next lease
    assert (again.assignment_id, again.unit_id) == (shown.assignment_id, shown.unit_id)
    assert again.responses == shown.responses and again.item_id == shown.item_id
    assert (again.answered_revision, again.draft) == (1, None)

    with session_scope(any_engine) as session:  # tab 2: Ctrl+Enter with its different answer
        second = queue.submit_and_next(
            session, shown.assignment_id, ann, score=9, rationale="SECOND TAB " + RATIONALE
        )
    assert second.revision == 2
    assert second.next_unit is not None  # the lease tab 1 holds, not a second one
    assert second.next_unit.assignment_id == step.next_unit.assignment_id
    with session_scope(any_engine) as session:  # the same answer again (a double click)
        twice = queue.submit_and_next(
            session, shown.assignment_id, ann, score=9, rationale="SECOND TAB " + RATIONALE
        )
    assert (twice.annotation_id, twice.revision) == (second.annotation_id, 2)
    with session_scope(any_engine) as session:
        rows = session.exec(
            select(Annotation)
            .where(Annotation.unit_id == shown.unit_id)
            .order_by(col(Annotation.revision))
        ).all()
        answers = [(a.revision, a.is_live, a.score, a.rationale) for a in rows]
        unit = session.get(Unit, shown.unit_id)
        assert unit is not None and unit.n_submitted == 1  # one annotator's answer, revised
        assert session.exec(select(Draft)).all() == []  # no draft beside the answer
        leased = session.exec(
            select(Assignment).where(Assignment.annotator_id == ann, Assignment.status == "leased")
        ).all()
        assert [a.id for a in leased] == [step.next_unit.assignment_id]
        after = queue.assignment_view(session, shown.assignment_id, ann)
    assert answers == [
        (1, False, 4.0, "FIRST TAB " + RATIONALE),
        (2, True, 9.0, "SECOND TAB " + RATIONALE),
    ]
    assert after is not None and after.answered_revision == 2


def test_assignment_view_shows_only_own_units_that_are_still_to_answer(engine: Engine) -> None:
    campaign_id, (ann, bo) = build_campaign(engine, items=3)
    with session_scope(engine) as session:
        view = queue.next_unit(session, campaign_id, ann)
        assert view is not None
        queue.save_draft(session, view.assignment_id, ann, score=6, rationale="half typed")
    with session_scope(engine) as session:
        leased = queue.assignment_view(session, view.assignment_id, ann)
        assert leased is not None and leased.answered_revision is None
        assert leased.draft is not None and leased.draft.rationale == "half typed"
        with pytest.raises(queue.AssignmentNotFound):  # bo's tab, ann's id: nothing of ann's
            queue.assignment_view(session, view.assignment_id, bo)
        queue.skip(session, view.assignment_id, ann, "outside my expertise")
    with session_scope(engine) as session:
        assert queue.assignment_view(session, view.assignment_id, ann) is None  # given back
        lost = queue.next_unit(session, campaign_id, ann)
        assert lost is not None
        queue.expire_leases(session, campaign_id, utcnow() + timedelta(days=1))
    with session_scope(engine) as session:
        assert queue.assignment_view(session, lost.assignment_id, ann) is None  # expired
        answered = queue.next_unit(session, campaign_id, ann)
        assert answered is not None
        queue.submit(session, answered.assignment_id, ann, score=3, rationale=RATIONALE)
        campaign = session.get(Campaign, campaign_id)
        assert campaign is not None
        campaign.status = "paused"
    with session_scope(engine) as session:  # paused: no unit, as next_unit gives none
        assert queue.assignment_view(session, answered.assignment_id, ann) is None
