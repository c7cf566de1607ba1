"""The judge audits in a real browser at 1280×720, on the sample project: the calibration page's
"Judge bias and cost" and "Scores and preferences" blocks, and the same sections of the HTML
report (screenshots in test-artifacts/)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect
from typer.testing import CliRunner

from annotate_app.cli.main import app
from tests.browser_fixtures import (
    ARTIFACTS,
    SLOW_UI_TIMEOUT_MS,
    choose_option,
    drawn_by_this_run,
)

pytestmark = pytest.mark.e2e
POINTWISE, PAIRWISE = "demo-alignmmbench-finished", "demo-pairwise-finished"


def _screenshot_at(page: Any, heading: str, name: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.get_by_role("heading", name=heading).first.evaluate(
        "e => e.scrollIntoView({block: 'start'})"
    )
    page.screenshot(path=str(ARTIFACTS / name))


def test_the_page_shows_both_audits_of_the_sample(
    sample_app_server: Any, page: Any, login: Any
) -> None:
    login(page, sample_app_server.url, "demo-reviewer", "demo-reviewer-pass")
    page.get_by_role("link", name="Calibration").click()
    choose_option(page, "Campaign", f"{PAIRWISE} (pairwise)")
    page.get_by_text("Filters, reference and bootstrap").click()  # the folded options
    resamples = page.get_by_label("Bootstrap resamples")
    resamples.fill("100")
    resamples.press("Enter")
    expect(
        page.get_by_role("heading", name="Scores and preferences: do they agree?")
    ).to_be_visible(timeout=SLOW_UI_TIMEOUT_MS)
    expect(
        page.get_by_text(f"pairs of {PAIRWISE} whose two responses are scored in")
    ).to_be_visible()
    drawn = drawn_by_this_run(page)  # the boxes are keyed per campaign: not the stale ones
    families = drawn.get_by_label("Model families (JSON)", exact=True)
    families.fill('{"synthetic-gpt4-like": "k", "synthetic-kestrel-vl": "k"}')
    families.press("Enter")
    for label, price in (("Price / M input tokens", "2.5"), ("Price / M output tokens", "10")):
        drawn.get_by_label(label).fill(price)
        drawn.get_by_label(label).press("Enter")
    # this run's button: while a rerun is under way the previous run's copy is still drawn
    expect(drawn.get_by_text("Download the judge audit (HTML)")).to_be_visible(
        timeout=SLOW_UI_TIMEOUT_MS
    )
    expect(page.get_by_text("Self-preference needs a model-family mapping")).to_have_count(0)
    _screenshot_at(page, "Judge bias and cost", "audits-page-bias-1280x720.png")
    _screenshot_at(
        page, "Scores and preferences: do they agree?", "audits-page-consistency-1280x720.png"
    )


def test_the_report_sections_render(sample_app_server: Any, page: Any, tmp_path: Any) -> None:
    html = tmp_path / "report.html"
    result = CliRunner().invoke(app, [
        "--db", sample_app_server.db_url, "calibrate", "--campaign", PAIRWISE, "--bootstrap", "100",
        "--consistency", POINTWISE, PAIRWISE, "--price-in", "2.5", "--price-out", "10",
        "--html", str(html),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    page.goto(html.as_uri())
    expect(page.get_by_role("heading", name="Judge bias and cost")).to_be_visible()
    _screenshot_at(page, "Scores and preferences: do they agree?", "audits-report-1280x720.png")
    _screenshot_at(page, "Judge bias and cost", "audits-report-bias-1280x720.png")
