"""Logging in and out in a real browser: the campaign list, a refresh keeps the login, a logout
ends it, and the router never shows a page to someone logged out."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from data.campaigns import CampaignSpec, create_campaign
from schemas.tables import Dataset, Item, Response

pytestmark = pytest.mark.e2e

PASSWORD = "correct horse battery"
CHINESE_CAMPAIGN = "中文图像问答评测"


@pytest.fixture(scope="module")
def seeded(app_server: Any) -> Any:
    app_server.add_user("ann", PASSWORD, "annotator")
    app_server.add_user("root", PASSWORD, "admin")
    with app_server.session() as session:
        dataset = Dataset(name="图像问答", benchmark="alignmmbench")
        session.add(dataset)
        session.flush()
        item = Item(dataset_id=dataset.id, item_id="q1", benchmark="alignmmbench",
                    question="图中有几只猫?", content_sha256="i1")  # fmt: skip
        session.add(item)
        session.flush()
        session.add(Response(response_id="q1/m", item_pk=item.id, model="m", content="两只",
                             content_sha256="r1"))  # fmt: skip
        session.flush()
        spec = CampaignSpec(name=CHINESE_CAMPAIGN, dataset="图像问答", protocol="alignmmbench")
        create_campaign(session, spec)
    return app_server


def _login_form(page: Any) -> Any:
    return page.get_by_label("User name", exact=True)


def test_login_shows_campaigns_and_survives_a_refresh_until_logout(
    seeded: Any, page: Any, login: Any
) -> None:
    login(page, seeded.url, "ann", PASSWORD)
    expect(page.get_by_role("heading", name="Campaigns")).to_be_visible()
    expect(page.get_by_role("cell", name=CHINESE_CAMPAIGN)).to_be_visible()
    cookie = next(c for c in page.context.cookies() if c["name"] == "critiquelab_session")
    assert cookie["sameSite"] == "Strict"

    page.reload()
    expect(page.get_by_text("Logged in as ann")).to_be_visible()
    expect(page.get_by_role("cell", name=CHINESE_CAMPAIGN)).to_be_visible()

    page.get_by_role("button", name="Log out").click()
    expect(_login_form(page)).to_be_visible()
    expect(page.get_by_text("Logged in as ann")).to_have_count(0)
    page.reload()
    expect(_login_form(page)).to_be_visible()
    expect(page.get_by_text("Logged in as ann")).to_have_count(0)
    names = [c["name"] for c in page.context.cookies()]
    assert "critiquelab_session" not in names


def test_wrong_password_is_refused(seeded: Any, page: Any) -> None:
    page.goto(seeded.url)
    _login_form(page).fill("root")
    page.get_by_label("Password", exact=True).fill("not the password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_text("Wrong user name or password.")).to_be_visible()


def test_a_page_url_shows_the_login_form_when_logged_out(seeded: Any, page: Any) -> None:
    page.goto(f"{seeded.url}/admin_users")
    expect(_login_form(page)).to_be_visible()
    expect(page.get_by_role("link", name="Users")).to_have_count(0)


def test_an_annotator_has_no_admin_pages_in_the_menu(seeded: Any, page: Any, login: Any) -> None:
    login(page, seeded.url, "ann", PASSWORD)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("link", name="Home")).to_be_visible()
    expect(sidebar.get_by_role("link", name="Users")).to_have_count(0)
    page.goto(f"{seeded.url}/admin_users")
    expect(page.get_by_text("Logged in as ann")).to_be_visible()
    expect(page.get_by_role("heading", name="Campaigns")).to_be_visible()  # sent home instead
