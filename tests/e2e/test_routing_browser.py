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
from data.io.judgements import insert_judgements
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
    login(page, seeded.url, "root", PASSWORD)
    page.get_by_role("link", name="Campaigns").click()
    choose_option(page, "Routing", "judge-disagreement")
    judges = page.get_by_role("combobox", name="Judges that order the queue")
    for judge in ("j1", "j2"):
        click_option(page, judges, judge)
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Apply routing").click()
    expect(page.get_by_text("Routing judge-disagreement: 4 of 4 units ordered")).to_be_visible()
    page.get_by_role("button", name="Apply routing").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "admin-campaigns-routing-1280x720.png"))
    with seeded.session() as session:
        campaign = session.exec(select(Campaign)).one()
        assert (campaign.routing, campaign.routing_judges) == ("judge-disagreement", ["j1", "j2"])
        from data.queue import next_unit
        from data.services.users import get_user

        view = next_unit(session, campaign.id, get_user(session, "cat").id)
        assert view is not None and view.unit_id == seeded.disputed


def test_the_annotations_download_is_the_commands_file(
    seeded: Any, page: Any, login: Any, tmp_path: Any
) -> None:
    """The Campaigns page's annotations download, written by the calibration worker of the real
    server, is the file ``critiquelab export annotations`` writes."""
    with seeded.session() as session:
        people = {user.name: user.id for user in session.exec(select(User))}
        unit = units_of(session, session.exec(select(Campaign)).one().id)[0]
        answer(session, unit, people["ann"], score=4, seconds=30)
    login(page, seeded.url, "root", PASSWORD)
    page.get_by_role("link", name="Campaigns").click()
    with page.expect_download() as caught:
        page.get_by_role("button", name="Annotations (JSONL)").click()
    downloaded = tmp_path / "page.jsonl"
    caught.value.save_as(downloaded)
    exported = tmp_path / "cli.jsonl"
    written = CliRunner().invoke(
        app, ["--db", seeded.db_url, "export", "annotations", "--campaign", "camp", "-o",
              str(exported)],
    )  # fmt: skip
    assert written.exit_code == 0, written.output
    assert downloaded.read_bytes() == exported.read_bytes()
    assert b'"score": 4' in downloaded.read_bytes()


def test_the_training_file_built_and_downloaded_is_the_commands_file(
    seeded: Any, page: Any, login: Any, tmp_path: Any
) -> None:
    """The Campaigns page builds ``critiquelab export sft``'s file in the calibration worker, on
    disk, and its download reads that file back when clicked."""
    with seeded.session() as session:
        people = {user.name: user.id for user in session.exec(select(User))}
        unit = units_of(session, session.exec(select(Campaign)).one().id)[1]
        answer(session, unit, people["bob"], score=8, seconds=30)
    login(page, seeded.url, "root", PASSWORD)
    page.get_by_role("link", name="Campaigns").click()
    page.get_by_role("button", name="Build critic training data (SFT)").click()
    with page.expect_download() as caught:
        page.get_by_role("button", name="Download SFT (JSONL)").click()
    downloaded = tmp_path / "page-sft.jsonl"
    caught.value.save_as(downloaded)
    exported = tmp_path / "cli-sft.jsonl"
    written = CliRunner().invoke(
        app, ["--db", seeded.db_url, "export", "sft", "--campaign", "camp", "-o", str(exported)]
    )
    assert written.exit_code == 0, written.output
    assert downloaded.read_bytes() == exported.read_bytes()
    assert downloaded.read_bytes().count(b"\n") >= 1
