"""The answer panel's browser code alone, in Chromium with a fake clock: keys, focus, active time.

The module ``answer_box.js`` is loaded into a blank page and mounted the way Streamlit mounts it
(``default({data, parentElement, setStateValue, setTriggerValue})``), with the data that
:func:`annotate_app.components.answer_box.panel_data` builds; what it reports is recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from annotate_app.components.answer_box import panel_data
from schemas.protocols import ALIGNMMBENCH, PAIRWISE

pytestmark = pytest.mark.e2e

PANEL_JS = Path(__file__).resolve().parents[2] / "annotate_app" / "components" / "answer_box.js"
MOUNT = """async ([code, data]) => {
  const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  const module = await import(url);
  window.reports = [];
  const record = (kind) => (name, value) => window.reports.push({ kind, name, value });
  module.default({ data, parentElement: document.getElementById("root"),
                   setStateValue: record("state"), setTriggerValue: record("trigger") });
}"""


@pytest.fixture
def panel(browser: Any) -> Any:
    context = browser.new_context()
    page = context.new_page()
    page.clock.install()
    page.set_content("<main><div id='root'></div></main>")
    yield page
    context.close()


def _mount(page: Any, **settings: Any) -> None:
    data = panel_data(unit=42, rationale_min=10, draft=None, **settings)
    page.evaluate(MOUNT, [PANEL_JS.read_text(encoding="utf-8"), data])


def _last(page: Any, name: str) -> dict[str, Any]:
    reports = [r for r in page.evaluate("window.reports") if r["name"] == name]
    assert reports, f"the panel never reported {name!r}"
    return reports[-1]["value"]


def test_active_time_counts_focus_and_stops_after_two_idle_minutes(panel: Any) -> None:
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
    assert 120 + 30 <= submitted["seconds"] <= 120 + 30 + 1  # + the second spent typing


def test_hidden_page_time_is_not_counted(panel: Any) -> None:
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
