"""Running a campaign in a real browser: role refusal by URL, a bad upload, an adjudication that
changes the calibration reference, and a role change that lands in the audit trail."""

from __future__ import annotations

from typing import Any

import pytest
from admin_factory import PASSWORD, add_campaign, add_dataset, add_people, answer, units_of
from playwright.sync_api import expect
from sqlalchemy import func
from sqlmodel import select

from data.readmodels.frames import campaign_reference_overrides
from data.services.users import get_user
from data.storage.audit import list_events
from schemas.tables import Campaign, Dataset, Item
from tests.browser_fixtures import ARTIFACTS, choose_option, drawn_by_this_run

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def seeded(app_server: Any) -> Any:
    """The five accounts of admin_factory; one campaign whose first unit is disputed (2 / 9)."""
    with app_server.session() as session:
        people = add_people(session)
        add_dataset(session, items=2)
        campaign = add_campaign(session, actor_id=people["root"])
        first = units_of(session, campaign.id)[0]
        answer(session, first, people["ann"], score=2, rationale="Reads the sign wrong.")
        answer(session, first, people["bob"], score=9, rationale="Reads the sign right.")
        second = units_of(session, campaign.id)[1]
        answer(session, second, people["ann"], score=5, rationale="Half of it is right.")
        answer(session, second, people["bob"], score=6, rationale="Most of it is right.")
    return app_server


def _items(server: Any) -> int:
    with server.session() as session:
        return session.exec(select(func.count()).select_from(Item)).one()


def test_an_annotator_typing_an_admin_url_gets_no_admin_page(
    seeded: Any, page: Any, login: Any
) -> None:
    """Each staff page says which role it needs (not "Page not found") and shows none of its
    content; one login, the four addresses typed in turn."""
    login(page, seeded.url, "cat", PASSWORD)
    for path in ("admin_users", "admin_data", "admin_audit", "review_adjudicate"):
        page.goto(f"{seeded.url}/{path}")
        expect(page.get_by_text("Logged in as cat (annotator)", exact=True)).to_be_visible()
        needs = "admin" if path.startswith("admin_") else "reviewer or admin"
        expect(
            page.get_by_text(f"page is for {needs} accounts; you are logged in as")
        ).to_be_visible()
        expect(page.get_by_text("Page not found")).to_have_count(0)
        for widget in ("stFileUploader", "stDataFrame", "stForm"):  # the pages' own content
            expect(page.get_by_test_id(widget), path).to_have_count(0)
        expect(page.get_by_role("button", name="Record final label")).to_have_count(0)


def test_a_bad_upload_shows_every_bad_line_and_imports_nothing(
    seeded: Any, page: Any, login: Any, tmp_path: Any
) -> None:
    """Every bad line is listed as plain text (it showed only the first, with its Markdown
    backticks escaped)."""
    bad = tmp_path / "broken.jsonl"
    bad.write_text(
        '{"item_id": "ok-1", "benchmark": "generic", "question": "Q?"}\n'
        '{"item_id": "bad-2", "benchmark": "alignmmbench", "task": "Dancing", "question": "Q?"}\n'
        '{"item_id": "bad-3", "benchmark": "generic", "question": "Q?", "responses": "none"}\n'
    )
    before = _items(seeded)
    login(page, seeded.url, "root", PASSWORD)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.get_by_role("link", name="Data").click()
    expect(page.get_by_role("heading", name="Upload a dataset")).to_be_visible()
    uploader = page.get_by_role("region", name="Dataset file")
    uploader.locator("input[type=file]").set_input_files(str(bad))
    expect(page.get_by_text("broken.jsonl")).to_be_visible()
    page.get_by_role("button", name="Import dataset").click()
    expect(
        page.get_by_text("Nothing was imported: 2 problems. Fix each line listed below")
    ).to_be_visible()
    listing = page.locator("[data-testid=stCode]")
    expect(listing).to_contain_text("broken.jsonl:2: `task` is 'Dancing'")
    expect(listing).to_contain_text("broken.jsonl:3: `responses` is 'none' (str)")
    assert "\\`" not in listing.inner_text()
    listing.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "admin-data-bad-upload-1280x720.png"))
    assert _items(seeded) == before
    with seeded.session() as session:
        assert session.exec(select(Dataset).where(Dataset.name == "broken")).first() is None


def test_an_adjudication_in_the_browser_becomes_the_calibration_reference(
    seeded: Any, page: Any, login: Any
) -> None:
    with seeded.session() as session:
        campaign_id = session.exec(select(Campaign.id).where(Campaign.name == "camp")).one()
        assert campaign_reference_overrides(session, campaign_id) == {}
    page.set_viewport_size({"width": 1280, "height": 720})
    login(page, seeded.url, "rita", PASSWORD)
    page.get_by_role("link", name="Adjudicate").click()
    expect(page.get_by_text("Reads the sign wrong.")).to_be_visible()
    expect(page.get_by_text("Reads the sign right.")).to_be_visible()
    # the form is beside the unit, on screen without scrolling (it was ~2,000 px below the queue)
    expect(page.get_by_role("button", name="Record final label")).to_be_in_viewport(ratio=1)
    page.screenshot(path=str(ARTIFACTS / "adjudicate-page-1280x720.png"))
    choose_option(page, "Score", "7")
    page.get_by_label("Note: why this is the final label").fill("The sign is legible: 7.")
    page.get_by_role("button", name="Record final label").click()
    # the confirmation is where the eyes are: beside the form, not above the viewport
    expect(page.get_by_text("Final label recorded for")).to_be_in_viewport(ratio=1)
    page.screenshot(path=str(ARTIFACTS / "adjudicate-recorded-1280x720.png"))
    with seeded.session() as session:
        assert campaign_reference_overrides(session, campaign_id) == {"r:ds-item-0/m1": 7}
        [event] = list_events(session, action_prefix="adjudication.")
        assert event.actor_id == get_user(session, "rita").id
    # the next unit opens with an empty form: not the 7 and the note of the unit before
    expect(page.get_by_text("Half of it is right.")).to_be_visible()
    expect(page.get_by_text("2 answers · mean 5.50 · median 5.5")).to_be_visible()
    form = drawn_by_this_run(page)
    expect(form.get_by_role("combobox", name="Score")).to_have_value("")
    expect(form.get_by_label("Note: why this is the final label")).to_have_value("")
    form.get_by_label("Note: why this is the final label").fill("No score chosen yet.")
    page.get_by_role("button", name="Record final label").click()
    expect(page.get_by_text("choose a score (integers 1–10)")).to_be_visible()
    with seeded.session() as session:
        assert len(list_events(session, action_prefix="adjudication.")) == 1


def test_a_role_change_in_the_browser_is_audited(seeded: Any, page: Any, login: Any) -> None:
    login(page, seeded.url, "root", PASSWORD)
    page.get_by_role("link", name="Users").click()
    choose_option(page, "Account", "bob")
    choose_option(page, "New role", "reviewer")
    page.get_by_role("button", name="Change role").click()
    expect(page.get_by_text("bob is now reviewer.")).to_be_visible()
    with seeded.session() as session:
        assert get_user(session, "bob").role == "reviewer"
        event = list_events(session, action_prefix="user.role")[0]
        assert (event.detail, event.actor_id) == (
            {"before": "annotator", "after": "reviewer"},
            get_user(session, "root").id,
        )
    page.get_by_role("link", name="Audit trail").click()
    expect(page.get_by_role("heading", name="Audit trail")).to_be_visible()
