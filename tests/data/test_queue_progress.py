"""The annotation page's progress (one query) and newest-wins drafts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from data import queue
from data.storage.engine import session_scope
from schemas.tables import utcnow
from tests.data.test_queue import RATIONALE, build_campaign


def test_unit_progress_counts_the_campaign_the_annotator_and_the_item_in_one_query(
    engine: Engine,
) -> None:
    campaign_id, (ann, bo) = build_campaign(engine, items=3, overlap=2)  # 6 units, 2 per item
    seen: list[tuple[str, int]] = []  # (item, position) in the order ann gets units
    statements: list[str] = []

    def listener(connection: object, cursor: object, statement: str, *rest: object) -> None:
        statements.append(statement)

    for step in range(4):
        with session_scope(engine) as session:
            view = queue.next_unit(session, campaign_id, ann)
            assert view is not None
            event.listen(engine, "before_cursor_execute", listener)
            try:
                progress = queue.unit_progress(session, view.assignment_id, ann)
            finally:
                event.remove(engine, "before_cursor_execute", listener)
            assert progress.units_total == 6
            assert progress.my_submitted == step  # what ann submitted before this unit
            assert progress.item_units == 2  # one unit per response, two responses per item
            expected = 1 + sum(1 for item, _ in seen if item == view.item_id)
            assert progress.item_position == expected  # ann's own order, never the model's
            seen.append((view.item_id, progress.item_position))
            queue.submit(session, view.assignment_id, ann, score=5, rationale=RATIONALE)
    assert len(statements) == 4  # one statement per call
    with session_scope(engine) as session:  # bo's answers do not count as ann's
        view = queue.next_unit(session, campaign_id, bo)
        assert view is not None
        progress = queue.unit_progress(session, view.assignment_id, bo)
        assert (progress.my_submitted, progress.item_position) == (0, 1)
        with pytest.raises(queue.AssignmentNotFound):
            queue.unit_progress(session, view.assignment_id, ann)


def test_a_draft_typed_before_the_stored_one_does_not_overwrite_it(engine: Engine) -> None:
    campaign_id, (ann, _) = build_campaign(engine)
    now = utcnow()
    with session_scope(engine) as session:
        view = queue.next_unit(session, campaign_id, ann)
        assert view is not None
        queue.save_draft(session, view.assignment_id, ann, rationale="newer, other tab",
                         edited_at=now)  # fmt: skip
    with session_scope(engine) as session:  # a late flush of what was typed a second earlier
        kept = queue.save_draft(session, view.assignment_id, ann, rationale="older",
                                edited_at=now - timedelta(seconds=1))  # fmt: skip
    assert kept is not None and kept.rationale == "newer, other tab"
    with session_scope(engine) as session:
        again = queue.next_unit(session, campaign_id, ann)
        assert again is not None and again.draft is not None
        assert again.draft.rationale == "newer, other tab"
        assert again.draft.updated_at is not None
        later = queue.save_draft(session, view.assignment_id, ann, rationale="newest",
                                 edited_at=now + timedelta(seconds=1))  # fmt: skip
    assert later is not None and later.rationale == "newest"
