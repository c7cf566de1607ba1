"""The Annotate and My work pages under AppTest: what they show, hide, restore and refuse."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotate_app.auth import USER_KEY
from annotate_app.components.answer_box import AnswerPayload
from annotate_app.navigation import APP_DIR
from data import queue
from data.services.campaigns import CampaignSpec, create_campaign
from data.services.users import UserRecord, create_user
from data.storage.engine import session_scope
from schemas.tables import (
    Assignment,
    AuditEvent,
    Campaign,
    Dataset,
    Flag,
    Item,
    Judgement,
    Response,
    Unit,
)

APP = str(APP_DIR / "app.py")
PASSWORD = "correct horse battery"
RATIONALE = "两只猫都数对了，回答完整。The count matches the reference."
UNDO_LATE = timedelta(minutes=2, seconds=1)  # just past the page's UNDO_WINDOW
HOSTILE = "<script>alert(1)</script> costs $5 ![x](http://evil.example/p.png) **bold**"


@pytest.fixture
def seeded(engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Two annotators, a pointwise and a pairwise campaign over two Chinese items."""
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        users = {name: create_user(session, name, PASSWORD, "annotator") for name in ("ann", "bo")}
        dataset = Dataset(name="ds", benchmark="alignmmbench")
        session.add(dataset)
        session.flush()
        for n in range(2):
            item = Item(
                dataset_id=dataset.id, item_id=f"q{n}", benchmark="alignmmbench", task="Counting",
                question=f"图{n}中有几只猫？", reference="两只猫。", content_sha256=f"i{n}",
            )  # fmt: skip
            session.add(item)
            session.flush()
            for model, content in (("m1", HOSTILE), ("m2", "两只")):
                session.add(
                    Response(response_id=f"q{n}/{model}", item_pk=item.id, model=model,
                             content=content, content_sha256=model)
                )  # fmt: skip
        session.flush()
        ids = {}
        for protocol in ("alignmmbench", "pairwise"):
            spec = CampaignSpec(
                name=f"c-{protocol}", dataset="ds", protocol=protocol, overlap=2, pairs="all",
                instructions="Be **strict** about counts.",
            )  # fmt: skip
            ids[protocol] = create_campaign(session, spec).id
    return {"users": users, "campaigns": ids, "engine": engine}


def _open(page: str, user: UserRecord, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state[USER_KEY] = user
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(node: Any) -> str:
    """Every proto of the rendered tree as text, to search for what must (not) be there."""
    parts = [str(getattr(node, "proto", ""))]
    for child in getattr(node, "children", {}).values():
        parts.append(_texts(child))
    return "\n".join(parts)


def _panel(at: AppTest) -> dict[str, Any]:
    (panel,) = at.get("bidi_component")
    return json.loads(panel.proto.json)


def test_annotate_page_shows_the_unit_the_rubric_and_the_answer_panel(seeded: dict) -> None:
    ann = seeded["users"]["ann"]
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    text = _texts(at.main)
    assert "中有几只猫？" in text and "两只猫。" in text  # question and reference, in Chinese
    assert "Ignores the question or is off topic" in text  # rubric band of score 1
    assert "Any count that differs from the reference is wrong" in text  # task guidance
    panel = _panel(at)
    assert [c["key"] for c in panel["choices"]] == [*"123456789", "0"]  # 0 = 10
    assert panel["rationale_min"] == 20 and panel["draft"] is None
    with session_scope(seeded["engine"]) as session:
        leased = session.exec(select(Assignment)).one()
    assert panel["unit"] == leased.id


def test_model_text_is_shown_as_text_never_as_markup(seeded: dict) -> None:
    ann = seeded["users"]["ann"]
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    shown = [m.value for m in at.markdown if "alert" in m.value]
    if not shown:  # ann got the other response first: skip it to reach the hostile one
        at.text_input(key=f"reason-{_panel(at)['unit']}").input("not my field")
        at.button(key=f"skip-{_panel(at)['unit']}").click().run()
        shown = [m.value for m in at.markdown if "alert" in m.value]
    # every punctuation character escaped, a word joiner (U+2060) after ':' so that the browser's
    # autolink plugin sees no 'http://'; the emphasis stays
    joiner = "\u2060"
    assert shown == [
        rf"\<script\>alert\(1\)\<\/script\> costs \$5 \!\[x\]\(http\:{joiner}\/\/evil\.example"
        r"\/p\.png\) **bold**"
    ]
    assert not any(m.allow_html for m in at.markdown)


def test_pairwise_page_shows_both_responses_in_the_stored_order(seeded: dict) -> None:
    ann = seeded["users"]["ann"]
    at = _open("pages/annotate.py", ann, campaign="c-pairwise")
    panel = _panel(at)
    assert [c["key"] for c in panel["choices"]] == ["a", "b", "t"]
    with session_scope(seeded["engine"]) as session:
        order = session.get(Assignment, panel["unit"]).shown_order
    headings = [m.value for m in at.markdown if m.value.startswith("**Response")]
    assert headings == ["**Response A**", "**Response B**"]
    bodies = [m.value for m in at.markdown if m.value in ("两只",) or "alert" in m.value]
    hostile_first = "alert" in bodies[0]
    assert hostile_first == (order == "AB")  # canonical A is the m1 (hostile) response


def test_draft_is_restored_into_the_panel_after_a_new_session(seeded: dict) -> None:
    ann, engine = seeded["users"]["ann"], seeded["engine"]
    campaign_id = seeded["campaigns"]["alignmmbench"]
    with session_scope(engine) as session:
        view = queue.next_unit(session, campaign_id, ann.id)
        queue.save_draft(
            session, view.assignment_id, ann.id, score=6, rationale="写了一半", active_seconds=42
        )
    panel = _panel(_open("pages/annotate.py", ann, campaign="c-alignmmbench"))
    assert panel["unit"] == view.assignment_id
    saved_at = panel["draft"].pop("saved_at")  # when it was typed, to compare with the browser's
    assert panel["draft"] == {
        "score": 6.0,
        "preference": None,
        "rationale": "写了一半",
        "seconds": 42.0,
    }
    assert abs(saved_at - panel["server_now"]) < 60_000
    assert panel["store"] == f"critiquelab-draft:{ann.id}:{campaign_id}:{view.assignment_id}"


def test_the_header_shows_progress_and_which_response_of_the_item_this_is(seeded: dict) -> None:
    ann, engine = seeded["users"]["ann"], seeded["engine"]
    # c-alignmmbench: 2 items × 2 models = 4 units
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    (bar,) = at.get("progress")
    assert "Unit 1 of 4 in this campaign · 0 done by you" in str(bar.proto)
    with session_scope(engine) as session:
        first = session.get(Assignment, _panel(at)["unit"])
        item = session.get(Unit, first.unit_id).item_pk
        queue.submit(session, first.id, ann.id, score=4, rationale=RATIONALE)
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    (bar,) = at.get("progress")
    assert "Unit 2 of 4 in this campaign · 1 done by you" in str(bar.proto)
    assert bar.proto.value == 25  # percent
    with session_scope(engine) as session:
        second = session.get(Unit, session.get(Assignment, _panel(at)["unit"]).unit_id)
        item_id = session.get(Item, second.item_pk).item_id
    position = 2 if second.item_pk == item else 1  # ann's own order among the item's units
    captions = [c.value for c in at.caption]
    assert any(c.startswith(f"Response {position} of 2 for item {item_id}") for c in captions)
    assert not any("m1" in c or "m2" in c for c in captions)  # no model names


def test_a_pairwise_rubric_has_its_own_guidance_even_over_mmie_items(seeded: dict) -> None:
    ann, engine = seeded["users"]["ann"], seeded["engine"]
    with session_scope(engine) as session:
        dataset = Dataset(name="ds-mmie", benchmark="mmie")
        session.add(dataset)
        session.flush()
        item = Item(
            dataset_id=dataset.id, item_id="SA-001", benchmark="mmie", category="SA",
            question="Continue the story.", content_sha256="mmie",
        )  # fmt: skip
        session.add(item)
        session.flush()
        for model in ("m1", "m2"):
            session.add(
                Response(response_id=f"SA-001/{model}", item_pk=item.id, model=model,
                         content=f"story by {model}", content_sha256=model)
            )  # fmt: skip
        session.flush()
        create_campaign(
            session, CampaignSpec(name="mmie-pairs", dataset="ds-mmie", protocol="pairwise",
                                  pairs="all")
        )  # fmt: skip
    at = _open("pages/annotate.py", ann, campaign="mmie-pairs")
    text = _texts(at.main)
    assert "Penalty" not in text and "one point off" not in text  # MMIE's 0–6 rubric
    assert "Tie when neither is better" in text
    guide = [row["text"] for row in _panel(at)["guide"]]
    assert len(guide) == 3 and "neither is better" in guide[2]
    assert "keys a, b and t choose A, B and tie" in _panel(at)["help"]


def test_annotate_page_is_blind_to_other_answers_and_judges(seeded: dict) -> None:
    ann, bo, engine = seeded["users"]["ann"], seeded["users"]["bo"], seeded["engine"]
    campaign_id = seeded["campaigns"]["alignmmbench"]
    with session_scope(engine) as session:
        for response in session.exec(select(Response)):
            session.add(
                Judgement(judge="gpt-4", protocol="alignmmbench",
                          unit_key=f"r:{response.response_id}", response_pk=response.id,
                          score=9, rationale="JUDGE-SAYS-NINE", raw_output="JUDGE-RAW")
            )  # fmt: skip
    for _ in range(4):  # bo answers every unit
        with session_scope(engine) as session:
            view = queue.next_unit(session, campaign_id, bo.id)
            queue.submit(session, view.assignment_id, bo.id, score=2, rationale="BOSECRET " * 3)
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    text = _texts(at.main) + _texts(at.sidebar)
    assert "中有几只猫" in text
    assert "BOSECRET" not in text and "JUDGE" not in text


def test_skip_and_flag_buttons_give_the_unit_back(seeded: dict) -> None:
    ann, engine = seeded["users"]["ann"], seeded["engine"]
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    first = _panel(at)["unit"]
    at.button(key=f"skip-{first}").click().run()  # no reason: refused, unit kept
    assert _panel(at)["unit"] == first
    at.text_input(key=f"reason-{first}").input("outside my expertise")
    at.button(key=f"skip-{first}").click().run()
    second = _panel(at)["unit"]
    assert second != first
    at.text_input(key=f"reason-{second}").input("image does not load")
    at.button(key=f"flag-{second}").click().run()
    assert _panel(at)["unit"] not in (first, second)
    with session_scope(engine) as session:
        assert session.get(Assignment, first).status == "skipped"
        assert session.get(Assignment, second).status == "released"
        assert session.exec(select(Flag.reason)).all() == ["image does not load"]


def _leases(seeded: dict, user: UserRecord) -> list[tuple[int, str]]:
    """The (campaign id, status) of every assignment the annotator holds."""
    with session_scope(seeded["engine"]) as session:
        query = select(Assignment.campaign_id, Assignment.status)
        return list(session.exec(query.where(Assignment.annotator_id == user.id)).all())


def test_the_campaign_picker_sent_at_its_default_keeps_the_campaign_of_the_url(
    seeded: dict,
) -> None:
    """The browser can re-register the sidebar's campaign picker at its declared default with no
    choice made (seen in headless Chromium under load: a draft's rerun carried the first campaign
    while the URL said another). The page then moved the annotator to the first campaign and
    leased a unit there. The default must be the campaign being served; a real choice moves."""
    bo, pairwise = seeded["users"]["bo"], seeded["campaigns"]["pairwise"]
    at = _open("pages/annotate.py", bo, campaign="c-pairwise")
    unit = _panel(at)["unit"]
    (picker,) = at.sidebar.selectbox
    assert picker.options[0] == "c-alignmmbench" and picker.value == "c-pairwise"
    picker.set_value(picker.options[picker.proto.default]).run()  # what such a browser sends
    assert not at.exception, at.exception
    assert _panel(at)["unit"] == unit and at.query_params["campaign"] == "c-pairwise"
    assert _leases(seeded, bo) == [(pairwise, "leased")]  # nothing leased elsewhere

    at.sidebar.selectbox[0].set_value("c-alignmmbench").run()  # the annotator's own choice
    assert at.query_params["campaign"] == "c-alignmmbench" and _panel(at)["unit"] != unit
    at.run()  # and it stays chosen on the next rerun (a draft, say)
    assert at.sidebar.selectbox[0].value == "c-alignmmbench"
    assert sorted(_leases(seeded, bo)) == sorted(
        [(pairwise, "leased"), (seeded["campaigns"]["alignmmbench"], "leased")]
    )


def test_paused_campaign_says_so_and_gives_no_unit(seeded: dict) -> None:
    with session_scope(seeded["engine"]) as session:
        session.get(Campaign, seeded["campaigns"]["alignmmbench"]).status = "paused"
    at = _open("pages/annotate.py", seeded["users"]["ann"], campaign="c-alignmmbench")
    assert "paused" in at.info[0].value
    assert not at.get("bidi_component")


def _submitted(seeded: dict, name: str, rationale: str = RATIONALE) -> int:
    user, engine = seeded["users"][name], seeded["engine"]
    with session_scope(engine) as session:
        view = queue.next_unit(session, seeded["campaigns"]["alignmmbench"], user.id)
        return queue.submit(session, view.assignment_id, user.id, score=8, rationale=rationale).id


def test_my_work_lists_own_answers_and_opens_one_for_editing(seeded: dict) -> None:
    own = _submitted(seeded, "ann")
    _submitted(seeded, "bo")
    ann = seeded["users"]["ann"]
    at = _open("pages/my_work.py", ann, campaign="c-alignmmbench")
    table = at.dataframe[0].value
    assert table["id"].tolist() == [own] and table["Rationale"].tolist() == [RATIONALE]
    at = _open("pages/my_work.py", ann, campaign="c-alignmmbench", annotation=str(own))
    panel = _panel(at)
    assert panel["unit"] == own and panel["submit_label"] == "Save revision"
    assert panel["draft"]["rationale"] == RATIONALE and panel["draft"]["score"] == 8.0


def test_my_work_refuses_another_annotators_answer(seeded: dict) -> None:
    _submitted(seeded, "ann")
    others = _submitted(seeded, "bo", rationale="BOPRIVATE rationale not for ann")
    at = _open("pages/my_work.py", seeded["users"]["ann"], annotation=str(others))
    assert at.error[0].value == f"you have no current answer with id {others}"
    assert "BOPRIVATE" not in _texts(at.main)
    assert not at.get("bidi_component")


@pytest.mark.parametrize("allowed", [True, False])
def test_how_others_rated_shows_after_submit_only_when_the_campaign_allows(
    seeded: dict, allowed: bool
) -> None:
    engine, campaign_id = seeded["engine"], seeded["campaigns"]["alignmmbench"]
    with session_scope(engine) as session:
        session.get(Campaign, campaign_id).show_others_after_submit = allowed
        for unit in session.exec(select(Unit).where(Unit.campaign_id == campaign_id)).all()[1:]:
            unit.flagged = True  # one unit left: both annotators answer it
    own = _submitted(seeded, "ann")
    _submitted(seeded, "bo", rationale="BOVISIBLE after submit, a careful reason")
    at = _open("pages/my_work.py", seeded["users"]["ann"], annotation=str(own))
    assert ("BOVISIBLE" in _texts(at.main)) == allowed


def test_a_tab_keeps_its_unit_after_another_tab_answered_it(seeded: dict) -> None:
    """Two tabs (two sessions) of one annotator on one unit; the first submits. The second
    used to show the next lease on its next rerun, dropping what it had typed; it now keeps its
    unit and the text it sent last, says that a submit becomes revision 2, and offers the way on.
    """
    ann, engine = seeded["users"]["ann"], seeded["engine"]
    first = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    second = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    unit = _panel(first)["unit"]
    assert _panel(second)["unit"] == unit
    with session_scope(engine) as session:  # the first tab's Ctrl+Enter
        step = queue.submit_and_next(session, unit, ann.id, score=4, rationale=RATIONALE)
    assert step.next_unit is not None
    typed = AnswerPayload(unit, 9.0, None, "SECOND TAB " + RATIONALE, 12.0, None)
    second.session_state["annotate_kept"] = typed  # what its last draft callback kept
    second.run()  # the rerun of a draft save or of any widget
    assert not second.exception, second.exception
    panel = _panel(second)
    assert panel["unit"] == unit  # not the next lease
    assert (panel["draft"]["score"], panel["draft"]["rationale"]) == (9.0, typed.rationale)
    (warning,) = second.warning
    assert "already answered this unit" in warning.value and "revision 2" in warning.value
    skip = [p for p in second.get("popover") if "Skip or report a problem" in str(p.proto)]
    assert not skip  # nothing to skip or report on an answered unit
    (bar,) = second.get("progress")
    assert "Unit 1 of 4 in this campaign · 1 done by you" in str(bar.proto)
    second.button(key="leave-answered").click().run()
    assert _panel(second)["unit"] == step.next_unit.assignment_id
    assert not second.warning
    assert second.query_params["unit"] == str(step.next_unit.assignment_id)


def test_a_reloaded_tab_comes_back_to_the_unit_its_url_names(seeded: dict) -> None:
    """The URL names the unit shown (``?unit=``). A new session on it (the tab reloaded) shows
    that unit again, also when another tab has answered it meanwhile; a unit of another
    annotator or of another campaign named there shows nothing of it."""
    ann, bo, engine = seeded["users"]["ann"], seeded["users"]["bo"], seeded["engine"]
    first = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    unit = _panel(first)["unit"]
    assert first.query_params["unit"] == str(unit)
    with session_scope(engine) as session:  # another tab's Ctrl+Enter
        step = queue.submit_and_next(session, unit, ann.id, score=4, rationale=RATIONALE)
    following = step.next_unit.assignment_id
    reloaded = _open("pages/annotate.py", ann, campaign="c-alignmmbench", unit=str(unit))
    assert _panel(reloaded)["unit"] == unit  # not the lease the other tab holds now
    assert _panel(reloaded)["draft"] is None  # the text comes back from the browser's copy
    (warning,) = reloaded.warning
    assert "already answered this unit" in warning.value
    reloaded.button(key="leave-answered").click().run()
    assert _panel(reloaded)["unit"] == following
    assert reloaded.query_params["unit"] == str(following)

    others = _open("pages/annotate.py", bo, campaign="c-alignmmbench", unit=str(following))
    assert _panel(others)["unit"] != following  # not bo's: bo gets a lease of his own
    assert others.query_params["unit"] == str(_panel(others)["unit"])
    elsewhere = _open("pages/annotate.py", ann, campaign="c-pairwise", unit=str(following))
    assert _panel(elsewhere)["unit"] != following  # a unit of another campaign
    assert not elsewhere.warning and not elsewhere.toast


# --- gold units and qualification -----------------------------------------------------------


def _gold_campaign(seeded: dict, **settings: object) -> tuple[int, list[int]]:
    """The pointwise campaign with two gold units (expected score 8) and ``settings``."""
    from data.services.gold import GoldEntry, attach_gold, set_gold_settings
    from data.storage.campaign_lookup import unit_keys

    campaign_id = seeded["campaigns"]["alignmmbench"]
    with session_scope(seeded["engine"]) as session:
        keys = unit_keys(session, campaign_id)[:2]
        entries = [GoldEntry(key, 8.0, None, "Two cats **exactly**.") for _, key, _, _ in keys]
        attach_gold(session, session.get(Campaign, campaign_id), entries)
        set_gold_settings(session, campaign_id, **settings)  # type: ignore[arg-type]
    return campaign_id, [unit_id for unit_id, _, _, _ in keys]


def test_a_held_annotator_is_told_so_in_plain_words_and_given_no_unit(seeded: dict) -> None:
    ann, engine = seeded["users"]["ann"], seeded["engine"]
    campaign_id, gold = _gold_campaign(seeded, qualification_gold=2, qualification_accuracy=1.0)
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    for _ in range(2):  # two wrong answers to the two gold units, as the page's submit sends them
        unit = _panel(at)["unit"]
        step, _ = queue.submit_step(engine, unit, ann.id, score=1, rationale=RATIONALE)
        at.session_state["annotate_next"] = (campaign_id, step.next_unit)  # as the page's _submit
        at.run()
    assert not at.get("bidi_component")
    (warning,) = at.warning
    from annotate_app.text import escape_markdown

    assert warning.value == escape_markdown(
        "Your qualification answers did not reach the campaign's bar; an admin will review them."
    )
    assert "unit" not in at.query_params
    bo = _open("pages/annotate.py", seeded["users"]["bo"], campaign="c-alignmmbench")
    assert _panel(bo)["unit"] and not bo.warning  # qualifying, served a gold unit as any other


@pytest.mark.parametrize("feedback", [True, False])
def test_the_expected_answer_is_shown_after_a_gold_unit_only_with_feedback_on(
    seeded: dict, feedback: bool
) -> None:
    ann, engine = seeded["users"]["ann"], seeded["engine"]
    campaign_id, gold = _gold_campaign(
        seeded, qualification_gold=1, qualification_accuracy=0.0, gold_feedback=feedback
    )
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    before = _texts(at.main)
    step, _ = queue.submit_step(engine, _panel(at)["unit"], ann.id, score=3, rationale=RATIONALE)
    at.session_state["annotate_feedback"] = (campaign_id, step.feedback)  # as the page's _submit
    at.session_state["annotate_next"] = (campaign_id, step.next_unit)
    at.run()
    assert not at.exception, at.exception
    text = _texts(at.main)
    assert ("expected answer" in text) == feedback
    assert ("Two cats" in text) == feedback and ("Your answer differs" in text) == feedback
    assert "expected answer" not in before and "Two cats" not in before


BAD_IDS = ["99999999999999999999", "²", "9223372036854775807", "9223372036854775808", "-3", "1e3"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_a_url_naming_no_such_unit_gets_the_next_unit_not_an_error_page(
    seeded: dict, bad: str
) -> None:
    """Issue 25: ``?unit=99999999999999999999`` (OverflowError in SQLite's driver) and
    ``?unit=²`` (a digit to ``str.isdigit``, not to ``int``) ended on the generic error page."""
    at = _open("pages/annotate.py", seeded["users"]["ann"], campaign="c-alignmmbench", unit=bad)
    with session_scope(seeded["engine"]) as session:
        leased = session.exec(select(Assignment)).one()
    assert _panel(at)["unit"] == leased.id
    assert at.query_params["unit"] == str(leased.id)


@pytest.mark.parametrize("bad", BAD_IDS)
def test_my_work_treats_an_answer_id_that_names_nothing_as_no_such_answer(
    seeded: dict, bad: str
) -> None:
    own = _submitted(seeded, "ann")
    at = _open("pages/my_work.py", seeded["users"]["ann"], annotation=bad)
    assert at.dataframe[0].value["id"].tolist() == [own]
    assert not at.get("bidi_component")


# --- guidelines, previous unit, undo (issue 25: what Label Studio and Potato users expect) ------


def test_the_guidelines_come_before_the_first_unit_and_on_demand(seeded: dict) -> None:
    ann, engine = seeded["users"]["ann"], seeded["engine"]
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    text = _texts(at.main)
    assert "Guidelines for this campaign" in text
    # above the unit, in the on-demand popover, and in the rubric under the panel
    assert text.count("Be **strict** about counts") == 3
    at.button(key="guidelines-read").click().run()
    assert "Guidelines for this campaign" not in _texts(at.main)
    assert _texts(at.main).count("Be **strict** about counts") == 2
    (guidelines,) = [p for p in at.get("popover") if "Guidelines" in str(p.proto)]
    assert "Be **strict** about counts" in _texts(guidelines)  # still there, on demand
    unit = _panel(at)["unit"]
    queue.submit_step(engine, unit, ann.id, score=4, rationale=RATIONALE)
    later = _open("pages/annotate.py", ann, campaign="c-alignmmbench")  # a new session
    assert "Guidelines for this campaign" not in _texts(later.main)  # not before every unit


def _submit_on_page(at: AppTest, seeded: dict, user: UserRecord, score: float) -> int:
    """Submit the unit the page shows as its panel's submit does, and rerun; the answer's id."""
    unit = _panel(at)["unit"]
    step, _ = queue.submit_step(seeded["engine"], unit, user.id, score=score, rationale=RATIONALE)
    at.session_state["annotate_next"] = (step.campaign_id, step.next_unit)
    at.session_state["annotate_saved"] = SimpleNamespace(
        campaign_id=step.campaign_id,
        annotation_id=step.annotation_id,
        what="response 1 of 2 for item img:0@www.x",
        at=datetime.now(UTC),
    )  # what _submit keeps for the saved line
    at.run()
    assert not at.exception, at.exception
    return step.annotation_id


def test_previous_unit_opens_the_last_answer_for_a_revision_and_comes_back(seeded: dict) -> None:
    ann, engine = seeded["users"]["ann"], seeded["engine"]
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    first_unit = _panel(at)["unit"]
    first = _submit_on_page(at, seeded, ann, 4)
    current = _panel(at)["unit"]
    second = _submit_on_page(at, seeded, ann, 6)
    third_unit = _panel(at)["unit"]
    assert len({first_unit, current, third_unit}) == 3
    at.button(key="previous").click().run()
    panel = _panel(at)
    assert panel["unit"] == second and panel["submit_label"] == "Save revision"
    assert (panel["draft"]["score"], panel["draft"]["rationale"]) == (6.0, RATIONALE)
    assert "revision 1" in _texts(at.main) and "becomes revision 2" in _texts(at.main)
    at.button(key=f"previous-{second}").click().run()  # one more step back
    assert _panel(at)["unit"] == first
    with session_scope(engine) as session:  # what the panel's "Save revision" stores
        queue.revise(session, first, ann.id, score=9, rationale="Changed my mind: " + RATIONALE)
    at.button(key="leave-back").click().run()
    assert _panel(at)["unit"] == third_unit  # the unit the annotator was on, still theirs
    assert at.query_params["unit"] == str(third_unit)
    with session_scope(engine) as session:
        history = queue.answer_history(session, first, ann.id)
    assert [(m.revision, m.score) for m in history] == [(2, 9.0), (1, 4.0)]  # nothing lost


def test_undo_reopens_the_answer_just_saved_within_its_window(seeded: dict) -> None:
    ann = seeded["users"]["ann"]
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    saved = _submit_on_page(at, seeded, ann, 7)
    (line,) = [h for h in at.get("html") if "Saved" in str(h.proto)]
    assert "response 1 of 2 for item img:0@www.x." in str(line.proto)  # no U+2060 to copy
    assert "\u2060" not in str(line.proto)
    at.button(key=f"undo-{saved}").click().run()
    assert _panel(at)["unit"] == saved
    at.button(key="leave-back").click().run()
    at.session_state["annotate_saved"] = SimpleNamespace(
        **{**vars(at.session_state["annotate_saved"]), "at": datetime.now(UTC) - UNDO_LATE}
    )
    at.run()
    assert not [b for b in at.get("button") if b.key == f"undo-{saved}"]  # the window is over


def test_confirmations_are_drawn_in_the_page_not_as_toasts_over_the_panel(seeded: dict) -> None:
    """Issue 25: toasts (bottom right) covered the answer panel's choices; a confirmation now
    stands in the notes under the header, where it covers nothing."""
    at = _open("pages/annotate.py", seeded["users"]["ann"], campaign="c-alignmmbench")
    unit = _panel(at)["unit"]
    at.text_input(key=f"reason-{unit}").input("not my field")
    at.button(key=f"skip-{unit}").click().run()
    assert not at.exception, at.exception
    assert not at.toast
    assert [i.value for i in at.info if "Skipped" in i.value] == [
        r"Skipped\: the unit goes to others\."
    ]


def test_closing_the_guidelines_is_stored_per_annotator_and_campaign(seeded: dict) -> None:
    """Issue 25: the gate was kept in the tab's session only, so a reload before the first submit
    showed it again; it is stored now (an audit event), per annotator and per campaign."""
    ann, bo, engine = seeded["users"]["ann"], seeded["users"]["bo"], seeded["engine"]
    at = _open("pages/annotate.py", ann, campaign="c-alignmmbench")
    at.button(key="guidelines-read").click().run()
    with session_scope(engine) as session:
        alignmmbench, pairwise = (
            seeded["campaigns"]["alignmmbench"],
            seeded["campaigns"]["pairwise"],
        )
        assert queue.guidelines_read(session, alignmmbench, ann.id)
        assert not queue.guidelines_read(session, pairwise, ann.id)  # per campaign
        assert not queue.guidelines_read(session, alignmmbench, bo.id)  # per annotator
        (event,) = session.exec(
            select(AuditEvent).where(AuditEvent.action == "guidelines.read")
        ).all()
        assert (event.actor_id, event.entity_id) == (ann.id, str(alignmmbench))
    reloaded = _open("pages/annotate.py", ann, campaign="c-alignmmbench")  # nothing submitted
    assert "Guidelines for this campaign" not in _texts(reloaded.main)
    (guidelines,) = [p for p in reloaded.get("popover") if "Guidelines" in str(p.proto)]
    assert "Be **strict** about counts" in _texts(guidelines)  # on demand
    other = _open("pages/annotate.py", ann, campaign="c-pairwise")
    assert "Guidelines for this campaign" in _texts(other.main)
    assert "Guidelines for this campaign" in _texts(
        _open("pages/annotate.py", bo, campaign="c-alignmmbench").main
    )
    with session_scope(engine) as session:  # a second mark records nothing more
        queue.mark_guidelines_read(session, alignmmbench, ann.id)
    with session_scope(engine) as session:
        marks = session.exec(select(AuditEvent).where(AuditEvent.action == "guidelines.read"))
        assert len(marks.all()) == 1
