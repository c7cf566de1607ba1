"""The Campaigns page in a real browser: judge-guided routing set there and served to an annotator;
its annotations download."""

from __future__ import annotations

from typing import Any

import pytest
from admin_factory import PASSWORD, add_campaign, add_dataset, add_people, answer, units_of
from playwright.sync_api import expect
from sqlmodel import select
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data.services.judgements import insert_judgements
from schemas.tables import Campaign, Judgement, Response, User
from tests.browser_fixtures import ARTIFACTS, choose_option, click_option

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def seeded(app_server: Any) -> Any:
    """admin_factory's accounts and campaign; judges j1 and j2 differ most on the third unit."""
    with app_server.session() as session:
        people = add_people(session)
        add_dataset(session, items=2)
        campaign = add_campaign(session, actor_id=people["root"])
        units = units_of(session, campaign.id)
        rows = []
        for unit, (first, second) in zip(units, ((5, 5), (4, 6), (1, 10), (7, 7)), strict=False):
            response = session.get(Response, unit.response_pk)
            rows += [
                Judgement(judge=judge, protocol="alignmmbench", response_pk=unit.response_pk,
                          unit_key=f"r:{response.response_id}", score=score)
                for judge, score in (("j1", first), ("j2", second))
            ]  # fmt: skip
        insert_judgements(session, rows)
    app_server.disputed = units[2].id
    return app_server


def test_routing_set_in_the_browser_serves_the_disputed_unit_first(
    seeded: Any, page: Any, login: Any
) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    login(page, seeded.url, "root", PASSWORD)
    page.get_by_role("link", name="Campaigns").click()
    choose_option(page, "Routing", "judge-disagreement")
    judges = page.get_by_role("combobox", name="Judges that order the queue")
    for judge in ("j1", "j2"):
        click_option(page, judges, judge)
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Apply routing").click()
    applied = page.get_by_text("Routing judge-disagreement: 4 of 4 units ordered")
    expect(applied).to_be_visible()
    # where the eyes are: on the row of the button just clicked, wherever Playwright scrolled the
    # button to (once 672 px above the viewport; then under the form, below the viewport's lower
    # edge when the button sat on it)
    button = page.get_by_role("button", name="Apply routing").bounding_box()
    message = applied.bounding_box()
    assert button is not None and message is not None
    assert (
        message["y"] < button["y"] + button["height"]
        and button["y"] < message["y"] + message["height"]
    )
    expect(applied).to_be_in_viewport()
    page.screenshot(path=str(ARTIFACTS / "admin-campaigns-routing-1280x720.png"))
    with seeded.session() as session:
        campaign = session.exec(select(Campaign)).one()
        assert (campaign.routing, campaign.routing_judges) == ("judge-disagreement", ["j1", "j2"])
        from data.queue import next_unit
        from data.services.users import get_user

        view = next_unit(session, campaign.id, get_user(session, "cat").id)
        assert view is not None and view.unit_id == seeded.disputed


def _answer(seeded: Any, unit_index: int, annotator: str, score: int) -> None:
    with seeded.session() as session:
        people = {user.name: user.id for user in session.exec(select(User))}
        unit = units_of(session, session.exec(select(Campaign)).one().id)[unit_index]
        answer(session, unit, people[annotator], score=score, seconds=30)


def _download(page: Any, button: str, target: Any) -> bytes:
    """Click the download ``button`` and return what the browser saved."""
    with page.expect_download() as caught:
        page.get_by_role("button", name=button).click()
    caught.value.save_as(target)
    return target.read_bytes()


def _export(seeded: Any, target: Any, *command: str) -> bytes:
    """``critiquelab export …`` of the campaign, as a user would run it: the file it wrote."""
    arguments = ["--db", seeded.db_url, "export", *command, "--campaign", "camp", "-o", target]
    written = CliRunner().invoke(app, [str(argument) for argument in arguments])
    assert written.exit_code == 0, written.output
    return target.read_bytes()


def test_the_annotations_download_is_the_commands_file(
    seeded: Any, page: Any, login: Any, tmp_path: Any
) -> None:
    """The Campaigns page's annotations download, written by the calibration worker of the real
    server, is the file ``critiquelab export annotations`` writes."""
    _answer(seeded, 0, "ann", 4)
    login(page, seeded.url, "root", PASSWORD)
    page.get_by_role("link", name="Campaigns").click()
    downloaded = _download(page, "Annotations (JSONL)", tmp_path / "page.jsonl")
    assert downloaded == _export(seeded, tmp_path / "cli.jsonl", "annotations")
    assert b'"score": 4' in downloaded


def test_the_training_file_built_and_downloaded_is_the_commands_file(
    seeded: Any, page: Any, login: Any, tmp_path: Any
) -> None:
    """The Campaigns page builds ``critiquelab export sft``'s file in the calibration worker, on
    disk, and its download reads that file back when clicked."""
    _answer(seeded, 1, "bob", 8)
    login(page, seeded.url, "root", PASSWORD)
    page.get_by_role("link", name="Campaigns").click()
    page.get_by_role("button", name="Build critic training data (SFT)").click()
    downloaded = _download(page, "Download SFT (JSONL)", tmp_path / "page-sft.jsonl")
    assert downloaded == _export(seeded, tmp_path / "cli-sft.jsonl", "sft")
    assert downloaded.count(b"\n") >= 1
