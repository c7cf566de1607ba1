"""Monitoring queries: human label matrices, low-effort signals, skips and flags."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from admin_factory import add_campaign, add_dataset, add_people, answer, units_of

from data.queue import flag, next_unit, skip
from data.services.monitor import (
    human_rating_matrices,
    low_effort_flags,
    low_effort_report,
    unit_infos,
    unit_issues,
)
from data.storage.engine import session_scope


@pytest.fixture
def world(engine):
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=4, models=("m1", "m2"))
        campaign = add_campaign(session)
    return engine, people, campaign.id


def test_unit_infos_name_each_unit_by_its_key_item_and_task(world):
    engine, _, campaign_id = world
    with session_scope(engine) as session:
        infos = unit_infos(session, campaign_id)
    assert sorted(info.unit_key for info in infos.values()) == [
        f"r:ds-item-{i}/{m}" for i in range(4) for m in ("m1", "m2")
    ]
    first = infos[min(infos)]
    assert (first.item_id, first.task, first.model) == ("ds-item-0", "OCR", "m1")
    assert "answer of m1 to question 0" in first.response_texts[0]


def test_rating_matrices_hold_every_live_label_per_task(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        units = units_of(session, campaign_id)
        labels = {("ann", 0): 3, ("bob", 0): 4, ("ann", 1): 7, ("cat", 1): 9, ("bob", 2): 5}
        for (name, index), score in labels.items():
            answer(session, units[index], people[name], score=score)
        matrices = human_rating_matrices(session, campaign_id)
    # units 0 and 1 belong to item 0 (OCR); unit 2 to item 1 (Counting)
    ocr = matrices["OCR"]
    assert ocr.level == "interval"
    assert ocr.annotators == ("ann", "bob", "cat")
    assert ocr.units == ("r:ds-item-0/m1", "r:ds-item-0/m2")
    np.testing.assert_array_equal(ocr.values, [[3, 7], [4, np.nan], [np.nan, 9]])
    assert matrices["Counting"].values.tolist() == [[5.0]]
    # the matrix is what krippendorff expects: raters x units with NaN for missing
    expected = krippendorff.alpha(
        reliability_data=[[3, 7], [4, np.nan], [np.nan, 9]], level_of_measurement="interval"
    )
    assert math.isclose(
        krippendorff.alpha(reliability_data=ocr.values, level_of_measurement="interval"), expected
    )


def test_pairwise_labels_are_coded_nominally(any_engine):
    with session_scope(any_engine) as session:
        people = add_people(session)
        add_dataset(session, items=1, models=("m1", "m2", "m3"))
        campaign = add_campaign(session, protocol="pairwise")
        units = units_of(session, campaign.id)
        answer(session, units[0], people["ann"], preference="A")
        answer(session, units[0], people["bob"], preference="tie")
        answer(session, units[1], people["ann"], preference="B")
        matrix = human_rating_matrices(session, campaign.id)["OCR"]
    assert matrix.level == "nominal"
    assert matrix.units[0] == "p:ds-item-0/m1|ds-item-0/m2"
    np.testing.assert_array_equal(matrix.values, [[0, 1], [2, np.nan]])


def test_low_effort_flags_catch_too_fast_duplicate_and_copied_answers(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        units = units_of(session, campaign_id)
        infos = unit_infos(session, campaign_id)
        # ann: careful answers, then one in 2 s (under the 5 s absolute minimum); rationales that
        # differ in one number only would be near-duplicates, so these differ in substance
        reasons = [
            "Reads the sign correctly but misses the second line of text.",
            "Counts four apples where the picture clearly has five.",
            "Transcribes every word of the receipt, totals included.",
            "Gets the date right and the shop name wrong.",
            "Complete: both lines of the label, spelled as printed.",
            "Says there are three dogs; I count two and a cat.",
        ]
        for index, seconds in enumerate([60, 55, 65, 70, 50, 2]):
            answer(
                session, units[index], people["ann"], score=5, seconds=seconds,
                rationale=reasons[index],
            )  # fmt: skip
        # bob: the same long rationale on two units (case and punctuation differ), and a stock
        # phrase twice, which is not a duplicate
        long = "The counting is off by two and the colour of the circles is wrong"
        answer(session, units[0], people["bob"], score=5, rationale=long + ".")
        answer(session, units[1], people["bob"], score=6, rationale=long.upper())
        answer(session, units[2], people["bob"], score=6, rationale="Looks fine to me.")
        answer(session, units[3], people["bob"], score=6, rationale="looks fine to me")
        # cat: a rationale pasted from the response itself
        answer(
            session, units[2], people["cat"], score=7,
            rationale="The answer of m1 to question 1 is long enough to copy.",
        )  # fmt: skip
        report = low_effort_report(session, campaign_id)
        assert low_effort_flags(session, campaign_id) == report.flags
    found = {(flag.annotator, flag.unit_id, flag.reason) for flag in report.flags}
    assert found == {
        ("ann", units[5].id, "too_fast"),
        ("bob", units[0].id, "duplicate_rationale"),
        ("bob", units[1].id, "duplicate_rationale"),
        ("cat", units[2].id, "copied_rationale"),
    }
    fast = next(flag for flag in report.flags if flag.reason == "too_fast")
    shown = len(infos[units[5].id].question_text) + len(infos[units[5].id].response_texts[0])
    assert fast.detail == f"2.0 s for {shown} characters; no answer takes under 5 s"
    duplicate = next(flag for flag in report.flags if flag.reason == "duplicate_rationale")
    assert duplicate.detail.startswith("100% the same as their rationale on r:ds-item-0/m2")
    bob = next(row for row in report.annotators if row.annotator == "bob")
    assert (bob.answers, bob.flagged, bob.stock) == (4, 2, 2)
    assert bob.flags == ()  # fewer than 10 answers: no per-annotator flag yet


def test_unit_infos_carry_the_question_and_images_the_annotator_reads(world):
    engine, _, campaign_id = world
    with session_scope(engine) as session:
        infos = unit_infos(session, campaign_id)
    first = infos[min(infos)]
    assert first.question_text == "Question 0?"
    assert first.images == 0


def test_answers_without_a_recorded_time_are_not_judged_too_fast(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        units = units_of(session, campaign_id)
        for index, seconds in enumerate([0.0, 3.0]):
            answer(
                session, units[index], people["ann"], score=5, seconds=seconds,
                rationale=("Wrong count of the red circles.", "Misreads the chart's axis.")[index],
            )  # fmt: skip
        flags = low_effort_flags(session, campaign_id)
    assert [(f.unit_id, f.reason) for f in flags] == [(units[1].id, "too_fast")]


def test_unit_issues_list_skips_and_flags_with_their_reasons(any_engine):
    engine = any_engine
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=4, models=("m1", "m2"))
        campaign_id = add_campaign(session).id
    with session_scope(engine) as session:
        first = next_unit(session, campaign_id, people["ann"])
        skip(session, first.assignment_id, people["ann"], "outside my expertise")
        second = next_unit(session, campaign_id, people["bob"])
        flag(session, second.assignment_id, people["bob"], "image does not load")
    with session_scope(engine) as session:
        issues = unit_issues(session, campaign_id)
    assert {(issue.kind, issue.user, issue.reason) for issue in issues} == {
        ("skipped", "ann", "outside my expertise"),
        ("flagged", "bob", "image does not load"),
    }
    assert all(issue.unit_key.startswith("r:ds-item-") for issue in issues)
