"""Logging in and out in a real browser: the campaign list, a refresh keeps the login, a logout
ends it, the session cookie is HttpOnly, a deep link opens after login, a page of another role
says so, and the router never shows a page to someone logged out."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from data.services.campaigns import CampaignSpec, create_campaign
from schemas.tables import Dataset, Item, Response
from tests.browser_fixtures import ARTIFACTS, login_in_browser

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


def test_login_shows_campaigns_and_survives_a_refresh_until_logout(seeded: Any, page: Any) -> None:
    login_in_browser(page, seeded.url, "ann", PASSWORD)  # the form, not the endpoint alone
    expect(page.get_by_role("heading", name="Home")).to_be_visible()
    expect(page.get_by_role("cell", name=CHINESE_CAMPAIGN)).to_be_visible()
    cookie = next(c for c in page.context.cookies() if c["name"] == "critiquelab_session")
    # set by the server: no script in the page can read it, no other site can send it
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert cookie["secure"] is False  # plain http on localhost; https sets Secure
    assert cookie["value"] not in page.evaluate("document.cookie")
    assert "critiquelab_session" not in page.evaluate("document.cookie")

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


def test_an_annotator_has_no_admin_pages_and_is_told_why(
    seeded: Any, page: Any, login: Any
) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    login(page, seeded.url, "ann", PASSWORD)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("link", name="Home")).to_be_visible()
    expect(sidebar.get_by_role("link", name="Users")).to_have_count(0)
    page.goto(f"{seeded.url}/admin_users?x=1")
    expect(sidebar.get_by_text("Logged in as ann")).to_be_visible()
    expect(page.get_by_text(
        "The Users page is for admin accounts; you are logged in as ann (annotator)."
    )).to_be_visible()  # fmt: skip
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(page.get_by_role("heading", name="Change an account")).to_have_count(0)  # never ran
    expect(sidebar.get_by_role("link", name="Users")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "login-blocked-page-1280x720.png"))
    page.get_by_role("link", name="Go to Home").click()
    expect(page.get_by_role("heading", name="Home")).to_be_visible()


def test_a_deep_link_opens_after_login_with_its_query(seeded: Any, page: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    link = f"{seeded.url}/my_work?campaign={quote(CHINESE_CAMPAIGN)}&x=1"
    page.goto(link)
    expect(_login_form(page)).to_be_visible()
    expect(page.get_by_text("Page not found")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "login-form-1280x720.png"))
    _login_form(page).fill("ann")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_text("Logged in as ann")).to_be_visible()
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("link", name="My work")).to_have_attribute("aria-current", "page")
    assert page.url == link


def test_the_token_never_reaches_a_script_in_the_page(seeded: Any, page: Any, login: Any) -> None:
    """A script injected into the page (XSS) finds no session token to steal: not in
    document.cookie, not in storage, and it cannot set or overwrite the session cookie."""
    login(page, seeded.url, "root", PASSWORD)
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "critiquelab_session")
    exposed = page.evaluate(
        "() => [document.cookie, JSON.stringify(localStorage), JSON.stringify(sessionStorage),"
        " document.documentElement.outerHTML].join('\\n')"
    )
    assert token not in exposed
    page.evaluate("document.cookie = 'critiquelab_session=forged; path=/'")
    [cookie] = [c for c in page.context.cookies() if c["name"] == "critiquelab_session"]
    assert cookie["value"] == token  # HttpOnly: a script cannot overwrite it either
