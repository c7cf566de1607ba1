"""Adjudication queue, unit review, append-only rulings and flag resolution."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from admin_factory import add_campaign, add_dataset, add_people, answer, units_of
from sqlmodel import select

from data.queue import flag, next_unit
from data.readmodels.frames import campaign_reference_overrides
from data.services.adjudication import (
    AdjudicationError,
    adjudicate,
    adjudication_queue,
    unit_review,
)
from data.services.flags import list_flags, resolve_flag
from data.services.judgements import insert_judgements
from data.services.roles import PermissionDenied
from data.storage.audit import list_events
from data.storage.engine import session_scope
from schemas.protocols import InvalidJudgement
from schemas.tables import Adjudication, Judgement, Unit


@pytest.fixture
def world(engine):
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=2, models=("m1", "m2"))
        campaign = add_campaign(session)
    return engine, people, campaign.id


def test_queue_puts_the_widest_score_spread_first_and_hides_single_answers(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        units = units_of(session, campaign_id)
        for index, scores in enumerate([(5, 6), (2, 9, 5), (7, 7, 7), (8,)]):
            for name, score in zip(("ann", "bob", "cat"), scores, strict=False):
                answer(session, units[index], people[name], score=score)
        queue = adjudication_queue(session, campaign_id)
    assert [(entry.unit_id, entry.disagreement, entry.summary) for entry in queue] == [
        (units[1].id, 7.0, "2, 5, 9"),
        (units[0].id, 1.0, "5, 6"),
        (units[2].id, 0.0, "7, 7, 7"),
    ]


def test_queue_ranks_split_preferences_first(engine):
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=1, models=("m1", "m2", "m3"))
        campaign = add_campaign(session, protocol="pairwise")
        units = units_of(session, campaign.id)
        for index, labels in enumerate([("A", "A", "A"), ("A", "B", "tie"), ("A", "A", "B")]):
            for name, label in zip(("ann", "bob", "cat"), labels, strict=True):
                answer(session, units[index], people[name], preference=label)
        queue = adjudication_queue(session, campaign.id)
    assert [entry.unit_id for entry in queue] == [units[1].id, units[2].id, units[0].id]
    assert queue[0].summary == "A×1, B×1, tie×1"
    assert queue[1].disagreement == pytest.approx(1 / 3)


def test_unit_review_shows_answers_judges_and_rulings(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        unit = units_of(session, campaign_id)[0]
        answer(session, unit, people["bob"], score=4, rationale="Misreads the sign.")
        answer(session, unit, people["ann"], score=8, rationale="Reads it right.")
        insert_judgements(
            session,
            [
                Judgement(
                    judge="gpt-4",
                    protocol="alignmmbench",
                    unit_key="r:ds-item-0/m1",
                    response_pk=unit.response_pk,
                    score=6,
                    rationale="Half right.",
                    raw_output='{"Rating": 6}',
                    prompt_id="alignmmbench-en@1",
                )  # fmt: skip
            ],
        )
        adjudicate(session, people["rita"], unit.id, score=7, note="The sign is legible.")
        review = unit_review(session, unit.id)
    assert review.content.unit_key == "r:ds-item-0/m1"
    assert review.content.item.item_id == "ds-item-0"
    assert review.protocol.name == "alignmmbench"
    assert [(a.annotator, a.score, a.rationale) for a in review.answers] == [
        ("ann", 8, "Reads it right."),
        ("bob", 4, "Misreads the sign."),
    ]
    assert [(j.judge, j.score, j.raw_output) for j in review.judges] == [
        ("gpt-4", 6, '{"Rating": 6}')
    ]
    assert review.content.responses[0].response_id == "ds-item-0/m1"
    assert review.live_adjudication.score == 7
    assert review.live_adjudication.reviewer == "rita"


def test_a_new_ruling_retires_the_live_one_and_both_are_kept(any_engine):
    with session_scope(any_engine) as session:
        people = add_people(session)
        add_dataset(session, items=1)
        campaign = add_campaign(session)
        unit = units_of(session, campaign.id)[0]
        answer(session, unit, people["ann"], score=2)
        answer(session, unit, people["bob"], score=9)
        unit_id = unit.id
    with session_scope(any_engine) as session:
        first = adjudicate(session, people["rita"], unit_id, score=7, note="First look.")
    with session_scope(any_engine) as session:
        second = adjudicate(session, people["root"], unit_id, score=3, note="Missed the error.")
    with session_scope(any_engine) as session:
        rows = session.exec(select(Adjudication).order_by(Adjudication.id)).all()
        assert [(row.id, row.score, row.is_live) for row in rows] == [
            (first.id, 7, False),
            (second.id, 3, True),
        ]
        events = list_events(session, action_prefix="adjudication.")
        assert [event.detail["before"] for event in events] == [
            {"score": 7, "preference": None},
            None,
        ]
        assert events[0].detail["after"] == {"score": 3, "preference": None}
        assert events[0].actor_id == people["root"]
        assert adjudication_queue(session, campaign.id) == []
        [entry] = adjudication_queue(session, campaign.id, include_adjudicated=True)
        assert (entry.unit_id, entry.adjudicated) == (unit_id, True)


@pytest.mark.parametrize(
    ("label", "error", "message"),
    [
        (
            {"score": 11},
            InvalidJudgement,
            "`score` is 11, but alignmmbench scores are integers 1–10",
        ),
        ({"score": 7.5}, InvalidJudgement, "integers 1–10"),
        ({"preference": "A"}, AdjudicationError, "needs a score, not a preference"),
        ({}, AdjudicationError, "needs a score"),
        ({"score": 7, "note": "   "}, AdjudicationError, "write a note"),
    ],
)
def test_invalid_rulings_are_refused_and_nothing_is_written(world, label, error, message):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        unit_id = units_of(session, campaign_id)[0].id
    arguments = {"note": "Because."} | label
    with session_scope(engine) as session, pytest.raises(error, match=message):
        adjudicate(session, people["rita"], unit_id, **arguments)
    with session_scope(engine) as session:
        assert session.exec(select(Adjudication)).all() == []


def test_pairwise_rulings_take_a_canonical_preference(engine):
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=1, models=("m1", "m2"))
        campaign = add_campaign(session, protocol="pairwise")
        unit_id = units_of(session, campaign.id)[0].id
        with pytest.raises(AdjudicationError, match="needs a preference"):
            adjudicate(session, people["rita"], unit_id, score=3, note="x")
        with pytest.raises(InvalidJudgement, match="one of 'A', 'B', 'tie'"):
            adjudicate(session, people["rita"], unit_id, preference="C", note="x")
        ruling = adjudicate(session, people["rita"], unit_id, preference="tie", note="Equal.")
    assert (ruling.preference, ruling.score) == ("tie", None)


def _flagged_world(engine, people, campaign_id):
    with session_scope(engine) as session:
        view = next_unit(session, campaign_id, people["ann"])
        flag_row = flag(session, view.assignment_id, people["ann"], "image does not load")
    return view.unit_id, flag_row.id


@pytest.mark.parametrize("actor", ["ann", "bob"])
def test_reviewer_actions_refuse_annotators(world, actor):
    engine, people, campaign_id = world
    unit_id, flag_id = _flagged_world(engine, people, campaign_id)
    with session_scope(engine) as session:
        with pytest.raises(PermissionDenied, match="only reviewer or admin may do this"):
            adjudicate(session, people[actor], unit_id, score=5, note="x")
        with pytest.raises(PermissionDenied, match="only reviewer or admin may do this"):
            resolve_flag(session, people[actor], flag_id, "fixed", return_to_queue=True)
    with session_scope(engine) as session:
        assert session.exec(select(Adjudication)).all() == []
        assert list_flags(session)[0].resolution is None


def test_resolving_a_flag_returns_the_unit_to_the_queue_with_an_audited_note(world):
    engine, people, campaign_id = world
    unit_id, flag_id = _flagged_world(engine, people, campaign_id)
    with session_scope(engine) as session:
        [open_flag] = list_flags(session, campaign_id=campaign_id)
        assert (open_flag.reported_by, open_flag.reason, open_flag.unit_flagged) == (
            "ann", "image does not load", True,
        )  # fmt: skip
        resolve_flag(session, people["rita"], flag_id, "Image re-uploaded.", return_to_queue=True)
    with session_scope(engine) as session:
        assert session.get(Unit, unit_id).flagged is False
        assert list_flags(session) == []
        [closed] = list_flags(session, include_resolved=True)
        assert (closed.resolved_by, closed.resolution) == ("rita", "Image re-uploaded.")
        event = list_events(session, action_prefix="flag.resolve")[0]
        assert event.detail["unit_flagged"] == {"before": True, "after": False}
        with pytest.raises(AdjudicationError, match="already resolved"):
            resolve_flag(session, people["rita"], flag_id, "again", return_to_queue=True)


def test_a_flag_resolved_as_broken_keeps_the_unit_out_of_the_queue(world):
    engine, people, campaign_id = world
    unit_id, flag_id = _flagged_world(engine, people, campaign_id)
    with session_scope(engine) as session:
        resolve_flag(session, people["root"], flag_id, "Item is broken.", return_to_queue=False)
    with session_scope(engine) as session:
        assert session.get(Unit, unit_id).flagged is True


def test_the_live_ruling_becomes_the_calibration_reference(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        unit = units_of(session, campaign_id)[0]
        for name, score in (("ann", 2), ("bob", 9)):
            answer(session, unit, people[name], score=score)
        assert campaign_reference_overrides(session, campaign_id) == {}
        adjudicate(session, people["rita"], unit.id, score=4, note="Too many errors.")
        assert campaign_reference_overrides(session, campaign_id) == {"r:ds-item-0/m1": 4}
        adjudicate(session, people["rita"], unit.id, score=8, note="On a second look, fine.")
        assert campaign_reference_overrides(session, campaign_id) == {"r:ds-item-0/m1": 8}


def test_concurrent_rulings_on_one_unit_leave_exactly_one_live(any_engine):
    with session_scope(any_engine) as session:
        people = add_people(session)
        add_dataset(session, items=1)
        unit_id = units_of(session, add_campaign(session).id)[0].id

    def rule(score: int) -> None:
        with session_scope(any_engine) as session:
            adjudicate(session, people["rita"], unit_id, score=score, note=f"ruling {score}")

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(rule, [3, 5, 7, 9]))
    with session_scope(any_engine) as session:
        rows = session.exec(select(Adjudication)).all()
        events = list_events(session, action_prefix="adjudication.")
    assert sorted(row.score for row in rows) == [3, 5, 7, 9]
    assert [row.is_live for row in rows].count(True) == 1
    # each ruling retired exactly the one before it: the chain has no fork
    retired = [event.detail["retired"] for event in events if event.detail["retired"]]
    assert sorted(retired) == sorted(row.id for row in rows if not row.is_live)
