"""My work under AppTest: which campaign it opens on, telling answers apart, the edit picker."""

from __future__ import annotations

import pytest
from admin_factory import add_campaign, add_dataset, add_people, answer, units_of
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR
from data import queue
from data.services.users import to_record
from data.storage.engine import session_scope
from schemas.tables import Campaign, User

TIMEOUT = 60


@pytest.fixture
def world(engine, db_url, monkeypatch):
    """ann answered in "a-finished" first, then both responses of one item in "b-latest"."""
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=2, models=("m1", "m2"))
        old = add_campaign(session, "a-finished")
        new = add_campaign(session, "b-latest")
        answer(session, units_of(session, old.id)[0], people["ann"], score=3)
        first, second = units_of(session, new.id)[:2]  # ds-item-0 by m1, then by m2
        ids = [
            answer(session, first, people["ann"], score=4).id,
            answer(session, second, people["ann"], score=9).id,
        ]
        ann = to_record(session.get(User, people["ann"]))
    return engine, ann, ids


def _open(user, **query: str) -> AppTest:
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = user
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    at.switch_page("pages/my_work.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_my_work_opens_on_the_campaign_last_worked_on(world):
    _, ann, _ = world
    at = _open(ann)
    assert at.selectbox(key="my_work_campaign").value == "b-latest"  # not the first by name


def test_two_answers_on_one_item_are_told_apart(world):
    _, ann, (first, second) = world
    at = _open(ann)
    picker = at.selectbox(key="my_work_edit")
    labels = {option for option in picker.options if option != "—"}
    assert len(labels) == 2
    assert {label.split(" · ")[:3][1] for label in labels} == {"response 1 of 2", "response 2 of 2"}
    assert all(label.startswith("ds-item-0 · response ") and " · b-latest · " in label
               for label in labels)  # fmt: skip
    assert at.dataframe[0].value["Unit"].tolist() == ["response 2 of 2", "response 1 of 2"]


def test_a_linked_answer_opens_with_the_picker_still_there(world):
    engine, ann, (first, second) = world
    at = _open(ann, annotation=str(first), campaign="a-finished")
    assert at.selectbox(key="my_work_campaign").value == "b-latest"  # the answer's campaign
    assert at.selectbox(key="my_work_edit").value == first
    assert at.subheader[0].value.endswith(", response 1 of 2 (revision 1)")
    # a revision saved on the page moves the link to the new answer; the other stays pickable
    with session_scope(engine) as session:
        revised = queue.revise(session, first, ann.id, score=5, rationale="A second, better look.")
    at.query_params["annotation"] = str(revised.id)
    at.run()
    picker = at.selectbox(key="my_work_edit")
    assert picker.value == revised.id
    picker.set_value(second).run()
    assert not at.exception, at.exception
    assert at.query_params["annotation"] == str(second)
    assert "response 2 of 2" in at.subheader[0].value


def test_the_ordinal_follows_the_order_the_annotator_got_the_units(world):
    """The same count as the annotation page's "response k of n": by the annotator's own order,
    not by unit or model (bob got m2's response of ds-item-1 before m1's)."""
    engine, _, _ = world
    with session_scope(engine) as session:
        bob = session.exec(select(User).where(User.name == "bob")).one()
        campaign = session.exec(select(Campaign).where(Campaign.name == "b-latest")).one()
        m1, m2 = units_of(session, campaign.id)[2:4]  # ds-item-1 by m1, then by m2
        got_first = answer(session, m2, bob.id, score=2).id
        got_second = answer(session, m1, bob.id, score=2).id
        mine = queue.my_annotations(session, campaign.id, bob.id)
    labels = {m.annotation_id: m.unit_label for m in mine}
    assert labels == {got_first: "response 1 of 2", got_second: "response 2 of 2"}


def test_mmie_answers_show_their_percent_and_an_answer_shows_every_revision(
    engine, db_url, monkeypatch
):
    """Issue 25: My work listed only the live revision and MMIE answers as "3", where the panel
    offers "3 (50%)" (one rule: :meth:`schemas.protocols.Protocol.score_label`)."""
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=1, models=("m1",))
        campaign = add_campaign(session, "c-mmie", protocol="mmie")
        (unit,) = units_of(session, campaign.id)
        first = answer(
            session, unit, people["ann"], score=3, rationale="Meets half of them: FIRST."
        )
        second = queue.revise(
            session, first.id, people["ann"], score=5, rationale="SECOND try, a fuller reason."
        )
        queue.revise(
            session, second.id, people["ann"], score=1, rationale="THIRD, the live one of them."
        )
        ann = to_record(session.get(User, people["ann"]))
    at = _open(ann, campaign="c-mmie")
    (table,) = [d.value for d in at.dataframe]
    assert table["Answer"].tolist() == ["1 (17%)"]
    at.selectbox(key="my_work_edit").set_value(table["id"].tolist()[0]).run()
    (history,) = [d.value for d in at.dataframe if "Current" in d.value.columns]
    assert history["Revision"].tolist() == [3, 2, 1]
    assert history["Answer"].tolist() == ["1 (17%)", "5 (83%)", "3 (50%)"]
    assert history["Rationale"].tolist() == [
        "THIRD, the live one of them.",
        "SECOND try, a fuller reason.",
        "Meets half of them: FIRST.",
    ]


def test_the_history_is_the_annotators_own(engine):
    """Another annotator's answer id gives no history (as it gives no answer)."""
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=1, models=("m1",))
        (unit,) = units_of(session, add_campaign(session, "c").id)
        theirs = answer(session, unit, people["bob"], score=3)
        with pytest.raises(queue.AssignmentNotFound):
            queue.answer_history(session, theirs.id, people["ann"])
        assert [m.revision for m in queue.answer_history(session, theirs.id, people["bob"])] == [1]
