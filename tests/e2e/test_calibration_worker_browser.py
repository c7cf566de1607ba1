"""The Calibration page in a real browser at 1280×720 on a served app: the campaign is read and
calibrated by the worker process that the server starts (annotate_app.calibration_worker), the
page shows the result and the listed disagreements (screenshots in test-artifacts/)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser_fixtures import ARTIFACTS, SLOW_UI_TIMEOUT_MS

pytestmark = pytest.mark.e2e


def _workers() -> list[int]:
    """Process ids of calibration workers that are not this test process's own children."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if b"annotate_app.calibration_worker" in command and parent != os.getpid():
            found.append(int(entry.name))
    return found


def _screenshot_at(page: Any, heading: str, name: str) -> None:
    page.get_by_role("heading", name=heading).first.evaluate(
        "e => e.scrollIntoView({block: 'start'})"
    )
    page.screenshot(path=str(ARTIFACTS / name))


def test_the_page_shows_the_workers_calibration(
    sample_app_server: Any, page: Any, login: Any
) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    login(page, sample_app_server.url, "demo-reviewer", "demo-reviewer-pass")
    page.get_by_role("link", name="Calibration").click()
    expect(page.get_by_role("heading", name="Judges beside the human ceiling")).to_be_visible(
        timeout=SLOW_UI_TIMEOUT_MS
    )
    assert _workers(), "the server started no calibration worker"
    # the headline chart starts in the first screen, unscrolled (it started at y = 536 of 720)
    chart = page.get_by_test_id("stVegaLiteChart").first
    expect(chart).to_be_in_viewport(timeout=SLOW_UI_TIMEOUT_MS)
    box = chart.bounding_box()
    assert box is not None and box["y"] <= 400, box
    page.screenshot(path=str(ARTIFACTS / "calibration-page-1280x720.png"))
    expect(page.get_by_text("Largest disagreements").first).to_be_visible(
        timeout=SLOW_UI_TIMEOUT_MS
    )
    _screenshot_at(page, "Judge: synthetic-critic-v0", "calibration-page-judge-1280x720.png")
    expect(page.get_by_role("heading", name="Is judge A better than judge B?")).to_be_visible()
