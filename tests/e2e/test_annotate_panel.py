"""The answer panel's browser code alone, in Chromium with a fake clock: keys, focus, active time.

The module ``answer_box.js`` is loaded into a blank page and mounted the way Streamlit mounts it
(``default({data, parentElement, setStateValue, setTriggerValue})``), with the data that
:func:`annotate_app.components.answer_box.panel_data` builds; what it reports is recorded.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from annotate_app.components.answer_box import panel_data, store_key
from data.queue import DraftView
from schemas.protocols import ALIGNMMBENCH, MMIE, PAIRWISE

pytestmark = pytest.mark.e2e

PANEL_JS = Path(__file__).resolve().parents[2] / "annotate_app" / "components" / "answer_box.js"
PANEL_CSS = PANEL_JS.with_suffix(".css")
MOUNT = """async ([code, data]) => {
  if (!window.panelModule) {  // imported once per page, as Streamlit imports it from one URL
    const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
    window.panelModule = await import(url);
    window.reports = [];
  }
  const record = (kind) => (name, value) => window.reports.push({ kind, name, value });
  window.panelModule.default({ data, parentElement: document.getElementById("root"),
                   setStateValue: record("state"), setTriggerValue: record("trigger") });
}"""


ORIGIN = "http://panel.test/"  # a real origin (about:blank has no localStorage)


@pytest.fixture
def panel(browser: Any) -> Any:
    context = browser.new_context()
    yield _blank_page(context)
    context.close()


def _blank_page(context: Any) -> Any:
    """A new tab of the browser context on the blank origin, with a fake clock."""
    page = context.new_page()
    style = PANEL_CSS.read_text(encoding="utf-8")  # Streamlit puts it beside the panel
    page.route(
        ORIGIN + "**",
        lambda route: route.fulfill(
            body=f"<style>{style}</style><main><div id='root'></div></main>",
            content_type="text/html",
        ),
    )
    page.clock.install()
    page.goto(ORIGIN)
    return page


def _mount(page: Any, **settings: Any) -> dict[str, Any]:
    data = panel_data(**{"unit": 42, "rationale_min": 10, "draft": None, **settings})
    page.evaluate(MOUNT, [PANEL_JS.read_text(encoding="utf-8"), data])
    return data


def _rerun(page: Any, data: dict[str, Any]) -> None:
    """Call the panel again on the same root, as Streamlit does on a rerun."""
    page.evaluate(MOUNT, [PANEL_JS.read_text("utf-8"), data])


def _last(page: Any, name: str) -> dict[str, Any]:
    reports = [r for r in page.evaluate("window.reports") if r["name"] == name]
    assert reports, f"the panel never reported {name!r}"
    return reports[-1]["value"]


def _stop_the_clock(page: Any) -> None:
    """From now on time passes only where the test says so (``clock.run_for``), never while
    Playwright types: a figure of seconds then does not depend on how fast the machine is.
    (``pause_at`` only jumps forward; a minute ahead is past any page load.)"""
    page.clock.pause_at(page.evaluate("Date.now()") + 60_000)


def test_active_time_counts_focus_and_stops_after_two_idle_minutes(panel: Any) -> None:
    _stop_the_clock(panel)
    _mount(panel, protocol=ALIGNMMBENCH)
    panel.locator("body").press("0")  # 10 on 1–10; focus moves to the rationale
    assert panel.evaluate("document.activeElement.dataset.testid") == "cl-rationale"
    panel.keyboard.type("Complete and correct.")
    panel.clock.run_for(11 * 60_000)  # eleven quiet minutes: only the first two count
    panel.mouse.move(10, 10)  # back at the desk
    panel.clock.run_for(30_000)
    panel.keyboard.press("Control+Enter")
    submitted = _last(panel, "submit")
    assert submitted["unit"] == 42 and submitted["score"] == 10
    assert submitted["rationale"] == "Complete and correct."
    assert submitted["seconds"] == 120 + 30  # typing took no time: the clock stands still


def test_hidden_page_time_is_not_counted(panel: Any) -> None:
    _stop_the_clock(panel)
    _mount(panel, protocol=ALIGNMMBENCH)
    panel.evaluate("Object.defineProperty(document, 'visibilityState', {get: () => 'hidden'})")
    panel.clock.run_for(50_000)
    panel.locator("body").press("4")
    panel.keyboard.type("More than half of it is wrong.")
    panel.keyboard.press("Control+Enter")
    assert _last(panel, "submit")["seconds"] == 0


def test_pairwise_keys_escape_and_refusal_until_valid(panel: Any) -> None:
    _mount(panel, protocol=PAIRWISE)
    panel.keyboard.press("Control+Enter")
    assert panel.get_by_test_id("cl-message").text_content() == "Choose A, B or tie."
    panel.locator("body").press("a")
    panel.keyboard.type("short")  # typing "a", "b", "t" in the box is text, not a choice
    panel.keyboard.press("Control+Enter")
    assert "at least 10 characters" in panel.get_by_test_id("cl-message").text_content()
    panel.keyboard.type(" but better")
    panel.keyboard.press("Escape")
    panel.keyboard.press("t")
    panel.clock.run_for(1_000)  # the debounced draft goes out
    assert _last(panel, "draft")["preference"] == "tie"
    assert _last(panel, "draft")["rationale"] == "short but better"
    panel.keyboard.press("Control+Enter")
    panel.keyboard.press("Control+Enter")  # a double submit sends once
    submits = [r for r in panel.evaluate("window.reports") if r["name"] == "submit"]
    assert len(submits) == 1 and submits[0]["value"]["preference"] == "tie"


def _reports(page: Any, name: str) -> list[dict[str, Any]]:
    return [r["value"] for r in page.evaluate("window.reports") if r["name"] == name]


def test_question_mark_lists_every_shortcut_and_esc_closes_it(panel: Any) -> None:
    _mount(panel, protocol=MMIE)
    sheet = panel.get_by_test_id("cl-sheet")
    assert not sheet.is_visible()
    panel.keyboard.press("?")
    assert sheet.is_visible()
    text = sheet.text_content()
    for keys in ("0", "6", "Ctrl+Enter", "Esc", "?"):
        assert keys in text
    assert "Score 6 (100%) — Meets every criterion." in text
    panel.keyboard.press("Escape")
    assert not sheet.is_visible()
    assert "keys 0–6 choose scores 0–6" in panel.locator(".cl-help").first.text_content()
    panel.get_by_test_id("cl-rationale").click()
    panel.keyboard.type("why? because")  # typed, not a shortcut
    assert not sheet.is_visible()
    panel.get_by_test_id("cl-keys").click()
    assert sheet.is_visible()


def test_a_submitted_panel_takes_no_input_until_replaced_or_refused(panel: Any) -> None:
    data = _mount(panel, protocol=ALIGNMMBENCH)
    panel.locator("body").press("4")
    panel.keyboard.type("More than half is wrong.")
    panel.keyboard.press("Control+Enter")
    assert len(_reports(panel, "submit")) == 1
    box = panel.locator(".cl-answer")
    assert box.get_attribute("aria-busy") == "true"
    assert panel.get_by_test_id("cl-submit").text_content() == "Saving…"
    panel.keyboard.type(" more")  # the box is read-only now
    panel.keyboard.press("Escape")
    panel.keyboard.press("7")  # and keys choose nothing on the unit just sent
    assert panel.get_by_test_id("cl-rationale").input_value() == "More than half is wrong."
    assert panel.get_by_test_id("cl-choice-4").get_attribute("aria-checked") == "true"
    assert panel.get_by_test_id("cl-choice-7").is_disabled()
    _rerun(panel, {**data, "attempt": 1, "error": "the campaign is paused"})  # refused
    assert box.get_attribute("aria-busy") == "false"
    assert panel.get_by_test_id("cl-message").text_content() == "the campaign is paused"
    panel.keyboard.press("7")
    assert panel.get_by_test_id("cl-choice-7").get_attribute("aria-checked") == "true"


def _stored(page: Any, key: str) -> Any:
    return page.evaluate("(key) => JSON.parse(localStorage.getItem(key))", key)


def _put(page: Any, key: str, entry: dict[str, Any]) -> None:
    page.evaluate("([k, entry]) => localStorage.setItem(k, JSON.stringify(entry))", [key, entry])


def test_every_keystroke_is_kept_in_the_browser_and_the_newer_copy_wins(panel: Any) -> None:
    """Each tab keeps its own copy (the store key, "@", the tab's id in sessionStorage) and clears
    only its own copies of other units, plus anything very old."""
    unit_key, before = store_key(3, 9, 42), store_key(3, 9, 41)
    key = unit_key + "@tab-1"
    now = datetime.now(UTC)
    millis = now.timestamp() * 1000
    panel.clock.set_fixed_time(now)
    panel.evaluate("sessionStorage.setItem('critiquelab-tab', 'tab-1')")
    _put(panel, before, {"edited_at": 1})  # a copy kept before copies were per tab
    _put(panel, before + "@tab-1", {"edited_at": millis})  # this tab's unit before: done
    _put(panel, before + "@tab-2", {"rationale": "tab 2 text", "edited_at": millis})
    _put(panel, before + "@tab-3", {"edited_at": millis - 15 * 24 * 3600 * 1000})  # too old
    older = DraftView(None, None, "server text", 5.0, now - timedelta(seconds=30))
    _mount(panel, protocol=ALIGNMMBENCH, draft=older, store=unit_key, now=now)
    assert _stored(panel, before) is None
    assert _stored(panel, before + "@tab-1") is None
    assert _stored(panel, before + "@tab-2")["rationale"] == "tab 2 text"  # its tab may show it
    assert _stored(panel, before + "@tab-3") is None
    assert panel.get_by_test_id("cl-rationale").input_value() == "server text"
    panel.get_by_test_id("cl-rationale").press("End")
    panel.keyboard.type(", then more")  # no time passes: the debounced draft is not sent yet
    assert _reports(panel, "draft") == []
    local = _stored(panel, key)
    assert local["rationale"] == "server text, then more"
    assert abs(local["edited_at"] - now.timestamp() * 1000) < 1000  # server clock

    panel.reload()  # F5 before the server got it: the browser copy is newer and wins
    _mount(panel, protocol=ALIGNMMBENCH, draft=older, store=unit_key, now=now)
    assert panel.get_by_test_id("cl-rationale").input_value() == "server text, then more"
    (sent,) = _reports(panel, "draft")  # and the server is brought up to date at once
    assert sent["rationale"] == "server text, then more" and sent["seconds"] >= 5.0
    assert sent["edited_at"] == local["edited_at"]

    newer = DraftView(8.0, None, "typed in another tab", 9.0, now + timedelta(seconds=30))
    panel.reload()  # a draft typed later elsewhere wins over this browser's copy
    _mount(panel, protocol=ALIGNMMBENCH, draft=newer, store=unit_key, now=now)
    assert panel.get_by_test_id("cl-rationale").input_value() == "typed in another tab"
    assert panel.get_by_test_id("cl-choice-8").get_attribute("aria-checked") == "true"
    assert _reports(panel, "draft") == []

    fresh = _blank_page(panel.context)  # a new tab (after a crash, say): a new tab id
    fresh.clock.set_fixed_time(now)
    _mount(fresh, protocol=ALIGNMMBENCH, draft=older, store=unit_key, now=now)
    assert fresh.get_by_test_id("cl-rationale").input_value() == "server text, then more"
    own = unit_key + "@" + fresh.evaluate("sessionStorage.getItem('critiquelab-tab')")
    assert own != key
    fresh.get_by_test_id("cl-rationale").press("End")
    fresh.keyboard.type(" and in the new tab")
    assert _stored(fresh, own)["rationale"] == "server text, then more and in the new tab"
    assert _stored(fresh, key)["rationale"] == "server text, then more"


def test_a_panel_mounted_afresh_while_its_submit_runs_stays_saving(panel: Any) -> None:
    data = _mount(panel, protocol=MMIE)
    panel.locator("body").press("2")
    panel.keyboard.type("Meets two of the criteria.")
    panel.keyboard.press("Control+Enter")
    fresh = "document.getElementById('root').__clAnswer = undefined"
    panel.evaluate(fresh)  # Streamlit kept the old element and mounts it again
    _rerun(panel, data)
    assert panel.locator(".cl-answer").get_attribute("aria-busy") == "true"
    panel.keyboard.press("5")
    assert panel.get_by_test_id("cl-choice-5").get_attribute("aria-checked") == "false"
    panel.evaluate(fresh)  # mounted afresh with the refusal: input again, and why
    _rerun(panel, {**data, "attempt": 1, "error": "lease lost"})
    assert panel.locator(".cl-answer").get_attribute("aria-busy") == "false"
    assert panel.get_by_test_id("cl-message").text_content() == "lease lost"


# Streamlit's own life cycle of a panel: each rerun calls the module's function again on the same
# root with new data and keeps only the cleanup the last call returned, which it runs when the
# panel goes (the next unit's panel has another key, so another root).
STREAMLIT_RUN = """async ([code, data, root]) => {
  if (!window.panelModule) {
    const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
    window.panelModule = await import(url);
    window.reports = [];
    window.cleanups = {};
  }
  let node = document.getElementById(root);
  if (!node) {
    node = document.createElement("div");
    node.id = root;
    document.querySelector("main").append(node);
  }
  const record = (kind) => (name, value) => window.reports.push({ kind, name, value });
  window.cleanups[root] = await window.panelModule.default({ data, parentElement: node,
                   setStateValue: record("state"), setTriggerValue: record("trigger") });
}"""
UNMOUNT = """(root) => { window.cleanups[root](); document.getElementById(root).remove(); }"""


def _keydown_listeners(page: Any) -> int:
    """How many keydown listeners the document has (Chromium's DevTools protocol)."""
    session = page.context.new_cdp_session(page)
    document = session.send("Runtime.evaluate", {"expression": "document"})["result"]
    found = session.send("DOMDebugger.getEventListeners", {"objectId": document["objectId"]})
    session.detach()
    return sum(1 for listener in found["listeners"] if listener["type"] == "keydown")


def test_after_five_units_one_question_mark_opens_the_sheet(panel: Any) -> None:
    """Issue 25 A4: each draft saved reruns the page, and each rerun added a keydown listener
    that nothing removed (2 → 17 after five units): "?" then toggled the sheet several times."""
    code = PANEL_JS.read_text(encoding="utf-8")
    before = _keydown_listeners(panel)
    for unit in range(1, 7):
        root = f"answer-{unit}"
        data = panel_data(unit=unit, protocol=MMIE, rationale_min=10, draft=None)
        panel.evaluate(STREAMLIT_RUN, [code, data, root])
        for _ in range(3):  # three drafts saved on this unit: three reruns
            panel.evaluate(STREAMLIT_RUN, [code, data, root])
        if unit < 6:
            panel.evaluate(UNMOUNT, root)  # submitted: the next unit's panel replaces it
    assert _keydown_listeners(panel) == before + 1
    sheet = panel.get_by_test_id("cl-sheet")
    panel.locator("body").press("?")
    assert sheet.is_visible()
    panel.locator("body").press("?")
    assert not sheet.is_visible()
    panel.evaluate(UNMOUNT, "answer-6")
    assert _keydown_listeners(panel) == before


def test_a_submitted_panel_shows_only_saving_and_goes_when_the_next_unit_comes(
    panel: Any,
) -> None:
    """Issue 25: no stale copy of the previous unit's panel once its submit is under way."""
    code = PANEL_JS.read_text(encoding="utf-8")
    first = panel_data(unit=1, protocol=PAIRWISE, rationale_min=10, draft=None)
    panel.evaluate(STREAMLIT_RUN, [code, first, "answer-1"])
    panel.locator("body").press("b")
    panel.keyboard.type("B counts the cats right.")
    panel.keyboard.press("Control+Enter")
    old = panel.locator('.cl-answer[data-unit="1"]')
    assert old.get_by_test_id("cl-saving").is_visible()
    for part in ("cl-rationale", "cl-choice-B", "cl-submit", "cl-guide"):
        assert not old.get_by_test_id(part).is_visible(), part
    # The next unit's panel comes while Streamlit still shows the old one (another place on the
    # page): the old one goes at once.
    second = panel_data(unit=2, protocol=PAIRWISE, rationale_min=10, draft=None)
    panel.evaluate(STREAMLIT_RUN, [code, second, "answer-2"])
    assert not old.is_visible()
    assert panel.locator('.cl-answer[data-unit="2"]').get_by_test_id("cl-rationale").is_visible()


def test_a_refused_submit_shows_the_answer_again(panel: Any) -> None:
    data = _mount(panel, protocol=ALIGNMMBENCH)
    panel.locator("body").press("6")
    panel.keyboard.type("Fewer errors than most.")
    panel.keyboard.press("Control+Enter")
    assert not panel.get_by_test_id("cl-rationale").is_visible()
    _rerun(panel, {**data, "attempt": 1, "error": "the campaign is paused"})
    assert panel.get_by_test_id("cl-rationale").is_visible()
    assert panel.get_by_test_id("cl-rationale").input_value() == "Fewer errors than most."
    assert not panel.get_by_test_id("cl-saving").is_visible()


RATIONALE_EDGES = [
    "😀" * 10,  # one code point each, two UTF-16 units
    "𠀀" * 10 + "很好",  # CJK Extension B: outside the BMP
    "\x1c\x1cgood",  # Python strips U+001C, JavaScript's trim does not
    "\ufeff" * 3 + "good",  # JavaScript's trim strips U+FEFF, Python's strip does not
    "\x85 mid\u3000text \u2029",
    "  plain text  ",
    "",
]


def test_the_counter_counts_the_rationale_as_the_server_does(panel: Any) -> None:
    """The panel refuses a short rationale before the server does: both must count alike
    (``len(rationale.strip())``, the rule of ``data.queue.common.check_answer``)."""
    _mount(panel, protocol=ALIGNMMBENCH, rationale_min=20)
    counted = panel.evaluate(
        "texts => texts.map((t) => window.panelModule.rationaleLength(t))", RATIONALE_EDGES
    )
    assert counted == [len(text.strip()) for text in RATIONALE_EDGES]
    panel.locator("body").press("4")
    panel.keyboard.type("😀" * 10)
    expect(panel.locator(".cl-counter")).to_have_text("10 / 20 characters")
    panel.keyboard.press("Control+Enter")
    assert "now 10" in panel.get_by_test_id("cl-message").text_content()
