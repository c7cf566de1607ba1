"""Reviewers' accept / reject in the queue, on SQLite and PostgreSQL: a rejection frees the slot
and the unit is served to another annotator, K is never exceeded (also when annotators are served
at once), undoing a rejection after the slot was refilled is refused, a revision after a
rejection takes no slot, rejected answers leave the frame, the SFT input and the export, every
action is audited and only reviewers and admins may act."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from data import queue
from data.io.exporters.records import annotation_records
from data.readmodels.critic_io import annotated_units
from data.readmodels.frames import campaign_judgement_frame
from data.services.answer_review import (
    accept_answer_as,
    annotator_answers,
    annotator_answers_as,
    reject_answer_as,
    reopen_answer_as,
)
from data.services.roles import PermissionDenied
from data.storage.campaign_lookup import unit_key_map
from data.storage.engine import session_scope
from schemas.tables import (
    Annotation,
    Assignment,
    AuditEvent,
    ReviewDecision,
    Unit,
    User,
)
from tests.data.test_queue import RATIONALE, build_campaign

COMMENT = "The rationale does not say why the second cat is not counted."


def _reviewer(engine: Engine, name: str = "rita", role: str = "reviewer") -> int:
    with session_scope(engine) as session:
        user = User(name=name, password_hash="-", role=role)
        session.add(user)
        session.flush()
        assert user.id is not None
        return user.id


def _answer_one(engine: Engine, campaign_id: int, annotator: int, score: float = 7) -> Annotation:
    with session_scope(engine) as session:
        view = queue.next_unit(session, campaign_id, annotator)
        assert view is not None
        stored = queue.submit(
            session, view.assignment_id, annotator, score=score, rationale=RATIONALE
        )
        session.flush()
        session.expunge(stored)
        return stored


def _counters_hold(engine: Engine, campaign_id: int) -> None:
    """slots_taken = live assignments and n_submitted = submitted ones on every unit, and no
    unit has more than K live assignments."""
    with Session(engine) as session:
        for unit in session.exec(select(Unit).where(Unit.campaign_id == campaign_id)):
            live = session.exec(
                select(func.count()).where(
                    Assignment.unit_id == unit.id,
                    col(Assignment.status).in_(("leased", "submitted")),
                )
            ).one()
            submitted = session.exec(
                select(func.count()).where(
                    Assignment.unit_id == unit.id, Assignment.status == "submitted"
                )
            ).one()
            assert (unit.slots_taken, unit.n_submitted) == (live, submitted), unit.id
            overlap = session.exec(
                select(Assignment.overlap).where(Assignment.unit_id == unit.id)
            ).first()
            assert overlap is None or live <= overlap


def _raters(engine: Engine, campaign_id: int) -> list[tuple[int, str]]:
    with Session(engine) as session:
        frame = campaign_judgement_frame(session, campaign_id)
        ids = {key: unit_id for unit_id, key in unit_key_map(session, campaign_id).items()}
    humans = frame[frame["kind"] == "human"]
    return sorted(
        (ids[unit], rater) for unit, rater in zip(humans["unit"], humans["rater"], strict=True)
    )


def test_a_rejection_frees_the_slot_for_another_annotator_and_leaves_the_reference(
    any_engine: Engine,
) -> None:
    campaign_id, (ann0, ann1, ann2) = build_campaign(any_engine, items=1, overlap=1, annotators=3)
    rita = _reviewer(any_engine)
    first = _answer_one(any_engine, campaign_id, ann0)
    second = _answer_one(any_engine, campaign_id, ann1)
    units = {first.unit_id, second.unit_id}
    assert len(units) == 2  # one item, two responses, K = 1: both units full now
    with session_scope(any_engine) as session:
        assert queue.next_unit(session, campaign_id, ann2) is None
    with session_scope(any_engine) as session:
        done = reject_answer_as(session, rita, stored(first), COMMENT)
    assert (done.state, done.in_reference, done.annotator) == ("rejected", False, "ann0")
    _counters_hold(any_engine, campaign_id)
    assert (first.unit_id, "annotator:ann0") not in _raters(any_engine, campaign_id)
    with Session(any_engine) as session:
        assert [u.unit.unit_id for u in annotated_units(session, campaign_id)] == [second.unit_id]
        exported = annotation_records(session, "camp-alignmmbench")
        assert [r.annotator for r in exported] == ["ann1"]
        assert len(annotation_records(session, "camp-alignmmbench", all_revisions=True)) == 2
    # The freed slot goes to a new annotator; the rejected one never gets the unit again.
    with session_scope(any_engine) as session:
        assert queue.next_unit(session, campaign_id, ann0) is None
    third = _answer_one(any_engine, campaign_id, ann2)
    assert third.unit_id == first.unit_id
    _counters_hold(any_engine, campaign_id)
    assert _raters(any_engine, campaign_id) == sorted(
        [(second.unit_id, "annotator:ann1"), (first.unit_id, "annotator:ann2")]
    )
    with Session(any_engine) as session:
        event = session.exec(select(AuditEvent).where(AuditEvent.action == "answer.reject")).one()
        assert (event.actor_id, event.entity_id) == (rita, str(first.id))
        assert event.detail["comment"] == COMMENT
        assert (event.detail["before"], event.detail["after"]) == ("pending", "rejected")


def stored(annotation: Annotation) -> int:
    assert annotation.id is not None
    return annotation.id


def test_undoing_a_rejection_after_the_slot_was_refilled_is_refused(any_engine: Engine) -> None:
    campaign_id, (ann0, ann1, ann2) = build_campaign(any_engine, items=1, overlap=1, annotators=3)
    rita = _reviewer(any_engine)
    first = _answer_one(any_engine, campaign_id, ann0)
    _answer_one(any_engine, campaign_id, ann1)
    with session_scope(any_engine) as session:
        reject_answer_as(session, rita, stored(first), COMMENT)
    with session_scope(any_engine) as session:  # a lease alone already holds the slot
        view = queue.next_unit(session, campaign_id, ann2)
        assert view is not None and view.unit_id == first.unit_id
    for undo in (reopen_answer_as, accept_answer_as):
        with (
            pytest.raises(queue.ReviewConflict, match="K = 1"),
            session_scope(any_engine) as session,
        ):
            undo(session, rita, stored(first))
    _counters_hold(any_engine, campaign_id)
    with Session(any_engine) as session:
        assert session.get(Assignment, first.assignment_id).status == "rejected"  # type: ignore[union-attr]
        decisions = session.exec(select(ReviewDecision)).all()
        assert [(d.decision, d.revoked_at) for d in decisions] == [("reject", None)]
    # The database itself refuses a second live assignment on the slot.
    with pytest.raises(IntegrityError), any_engine.begin() as connection:
        connection.execute(
            text("UPDATE assignment SET status = 'submitted' WHERE id = :id"),
            {"id": first.assignment_id},
        )
    # Once the new lease is given back (it expires), the rejection can be undone.
    with session_scope(any_engine) as session:
        queue.skip(session, view.assignment_id, ann2, reason="not sure")
    with session_scope(any_engine) as session:
        done = reopen_answer_as(session, rita, stored(first))
    assert (done.state, done.in_reference) == ("pending", True)
    _counters_hold(any_engine, campaign_id)
    assert (first.unit_id, "annotator:ann0") in _raters(any_engine, campaign_id)
    with Session(any_engine) as session:
        actions = session.exec(
            select(AuditEvent.action)
            .where(col(AuditEvent.action).like("answer.%"))
            .order_by(col(AuditEvent.id))
        ).all()
        assert actions == ["answer.reject", "answer.reopen"]
        revoked = session.exec(select(ReviewDecision)).one()
        assert revoked.revoked_by == rita and revoked.revoked_at is not None


def test_a_revision_after_a_rejection_waits_for_review_without_a_slot(any_engine: Engine) -> None:
    campaign_id, (ann0, ann1) = build_campaign(any_engine, items=1, overlap=2, annotators=2)
    rita = _reviewer(any_engine)
    first = _answer_one(any_engine, campaign_id, ann0, score=3)
    with session_scope(any_engine) as session:
        reject_answer_as(session, rita, stored(first), COMMENT)
    with Session(any_engine) as session:
        [mine] = queue.my_annotations(session, campaign_id, ann0)
        info = queue.review_info(session, [mine.annotation_id])[mine.annotation_id]
    assert (info.state, info.comment, info.decided_by) == ("rejected", COMMENT, "rita")
    with session_scope(any_engine) as session:
        revised = queue.revise(
            session, stored(first), ann0, score=5, rationale=RATIONALE + " Two cats, not three."
        )
        session.flush()
        revised_id = stored(revised)
    _counters_hold(any_engine, campaign_id)
    assert (first.unit_id, "annotator:ann0") not in _raters(any_engine, campaign_id)
    with Session(any_engine) as session:
        info = queue.review_info(session, [revised_id])[revised_id]
        rows = annotator_answers(session, "camp-alignmmbench", "ann0")
    assert (info.state, info.comment) == ("resubmitted", COMMENT)
    assert [(r.annotation_id, r.state, r.value) for r in rows] == [(revised_id, "resubmitted", "5")]
    with (
        pytest.raises(queue.ReviewError, match="revised since"),
        session_scope(any_engine) as session,
    ):
        accept_answer_as(session, rita, stored(first))
    with (
        pytest.raises(queue.ReviewError, match="no decision to undo"),
        session_scope(any_engine) as session,
    ):
        reopen_answer_as(session, rita, revised_id)
    with session_scope(any_engine) as session:
        done = accept_answer_as(session, rita, revised_id)
    assert (done.state, done.in_reference, done.revision) == ("accepted", True, 2)
    _counters_hold(any_engine, campaign_id)
    frame_values = _frame_scores(any_engine, campaign_id)
    assert frame_values == [("annotator:ann0", 5.0)]
    # A stale Annotate tab cannot answer the rejected assignment again.
    with session_scope(any_engine) as session:
        reject_answer_as(session, rita, revised_id, COMMENT)
    with (
        pytest.raises(queue.AssignmentNotFound, match="rejected"),
        session_scope(any_engine) as session,
    ):
        queue.submit(
            session, first.assignment_id or 0, ann0, score=6, rationale=RATIONALE
        )  # the stale tab's assignment


def _frame_scores(engine: Engine, campaign_id: int) -> list[tuple[str, float]]:
    with Session(engine) as session:
        frame = campaign_judgement_frame(session, campaign_id)
    humans = frame[frame["kind"] == "human"]
    return sorted(zip(humans["rater"], humans["value"].astype(float), strict=True))


def test_a_rejection_needs_a_comment_and_a_current_answer(any_engine: Engine) -> None:
    campaign_id, (ann0,) = build_campaign(any_engine, items=1, overlap=1, annotators=1)
    rita = _reviewer(any_engine)
    first = _answer_one(any_engine, campaign_id, ann0)
    for comment in ("", "   "):
        with (
            pytest.raises(queue.ReviewError, match="needs a comment"),
            session_scope(any_engine) as session,
        ):
            reject_answer_as(session, rita, stored(first), comment)
    with (
        pytest.raises(queue.ReviewError, match="no answer with id 999"),
        session_scope(any_engine) as session,
    ):
        reject_answer_as(session, rita, 999, COMMENT)
    with pytest.raises(IntegrityError), any_engine.begin() as connection:  # the database's rule
        connection.execute(
            text(
                "INSERT INTO review_decision (campaign_id, annotation_id, decision, comment, "
                "decided_at) VALUES (:c, :a, 'reject', ' ', CURRENT_TIMESTAMP)"
            ),
            {"c": campaign_id, "a": first.id},
        )
    with session_scope(any_engine) as session:
        accept_answer_as(session, rita, stored(first))
    with (
        pytest.raises(queue.ReviewError, match="accepted already"),
        session_scope(any_engine) as session,
    ):
        accept_answer_as(session, rita, stored(first))
    with session_scope(any_engine) as session:  # reject an accepted answer: the accept revoked
        reject_answer_as(session, rita, stored(first), COMMENT)
    with (
        pytest.raises(queue.ReviewError, match="rejected already"),
        session_scope(any_engine) as session,
    ):
        reject_answer_as(session, rita, stored(first), COMMENT)
    with Session(any_engine) as session:
        decisions = session.exec(select(ReviewDecision).order_by(col(ReviewDecision.id))).all()
    assert [(d.decision, d.revoked_at is None) for d in decisions] == [
        ("accept", False),
        ("reject", True),
    ]
    _counters_hold(any_engine, campaign_id)


def test_only_reviewers_and_admins_review_answers(any_engine: Engine) -> None:
    campaign_id, (ann0, ann1) = build_campaign(any_engine, items=1, overlap=1, annotators=2)
    admin = _reviewer(any_engine, "ada", "admin")
    first = _answer_one(any_engine, campaign_id, ann0)
    for actor in (ann1, ann0, None):
        for act in (
            lambda s, a: reject_answer_as(s, a, stored(first), COMMENT),
            lambda s, a: accept_answer_as(s, a, stored(first)),
            lambda s, a: reopen_answer_as(s, a, stored(first)),
            lambda s, a: annotator_answers_as(s, a, "camp-alignmmbench", "ann0"),
        ):
            with pytest.raises(PermissionDenied), session_scope(any_engine) as session:
                act(session, actor)
    with Session(any_engine) as session:
        assert session.exec(select(ReviewDecision)).all() == []
    with session_scope(any_engine) as session:
        assert reject_answer_as(session, admin, stored(first), COMMENT).state == "rejected"


def test_concurrent_annotators_never_exceed_k_after_rejections(any_engine: Engine) -> None:
    """K = 2 on 6 units; every first answer is rejected; then 6 new annotators are served at
    once until nothing is left: each unit ends with exactly 2 submitted answers."""
    campaign_id, first_wave = build_campaign(any_engine, items=3, overlap=2, annotators=2)
    rita = _reviewer(any_engine)
    rejected = []
    for annotator in first_wave:
        while True:
            with session_scope(any_engine) as session:
                view = queue.next_unit(session, campaign_id, annotator)
                if view is None:
                    break
                answer = queue.submit(
                    session, view.assignment_id, annotator, score=7, rationale=RATIONALE
                )
                session.flush()
                rejected.append(stored(answer)) if annotator == first_wave[0] else None
    assert len(rejected) == 6
    for annotation_id in rejected:
        with session_scope(any_engine) as session:
            reject_answer_as(session, rita, annotation_id, COMMENT)
    with session_scope(any_engine) as session:
        wave = [User(name=f"late{n}", password_hash="-", role="annotator") for n in range(6)]
        session.add_all(wave)
        session.flush()
        late = [stored_user(user) for user in wave]
    errors: list[BaseException] = []
    start = threading.Barrier(len(late))

    def work(annotator: int) -> None:
        try:
            start.wait()
            while True:
                with session_scope(any_engine) as session:
                    view = queue.next_unit(session, campaign_id, annotator)
                    if view is None:
                        return
                    queue.submit(
                        session, view.assignment_id, annotator, score=6, rationale=RATIONALE
                    )
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(a,)) for a in late]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    _counters_hold(any_engine, campaign_id)
    with Session(any_engine) as session:
        per_unit = session.exec(
            select(Assignment.unit_id, func.count())
            .where(Assignment.campaign_id == campaign_id, Assignment.status == "submitted")
            .group_by(col(Assignment.unit_id))
        ).all()
    assert sorted(n for _, n in per_unit) == [2] * 6
    assert len(_raters(any_engine, campaign_id)) == 12


def stored_user(user: User) -> int:
    assert user.id is not None
    return user.id
