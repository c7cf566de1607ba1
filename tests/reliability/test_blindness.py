"""Blindness: an annotator sees no other human's answer and no judge output before submitting,
on any page, whatever the query parameters say.

Every page of the app is run under AppTest as the annotator ``ann`` of
:mod:`hostile_world`, with query parameters that name other people's things (bob's annotation
id, bob's name, the judge, the unit). Everything the server sends for the page — every element's
protobuf, sidebar included, dataframes and component data too — is searched for the markers in
bob's rationale and in the judge's rationale and raw output.

Gold units (:func:`hostile_world.build_gold_world`): with feedback off, no page shows the
explanation or the expected answer, and nothing the page sends (its elements, the answer panel's
data, the URL) differs between the gold unit and a real one but the assignment id; with feedback
on, the explanation appears only after the annotator submitted the gold unit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hostile_world import (
    BOB_SECRET,
    GOLD_EXPECTED,
    GOLD_SECRET,
    JUDGE_SECRET,
    HostileWorld,
    build_gold_world,
    build_hostile_world,
)
from sqlalchemy.engine import Engine
from streamlit.testing.v1 import AppTest

from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR, PAGES
from data import queue
from data.storage.engine import make_engine, session_scope, upgrade_database

ANNOTATOR_PAGES = [spec.file for spec in PAGES if "annotator" in spec.roles]
OTHER_PAGES = [spec.file for spec in PAGES if "annotator" not in spec.roles]


def _everything_sent(at: AppTest) -> str:
    """The text form of every element proto the page produced."""
    found: list[str] = []

    def walk(node: object) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            found.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(found)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileWorld]:
    """One hostile project for the module's page runs (they only read)."""
    folder = tmp_path_factory.mktemp("blind")
    db_url = f"sqlite:///{folder / 'critiquelab.db'}"
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("CRITIQUELAB_DB", db_url)
        environment.setenv("CRITIQUELAB_DATA_DIR", str(folder / "data"))
        engine = make_engine(db_url)
        upgrade_database(engine)
        yield build_hostile_world(engine)
        engine.dispose()


def _queries(world: HostileWorld) -> list[dict[str, str]]:
    return [
        {},
        {"campaign": world.campaign_name},
        {"campaign": world.campaign_name, "annotation": str(world.bob_annotation_id)},
        {"annotation": str(world.bob_annotation_id), "unit": str(world.ann_unit)},
        {"user": "bob", "annotator": "bob", "judge": "gpt-4", "show_others": "1"},
    ]


def _run(page: str, world: HostileWorld, query: dict[str, str]) -> AppTest:
    """``page`` run directly (its own role check is all that stands in the way)."""
    at = AppTest.from_file(str(APP_DIR / page), default_timeout=60)
    at.session_state[USER_KEY] = world.ann
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def _run_through_router(page: str, user: object, query: dict[str, str]) -> AppTest:
    """``page`` reached the way a browser reaches it: through ``app.py``'s navigation."""
    at = AppTest.from_file(str(APP_DIR / "app.py"), default_timeout=60)
    at.session_state[USER_KEY] = user
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    return at.switch_page(page).run()


@pytest.mark.parametrize("page", ANNOTATOR_PAGES)
def test_annotator_pages_never_show_others_or_judges(world: HostileWorld, page: str) -> None:
    assert (APP_DIR / page).is_file(), f"{page} is gone: a renamed page must keep this privacy test"
    for query in _queries(world):
        at = _run_through_router(page, world.ann, query)
        sent = _everything_sent(at)
        assert not at.exception, (page, query, [e.value for e in at.exception])
        assert BOB_SECRET not in sent, f"{page}?{query} shows bob's answer to ann"
        assert JUDGE_SECRET not in sent, f"{page}?{query} shows a judge's output to ann"
    if page.endswith("annotate.py"):
        assert "Question 1" in sent or "Question 0" in sent, "the unit itself is not shown"


@pytest.mark.parametrize("page", OTHER_PAGES)
def test_staff_pages_refuse_the_annotator(world: HostileWorld, page: str) -> None:
    assert (APP_DIR / page).is_file(), f"{page} is gone: a renamed page must keep this privacy test"
    at = _run(page, world, {"campaign": world.campaign_name})
    sent = _everything_sent(at)
    assert not at.exception
    assert [e.value for e in at.error] and "you are logged in as ann" in at.error[0].value
    assert BOB_SECRET not in sent and JUDGE_SECRET not in sent


def test_service_layer_gives_others_only_after_own_submit(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once ann has submitted, the service gives her bob's answer; and the same search as above
    finds bob's answer where a reviewer may see it (control: the search is not blind itself)."""
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    world = build_hostile_world(engine)
    with session_scope(engine) as session:
        assert queue.others_answers(session, world.ann_unit, world.ann.id) == []
        view = queue.next_unit(session, world.campaign_id, world.ann.id)
        assert view is not None and view.unit_id == world.ann_unit
        assert BOB_SECRET not in repr(view) and JUDGE_SECRET not in repr(view)
        with pytest.raises(queue.AssignmentNotFound):
            queue.my_annotation_view(session, world.bob_annotation_id, world.ann.id)
        queue.submit(session, view.assignment_id, world.ann.id, score=4.0,
                     rationale="ann answers after all")  # fmt: skip
        others = queue.others_answers(session, world.ann_unit, world.ann.id)
    assert [BOB_SECRET in other.rationale for other in others] == [True]
    at = _run_through_router("pages/review_adjudicate.py", world.admin, {})
    assert not at.exception and BOB_SECRET in _everything_sent(at)


# --- gold units ------------------------------------------------------------------------------


def _panel(at: AppTest) -> dict[str, Any]:
    """The answer panel's data (:func:`annotate_app.components.answer_box.panel_data`)."""
    (panel,) = at.get("bidi_component")
    return dict(json.loads(panel.proto.json))


def _submit_on_page(at: AppTest, engine: Engine, annotator_id: int) -> None:
    """Submit the unit the page shows, as the page's own submit does (queue, then its state)."""
    step, _ = queue.submit_step(
        engine, _panel(at)["unit"], annotator_id, score=40.0, rationale="cat's answer"
    )
    at.session_state["annotate_feedback"] = (step.campaign_id, step.feedback)
    at.session_state["annotate_next"] = (step.campaign_id, step.next_unit)
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def _unescaped(sent: str) -> str:
    """``sent`` without backslashes (shown text has its punctuation escaped: 73\\.25)."""
    return sent.replace("\\", "")


def _assert_no_gold_answer(sent: str, where: str) -> None:
    sent = _unescaped(sent)
    assert GOLD_SECRET not in sent, f"{where} shows the gold explanation"
    assert GOLD_EXPECTED not in sent, f"{where} shows the expected answer"
    assert "gold" not in sent.casefold(), f"{where} says the word gold to an annotator"


def test_gold_units_are_blind_without_feedback(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    world = build_gold_world(engine, feedback=False)
    query = {"campaign": world.campaign_name}
    at = _run_through_router("pages/annotate.py", world.cat, query)
    assert not at.exception, [e.value for e in at.exception]
    gold_panel, gold_url = _panel(at), dict(at.query_params)
    with session_scope(engine) as session:  # the page shows the gold unit (cat is qualifying)
        gold_view = queue.assignment_view(session, gold_panel["unit"], world.cat.id)
        assert gold_view.unit_id == world.gold_unit
    _assert_no_gold_answer(_everything_sent(at), "the annotation page of a gold unit")
    _submit_on_page(at, engine, world.cat.id)
    real_panel, real_url = _panel(at), dict(at.query_params)
    sent = _everything_sent(at)
    _assert_no_gold_answer(sent, "the page after a gold submit")
    with session_scope(engine) as session:
        assert queue.assignment_view(session, real_panel["unit"], world.cat.id).unit_id == (
            world.real_unit
        )
    # the panel's data and the URL differ only in the assignment id (and the clock)
    assert gold_panel.keys() == real_panel.keys()
    differ = {key for key in gold_panel if gold_panel[key] != real_panel[key]}
    assert differ <= {"unit", "panel", "store", "server_now"}, differ
    for shown in (gold_panel, real_panel):  # the panel's own id is its key: the assignment id
        assert shown["panel"] == f"answer-{shown['unit']}"
    assert gold_url.keys() == real_url.keys() and gold_url["unit"] == str(gold_panel["unit"])
    assert real_url["unit"] == str(real_panel["unit"]) and real_panel["unit"] > gold_panel["unit"]
    for page in ANNOTATOR_PAGES:  # after the gold submit, on every page cat may open
        at = _run_through_router(page, world.cat, query)
        assert not at.exception, (page, [e.value for e in at.exception])
        _assert_no_gold_answer(_everything_sent(at), page)


def test_gold_feedback_comes_only_after_the_annotator_submitted_the_gold_unit(
    engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    world = build_gold_world(engine, feedback=True)
    query = {"campaign": world.campaign_name}
    for page in ANNOTATOR_PAGES:  # before: nothing on any page, the gold unit's own included
        at = _run_through_router(page, world.cat, query)
        assert not at.exception, (page, [e.value for e in at.exception])
        _assert_no_gold_answer(_everything_sent(at), page)
    at = _run_through_router("pages/annotate.py", world.cat, query)
    with session_scope(engine) as session:
        shown = queue.assignment_view(session, _panel(at)["unit"], world.cat.id)
        assert shown.unit_id == world.gold_unit
    _submit_on_page(at, engine, world.cat.id)
    sent = _unescaped(_everything_sent(at))
    assert GOLD_SECRET in sent and GOLD_EXPECTED in sent, "no feedback after the gold submit"
