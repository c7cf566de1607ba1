"""Blindness: an annotator sees no other human's answer and no judge output before submitting,
on any page, whatever the query parameters say.

Every page of the app is run under AppTest as the annotator ``ann`` of
:mod:`hostile_world`, with query parameters that name other people's things (bob's annotation
id, bob's name, the judge, the unit). Everything the server sends for the page — every element's
protobuf, sidebar included, dataframes and component data too — is searched for the markers in
bob's rationale and in the judge's rationale and raw output.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hostile_world import BOB_SECRET, JUDGE_SECRET, HostileWorld, build_hostile_world
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
