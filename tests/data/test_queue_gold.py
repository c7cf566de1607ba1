"""Gold units and qualification in the queue (SQLite and PostgreSQL): gold takes no K slot, a
qualifying annotator gets gold only, a failing one is held until released, the payload is blind,
feedback only when the campaign gives it, and gold never reaches the frame, SFT or progress."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from data import queue
from data.io.importers.errors import InvalidFile
from data.queue.gold import ADMIN_HELD_MESSAGE, HELD_MESSAGE, RETIRED_MESSAGE
from data.readmodels.critic_io import annotated_units, campaign_units
from data.readmodels.frames import campaign_judgement_frame
from data.services.adjudication import adjudication_queue
from data.services.campaign_progress import campaign_progress
from data.services.gold import (
    GoldEntry,
    GoldError,
    attach_gold,
    change_standing,
    gold_accuracy,
    import_gold,
    set_gold_settings,
    standings,
)
from data.storage.campaign_lookup import unit_keys
from data.storage.engine import session_scope
from schemas.tables import (
    GOLD_OVERLAP,
    Assignment,
    AuditEvent,
    Campaign,
    GoldAnswer,
    Unit,
    User,
)
from tests.data.test_queue import RATIONALE, _check_counters, build_campaign


def _make_gold(
    engine: Engine, campaign_id: int, count: int, *, score: float = 7, preference: str = "A"
) -> list[int]:
    """Make the campaign's last ``count`` units gold (score or preference by protocol)."""
    with session_scope(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        assert campaign is not None
        keys = unit_keys(session, campaign_id)[-count:]
        pairwise = campaign.protocol == "pairwise"
        entries = [
            GoldEntry(
                key,
                None if pairwise else score,
                preference if pairwise else None,
                f"because {n}",
            )
            for n, (_, key, _, _) in enumerate(keys)
        ]
        attach_gold(session, campaign, entries)
        return [unit_id for unit_id, _, _, _ in keys]


def _settings(engine: Engine, campaign_id: int, **settings: object) -> None:
    with session_scope(engine) as session:
        set_gold_settings(session, campaign_id, **settings)  # type: ignore[arg-type]


def _next(engine: Engine, campaign_id: int, annotator: int) -> queue.UnitView | None:
    with session_scope(engine) as session:
        return queue.next_unit(session, campaign_id, annotator)


def _answer(view: queue.UnitView, **answer: object) -> dict[str, object]:
    answer.setdefault("rationale", RATIONALE)
    if view.protocol.is_pointwise:
        answer.setdefault("score", 7)
    else:
        answer.setdefault("preference", "A")
    return answer


def _submit_next(
    engine: Engine, view: queue.UnitView, annotator: int, **answer: object
) -> queue.SubmitStep:
    with session_scope(engine) as session:
        return queue.submit_and_next(
            session,
            view.assignment_id,
            annotator,
            **_answer(view, **answer),  # type: ignore[arg-type]
        )


def test_gold_units_are_never_served_by_the_real_queue_nor_take_a_k_slot(
    any_engine: Engine,
) -> None:
    campaign_id, annotators = build_campaign(any_engine, items=3, overlap=1, annotators=3)
    gold = _make_gold(any_engine, campaign_id, 2)
    served = []
    for annotator in annotators:
        while (view := _next(any_engine, campaign_id, annotator)) is not None:
            served.append(view.unit_id)
            _submit_next(any_engine, view, annotator)
    assert sorted(served) == sorted(set(served)) and not set(served) & set(gold)
    assert len(served) == 4  # the 4 real units, K = 1 each
    # Qualification on: every annotator gets the same gold units, beyond K = 1.
    _settings(any_engine, campaign_id, qualification_gold=2, qualification_accuracy=0.5)
    with session_scope(any_engine) as session:
        newcomers = [User(name=f"new{n}", password_hash="-", role="annotator") for n in range(3)]
        session.add_all(newcomers)
        session.flush()
        ids = [user.id for user in newcomers]
    for annotator in ids:
        for _ in range(2):
            view = _next(any_engine, campaign_id, annotator)
            assert view is not None and view.unit_id in gold
            _submit_next(any_engine, view, annotator)
    with session_scope(any_engine) as session:
        on_gold = session.exec(select(Assignment).where(col(Assignment.unit_id).in_(gold))).all()
        assert len(on_gold) == 6 and {a.overlap for a in on_gold} == {GOLD_OVERLAP}
        assert {a.slot for a in on_gold} == set(ids)
        _check_counters(session, campaign_id)
        progress = campaign_progress(session, campaign_id)
    assert (progress.units, progress.units_complete, progress.gold_units) == (4, 4, 2)
    assert progress.annotations == 4  # gold answers are not the campaign's work


def test_a_qualifying_annotator_gets_gold_only_then_real_units(any_engine: Engine) -> None:
    campaign_id, (alice,) = build_campaign(any_engine, items=3, overlap=2, annotators=1)
    gold = _make_gold(any_engine, campaign_id, 3, score=7)
    _settings(any_engine, campaign_id, qualification_gold=3, qualification_accuracy=0.6)
    view = _next(any_engine, campaign_id, alice)
    seen = []
    for score in (7, 8, 2):  # exact, within one step, far off: 2 of 3 right ≥ 0.6
        assert view is not None and view.unit_id in gold
        seen.append(view.unit_id)
        step = _submit_next(any_engine, view, alice, score=score)
        view = step.next_unit
    assert sorted(seen) == sorted(gold)
    assert view is not None and view.unit_id not in gold  # qualified: real work
    with session_scope(any_engine) as session:
        [row] = standings(session, campaign_id)
        events = session.exec(
            select(AuditEvent).where(AuditEvent.action == "standing.qualified")
        ).all()
    assert (row.status, row.decided_by) == ("qualified", None)
    assert row.accuracy == pytest.approx(2 / 3)
    assert len(events) == 1 and events[0].detail["right"] == 2


def test_a_failing_annotator_is_held_until_an_admin_releases_them(any_engine: Engine) -> None:
    campaign_id, (alice, bob) = build_campaign(any_engine, items=3, overlap=1, annotators=2)
    gold = _make_gold(any_engine, campaign_id, 2, score=7)
    _settings(any_engine, campaign_id, qualification_gold=2, qualification_accuracy=1.0)
    view = _next(any_engine, campaign_id, alice)
    assert view is not None
    step = _submit_next(any_engine, view, alice, score=1)
    assert step.next_unit is not None and step.next_unit.unit_id in gold
    step = _submit_next(any_engine, step.next_unit, alice, score=7)
    assert step.next_unit is None  # held: the answer is stored, nothing more is served
    with pytest.raises(queue.AnnotatorHeld) as held:
        _next(any_engine, campaign_id, alice)
    assert str(held.value) == HELD_MESSAGE and held.value.status == "held"
    with session_scope(any_engine) as session:
        (row,) = standings(session, campaign_id, statuses=("held",))
        assert (row.annotator, row.by_queue, row.why) == (
            "ann0",
            True,
            "failed qualification (50% right)",
        )
        with pytest.raises(GoldError):
            change_standing(session, campaign_id, "ann1", "release")  # bob is not held
        admin = User(name="boss", password_hash="-", role="admin")
        session.add(admin)
        session.flush()
        change_standing(session, campaign_id, "ann0", "release", actor_id=admin.id)
    view = _next(any_engine, campaign_id, alice)
    assert view is not None and view.unit_id not in gold  # released: real units
    with session_scope(any_engine) as session:
        change_standing(session, campaign_id, "ann0", "retire")
        lease = session.get(Assignment, view.assignment_id)
        assert lease is not None and lease.status == "released"  # the slot went back
        _check_counters(session, campaign_id)
    with pytest.raises(queue.AnnotatorHeld) as retired:
        _next(any_engine, campaign_id, alice)
    assert str(retired.value) == RETIRED_MESSAGE
    assert _next(any_engine, campaign_id, bob) is not None  # others are not affected


def test_an_admin_hold_says_an_admin_held_them_and_why_even_without_an_account(
    any_engine: Engine,
) -> None:
    """The command line holds with no account: that is an admin's hold, not a failed
    qualification, for the annotator, the admin's list and the audit trail alike."""
    campaign_id, (alice, bob) = build_campaign(any_engine, items=3, overlap=1, annotators=2)
    with session_scope(any_engine) as session:
        assert change_standing(session, campaign_id, "ann0", "hold", reason="  ") == "held"
    with pytest.raises(queue.AnnotatorHeld) as held:
        _next(any_engine, campaign_id, alice)
    assert str(held.value) == ADMIN_HELD_MESSAGE != HELD_MESSAGE
    with session_scope(any_engine) as session:
        (row,) = standings(session, campaign_id)
        assert (row.by_queue, row.decided_by, row.reason, row.why) == (
            False,
            None,
            None,
            "held by an admin (command line)",
        )
        change_standing(session, campaign_id, "ann0", "release")
        admin = User(name="boss", password_hash="-", role="admin")
        session.add(admin)
        session.flush()
        change_standing(
            session, campaign_id, "ann1", "hold", actor_id=admin.id, reason="answers in 1 s"
        )
        with pytest.raises(GoldError, match="at most 500"):
            change_standing(session, campaign_id, "ann0", "hold", reason="x" * 501)
    assert _next(any_engine, campaign_id, alice) is not None  # released
    with pytest.raises(queue.AnnotatorHeld) as held:
        _next(any_engine, campaign_id, bob)
    assert str(held.value) == f"{ADMIN_HELD_MESSAGE} Their reason: answers in 1 s"
    with session_scope(any_engine) as session:
        rows = {r.annotator: r for r in standings(session, campaign_id)}
        assert rows["ann1"].why == "held by an admin (boss): answers in 1 s"
        assert rows["ann0"].why == "released by an admin (command line)"
        events = session.exec(select(AuditEvent).where(AuditEvent.action == "standing.held")).all()
        details = sorted((e.detail["by_queue"], e.detail["reason"] or "") for e in events)
        assert details == [(False, ""), (False, "answers in 1 s")]


def test_gold_units_are_mixed_in_at_the_rate_one_per_block_never_twice(engine: Engine) -> None:
    campaign_id, (alice,) = build_campaign(engine, items=6, overlap=1, annotators=1)
    gold = set(_make_gold(engine, campaign_id, 4))
    _settings(engine, campaign_id, gold_rate=0.5)  # one in every 2 leases
    served = []
    while (view := _next(engine, campaign_id, alice)) is not None:
        served.append(view.unit_id)
        _submit_next(engine, view, alice)
    assert len(served) == len(set(served)) == 12  # every unit once, the 4 gold among them
    blocks = [served[i : i + 2] for i in range(0, 8, 2)]
    assert all(len(set(block) & gold) == 1 for block in blocks)


def test_the_payload_is_the_same_for_gold_and_real_units_and_feedback_only_when_on(
    any_engine: Engine,
) -> None:
    campaign_id, (alice, bob) = build_campaign(
        any_engine, items=2, protocol="pairwise", overlap=2, annotators=2
    )
    [gold_unit] = _make_gold(any_engine, campaign_id, 1, preference="tie")
    _settings(any_engine, campaign_id, qualification_gold=1, qualification_accuracy=0.0)
    gold_view = _next(any_engine, campaign_id, alice)
    assert gold_view is not None and gold_view.unit_id == gold_unit
    step = _submit_next(any_engine, gold_view, alice, preference="tie")
    assert step.feedback is None  # feedback off: nothing of the known answer comes back
    real_view = step.next_unit
    assert real_view is not None and real_view.unit_id != gold_unit
    gold_fields, real_fields = dataclasses.asdict(gold_view), dataclasses.asdict(real_view)
    assert gold_fields.keys() == real_fields.keys()
    for name in gold_fields:
        assert type(gold_fields[name]) is type(real_fields[name]), name
    assert "gold" not in json.dumps(gold_fields, default=str).lower()
    step = _submit_next(any_engine, real_view, alice)
    assert step.feedback is None
    _settings(any_engine, campaign_id, gold_feedback=True)
    view = _next(any_engine, campaign_id, bob)
    assert view is not None and view.unit_id == gold_unit
    step = _submit_next(any_engine, view, bob, preference="A")
    assert step.feedback is not None
    assert (step.feedback.expected_preference_shown, step.feedback.agrees) == ("tie", False)
    assert step.feedback.explanation == "because 0"
    assert step.next_unit is not None
    real_step = _submit_next(any_engine, step.next_unit, bob)
    assert real_step.feedback is None  # a real unit never has feedback


def test_feedback_names_the_expected_preference_in_the_order_shown(engine: Engine) -> None:
    campaign_id, annotators = build_campaign(
        engine, items=1, protocol="pairwise", overlap=1, annotators=12
    )
    [gold_unit] = _make_gold(engine, campaign_id, 1, preference="A")
    _settings(engine, campaign_id, qualification_gold=1, gold_feedback=True)
    orders = set()
    for annotator in annotators:
        view = _next(engine, campaign_id, annotator)
        assert view is not None and view.unit_id == gold_unit
        step = _submit_next(engine, view, annotator, preference="A")
        assert step.feedback is not None
        expected = "A" if view.shown_order == "AB" else "B"
        assert step.feedback.expected_preference_shown == expected
        assert step.feedback.agrees is (view.shown_order == "AB")
        orders.add(view.shown_order)
    assert orders == {"AB", "BA"}


def test_gold_never_reaches_the_frame_the_sft_reader_nor_the_disagreements(
    any_engine: Engine,
) -> None:
    campaign_id, annotators = build_campaign(any_engine, items=3, overlap=2, annotators=2)
    gold = _make_gold(any_engine, campaign_id, 2)
    _settings(any_engine, campaign_id, qualification_gold=2)
    for n, annotator in enumerate(annotators):
        while (view := _next(any_engine, campaign_id, annotator)) is not None:
            _submit_next(any_engine, view, annotator, score=2 + 5 * n)  # they disagree
    with session_scope(any_engine) as session:
        gold_rows = session.exec(
            select(Unit).where(Unit.campaign_id == campaign_id, col(Unit.gold))
        ).all()
        assert {u.id for u in gold_rows} == set(gold) and all(u.n_submitted == 2 for u in gold_rows)
        frame = campaign_judgement_frame(session, campaign_id)
        keys = {key for unit_id, key, _, _ in unit_keys(session, campaign_id) if unit_id in gold}
        assert len(frame) == 8 and not set(frame["unit"]) & keys
        assert not {u.unit_id for u in campaign_units(session, campaign_id)} & set(gold)
        assert len(annotated_units(session, campaign_id)) == 4
        listed = {entry.unit_id for entry in adjudication_queue(session, campaign_id)}
        assert len(listed) == 4 and not listed & set(gold)
        accuracy = {row.annotator: row for row in gold_accuracy(session, campaign_id)}
    assert (accuracy["ann0"].answered, accuracy["ann0"].exact, accuracy["ann0"].within_one) == (
        2,
        0,
        0,
    )
    assert (accuracy["ann1"].exact, accuracy["ann1"].within_one) == (2, 2)
    assert accuracy["ann1"].exact_low == pytest.approx(0.3424, abs=1e-4)  # Wilson, 2 of 2
    assert accuracy["ann1"].standing == "qualified"
    # one text for the Campaigns page and `gold accuracy`
    assert (accuracy["ann1"].exact_text, accuracy["ann0"].within_one_text) == (
        "100% [34%, 100%]",
        "0% [0%, 66%]",
    )


def test_the_gold_file_names_every_bad_line_and_field_and_writes_nothing(
    engine: Engine, tmp_path: Path
) -> None:
    campaign_id, (alice,) = build_campaign(engine, items=2, overlap=1, annotators=1)
    with session_scope(engine) as session:
        keys = [key for _, key, _, _ in unit_keys(session, campaign_id)]
    served = _next(engine, campaign_id, alice)
    assert served is not None
    with session_scope(engine) as session:
        served_key = dict((u, k) for u, k, _, _ in unit_keys(session, campaign_id))[served.unit_id]
    free = [key for key in keys if key != served_key]
    path = tmp_path / "gold.jsonl"
    lines = [
        {"unit": free[0], "score": 7, "explanation": "fine"},
        {"unit": free[1], "score": 11},
        {"unit": "r:nope", "score": 3},
        {"unit": free[2], "preference": "A"},
        {"unit": served_key, "score": 4},
        {"unit": free[0], "score": 5},
        {"unit": free[2], "score": 5, "why": "x"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n{oops\n")
    with pytest.raises(InvalidFile) as error, session_scope(engine) as session:
        import_gold(session, path, campaign_id)
    where = [(p.location, p.field) for p in error.value.problems]
    assert where == [
        (2, "score"),
        (3, "unit"),
        (4, "preference"),
        (5, "unit"),
        (6, "unit"),
        (7, "why"),
        (8, None),
    ]
    assert str(error.value).splitlines()[0].startswith(f"{path}:2: ")
    path.write_text(json.dumps({"unit": free[0], "score": 7, "explanation": 5}) + "\n")
    with pytest.raises(InvalidFile) as error, session_scope(engine) as session:
        import_gold(session, path, campaign_id)
    assert "`explanation` is 5 (int), but it must be text: quote it" in str(error.value)
    with session_scope(engine) as session:
        assert session.exec(select(GoldAnswer)).all() == []
        assert not session.exec(select(Unit).where(col(Unit.gold))).all()
    path.write_text(json.dumps(lines[0]) + "\n")
    with session_scope(engine) as session:
        done = import_gold(session, path, campaign_id)
        assert (done.added, done.gold_units) == (1, 1)
        # in the library's words, true on the Campaigns page and at the command line alike
        with pytest.raises(GoldError, match=r"has 1: attach more known answers") as refused:
            set_gold_settings(session, campaign_id, qualification_gold=2)
        assert "critiquelab" not in str(refused.value) and "--" not in str(refused.value)
        with pytest.raises(GoldError, match="gold rate"):
            set_gold_settings(session, campaign_id, gold_rate=0.7)
