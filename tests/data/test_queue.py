"""The annotation queue: assignment, leases, drafts, submit, skip, flag, revisions, blindness."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from data import queue
from data.services.campaigns import CampaignSpec, create_campaign
from data.services.users import set_active
from data.storage.engine import session_scope
from schemas.core import stored_id
from schemas.tables import (
    Annotation,
    Assignment,
    AuditEvent,
    Campaign,
    Dataset,
    Draft,
    Flag,
    Item,
    Judgement,
    Pair,
    Response,
    Unit,
    User,
    utcnow,
)

RATIONALE = "The answer names the right object and explains it well."


def build_campaign(
    engine: Engine,
    *,
    items: int = 3,
    protocol: str = "alignmmbench",
    overlap: int = 1,
    annotators: int = 2,
    **settings: object,
) -> tuple[int, list[int]]:
    """A dataset of ``items`` items with two responses each and a campaign over it.

    Pointwise campaigns have one unit per response (2 × items); pairwise one per item.
    Returns the campaign id and the ids of ``annotators`` new annotator accounts.
    """
    with session_scope(engine) as session:
        dataset = Dataset(name=f"ds-{protocol}", benchmark="alignmmbench")
        session.add(dataset)
        session.flush()
        for n in range(items):
            item = Item(
                dataset_id=dataset.id,
                item_id=f"item-{n}",
                benchmark="alignmmbench",
                task="Counting",
                question=f"How many cats are in picture {n}?",
                reference="Three cats.",
                content_sha256="x",
            )
            session.add(item)
            session.flush()
            first, second = (
                Response(
                    response_id=f"item-{n}/{model}",
                    item_pk=item.id,
                    model=model,
                    content=f"{model} says {n}",
                    content_sha256="x",
                )
                for model in ("left", "right")
            )
            session.add_all([first, second])
            session.flush()
            session.add(Pair(item_pk=item.id, response_a_pk=first.id, response_b_pk=second.id))
        users = [
            User(name=f"ann{n}", password_hash="-", role="annotator") for n in range(annotators)
        ]
        session.add_all(users)
        session.flush()
        spec = CampaignSpec(
            name=f"camp-{protocol}",
            dataset=dataset.name,
            protocol=protocol,
            overlap=overlap,
            **settings,  # type: ignore[arg-type]
        )
        campaign = create_campaign(session, spec)
        return campaign.id, [user.id for user in users]  # type: ignore[return-value]


def _lease(engine: Engine, campaign_id: int, annotator_id: int, **kwargs: object):  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        return queue.next_unit(session, campaign_id, annotator_id, **kwargs)  # type: ignore[arg-type]


def _submit(engine: Engine, view: queue.UnitView, annotator_id: int, **answer: object):  # type: ignore[no-untyped-def]
    answer.setdefault("rationale", RATIONALE)
    if view.protocol.is_pointwise:
        answer.setdefault("score", 7)
    else:
        answer.setdefault("preference", "A")
    with session_scope(engine) as session:
        return queue.submit(session, view.assignment_id, annotator_id, **answer)  # type: ignore[arg-type]


def _check_counters(session: Session, campaign_id: int) -> None:
    """Unit.slots_taken and n_submitted agree with the assignment and annotation rows."""
    for unit in session.exec(select(Unit).where(Unit.campaign_id == campaign_id)):
        live = session.exec(
            select(func.count()).where(
                Assignment.unit_id == unit.id, col(Assignment.status).in_(("leased", "submitted"))
            )
        ).one()
        submitted = session.exec(
            select(func.count()).where(Annotation.unit_id == unit.id, col(Annotation.is_live))
        ).one()
        assert (unit.slots_taken, unit.n_submitted) == (live, submitted), unit.id


def test_least_annotated_unit_first_and_lease_resumes(engine: Engine) -> None:
    campaign_id, annotators = build_campaign(engine, items=2, overlap=2, annotators=3)
    first = _lease(engine, campaign_id, annotators[0])
    second = _lease(engine, campaign_id, annotators[1])
    third = _lease(engine, campaign_id, annotators[2])
    assert len({first.unit_id, second.unit_id, third.unit_id}) == 3  # spread before doubling
    again = _lease(engine, campaign_id, annotators[0])
    assert again.assignment_id == first.assignment_id  # the open lease comes back, not a new one
    _submit(engine, first, annotators[0])
    after = _lease(engine, campaign_id, annotators[0])
    assert after.unit_id not in {first.unit_id, second.unit_id, third.unit_id}


def test_a_unit_is_never_given_twice_to_one_annotator(engine: Engine) -> None:
    campaign_id, (alice,) = build_campaign(engine, items=3, overlap=3, annotators=1)
    seen = []
    while (view := _lease(engine, campaign_id, alice)) is not None:
        seen.append(view.unit_id)
        _submit(engine, view, alice)
    assert sorted(seen) == sorted(set(seen)) and len(seen) == 6


def _submit_and_next(engine: Engine, view: queue.UnitView, annotator_id: int, **answer: object):  # type: ignore[no-untyped-def]
    answer.setdefault("rationale", RATIONALE)
    answer.setdefault(
        "score" if view.protocol.is_pointwise else "preference",
        7 if view.protocol.is_pointwise else "A",
    )
    with session_scope(engine) as session:
        return queue.submit_and_next(session, view.assignment_id, annotator_id, **answer)  # type: ignore[arg-type]


@pytest.mark.parametrize("overlap", [1, 3])
@pytest.mark.parametrize("step", ["submit, then next_unit", "submit_and_next"])
def test_concurrent_annotators_never_exceed_overlap_nor_lose_work(
    any_engine: Engine, overlap: int, step: str
) -> None:
    campaign_id, annotators = build_campaign(any_engine, items=15, overlap=overlap, annotators=20)
    submitted: list[tuple[int, int]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(len(annotators))

    def work(annotator_id: int) -> None:
        try:
            start.wait()
            view = _lease(any_engine, campaign_id, annotator_id)
            while view is not None:
                if step == "submit_and_next":
                    following = _submit_and_next(any_engine, view, annotator_id).next_unit
                    if following is None:  # not "done" yet: asked again, as the page does
                        following = _lease(any_engine, campaign_id, annotator_id)
                else:
                    _submit(any_engine, view, annotator_id)
                    following = _lease(any_engine, campaign_id, annotator_id)
                with lock:
                    submitted.append((view.unit_id, annotator_id))
                view = following
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(a,)) for a in annotators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(submitted) == len(set(submitted))  # never twice to one annotator
    per_unit = Counter(unit for unit, _ in submitted)
    assert len(per_unit) == 30 and set(per_unit.values()) == {overlap}  # all done, none over
    with Session(any_engine) as session:
        stored = session.exec(select(Annotation.unit_id, Annotation.annotator_id)).all()
        assert sorted(stored) == sorted(submitted)  # nothing lost, nothing extra
        _check_counters(session, campaign_id)


def test_concurrent_double_submit_stores_one(any_engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(any_engine)
    view = _lease(any_engine, campaign_id, alice)
    results: list[int] = []
    threads = [
        threading.Thread(target=lambda: results.append(_submit(any_engine, view, alice).id))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and len(set(results)) == 1
    with Session(any_engine) as session:
        assert session.exec(select(func.count()).select_from(Annotation)).one() == 1
        _check_counters(session, campaign_id)


def test_submit_and_next_stores_the_answer_and_leases_the_next_unit_in_one_commit(
    any_engine: Engine,
) -> None:
    campaign_id, (alice, _) = build_campaign(any_engine, items=1, overlap=1)  # two units
    view = _lease(any_engine, campaign_id, alice)
    with session_scope(any_engine) as session:
        queue.save_draft(session, view.assignment_id, alice, score=3, rationale="half")
    step = _submit_and_next(any_engine, view, alice, score=9, seconds=12)
    following = step.next_unit
    assert (step.unit_id, step.campaign_id) == (view.unit_id, campaign_id)
    assert following is not None and following.unit_id != view.unit_id and following.draft is None
    with Session(any_engine) as session:
        stored = session.get(Annotation, step.annotation_id)
        assert (stored.unit_id, stored.score, stored.seconds, stored.rationale) == (
            view.unit_id, 9.0, 12.0, RATIONALE,
        )  # fmt: skip
        statuses = dict(session.exec(select(Assignment.id, Assignment.status)).all())
        assert statuses == {view.assignment_id: "submitted", following.assignment_id: "leased"}
        assert session.exec(select(func.count()).select_from(Draft)).one() == 0
        _check_counters(session, campaign_id)
    # The same lease again (a double click) stores nothing new and leases nothing new.
    again = _submit_and_next(any_engine, view, alice, score=9)
    assert again.annotation_id == step.annotation_id
    assert again.next_unit.assignment_id == following.assignment_id
    # The last unit: the answer is stored and there is nothing next.
    last = _submit_and_next(any_engine, following, alice)
    assert last.next_unit is None
    with Session(any_engine) as session:
        assert session.exec(select(func.count()).select_from(Annotation)).one() == 2


@pytest.mark.parametrize("protocol", ["alignmmbench", "pairwise"])
def test_a_second_tab_with_another_answer_stores_a_revision(
    any_engine: Engine, protocol: str
) -> None:
    """Two tabs hold the same lease; the second submits a different answer after the first.

    It used to be acknowledged and dropped (the live answer came back, nothing was stored)."""
    campaign_id, (alice, _) = build_campaign(any_engine, protocol=protocol, items=2)
    first_tab = _lease(any_engine, campaign_id, alice)
    second_tab = _lease(any_engine, campaign_id, alice)
    assert second_tab.assignment_id == first_tab.assignment_id
    pointwise = first_tab.protocol.is_pointwise
    answer_1 = {"score": 3} if pointwise else {"preference": "A"}
    answer_2 = {"score": 8} if pointwise else {"preference": "B"}
    step_1 = _submit_and_next(any_engine, first_tab, alice, seconds=10, **answer_1)
    step_2 = _submit_and_next(
        any_engine, second_tab, alice, rationale=RATIONALE + " Second tab.", seconds=4, **answer_2
    )
    assert (step_1.revision, step_2.revision) == (1, 2)
    assert step_2.annotation_id != step_1.annotation_id and step_2.unit_id == step_1.unit_id
    assert step_2.next_unit.assignment_id == step_1.next_unit.assignment_id  # no second lease
    # The same answer again (a double click in the second tab) stores nothing new.
    again = _submit_and_next(
        any_engine, second_tab, alice, rationale=RATIONALE + " Second tab.", **answer_2
    )
    assert (again.annotation_id, again.revision) == (step_2.annotation_id, 2)
    with Session(any_engine) as session:
        rows = session.exec(
            select(Annotation).where(Annotation.unit_id == first_tab.unit_id)
            .order_by(Annotation.revision)
        ).all()  # fmt: skip
        assert [(a.revision, a.is_live, a.rationale) for a in rows] == [
            (1, False, RATIONALE), (2, True, RATIONALE + " Second tab."),
        ]  # fmt: skip
        assert rows[1].meta == {"revises": rows[0].id} and rows[1].seconds == 14
        if pointwise:
            assert (rows[0].score, rows[1].score) == (3, 8)
        else:  # stored canonical: the second tab's "B" as shown
            swapped = first_tab.shown_order == "BA"
            assert (rows[0].preference, rows[1].preference) == (
                ("B", "A") if swapped else ("A", "B")
            )
        event = session.exec(
            select(AuditEvent).where(AuditEvent.action == "annotation.revise")
        ).one()
        assert event.entity_id == str(step_2.annotation_id)
        _check_counters(session, campaign_id)


def test_concurrent_different_answers_are_all_kept_as_revisions(any_engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(any_engine)
    view = _lease(any_engine, campaign_id, alice)
    threads = [
        threading.Thread(target=_submit, args=(any_engine, view, alice), kwargs={"score": score})
        for score in (2, 4, 6, 8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with Session(any_engine) as session:
        rows = session.exec(select(Annotation).order_by(Annotation.revision)).all()
        assert [a.revision for a in rows] == [1, 2, 3, 4]
        assert sorted(a.score for a in rows) == [2, 4, 6, 8]
        assert [a.is_live for a in rows] == [False, False, False, True]
        _check_counters(session, campaign_id)


def test_a_second_tab_with_an_invalid_answer_is_refused(engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(engine, rationale_min=20)
    view = _lease(engine, campaign_id, alice)
    first = _submit(engine, view, alice, score=3)
    with pytest.raises(queue.AnswerInvalid, match="at least 20"), session_scope(engine) as session:
        queue.submit(session, view.assignment_id, alice, score=8, rationale="short")
    with Session(engine) as session:
        assert session.exec(select(Annotation.id)).all() == [first.id]


def test_submit_and_next_keeps_nothing_when_the_next_lease_fails(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    campaign_id, (alice, _) = build_campaign(engine, items=2, overlap=1)
    view = _lease(engine, campaign_id, alice)
    with session_scope(engine) as session:
        queue.save_draft(session, view.assignment_id, alice, score=3, rationale="typed so far")

    def broken(*_args: object) -> None:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(queue.leases, "_lease_new", broken)
    with pytest.raises(RuntimeError, match="disk went away"):
        _submit_and_next(engine, view, alice)
    with Session(engine) as session:  # one transaction: the answer is not half stored
        assert session.exec(select(func.count()).select_from(Annotation)).one() == 0
        assert session.get(Assignment, view.assignment_id).status == "leased"
        assert session.exec(select(Draft.rationale)).all() == ["typed so far"]
        _check_counters(session, campaign_id)
    monkeypatch.undo()
    assert _submit_and_next(engine, view, alice).next_unit is not None  # and it can be redone


def test_a_slot_given_back_out_of_order_is_leased_again(any_engine: Engine) -> None:
    campaign_id, (alice, bob, carol, dave) = build_campaign(
        any_engine, items=1, overlap=3, annotators=4
    )
    with session_scope(any_engine) as session:
        session.exec(select(Unit).where(Unit.id == 2)).one().flagged = True  # one unit left
    held = {name: _lease(any_engine, campaign_id, who) for name, who in [("a", alice), ("b", bob)]}
    with session_scope(any_engine) as session:  # slot 0 free again, slot 1 still leased
        queue.skip(session, held["a"].assignment_id, alice, "not my field")
    for annotator in (carol, dave):
        assert _lease(any_engine, campaign_id, annotator).unit_id == held["b"].unit_id
    with Session(any_engine) as session:
        live = session.exec(
            select(Assignment.annotator_id, Assignment.slot).where(Assignment.status == "leased")
        ).all()
        assert sorted(live) == sorted([(bob, 1), (carol, 0), (dave, 2)])
        _check_counters(session, campaign_id)


def test_expired_lease_returns_to_the_pool(engine: Engine) -> None:
    campaign_id, (alice, bob) = build_campaign(engine, items=1, overlap=1, lease_seconds=60)
    with session_scope(engine) as session:
        session.exec(select(Unit).where(Unit.id == 2)).one().flagged = True  # one unit left
    held = _lease(engine, campaign_id, alice)
    assert _lease(engine, campaign_id, bob) is None  # the only slot is held
    later = utcnow() + timedelta(seconds=61)
    taken = _lease(engine, campaign_id, bob, now=later)
    assert taken is not None and taken.unit_id == held.unit_id
    with pytest.raises(queue.LeaseLost, match="draft is kept"):
        _submit(engine, held, alice)
    with Session(engine) as session:
        statuses = dict(session.exec(select(Assignment.annotator_id, Assignment.status)).all())
        assert statuses == {alice: "expired", bob: "leased"}
        _check_counters(session, campaign_id)


def test_expired_lease_with_a_draft_comes_back_when_its_slot_is_free(engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(engine, items=1, overlap=1, lease_seconds=60)
    held = _lease(engine, campaign_id, alice)
    with session_scope(engine) as session:
        queue.save_draft(session, held.assignment_id, alice, score=4, rationale="half written")
    later = utcnow() + timedelta(minutes=30)
    with session_scope(engine) as session:
        assert queue.expire_leases(session, campaign_id, later) == 1
    back = _lease(engine, campaign_id, alice, now=later)
    assert back.assignment_id == held.assignment_id
    assert back.draft == queue.DraftView(4.0, None, "half written", 0.0)
    assert back.expires_at > later
    with Session(engine) as session:
        _check_counters(session, campaign_id)


def test_skip_needs_a_reason_and_gives_the_unit_to_others(engine: Engine) -> None:
    campaign_id, (alice, bob) = build_campaign(engine, items=1, overlap=1)
    held = _lease(engine, campaign_id, alice)
    with pytest.raises(queue.AnswerInvalid, match="say why"), session_scope(engine) as session:
        queue.skip(session, held.assignment_id, alice, "  ")
    with session_scope(engine) as session:
        queue.skip(session, held.assignment_id, alice, "outside my expertise")
    with pytest.raises(queue.AssignmentNotFound, match="you gave this unit back"):
        _submit(engine, held, alice)
    other = _lease(engine, campaign_id, alice)
    assert other.unit_id != held.unit_id  # never again to alice
    assert _lease(engine, campaign_id, bob).unit_id == held.unit_id
    with Session(engine) as session:
        row = session.get(Assignment, held.assignment_id)
        assert (row.status, row.skip_reason) == ("skipped", "outside my expertise")
        _check_counters(session, campaign_id)


def test_flag_takes_the_unit_out_of_the_queue_for_reviewers(engine: Engine) -> None:
    campaign_id, (alice, bob) = build_campaign(engine, items=1, overlap=2)
    held = _lease(engine, campaign_id, alice)
    with session_scope(engine) as session:
        queue.flag(session, held.assignment_id, alice, "image does not load")
    for annotator in (alice, bob):  # each is served the other unit, then nothing
        view = _lease(engine, campaign_id, annotator)
        assert view is not None and view.unit_id != held.unit_id
        _submit(engine, view, annotator)
        assert _lease(engine, campaign_id, annotator) is None
    with Session(engine) as session:
        flag_row = session.exec(select(Flag)).one()
        assert (flag_row.unit_id, flag_row.user_id, flag_row.reason) == (
            held.unit_id,
            alice,
            "image does not load",
        )
        assert session.get(Unit, held.unit_id).flagged
        actions = session.exec(select(AuditEvent.action).order_by(col(AuditEvent.id))).all()
        assert [a for a in actions if a.startswith("unit.")] == ["unit.flag"]
        _check_counters(session, campaign_id)


def test_paused_campaign_gives_no_new_units(engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(engine)
    with session_scope(engine) as session:
        session.get(Campaign, campaign_id).status = "paused"
    assert _lease(engine, campaign_id, alice) is None


def test_draft_is_saved_and_restored_in_a_new_session(engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(engine, protocol="pairwise")
    view = _lease(engine, campaign_id, alice)
    with session_scope(engine) as session:
        queue.save_draft(
            session,
            view.assignment_id,
            alice,
            preference="B",
            rationale="B 更完整",
            active_seconds=12.5,
        )
    with session_scope(engine) as session:  # second save updates the same row
        queue.save_draft(
            session,
            view.assignment_id,
            alice,
            preference="tie",
            rationale="两者都对",
            active_seconds=20,
        )
    restored = _lease(engine, campaign_id, alice)
    assert restored.assignment_id == view.assignment_id
    assert restored.draft == queue.DraftView(None, "tie", "两者都对", 20.0)
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Draft)).one() == 1
    _submit(engine, restored, alice, preference="tie")
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Draft)).one() == 0


def test_draft_of_someone_elses_assignment_is_refused(engine: Engine) -> None:
    campaign_id, (alice, bob) = build_campaign(engine)
    view = _lease(engine, campaign_id, alice)
    with pytest.raises(queue.AssignmentNotFound), session_scope(engine) as session:
        queue.save_draft(session, view.assignment_id, bob, rationale="not mine")
    with pytest.raises(queue.AssignmentNotFound), session_scope(engine) as session:
        queue.submit(session, view.assignment_id, bob, score=5, rationale=RATIONALE)


def test_submit_and_next_of_an_assignment_not_the_callers_stores_and_leases_nothing(
    engine: Engine,
) -> None:
    """The page's submit (one transaction: store, close, lease next) given an assignment id that
    is another annotator's, or no assignment at all, refuses it by name and rolls back: no answer
    on that unit, no lease for the caller, the other annotator's lease untouched."""
    campaign_id, (alice, bob) = build_campaign(engine)
    view = _lease(engine, campaign_id, alice)
    for assignment_id in (view.assignment_id, view.assignment_id + 1000):
        with (
            pytest.raises(queue.AssignmentNotFound, match=f"no assignment with id {assignment_id}"),
            session_scope(engine) as session,
        ):
            queue.submit_and_next(session, assignment_id, bob, score=5, rationale=RATIONALE)
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Annotation)).one() == 0
        rows = session.exec(select(Assignment.id, Assignment.annotator_id, Assignment.status))
        assert rows.all() == [(view.assignment_id, alice, "leased")]
        _check_counters(session, campaign_id)


def test_submit_refuses_invalid_answers_with_a_clear_message(engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(engine, rationale_min=20)
    view = _lease(engine, campaign_id, alice)
    cases = [
        ({"score": None}, r"choose a score \(integers 1–10\)"),
        ({"score": 11}, "score` is 11, but alignmmbench scores are integers 1–10"),
        ({"rationale": "too short"}, "the rationale has 9 characters; .* at least 20"),
    ]
    for answer, message in cases:
        with pytest.raises(queue.AnswerInvalid, match=message):
            _submit(engine, view, alice, **answer)
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Annotation)).one() == 0


def test_pairwise_shown_order_is_random_per_annotator_and_mapped_back(engine: Engine) -> None:
    campaign_id, annotators = build_campaign(
        engine, items=1, protocol="pairwise", overlap=12, annotators=12
    )
    orders = Counter()
    for annotator in annotators:
        view = _lease(engine, campaign_id, annotator)
        orders[view.shown_order] += 1
        shown_ids = [response.response_id for response in view.responses]
        canonical = ["item-0/left", "item-0/right"]
        assert shown_ids == (canonical if view.shown_order == "AB" else canonical[::-1])
        stored = _submit(engine, view, annotator, preference="A")  # prefers what was shown first
        assert stored.shown_order == view.shown_order
        assert stored.preference == ("A" if view.shown_order == "AB" else "B")
    assert set(orders) == {"AB", "BA"}  # 2 ** -11 chance of a false failure per run


def test_previous_answer_walks_back_the_units_in_the_order_they_were_given(
    engine: Engine,
) -> None:
    """The Annotate page's Previous: by assignment (the annotator's way through the campaign),
    the live revision of each, never another annotator's answer."""
    campaign_id, (alice, bob) = build_campaign(engine)
    answers = []
    for score in (3, 5, 7):
        view = _lease(engine, campaign_id, alice)
        answers.append(_submit(engine, view, alice, score=score))
    _submit(engine, _lease(engine, campaign_id, bob), bob, score=9)
    current = _lease(engine, campaign_id, alice)  # leased, not answered
    with session_scope(engine) as session:
        revised = queue.revise(session, answers[0].id, alice, score=4, rationale=RATIONALE)
        first_id, first_assignment = revised.id, revised.assignment_id
    with Session(engine) as session:
        walk, before = [], current.assignment_id
        while (earlier := queue.previous_answer(session, campaign_id, alice, before)) is not None:
            walk.append(earlier)
            before = session.get(Annotation, earlier).assignment_id
        assert walk == [answers[2].id, answers[1].id, first_id]  # the revision, not revision 1
        assert queue.previous_answer(session, campaign_id, alice) == answers[2].id
        assert queue.previous_answer(session, campaign_id, alice, first_assignment) is None
        bobs = queue.previous_answer(session, campaign_id, bob)
        assert bobs is not None and session.get(Annotation, bobs).annotator_id == bob


def test_revision_keeps_the_old_answer_and_is_audited(engine: Engine) -> None:
    campaign_id, (alice, bob) = build_campaign(engine, protocol="pairwise")
    view = _lease(engine, campaign_id, alice)
    first = _submit(engine, view, alice, preference="A", seconds=30)
    with pytest.raises(queue.AssignmentNotFound), session_scope(engine) as session:
        queue.revise(session, first.id, bob, preference="B", rationale=RATIONALE)
    with session_scope(engine) as session:
        second = queue.revise(
            session,
            first.id,
            alice,
            preference="B",
            rationale=RATIONALE + " Changed.",
            extra_seconds=5,
        )
    with Session(engine) as session:
        rows = session.exec(select(Annotation).order_by(Annotation.revision)).all()
        assert [(a.revision, a.is_live) for a in rows] == [(1, False), (2, True)]
        assert rows[1].preference == ("B" if view.shown_order == "AB" else "A")
        assert rows[1].seconds == 35
        event = session.exec(
            select(AuditEvent).where(AuditEvent.action == "annotation.revise")
        ).one()
        assert (event.actor_id, event.entity_id) == (alice, str(second.id))
        assert event.detail["before"]["rationale"] == RATIONALE
        mine = queue.my_annotations(session, campaign_id, alice)
        assert [(m.annotation_id, m.revision, m.preference_shown) for m in mine] == [
            (second.id, 2, "B")
        ]
        assert queue.my_annotations(session, campaign_id, bob) == []
        with pytest.raises(queue.AssignmentNotFound):
            queue.my_annotation_view(session, second.id, bob)
        unit_view, own = queue.my_annotation_view(session, second.id, alice)
        assert own.rationale.endswith("Changed.") and unit_view.unit_id == view.unit_id


def test_unit_view_is_blind_to_other_humans_and_judges(engine: Engine) -> None:
    campaign_id, (alice, bob) = build_campaign(
        engine, items=1, overlap=2, show_others_after_submit=True
    )
    with session_scope(engine) as session:
        session.get(Unit, 2).flagged = True  # both annotators get unit 1
    bob_view = _lease(engine, campaign_id, bob)
    _submit(engine, bob_view, bob, score=3, rationale="SECRET-HUMAN-RATIONALE from bob")
    with session_scope(engine) as session:
        response = session.get(Response, 1)
        session.add(
            Judgement(
                judge="gpt-4",
                protocol="alignmmbench",
                unit_key=f"r:{response.response_id}",
                response_pk=response.id,
                score=9,
                rationale="SECRET-JUDGE-RATIONALE",
                raw_output="SECRET-JUDGE-RAW",
            )
        )
    alice_view = _lease(engine, campaign_id, alice)
    assert alice_view.unit_id == bob_view.unit_id
    assert "SECRET" not in repr(alice_view)
    with Session(engine) as session:
        assert queue.others_answers(session, alice_view.unit_id, alice) == []  # not yet submitted
    _submit(engine, alice_view, alice)
    with Session(engine) as session:
        others = queue.others_answers(session, alice_view.unit_id, alice)
        assert others == [queue.OtherAnswer(3.0, None, "SECRET-HUMAN-RATIONALE from bob")]
        session.get(Campaign, campaign_id).show_others_after_submit = False
        assert queue.others_answers(session, alice_view.unit_id, alice) == []


def test_the_pages_submit_step_stores_leases_and_shows_the_others_in_one_call(
    engine: Engine,
) -> None:
    campaign_id, (alice, bob) = build_campaign(
        engine, items=1, overlap=2, show_others_after_submit=True
    )
    with session_scope(engine) as session:
        session.get(Unit, 2).flagged = True  # both annotators get unit 1, and nothing after it
    bob_view = _lease(engine, campaign_id, bob)
    _submit(engine, bob_view, bob, score=3, rationale="bob's reasons for three")
    alice_view = _lease(engine, campaign_id, alice)
    assert alice_view.unit_id == bob_view.unit_id
    step, others = queue.submit_step(
        engine, alice_view.assignment_id, alice, score=8, rationale=RATIONALE, seconds=12
    )
    assert others == [queue.OtherAnswer(3.0, None, "bob's reasons for three")]
    assert (step.unit_id, step.revision, step.next_unit) == (alice_view.unit_id, 1, None)
    with Session(engine) as session:  # committed
        stored = session.get(Annotation, step.annotation_id)
        assert (stored.annotator_id, stored.score, stored.seconds) == (alice, 8, 12)
        _check_counters(session, campaign_id)


def test_unit_view_hides_the_reference_when_the_campaign_does(engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(engine, show_reference=False)
    view = _lease(engine, campaign_id, alice)
    assert view.reference is None and view.question.startswith("How many cats")
    with session_scope(engine) as session:
        session.get(Campaign, campaign_id).show_reference = True
    assert _lease(engine, campaign_id, alice).reference == "Three cats."


def test_progress_counts_own_work_and_campaign_units(engine: Engine) -> None:
    campaign_id, (alice, bob) = build_campaign(engine, items=2, overlap=1)
    view = _lease(engine, campaign_id, alice)
    _submit(engine, view, alice)
    skipped = _lease(engine, campaign_id, alice)
    with session_scope(engine) as session:
        queue.skip(session, skipped.assignment_id, alice, "not sure")
        progress = queue.annotator_progress(session, campaign_id, alice)
    assert progress == queue.AnnotatorProgress(
        my_submitted=1, my_skipped=1, units_total=4, units_complete=1, units_flagged=0
    )
    answered = _lease(engine, campaign_id, alice)
    _submit(engine, answered, alice)
    with session_scope(engine) as session:
        answer = session.exec(
            select(Annotation).where(Annotation.assignment_id == answered.assignment_id)
        ).one()
        queue.reject_answer(session, stored_id(answer), comment="Not what the image shows.")
        progress = queue.annotator_progress(session, campaign_id, alice)
    assert (progress.my_submitted, progress.my_rejected) == (1, 1)  # out of the count, told


def test_score_campaign_uses_its_own_continuous_scale(engine: Engine) -> None:
    campaign_id, (alice, _) = build_campaign(engine, protocol="score", scale=(0.0, 1.0, None))
    view = _lease(engine, campaign_id, alice)
    assert view.protocol.describe_scale() == "any number from 0 to 1"
    with pytest.raises(queue.AnswerInvalid, match="score` is 1.5, but score scores are any number"):
        _submit(engine, view, alice, score=1.5)
    assert _submit(engine, view, alice, score=0.35).score == 0.35


def test_skips_and_first_submissions_are_audited_once(any_engine: Engine) -> None:
    """The Audit trail had no skips and no first submissions (issue 25 B): a first answer is an
    annotation.submit event, on either submit path; a double click adds none, an edit is the
    revision's own event; a skip is a unit.skip event with its reason."""
    from data.storage.audit import list_events

    campaign_id, (alice, bob) = build_campaign(any_engine, items=2, overlap=1)  # four units
    first = _lease(any_engine, campaign_id, alice)
    step = _submit_and_next(any_engine, first, alice, score=9)  # the Core path
    _submit_and_next(any_engine, first, alice, score=9)  # a double click
    second = step.next_unit
    with session_scope(any_engine) as session:
        queue.skip(session, second.assignment_id, alice, "outside my expertise")
    third = _lease(any_engine, campaign_id, bob)
    with session_scope(any_engine) as session:
        session.get(Assignment, third.assignment_id)  # loaded: the ORM path stores it
        stored = queue.submit(session, third.assignment_id, bob, score=4, rationale=RATIONALE)
        bobs = stored.id
    with session_scope(any_engine) as session:
        events = [
            (e.action, e.actor_id, e.entity_id, e.detail)
            for e in reversed(list_events(session, entity="annotation") + list_events(
                session, action_prefix="unit.skip"))
        ]  # fmt: skip
    assert sorted(events, key=lambda e: e[0]) == [
        ("annotation.submit", alice, str(step.annotation_id),
         {"unit_id": first.unit_id, "campaign_id": campaign_id}),
        ("annotation.submit", bob, str(bobs),
         {"unit_id": third.unit_id, "campaign_id": campaign_id}),
        ("unit.skip", alice, str(second.unit_id),
         {"reason": "outside my expertise", "campaign_id": campaign_id}),
    ]  # fmt: skip


def test_a_disabled_account_stores_leases_and_gives_back_nothing(any_engine: Engine) -> None:
    """The queue reads the account on every change it makes: a page opened before an admin
    disabled the account (its callbacks run before the page checks the login) changes nothing."""
    campaign_id, (ann, bob) = build_campaign(any_engine, items=2, overlap=1)
    view = _lease(any_engine, campaign_id, ann)
    stored = _submit(any_engine, _lease(any_engine, campaign_id, bob), bob)
    with session_scope(any_engine) as session:
        for account in (ann, bob):
            set_active(session, session.get(User, account).name, False, actor_id=None)  # type: ignore[union-attr]
    answer = {"score": 7.0, "rationale": RATIONALE}
    attempts = {
        "submit": lambda s: queue.submit(s, view.assignment_id, ann, **answer),
        "save_draft": lambda s: queue.save_draft(s, view.assignment_id, ann, **answer),
        "skip": lambda s: queue.skip(s, view.assignment_id, ann, "not my field"),
        "flag": lambda s: queue.flag(s, view.assignment_id, ann, "broken image"),
        "next_unit": lambda s: queue.next_unit(s, campaign_id, ann),
        "revise": lambda s: queue.revise(s, stored_id(stored), bob, **answer),
    }
    for what, attempt in attempts.items():
        with pytest.raises(queue.AccountDisabled, match="disabled"), session_scope(any_engine) as s:
            attempt(s)
        with session_scope(any_engine) as session:
            assignment = session.get(Assignment, view.assignment_id)
            assert assignment is not None and assignment.status == "leased", what
            assert session.exec(select(func.count()).select_from(Annotation)).one() == 1, what
            assert session.exec(select(func.count()).select_from(Draft)).one() == 0, what
            assert session.exec(select(func.count()).select_from(Flag)).one() == 0, what
