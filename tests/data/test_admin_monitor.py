"""Monitoring queries: human label matrices, low-effort signals, skips and flags."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from admin_factory import add_campaign, add_dataset, add_people, answer, units_of

from data.queue import flag, next_unit, skip
from data.services.monitor import human_rating_matrices, low_effort_flags, unit_infos, unit_issues
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


def test_low_effort_flags_catch_fast_repeated_and_copied_answers(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        units = units_of(session, campaign_id)
        # ann: five careful answers around 60 s, then one in 5 s (median 60 → 5 < 15)
        for index, seconds in enumerate([60, 55, 65, 70, 50, 5]):
            answer(
                session, units[index], people["ann"], score=5, seconds=seconds,
                rationale=f"Distinct careful reasoning number {index} about the facts.",
            )  # fmt: skip
        # bob: the same rationale twice, differing only in case and punctuation
        answer(session, units[0], people["bob"], score=5, rationale="Looks fine to me.")
        answer(session, units[1], people["bob"], score=6, rationale="looks fine to me")
        # cat: a rationale pasted from the response itself
        answer(
            session, units[2], people["cat"], score=7,
            rationale="The answer of m1 to question 1 is long enough to copy.",
        )  # fmt: skip
        flags = low_effort_flags(session, campaign_id)
    found = {(flag.annotator, flag.unit_id, flag.reason) for flag in flags}
    assert found == {
        ("ann", units[5].id, "fast"),
        ("bob", units[0].id, "repeated_rationale"),
        ("bob", units[1].id, "repeated_rationale"),
        ("cat", units[2].id, "copied_rationale"),
    }
    fast = next(flag for flag in flags if flag.reason == "fast")
    assert fast.detail == "5 s, their median 58 s"


def test_fast_answers_are_not_judged_before_the_annotator_has_a_history(world):
    engine, people, campaign_id = world
    with session_scope(engine) as session:
        units = units_of(session, campaign_id)
        for index, seconds in enumerate([60, 60, 2]):
            answer(
                session, units[index], people["ann"], score=5, seconds=seconds,
                rationale=f"Reason {index} that differs from the others.",
            )  # fmt: skip
        assert low_effort_flags(session, campaign_id) == []
        assert [f.reason for f in low_effort_flags(session, campaign_id, min_history=3)] == ["fast"]


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
