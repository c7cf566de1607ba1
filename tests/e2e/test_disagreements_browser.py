"""The Disagreements page in a real browser on the sample project: a digit key records the cause
with the note and opens the next untagged disagreement; digits typed in the note stay text, and
Esc leaves the note (screenshot at 1280×720 in test-artifacts/)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from schemas.disagreements import DEFAULT_TAXONOMY
from schemas.tables import DisagreementTag
from tests.browser_fixtures import ARTIFACTS, SLOW_UI_TIMEOUT_MS, drawn_by_this_run

pytestmark = pytest.mark.e2e


def _tags(server: Any) -> list[tuple[int, str, str]]:
    with server.session() as session:
        rows = session.exec(select(DisagreementTag).order_by(DisagreementTag.id)).all()
        return [(row.unit_id, row.cause, row.note) for row in rows]


def _unit_shown(page: Any) -> str:
    return page.get_by_role("combobox", name="Unit (largest gap first)").input_value()


def test_keys_tag_the_cause_and_open_the_next_disagreement(
    sample_app_server: Any, page: Any, login: Any
):
    login(page, sample_app_server.url, "demo-reviewer", "demo-reviewer-pass")
    page.get_by_role("link", name="Disagreements").click()
    expect(page.get_by_text("Why does the judge disagree?")).to_be_visible(
        timeout=SLOW_UI_TIMEOUT_MS
    )
    page.set_viewport_size({"width": 1280, "height": 720})
    page.screenshot(path=str(ARTIFACTS / "disagreements-page-1280x720.png"))
    first = _unit_shown(page)

    note = page.get_by_label("Note (needed for 'other')")
    note.fill("Counts 4 cats; the image has 3.")
    note.press("4")  # inside the note a digit is text, not a shortcut
    expect(note).to_have_value("Counts 4 cats; the image has 3.4")
    assert _tags(sample_app_server) == []
    # Streamlit's own hint ("Press Ctrl+Enter to apply": Ctrl+Enter submits on Annotate) is
    # replaced by the page's
    expect(page.get_by_text("Ctrl+Enter to apply")).not_to_be_visible()
    expect(page.get_by_text("Esc leaves the note; then keys 1–9 record")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "disagreements-note-1280x720.png"))
    note.press("Backspace")
    note.press("Escape")  # leaves the box: the next key is a shortcut, not text in the note
    expect(note).not_to_be_focused()
    page.keyboard.press("4")  # 4 = too lenient
    flash = page.get_by_role("status").filter(has_text="too lenient.")
    expect(flash).to_be_visible(timeout=SLOW_UI_TIMEOUT_MS)
    # the unit key is shown as text: a word joiner after "r:" keeps it from becoming a link
    assert (
        flash.inner_text().replace("\u2060", "") == f"Tagged {first.split(' · ')[0]}: too lenient."
    )
    tags = _tags(sample_app_server)
    assert [(cause, note_text) for _, cause, note_text in tags] == [
        (DEFAULT_TAXONOMY[3], "Counts 4 cats; the image has 3.")
    ]
    expect(page.get_by_role("combobox", name="Unit (largest gap first)")).not_to_have_value(first)
    # the next unit opens with an empty note (its own box: the old one stays until the run ends)
    expect(drawn_by_this_run(page).get_by_label("Note (needed for 'other')")).to_have_value("")
    page.get_by_role("heading", name="Disagreements").first.evaluate("e => e.scrollIntoView()")
    page.screenshot(path=str(ARTIFACTS / "disagreements-page-after-key-1280x720.png"))
