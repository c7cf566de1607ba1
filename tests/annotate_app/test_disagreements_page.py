"""The Disagreements page under AppTest: refusal, rationales as text, tag-and-next, errors."""

from __future__ import annotations

import pytest
from admin_factory import add_campaign, add_dataset, add_people, answer, units_of
from sqlmodel import select
from streamlit.testing.v1 import AppTest

import calibration  # noqa: F401  (heavy imports paid once here, not inside a timed page run)
from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR, page_available
from annotate_app.text import escape_markdown, safe_markdown
from data.services.judgements import insert_judgements
from data.services.users import to_record
from data.storage.audit import list_events
from data.storage.campaign_lookup import unit_key_map
from data.storage.engine import session_scope
from schemas.disagreements import DEFAULT_TAXONOMY
from schemas.tables import DisagreementTag, Judgement, User

PAGE = "pages/review_disagreements.py"
TIMEOUT = 60


@pytest.fixture
def world(engine, db_url, monkeypatch):
    """Humans 2,4 / 6,8 / 5,5 on three units; the judge says 9 / 3 / 5.5: gaps 6, 4 and 0.5."""
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=3)
        campaign = add_campaign(session, actor_id=people["root"])
        units = units_of(session, campaign.id)[:3]
        keys = unit_key_map(session, campaign.id)
        rows = []
        for unit, humans, judged in zip(units, ((2, 4), (6, 8), (5, 5)), (9, 3, 5.5), strict=True):
            answer(session, unit, people["ann"], score=humans[0], rationale="<img src=x>")
            answer(session, unit, people["bob"], score=humans[1], rationale="Bob's *reason*.")
            rows.append(
                Judgement(
                    judge="gpt",
                    protocol="alignmmbench",
                    unit_key=keys[unit.id],
                    response_pk=unit.response_pk,
                    score=judged,
                    rationale="$x$ looks [fine](u)",
                    raw_output="<b>Rating</b>",
                )  # fmt: skip
            )
        insert_judgements(session, rows)
        records = {name: to_record(session.get(User, people[name])) for name in people.ids}
        ids = [u.id for u in units]
    return engine, records, campaign.id, ids


def _page(user) -> AppTest:
    at = AppTest.from_file(str(APP_DIR / PAGE), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = user
    return at.run()


def _cause(at: AppTest, cause: str):
    return next(b for b in at.button if b.label == cause)


def test_the_page_is_listed_for_reviewers_and_admins_only():
    assert page_available("reviewer", PAGE) and page_available("admin", PAGE)
    assert not page_available("annotator", PAGE)


def test_annotators_are_refused(world):
    _, people, _, _ = world
    at = _page(people["ann"])
    assert not at.exception
    assert [e.value for e in at.error] == [
        "This page is for reviewer or admin accounts; you are logged in as ann (annotator)."
    ]
    assert not at.button and not at.text_area


def test_reviewer_sees_rationales_as_text_tags_and_gets_the_next_disagreement(world):
    engine, people, campaign_id, ids = world
    at = _page(people["rita"])
    assert not at.exception, at.exception
    assert at.selectbox(key=f"dis_unit_{campaign_id}_gpt").value == ids[0]  # gap 6 first
    assert [o for o in at.selectbox(key=f"dis_unit_{campaign_id}_gpt").options] == [
        "r:ds-item-0/m1 · judge 9 · reference 3",
        "r:ds-item-0/m2 · judge 3 · reference 7",
    ]
    assert at.caption[0].value == escape_markdown(
        "2 untagged of the 2 disagreements the calibration report counts: units where "
        "|gpt − reference| ≥ 1.8, over its parsed verdicts in every shown order and sample; 3 "
        "units have a reference (adjudicated label, else the humans' consensus)."
    )
    shown = [m.value for m in at.markdown]
    assert safe_markdown("<img src=x>") in shown and safe_markdown("$x$ looks [fine](u)") in shown
    assert [c.value for c in at.code] == ["<b>Rating</b>"]
    assert {b.label: b.proto.shortcut for b in at.button} == {
        cause: str(key) for key, cause in enumerate(DEFAULT_TAXONOMY, start=1)
    }

    at.text_area(key=f"dis_note_{campaign_id}_gpt_{ids[0]}").input("Too kind to a wrong count.")
    _cause(at, "too lenient").click().run()
    assert not at.exception, at.exception
    assert [s.value for s in at.success] == [escape_markdown("Tagged r:ds-item-0/m1: too lenient.")]
    assert at.selectbox(key=f"dis_unit_{campaign_id}_gpt").value == ids[1]  # the next one opens
    # the count is of every disagreement, the tagged one too (it said "1 untagged of 1")
    assert any(c.value.startswith("1 untagged of the 2 disagreements") for c in at.caption)
    with session_scope(engine) as session:
        tag = session.exec(select(DisagreementTag)).one()
        events = list_events(session, action_prefix="disagreement.")
    assert (tag.unit_id, tag.cause, tag.note, tag.reviewer_id) == (
        ids[0],
        "too lenient",
        "Too kind to a wrong count.",
        people["rita"].id,
    )
    assert [e.entity_id for e in events] == [str(tag.id)]


def test_other_without_a_note_is_refused_and_nothing_is_stored(world):
    engine, people, _, _ = world
    at = _page(people["rita"])
    _cause(at, "other").click().run()
    assert [e.value for e in at.error] == [
        escape_markdown("write a note that says what the cause is when you choose 'other'")
    ]
    with session_scope(engine) as session:
        assert session.exec(select(DisagreementTag)).all() == []


def test_admin_sets_the_threshold_and_taxonomy_on_the_campaigns_page(world):
    engine, people, campaign_id, ids = world
    at = AppTest.from_file(str(APP_DIR / "pages/admin_campaigns.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = people["root"]
    at.run()
    assert not at.exception, at.exception
    at.number_input(key=f"review_{campaign_id}_threshold").set_value(5.0)
    at.text_area(key=f"review_{campaign_id}_taxonomy").input("too lenient\nmisread the chart\n")
    next(b for b in at.button if b.label == "Save the review settings").click().run()
    assert not at.exception, at.exception
    assert escape_markdown("Saved: threshold 5, 2 causes.") in [s.value for s in at.success]
    at = _page(people["rita"])  # only the gap of 6 is left, and the new causes are offered
    assert at.selectbox(key=f"dis_unit_{campaign_id}_gpt").options == [
        "r:ds-item-0/m1 · judge 9 · reference 3"
    ]
    assert {b.label: b.proto.shortcut for b in at.button} == {
        "too lenient": "1",
        "misread the chart": "2",
    }
    with session_scope(engine) as session:
        events = list_events(session, action_prefix="campaign.update")
    assert events[0].detail["after"] == {
        "threshold": 5.0,
        "taxonomy": ["too lenient", "misread the chart"],
    }


def test_a_pairwise_campaign_shows_a_split_verdict_and_both_orders(engine, db_url, monkeypatch):
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        people = add_people(session)
        add_dataset(session, items=1, models=("m1", "m2"))
        campaign = add_campaign(session, protocol="pairwise")
        unit = units_of(session, campaign.id)[0]
        key = unit_key_map(session, campaign.id)[unit.id]
        for name in ("ann", "bob"):
            answer(session, unit, people[name], preference="A", rationale="A reads the chart.")
        insert_judgements(
            session,
            [
                Judgement(
                    judge="gpt",
                    protocol="pairwise",
                    unit_key=key,
                    pair_pk=unit.pair_pk,
                    preference=preference,
                    shown_order=order,
                    rationale=f"First is better ({order})",
                )  # fmt: skip
                for preference, order in (("A", "AB"), ("B", "BA"))
            ],
        )
        rita = to_record(session.get(User, people["rita"]))
    at = _page(rita)
    assert not at.exception, at.exception
    assert at.selectbox(key=f"dis_unit_{campaign.id}_gpt").options == [
        f"{key} · judge A×1 B×1 · reference A"
    ]
    shown = [m.value for m in at.markdown]
    assert safe_markdown("First is better (AB)") in shown
    assert safe_markdown("First is better (BA)") in shown
    _cause(at, "position bias").click().run()
    with session_scope(engine) as session:
        tag = session.exec(select(DisagreementTag)).one()
    assert (tag.cause, tag.judge_value, tag.reference_value, tag.gap) == (
        "position bias",
        "A×1 B×1",
        "A",
        0.5,
    )
