"""Judge-guided routing set on the Campaigns page in a real browser, then served to an annotator."""

from __future__ import annotations

from typing import Any

import pytest
from admin_factory import PASSWORD, add_campaign, add_dataset, add_people, units_of
from playwright.sync_api import expect
from sqlmodel import select

from data.io.judgements import insert_judgements
from schemas.tables import Campaign, Judgement, Response
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
