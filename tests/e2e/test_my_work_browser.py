"""My work in a real browser: it opens on the campaign last worked in, tells two answers on one
item apart, and keeps the picker after a revision is saved, so a second answer can be edited."""

from __future__ import annotations

import re
from typing import Any

import pytest
from admin_factory import PASSWORD, add_campaign, add_dataset, add_people, answer, units_of
from playwright.sync_api import expect
from sqlmodel import select

from schemas.tables import Annotation
from tests.browser_fixtures import click_option

pytestmark = pytest.mark.e2e
REASON = "The answer names every object in the picture."


@pytest.fixture(scope="module")
def seeded(app_server: Any) -> Any:
    """ann answered once in "a-finished", then both responses of ds-item-0 in "b-latest"."""
    with app_server.session() as session:
        people = add_people(session)
        add_dataset(session, items=2, models=("m1", "m2"))
        old, new = add_campaign(session, "a-finished"), add_campaign(session, "b-latest")
        answer(session, units_of(session, old.id)[0], people["ann"], score=3, rationale=REASON)
        for unit, score in zip(units_of(session, new.id)[:2], (4, 9), strict=True):
            answer(session, unit, people["ann"], score=score, rationale=REASON)
    return app_server


def test_a_revision_keeps_the_picker_for_the_next_answer(
    seeded: Any, page: Any, login: Any
) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    login(page, seeded.url, "ann", PASSWORD)
    page.get_by_role("link", name="My work").click()
    expect(page.get_by_role("combobox", name="Campaign")).to_have_value("b-latest")
    picker = page.get_by_role("combobox", name="Edit an answer")
    expect(picker).to_be_in_viewport()
    # (click_option opens the list again if a scroll or a rerun closed it, as under load)
    click_option(page, picker, "ds-item-0 · response 1 of 2 · b-latest", exact=False)
    expect(
        page.get_by_role("heading", name="Edit ds-item-0, response 1 of 2 (revision 1)")
    ).to_be_visible()
    expect(page.get_by_test_id("cl-rationale")).to_have_value(REASON)  # the panel is ready
    page.get_by_role("heading", name="Edit ds-item-0").click()  # focus out of the picker
    page.keyboard.press("5")
    expect(page.get_by_test_id("cl-choice-5")).to_have_attribute("aria-checked", "true")
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("Saved as revision 2.")).to_be_visible()
    with seeded.session() as session:
        revised = session.exec(select(Annotation).where(Annotation.revision == 2)).one()
    assert (revised.score, revised.rationale) == (5, REASON)
    expect(page).to_have_url(f"{seeded.url}/my_work?campaign=b-latest&annotation={revised.id}")
    # the picker is still there, on the new revision, and the other answer can be opened
    edited = page.get_by_role("heading", name="Edit ds-item-0, response 1 of 2 (revision 2)")
    expect(edited).to_be_visible()
    expect(page.get_by_test_id("cl-rationale")).to_have_value(REASON)  # the new panel is ready
    expect(picker).to_have_value(re.compile(r"response 1 of 2 · b-latest · .* · revision 2$"))
    click_option(page, picker, "ds-item-0 · response 2 of 2 · b-latest", exact=False)
    expect(
        page.get_by_role("heading", name="Edit ds-item-0, response 2 of 2 (revision 1)")
    ).to_be_visible()
    expect(page.get_by_test_id("cl-rationale")).to_have_value(REASON)
