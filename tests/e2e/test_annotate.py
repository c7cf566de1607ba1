"""Annotating in headless Chromium: mouse, keyboard, drafts across a refresh, overlap, blindness."""

from __future__ import annotations

import time
from typing import Any

import pytest
from PIL import Image
from playwright.sync_api import expect
from sqlmodel import select

from annotate_app.auth import COOKIE_NAME
from data import queue
from data.services.campaigns import CampaignSpec, create_campaign
from schemas.tables import (
    Annotation,
    Assignment,
    Campaign,
    Dataset,
    Draft,
    Item,
    Response,
    Unit,
)
from tests.browser_fixtures import app_context, wait_for_run_to_end, wait_until

pytestmark = pytest.mark.e2e

PASSWORD = "correct horse battery"
RATIONALE = "图里有三只猫，回答数对了。The answer counts the cats correctly."


@pytest.fixture(scope="module")
def seeded(app_server: Any) -> Any:
    """Annotators and four campaigns: AlignMMBench, MMIE (interleaved), pairwise, overlap-1."""
    for name in ("ann", "bo", "cy", "dee"):
        app_server.add_user(name, PASSWORD, "annotator")
    images = app_server.data_dir / "images"
    images.mkdir(parents=True, exist_ok=True)
    for n, colour in enumerate(("red", "blue")):
        Image.new("RGB", (800, 600), colour).save(images / f"{n}.png")  # a photo's proportions
    with app_server.session() as session:
        for benchmark in ("alignmmbench", "mmie"):
            dataset = Dataset(name=f"ds-{benchmark}", benchmark=benchmark)
            session.add(dataset)
            session.flush()
            for n in range(6):
                item = Item(
                    dataset_id=dataset.id, item_id=f"{benchmark}-{n}", benchmark=benchmark,
                    task="Counting" if benchmark == "alignmmbench" else None,
                    category="SA" if benchmark == "mmie" else None,
                    question=[{"type": "image", "image": "images/0.png"},
                              {"type": "text", "text": f"图{n}中有几只猫？"}],
                    reference="三只猫。", content_sha256=f"{benchmark}{n}",
                )  # fmt: skip
                session.add(item)
                session.flush()
                for model in ("m1", "m2"):
                    content: Any = f"{model}: 三只猫 <b>not bold</b>"
                    if benchmark == "mmie":
                        content = [{"type": "text", "text": f"{model} step one"},
                                   {"type": "image", "image": "images/1.png"},
                                   {"type": "text", "text": "step two"}]  # fmt: skip
                    session.add(
                        Response(response_id=f"{benchmark}-{n}/{model}", item_pk=item.id,
                                 model=model, content=content, content_sha256=model)
                    )  # fmt: skip
        session.flush()
        specs = [
            CampaignSpec(name="amb", dataset="ds-alignmmbench", protocol="alignmmbench"),
            CampaignSpec(name="mmie", dataset="ds-mmie", protocol="mmie"),
            CampaignSpec(name="pairs", dataset="ds-alignmmbench", protocol="pairwise", pairs="all"),
            CampaignSpec(
                name="solo", dataset="ds-alignmmbench", protocol="alignmmbench", overlap=1
            ),
            CampaignSpec(
                name="brief",
                dataset="ds-alignmmbench",
                protocol="alignmmbench",
                overlap=1,
                lease_seconds=1,
                models=("m1",),
            ),
        ]
        for spec in specs:
            create_campaign(session, spec)
    return app_server


def _log_in(page: Any, server: Any, name: str, login: Any) -> None:
    """Log in and wait for the session cookie, so that opening a URL stays logged in."""
    login(page, server.url, name, PASSWORD)
    wait_until(
        lambda: any(c["name"] == COOKIE_NAME for c in page.context.cookies()),
        "the session cookie's arrival",
    )


def _annotate(page: Any, server: Any, name: str, campaign: str, login: Any) -> None:
    _log_in(page, server, name, login)
    page.goto(f"{server.url}/annotate?campaign={campaign}")
    expect(page.get_by_test_id("cl-rationale")).to_be_visible()


def _unit(page: Any) -> int:
    return int(page.locator(".cl-answer").get_attribute("data-unit"))


def _wait_next_unit(page: Any, previous: int) -> int:
    """Wait until the only panel is another unit's, taking input (not "Saving…")."""
    expect(page.locator(f'.cl-answer[data-unit="{previous}"]')).to_have_count(0)
    expect(page.locator('.cl-answer[aria-busy="false"]')).to_have_count(1)
    expect(page.locator(".cl-answer")).to_have_count(1)
    return _unit(page)


def _answers(server: Any, campaign: str, annotator: str) -> list[Annotation]:
    annotator_id = _user_id(server, annotator)
    with server.session() as session:
        campaign_id = session.exec(select(Campaign.id).where(Campaign.name == campaign)).one()
        return list(
            session.exec(
                select(Annotation)
                .where(Annotation.campaign_id == campaign_id)
                .where(Annotation.annotator_id == annotator_id)
                .order_by(Annotation.id)
            )
        )


def _user_id(server: Any, name: str) -> int:
    from schemas.tables import User

    with server.session() as session:
        return session.exec(select(User.id).where(User.name == name)).one()


def _saved_draft(server: Any, annotator: str, rationale: str) -> Draft:
    """Wait until the annotator's draft on the server reads ``rationale`` (debounced saves)."""
    annotator_id = _user_id(server, annotator)
    found: list[Draft] = []

    def saved() -> bool:
        with server.session() as session:
            drafts = session.exec(select(Draft).where(Draft.annotator_id == annotator_id)).all()
        found[:] = [draft for draft in drafts if draft.rationale == rationale]
        return bool(found)

    wait_until(saved, f"a draft reading {rationale!r}")
    return found[0]


def _focused_test_id(page: Any) -> str | None:
    return page.evaluate(
        """() => { let n = document.activeElement;
                   while (n && n.shadowRoot && n.shadowRoot.activeElement)
                       n = n.shadowRoot.activeElement;
                   return n ? n.getAttribute('data-testid') : null; }"""
    )


def test_annotate_by_mouse_with_images_and_safe_text(seeded: Any, page: Any, login: Any) -> None:
    _annotate(page, seeded, "ann", "amb", login)
    expect(page.get_by_text("中有几只猫？")).to_be_visible()
    expect(page.get_by_text("<b>not bold</b>", exact=False)).to_be_visible()  # shown, not markup
    assert page.locator("b", has_text="not bold").count() == 0
    expect(page.locator("img").first).to_be_visible()
    first = _unit(page)
    page.get_by_test_id("cl-submit").click()
    expect(page.get_by_test_id("cl-message")).to_have_text("Choose a score.")
    page.get_by_test_id("cl-choice-7").click()
    page.get_by_test_id("cl-rationale").fill("too short")
    page.get_by_test_id("cl-submit").click()
    expect(page.get_by_test_id("cl-message")).to_contain_text("at least 20 characters")
    page.get_by_test_id("cl-rationale").fill(RATIONALE)
    page.get_by_test_id("cl-submit").click()
    _wait_next_unit(page, first)
    (stored,) = _answers(seeded, "amb", "ann")
    assert (stored.score, stored.rationale, stored.assignment_id) == (7.0, RATIONALE, first)

    page.goto(f"{seeded.url}/annotate?campaign=mmie")
    expect(page.get_by_test_id("cl-choice-3")).to_contain_text("50%")
    unit = _unit(page)
    page.get_by_test_id("cl-choice-3").click()
    page.get_by_test_id("cl-rationale").fill(RATIONALE)
    page.get_by_test_id("cl-submit").click()
    _wait_next_unit(page, unit)
    assert [a.score for a in _answers(seeded, "mmie", "ann")] == [3.0]

    page.goto(f"{seeded.url}/annotate?campaign=pairs")
    expect(page.get_by_text("Response B", exact=True)).to_be_visible()
    unit = _unit(page)
    page.get_by_test_id("cl-choice-B").click()
    page.get_by_test_id("cl-rationale").fill(RATIONALE)
    page.get_by_test_id("cl-submit").click()
    _wait_next_unit(page, unit)
    (preferred,) = _answers(seeded, "pairs", "ann")
    assert preferred.preference == ("B" if preferred.shown_order == "AB" else "A")


def test_keyboard_only_scores_mmie_and_prefers_pairs(seeded: Any, page: Any, login: Any) -> None:
    _annotate(page, seeded, "bo", "mmie", login)
    expect(page.get_by_text("step two").first).to_be_visible()  # interleaved answer in order
    expect(page.get_by_test_id("cl-choice-5")).to_contain_text("83%")
    seen = []
    for score in (5, 0):
        unit = _unit(page)
        page.locator("body").press(str(score))
        assert _focused_test_id(page) == "cl-rationale"  # focus went where typing continues
        page.keyboard.type(RATIONALE)
        page.keyboard.press("Control+Enter")
        shown = _wait_next_unit(page, unit)
        seen.append((unit, shown))
    assert [a.score for a in _answers(seeded, "mmie", "bo")] == [5.0, 0.0]
    with seeded.session() as session:  # the unit shown is the one leased with the last answer
        leases = session.exec(
            select(Assignment.id, Assignment.status)
            .join(Campaign, Campaign.id == Assignment.campaign_id)  # type: ignore[arg-type]
            .where(Campaign.name == "mmie", Assignment.annotator_id == _user_id(seeded, "bo"))
        ).all()
        other = session.get(Assignment, shown)
        detail = (seen, leases, other and (other.annotator_id, other.campaign_id, other.status))
    assert sorted(status for _, status in leases) == ["leased", "submitted", "submitted"]
    assert [lease for lease, status in leases if status == "leased"] == [shown], detail

    page.goto(f"{seeded.url}/annotate?campaign=pairs")
    expect(page.get_by_test_id("cl-choice-A")).to_be_visible()
    unit = _unit(page)
    page.locator("body").press("b")
    assert _focused_test_id(page) == "cl-rationale"
    page.keyboard.type("B 更好。" + RATIONALE)
    page.keyboard.press("Escape")  # leave the box: letters choose again
    page.keyboard.press("t")
    page.keyboard.press("Control+Enter")
    _wait_next_unit(page, unit)
    (stored,) = _answers(seeded, "pairs", "bo")
    assert stored.preference == "tie" and stored.rationale.startswith("B 更好。")
    assert stored.seconds >= 0


def test_refresh_in_the_middle_of_a_rationale_restores_it(
    seeded: Any, page: Any, login: Any
) -> None:
    opened = time.monotonic()  # before the page exists: no active time can start earlier
    _annotate(page, seeded, "cy", "amb", login)
    unit = _unit(page)
    page.locator("body").press("0")  # 10 on the 1–10 scale
    page.keyboard.type("半句话 half a thought")
    draft = _saved_draft(seeded, "cy", "半句话 half a thought")  # saved as one types
    assert draft.score == 10
    page.reload()
    expect(page.get_by_test_id("cl-rationale")).to_have_value("半句话 half a thought")
    time.sleep(1.5)  # reading the restored answer is active time too
    assert _unit(page) == unit
    expect(page.get_by_test_id("cl-choice-10")).to_have_attribute("aria-checked", "true")
    page.get_by_test_id("cl-rationale").press("End")
    page.keyboard.type("，然后写完。 Finished after the refresh.")
    page.keyboard.press("Control+Enter")
    _wait_next_unit(page, unit)
    (stored,) = _answers(seeded, "amb", "cy")
    assert stored.rationale == "半句话 half a thought，然后写完。 Finished after the refresh."
    assert stored.score == 10
    # active time survives the refresh and never runs faster than the clock
    assert draft.active_seconds + 1 <= stored.seconds <= time.monotonic() - opened + 1


def test_two_annotators_with_overlap_one_never_get_the_same_unit(
    seeded: Any, browser: Any, login: Any
) -> None:
    contexts = [app_context(browser) for _ in range(2)]
    try:
        pages = [context.new_page() for context in contexts]
        for page, name in zip(pages, ("ann", "dee"), strict=True):
            _annotate(page, seeded, name, "solo", login)
        seen: list[set[int]] = [set(), set()]
        for _ in range(3):
            for index, page in enumerate(pages):
                unit = _unit(page)
                with seeded.session() as session:
                    seen[index].add(session.get(Assignment, unit).unit_id)
                page.locator("body").press("6")
                page.keyboard.type(RATIONALE)
                page.keyboard.press("Control+Enter")
                _wait_next_unit(page, unit)
        assert len(seen[0]) == len(seen[1]) == 3 and not seen[0] & seen[1]
    finally:
        for context in contexts:
            context.close()


def test_an_annotator_cannot_open_another_annotators_answer(
    seeded: Any, page: Any, login: Any
) -> None:
    ann = _user_id(seeded, "ann")
    with seeded.session() as session:
        campaign_id = session.exec(select(Campaign.id).where(Campaign.name == "pairs")).one()
        view = queue.next_unit(session, campaign_id, ann)
        secret = queue.submit(
            session, view.assignment_id, ann, preference="A", rationale="ANN-PRIVATE " + RATIONALE
        )
    _log_in(page, seeded, "dee", login)
    page.goto(f"{seeded.url}/my_work?annotation={secret.id}")
    expect(page.get_by_text(f"you have no current answer with id {secret.id}")).to_be_visible()
    expect(page.get_by_text("ANN-PRIVATE")).to_have_count(0)


def test_a_lost_lease_shows_the_annotator_what_they_wrote(
    seeded: Any, page: Any, login: Any
) -> None:
    with seeded.session() as session:
        campaign_id = session.exec(select(Campaign.id).where(Campaign.name == "brief")).one()
        units = session.exec(select(Unit).where(Unit.campaign_id == campaign_id)).all()
        for unit in units[1:]:
            unit.flagged = True  # one unit, one slot
    _annotate(page, seeded, "dee", "brief", login)
    page.locator("body").press("8")
    page.keyboard.type("这段理由不能丢。 This rationale must not be lost.")
    _saved_draft(seeded, "dee", "这段理由不能丢。 This rationale must not be lost.")
    time.sleep(2.5)  # the 1-second lease runs out while dee thinks
    with seeded.session() as session:
        taken = queue.next_unit(session, campaign_id, _user_id(seeded, "bo"))
    assert taken is not None and taken.unit_id == units[0].id
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("another annotator took the slot")).to_be_visible()
    expect(page.get_by_text("这段理由不能丢。 This rationale must not be lost.")).to_be_visible()
    with seeded.session() as session:
        draft = session.exec(select(Draft).where(Draft.unit_id == units[0].id)).one()
        assert draft.rationale == "这段理由不能丢。 This rationale must not be lost."
        assert session.exec(select(Annotation).where(Annotation.unit_id == units[0].id)).all() == []


def test_how_others_rated_appears_after_submit_where_the_campaign_allows(
    seeded: Any, page: Any, login: Any
) -> None:
    with seeded.session() as session:
        campaign = create_campaign(
            session,
            CampaignSpec(
                name="open-book", dataset="ds-alignmmbench", protocol="alignmmbench",
                overlap=2, models=("m1",), show_others_after_submit=True,
            ),
        )  # fmt: skip
        units = session.exec(select(Unit).where(Unit.campaign_id == campaign.id)).all()
        for unit in units[1:]:
            unit.flagged = True  # one unit: cy and ann both answer it
        campaign_id = campaign.id
    cy = _user_id(seeded, "cy")
    with seeded.session() as session:
        view = queue.next_unit(session, campaign_id, cy)
        queue.submit(session, view.assignment_id, cy, score=3,
                     rationale="CY-SEEN-AFTER-SUBMIT, and only then")  # fmt: skip
    _annotate(page, seeded, "ann", "open-book", login)
    expect(page.get_by_text("How others rated")).to_have_count(0)  # blind before the answer
    page.locator("body").press("6")
    page.keyboard.type(RATIONALE)
    page.keyboard.press("Control+Enter")
    others = page.get_by_text("How others rated the unit you just submitted")
    expect(others).to_be_visible()
    others.click()
    expect(page.get_by_text("CY-SEEN-AFTER-SUBMIT, and only then")).to_be_visible()


def test_a_second_tab_answering_the_same_unit_is_stored_as_a_revision(
    seeded: Any, page: Any, login: Any
) -> None:
    """Two tabs of one annotator on one unit; the first submits, then the second types (each
    pause reruns it), both tabs are reloaded, and the second submits a different answer: the
    second tab keeps its unit and its text, says so, and its answer becomes revision 2 beside
    the first.

    The second tab's rerun used to show the next lease, and its text was dropped; later a reload
    of it showed the next lease too, and the first tab's reload deleted its browser copy."""
    seeded.add_user("tab-user", PASSWORD, "annotator")
    with seeded.session() as session:
        campaign = create_campaign(
            session,
            CampaignSpec(
                name="two-tabs", dataset="ds-alignmmbench", protocol="alignmmbench", overlap=1,
                models=("m2",),
            ),
        )  # fmt: skip
        campaign_id = campaign.id
    _annotate(page, seeded, "tab-user", "two-tabs", login)
    second = page.context.new_page()  # same browser session, a second tab
    second.set_viewport_size({"width": 1280, "height": 720})
    second.goto(f"{seeded.url}/annotate?campaign=two-tabs")
    expect(second.get_by_test_id("cl-rationale")).to_be_visible()
    unit = _unit(page)
    assert _unit(second) == unit  # the same lease in both tabs
    page.locator("body").press("4")
    page.keyboard.type("FIRST-TAB " + RATIONALE)
    page.keyboard.press("Control+Enter")
    following = _wait_next_unit(page, unit)
    # Only now does the second tab answer: the choice and each pause in typing rerun it.
    second.locator("body").press("9")
    second.keyboard.type("SECOND-TAB " + RATIONALE)
    expect(second.get_by_text("You already answered this unit")).to_be_visible()
    expect(second.get_by_text("save it as revision 2")).to_be_visible()
    expect(second.locator(".cl-answer")).to_have_count(1)
    assert _unit(second) == unit  # its own unit, not the next lease
    expect(second.get_by_test_id("cl-rationale")).to_have_value("SECOND-TAB " + RATIONALE)
    expect(second.get_by_test_id("cl-choice-9")).to_have_attribute("aria-checked", "true")
    second.screenshot(path=str(seeded.log_path.parent / "annotate-second-tab-answered.png"))
    page.reload()  # the first tab mounts its unit again and clears its own browser copies
    expect(page.get_by_test_id("cl-rationale")).to_be_visible()
    assert _unit(page) == following
    second.reload()  # the server holds no draft of an answered unit: the browser copy does
    expect(second.get_by_text("You already answered this unit")).to_be_visible()
    assert _unit(second) == unit
    expect(second.get_by_test_id("cl-rationale")).to_have_value("SECOND-TAB " + RATIONALE)
    expect(second.get_by_test_id("cl-choice-9")).to_have_attribute("aria-checked", "true")
    second.screenshot(path=str(seeded.log_path.parent / "annotate-second-tab-reloaded.png"))
    second.get_by_test_id("cl-rationale").click()
    second.keyboard.press("Control+Enter")
    expect(second.get_by_text("This answer is saved as revision 2")).to_be_visible()
    assert _wait_next_unit(second, unit) == following  # the lease the first tab holds
    second.screenshot(path=str(seeded.log_path.parent / "annotate-second-tab.png"))
    with seeded.session() as session:
        rows = session.exec(
            select(Annotation)
            .where(Annotation.campaign_id == campaign_id)
            .order_by(Annotation.revision)
        ).all()
    assert [(a.revision, a.is_live, a.score) for a in rows] == [(1, False, 4.0), (2, True, 9.0)]
    assert [a.rationale for a in rows] == ["FIRST-TAB " + RATIONALE, "SECOND-TAB " + RATIONALE]


def _item_of(server: Any, assignment_id: int) -> str:
    with server.session() as session:
        unit = session.get(Unit, session.get(Assignment, assignment_id).unit_id)
        return session.get(Item, unit.item_pk).item_id


def test_f5_right_after_typing_keeps_every_keystroke(seeded: Any, page: Any, login: Any) -> None:
    seeded.add_user("fiona", PASSWORD, "annotator")
    _annotate(page, seeded, "fiona", "amb", login)
    unit = _unit(page)
    page.locator("body").press("3")
    page.keyboard.type("第一句。 Typed just before F5, every key of it")
    page.reload()  # at once: the half-second draft timer has not fired
    rationale = page.get_by_test_id("cl-rationale")
    expect(rationale).to_have_value("第一句。 Typed just before F5, every key of it")
    assert _unit(page) == unit
    expect(page.get_by_test_id("cl-choice-3")).to_have_attribute("aria-checked", "true")
    draft = _saved_draft(seeded, "fiona", "第一句。 Typed just before F5, every key of it")
    assert draft.score == 3  # the server caught up from the browser's copy
    rationale.press("End")
    page.keyboard.type(" and after it.")
    page.keyboard.press("Control+Enter")
    _wait_next_unit(page, unit)
    (stored,) = _answers(seeded, "amb", "fiona")
    assert stored.rationale == "第一句。 Typed just before F5, every key of it and after it."


_WATCH_FRAMES = """(previous) => {
  // Every animation frame from Ctrl+Enter until the next unit's panel: is the old panel still
  // taking input, and is anything of the unit column left over from the previous unit?
  window.__frames = [];
  const panels = () => [...document.querySelectorAll("*")].filter((n) => n.shadowRoot)
    .flatMap((n) => [...n.shadowRoot.querySelectorAll(".cl-answer")]);
  const check = () => {
    const shown = panels();
    const old = shown.find((p) => p.dataset.unit === String(previous));
    const next = shown.find((p) => p.dataset.unit !== String(previous));
    const unit = document.querySelector(".st-key-cl-unit");
    const oldArea = old && old.querySelector("textarea");
    window.__frames.push({
      old: Boolean(old),
      // the answer just sent, still to be seen (or clicked) on the page
      oldShown: Boolean(oldArea) && oldArea.checkVisibility({ visibilityProperty: true }),
      oldTakesInput: Boolean(old) && !(old.getAttribute("aria-busy") === "true"
        && old.querySelector("textarea").readOnly),
      next: Boolean(next),
      nextReady: Boolean(next) && next.getAttribute("aria-busy") === "false"
        && next.querySelector("textarea").value === "" && !next.querySelector("textarea").readOnly,
      stale: unit === null || unit.querySelectorAll('[data-stale="true"]').length > 0,
    });
    const last = window.__frames.at(-1);
    if (!(last.nextReady && !last.stale)) requestAnimationFrame(check);
  };
  const onKey = (event) => {  // the Control keydown comes first: wait for the Enter
    if (event.key !== "Enter" || !event.ctrlKey) return;
    document.removeEventListener("keydown", onKey, true);
    requestAnimationFrame(check);
  };
  document.addEventListener("keydown", onKey, true);
}"""


def test_after_ctrl_enter_the_old_panel_takes_no_keys_and_the_new_unit_comes_whole(
    seeded: Any, page: Any, login: Any
) -> None:
    seeded.add_user("gus", PASSWORD, "annotator")
    _annotate(page, seeded, "gus", "mmie", login)
    for _ in range(3):
        unit = _unit(page)
        page.locator("body").press("4")
        page.keyboard.type(RATIONALE)
        page.evaluate(_WATCH_FRAMES, unit)
        page.keyboard.press("Control+Enter")
        _wait_next_unit(page, unit)
        page.wait_for_function(
            "window.__frames.length > 0 && window.__frames.at(-1).nextReady"
            " && !window.__frames.at(-1).stale"
        )  # the whole next unit: question, response and an enabled, empty panel
        frames = page.evaluate("window.__frames")
        assert not [f for f in frames if f["oldTakesInput"]], frames  # "Saving…" until replaced
        assert not [f for f in frames if f["oldShown"]], frames  # no stale copy of it (issue 25)


def _panel_key_listeners(page: Any) -> int:
    """How many keydown listeners of answer panels the document has (Chromium's DevTools
    protocol names each listener's function; the panel's is the one that toggles its sheet)."""
    session = page.context.new_cdp_session(page)
    try:
        document = session.send(
            "Runtime.evaluate", {"expression": "document", "objectGroup": "listeners"}
        )["result"]
        found = session.send(
            "DOMDebugger.getEventListeners",
            {"objectId": document["objectId"], "objectGroup": "listeners"},
        )["listeners"]
    finally:
        session.detach()
    return sum(
        1
        for listener in found
        if listener["type"] == "keydown"
        and "toggleSheet" in listener.get("handler", {}).get("description", "")
    )


def test_after_five_units_one_question_mark_opens_the_key_sheet(
    seeded: Any, page: Any, login: Any
) -> None:
    """Issue 25 A4: every draft saved (a rerun) added a keydown listener that nothing removed
    (2 → 17 after five units), so "?" toggled the sheet several times per press."""
    seeded.add_user("kit", PASSWORD, "annotator")
    _annotate(page, seeded, "kit", "mmie", login)
    for score in (1, 2, 3, 4, 5):
        unit = _unit(page)
        page.locator("body").press(str(score))  # a draft at once, then the typed one
        page.keyboard.type(f"{RATIONALE} ({score})")
        _saved_draft(seeded, "kit", f"{RATIONALE} ({score})")
        page.keyboard.press("Control+Enter")
        _wait_next_unit(page, unit)
    page.locator("body").press("6")
    page.keyboard.type("Meets every criterion here.")
    _saved_draft(seeded, "kit", "Meets every criterion here.")
    wait_for_run_to_end(page)
    wait_until(lambda: _panel_key_listeners(page) == 1, "one panel keydown listener", 60)
    page.keyboard.press("Escape")  # out of the text box: keys are shortcuts again
    sheet = page.get_by_test_id("cl-sheet")
    page.keyboard.press("?")
    expect(sheet).to_be_visible()
    expect(sheet).to_contain_text("Score 6 (100%)")
    page.keyboard.press("?")
    expect(sheet).to_be_hidden()


def test_report_as_broken_closes_the_menu_and_says_so(seeded: Any, page: Any, login: Any) -> None:
    seeded.add_user("hal", PASSWORD, "annotator")
    _annotate(page, seeded, "hal", "amb", login)
    first = _unit(page)
    page.get_by_role("button", name="Skip or report a problem").click()
    page.get_by_label("Reason").fill("the image does not load")
    page.get_by_role("button", name="Report as broken").click()
    _wait_next_unit(page, first)
    expect(page.get_by_text("Reported to the reviewers.")).to_be_visible()
    expect(page.get_by_label("Reason")).to_be_hidden()  # the menu did not stay open
    page.get_by_role("button", name="Skip or report a problem").click()
    expect(page.get_by_label("Reason")).to_have_value("")  # a fresh menu for the new unit


def test_a_submit_says_saved_which_response_and_links_back_to_it(
    seeded: Any, page: Any, login: Any
) -> None:
    seeded.add_user("ivy", PASSWORD, "annotator")
    _annotate(page, seeded, "ivy", "amb", login)
    header = page.locator(".st-key-cl-head")
    expect(header).to_contain_text("Unit 1 of 12 in this campaign · 0 done by you")
    unit = _unit(page)
    item = _item_of(seeded, unit)
    expect(header).to_contain_text(f"Response 1 of 2 for item {item}")
    page.locator("body").press("5")
    page.keyboard.type(RATIONALE)
    page.keyboard.press("Control+Enter")
    following = _wait_next_unit(page, unit)
    (stored,) = _answers(seeded, "amb", "ivy")
    expect(header).to_contain_text(f"Saved: response 1 of 2 for item {item}.")
    expect(header).to_contain_text("Unit 2 of 12 in this campaign · 1 done by you")
    position = 2 if _item_of(seeded, following) == item else 1
    expect(header).to_contain_text(f"Response {position} of 2 for item")
    assert "m1" not in header.inner_text() and "m2" not in header.inner_text()  # blind
    back = page.get_by_role("link", name="Revise the answer just saved")
    assert f"annotation={stored.id}" in back.get_attribute("href")
    back.click()
    expect(page.get_by_test_id("cl-submit")).to_have_text("Save revision (Ctrl+Enter)")
    expect(page.get_by_test_id("cl-rationale")).to_have_value(RATIONALE)


@pytest.mark.parametrize("campaign", ["amb", "mmie", "pairs"])
def test_the_work_is_above_the_fold_at_1280_by_720(
    seeded: Any, page: Any, login: Any, campaign: str
) -> None:
    seeded.add_user(f"fold-{campaign}", PASSWORD, "annotator")
    page.set_viewport_size({"width": 1280, "height": 720})
    _annotate(page, seeded, f"fold-{campaign}", campaign, login)
    heading = "Response A" if campaign == "pairs" else "Response"
    expect(page.get_by_text(heading, exact=True)).to_be_in_viewport()
    # Issue 25: with photo-sized images the responses started 500 px down (pairwise: no answer
    # text on the first screen) and an MMIE unit was 1,500 px tall. Now the first screen holds
    # the start of each response, and an interleaved MMIE answer whole.
    if campaign == "pairs":  # both responses start in the upper half of the screen
        wait_for_run_to_end(page)
        top = page.get_by_text("Response A", exact=True).bounding_box()["y"]
        assert top < 720 / 2, f"Response A starts at y={top:.0f}"
        for side in page.locator(".st-key-cl-unit [data-testid='stColumn']").all():
            expect(side.get_by_text("三只猫", exact=False)).to_be_in_viewport()
    if campaign == "mmie":
        expect(page.get_by_text("step two").first).to_be_in_viewport()
    for choice in {"amb": ("1", "10"), "mmie": ("0", "6"), "pairs": ("A", "tie")}[campaign]:
        expect(page.get_by_test_id(f"cl-choice-{choice}")).to_be_in_viewport()
    guide = page.get_by_test_id("cl-guide")
    first_band = {
        "amb": "Ignores the question",
        "mmie": "Fails every criterion",
        "pairs": "more correct",
    }
    expect(guide).to_contain_text(first_band[campaign])  # written out, not only on hover
    expect(guide).to_be_in_viewport()
    expect(page.get_by_test_id("cl-submit")).to_be_in_viewport()
    page.screenshot(path=str(seeded.log_path.parent / f"annotate-1280x720-{campaign}.png"))


def _wait_for_panel(page: Any, submit_label: str) -> int:
    """Wait until the page's only panel is one with this submit button, taking input; its unit.
    (Annotate numbers units by assignment, an answer opened again by its id: the two may be
    equal, so the button tells the panels apart.)"""
    button = page.get_by_text(f"{submit_label} (Ctrl+Enter)", exact=True)
    expect(page.locator(".cl-answer").filter(has=button)).to_have_count(1)  # it has come
    wait_for_run_to_end(page)  # and the run that drew it has ended: the previous panel is gone
    expect(page.locator(".cl-answer")).to_have_count(1)
    expect(page.locator('.cl-answer[aria-busy="false"]')).to_have_count(1)
    expect(page.get_by_test_id("cl-submit")).to_have_text(f"{submit_label} (Ctrl+Enter)")
    return _unit(page)


def test_undo_reopens_the_answer_just_sent_and_a_change_is_a_revision(
    seeded: Any, page: Any, login: Any
) -> None:
    """Issue 25: undo of the last submit, and Previous unit, as a revision (nothing lost)."""
    seeded.add_user("uma", PASSWORD, "annotator")
    _annotate(page, seeded, "uma", "amb", login)
    first = _unit(page)
    page.locator("body").press("5")
    page.keyboard.type(RATIONALE)
    page.keyboard.press("Control+Enter")
    following = _wait_next_unit(page, first)
    (sent,) = _answers(seeded, "amb", "uma")
    wait_for_run_to_end(page)
    page.get_by_role("button", name="Undo").click()
    assert _wait_for_panel(page, "Save revision") == sent.id  # the answer sent, open again
    expect(page.get_by_test_id("cl-rationale")).to_have_value(RATIONALE)
    expect(page.get_by_test_id("cl-choice-5")).to_have_attribute("aria-checked", "true")
    page.get_by_test_id("cl-choice-8").click()
    page.keyboard.type(" On reflection, better.")
    page.keyboard.press("Control+Enter")
    expect(page.locator(".st-key-cl-head")).to_contain_text("Saved: revision 2 of response")
    assert _wait_for_panel(page, "Submit") == following  # back to the unit it was on
    answers = _answers(seeded, "amb", "uma")
    assert [(a.revision, a.score, a.is_live) for a in answers] == [(1, 5.0, False), (2, 8.0, True)]
    assert answers[1].rationale == RATIONALE + " On reflection, better."
    page.get_by_role("button", name="Previous").click()  # and back again, without a time limit
    assert _wait_for_panel(page, "Save revision") == answers[1].id
    page.get_by_role("button", name="Back to my next unit").click()
    assert _wait_for_panel(page, "Submit") == following


def _overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def test_guidelines_gate_once_and_confirmations_cover_no_control(
    seeded: Any, page: Any, login: Any
) -> None:
    """Issue 25: the guidelines stand before the first unit until closed, and a reload does not
    bring them back (stored per annotator); a confirmation (here a skip) is drawn in the page
    where it covers none of the panel's controls at 1280×720 (a toast covered the choices)."""
    with seeded.session() as session:
        create_campaign(
            session,
            CampaignSpec(
                name="guided",
                dataset="ds-alignmmbench",
                protocol="alignmmbench",
                instructions="Count **every** cat, even half hidden ones.",
            ),
        )
    seeded.add_user("iris", PASSWORD, "annotator")
    page.set_viewport_size({"width": 1280, "height": 720})
    _annotate(page, seeded, "iris", "guided", login)
    expect(page.get_by_text("Guidelines for this campaign")).to_be_visible()
    page.get_by_role("button", name="I have read them").click()
    expect(page.get_by_text("Guidelines for this campaign")).to_be_hidden()
    page.reload()
    expect(page.get_by_test_id("cl-rationale")).to_be_visible()
    expect(page.get_by_text("Guidelines for this campaign")).to_have_count(0)
    page.get_by_role("button", name="Guidelines").click()  # on demand
    expect(page.locator("p:visible", has_text="even half hidden ones")).to_have_count(1)
    page.keyboard.press("Escape")

    first = _unit(page)
    page.get_by_role("button", name="Skip or report a problem").click()
    page.get_by_label("Reason").fill("outside my expertise")
    page.get_by_role("button", name="Skip this unit").click()
    _wait_next_unit(page, first)
    said = page.get_by_text("Skipped: the unit goes to others.")
    expect(said).to_be_in_viewport()
    expect(page.get_by_test_id("stToast")).to_have_count(0)
    box = said.bounding_box()
    controls = [
        page.get_by_test_id("cl-submit"),
        *(page.get_by_test_id(f"cl-choice-{choice}") for choice in "123"),
    ]
    for control in controls:
        expect(control).to_be_in_viewport()
        assert not _overlaps(box, control.bounding_box()), control
    # in the header: the message above the unit does not push it out of view (it was under the
    # panel, below the fold while a message showed)
    expect(page.get_by_role("button", name="Skip or report a problem")).to_be_in_viewport()
    menu = page.get_by_role("button", name="Skip or report a problem").bounding_box()
    assert not _overlaps(box, menu)
    page.get_by_test_id("cl-rationale").fill("Typing reruns the page for the draft.")
    _saved_draft(seeded, "iris", "Typing reruns the page for the draft.")
    page.get_by_test_id("cl-rationale").blur()
    wait_for_run_to_end(page)
    expect(said).to_be_in_viewport()  # stays until the next unit, through the drafts' reruns
    page.screenshot(path=str(seeded.log_path.parent / "annotate-1280x720-confirmation.png"))
