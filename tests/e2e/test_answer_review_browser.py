"""Trustworthy labels in a real browser on the sample project (issue 24): a held annotator is
told so in plain words on Annotate; a reviewer rejects an answer with a comment on *Review
answers*; its annotator reads the comment in *My work*; an admin sees the gold settings on
*Campaigns* and the Annotators table on the *Monitor*. Screenshots at 1280×720 in
test-artifacts/."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from data import queue
from data.queue.gold import ADMIN_HELD_MESSAGE
from data.services.answer_review import annotator_answers_as
from data.services.gold import change_standing_as
from schemas.core import stored_id
from schemas.tables import Campaign, Unit, User
from tests.browser_fixtures import (
    ARTIFACTS,
    SLOW_UI_TIMEOUT_MS,
    click_option,
    wait_for_run_to_end,
)

pytestmark = pytest.mark.e2e
HELD_CAMPAIGN = "demo-alignmmbench-open"
REVIEWED_CAMPAIGN = "demo-pairwise-open"
FINISHED_CAMPAIGN = "demo-alignmmbench-finished"
COMMENT = "Response B misreads the chart's second bar <b>twice</b>; please look again."
RATIONALE = "Response A reads both bars of the chart correctly, B swaps them."


def _shot(page: Any, name: str, anchor: Any = None) -> None:
    """A 1280×720 screenshot once the page's run has ended, ``anchor`` scrolled into view."""
    page.set_viewport_size({"width": 1280, "height": 720})
    wait_for_run_to_end(page)
    if anchor is not None:
        anchor.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"{name}-1280x720.png"))


def _answer_one_real_unit(server: Any, login: str) -> int:
    """``login`` answers the pairwise campaign until one real (not gold) unit is answered;
    that answer's id."""
    with server.session() as session:
        campaign = session.exec(select(Campaign).where(Campaign.name == REVIEWED_CAMPAIGN)).one()
        user = session.exec(select(User).where(User.name == login)).one()
        while True:
            view = queue.next_unit(session, stored_id(campaign), stored_id(user))
            assert view is not None
            answer = queue.submit(
                session, view.assignment_id, stored_id(user), preference="A", rationale=RATIONALE
            )
            session.flush()
            if not session.get(Unit, view.unit_id).gold:  # type: ignore[union-attr]
                return stored_id(answer)


@pytest.fixture(scope="module")
def seeded(sample_app_server: Any) -> tuple[Any, int]:
    """demo-alice held by demo-admin in the AlignMMBench campaign (as an admin's hold on the
    Monitor records it: with who decided); demo-bob's answer to one real unit of the pairwise
    campaign."""
    with sample_app_server.session() as session:
        admin = session.exec(select(User).where(User.name == "demo-admin")).one()
        change_standing_as(session, stored_id(admin), HELD_CAMPAIGN, "demo-alice", "hold")
    return sample_app_server, _answer_one_real_unit(sample_app_server, "demo-bob")


def test_a_held_annotator_is_told_in_plain_words(seeded: Any, page: Any, login: Any) -> None:
    server, _ = seeded
    login(page, server.url, "demo-alice", "demo-alice-pass")
    page.goto(f"{server.url}/annotate?campaign={HELD_CAMPAIGN}")
    expect(page.get_by_text(ADMIN_HELD_MESSAGE)).to_be_visible(timeout=SLOW_UI_TIMEOUT_MS)
    expect(page.get_by_role("link", name="Review my answers")).to_be_visible()
    expect(page.get_by_test_id("cl-rationale")).to_have_count(0)  # no unit, no answer panel
    _shot(page, "annotate-held")


def test_a_rejection_with_a_comment_reaches_the_annotator(
    seeded: Any, page: Any, login: Any
) -> None:
    server, answer_id = seeded
    login(page, server.url, "demo-reviewer", "demo-reviewer-pass")
    page.get_by_role("link", name="Review answers").click()
    expect(page.get_by_role("heading", name="Review answers")).to_have_count(1)  # the title
    click_option(page, page.get_by_role("combobox", name="Campaign"), REVIEWED_CAMPAIGN)
    click_option(page, page.get_by_role("combobox", name="Annotator"), "demo-bob")
    answer = page.get_by_role("combobox", name="Answer to review")
    expect(answer).to_have_value(re.compile(rf"^{answer_id} · "), timeout=SLOW_UI_TIMEOUT_MS)
    comment = page.get_by_label("Comment for the annotator (required to reject)")
    comment.fill(COMMENT)
    _shot(page, "review-answers-before-reject", comment)
    page.get_by_role("button", name="Reject").click()
    expect(page.get_by_text(f"Answer {answer_id} of demo-bob rejected.")).to_be_visible(
        timeout=SLOW_UI_TIMEOUT_MS
    )
    with server.session() as session:
        reviewer = session.exec(select(User).where(User.name == "demo-reviewer")).one()
        campaign = session.exec(select(Campaign).where(Campaign.name == REVIEWED_CAMPAIGN)).one()
        rows = annotator_answers_as(session, stored_id(reviewer), stored_id(campaign), "demo-bob")
    rejected = next(row for row in rows if row.annotation_id == answer_id)
    assert (rejected.state, rejected.comment) == ("rejected", COMMENT)
    _shot(page, "review-answers-after-reject")

    page.context.clear_cookies()
    login(page, server.url, "demo-bob", "demo-bob-pass")
    page.goto(f"{server.url}/my_work?campaign={REVIEWED_CAMPAIGN}&annotation={answer_id}")
    expect(page.get_by_test_id("stMetric").filter(has_text="Rejected")).to_contain_text("1")
    warning = page.get_by_text("rejected this answer: it does not count. Their comment:")
    expect(warning).to_be_visible(timeout=SLOW_UI_TIMEOUT_MS)
    # the comment is shown as typed: the tag is text, not bold
    expect(warning).to_contain_text(COMMENT)
    expect(page.locator("b", has_text="twice")).to_have_count(0)
    _shot(page, "my-work-rejected", warning)


def test_an_admin_sees_gold_settings_and_the_annotators_table(
    seeded: Any, page: Any, login: Any
) -> None:
    server, _ = seeded
    login(page, server.url, "demo-admin", "demo-admin-pass")
    page.get_by_role("link", name="Campaigns").click()
    click_option(page, page.get_by_role("combobox", name="Campaign"), HELD_CAMPAIGN)
    save = page.get_by_role("button", name="Save gold settings")
    expect(save).to_be_visible(timeout=SLOW_UI_TIMEOUT_MS)
    # the command to paste names the campaign as it is (no markdown escapes in it)
    command = f"critiquelab gold import FILE --campaign {HELD_CAMPAIGN}"
    pasted = page.get_by_test_id("stCode").filter(has_text=command)
    expect(pasted).to_have_count(1)
    _shot(page, "campaigns-gold", pasted)

    page.get_by_role("link", name="Monitor").click()
    click_option(page, page.get_by_role("combobox", name="Campaign"), HELD_CAMPAIGN)
    held = page.get_by_role("heading", name="Held annotators")
    expect(held).to_be_visible(timeout=SLOW_UI_TIMEOUT_MS)
    expect(page.get_by_role("button", name="Release")).to_have_count(1)  # demo-alice's
    _shot(page, "monitor-held", held)

    click_option(page, page.get_by_role("combobox", name="Campaign"), FINISHED_CAMPAIGN)
    table = page.get_by_role("heading", name="Annotators", exact=True)
    expect(table).to_be_visible(timeout=SLOW_UI_TIMEOUT_MS)
    expect(page.get_by_text("demo-dave").first).to_be_attached()
    _shot(page, "monitor-annotators", table)
