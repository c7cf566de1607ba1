"""The HTML audit report: self-contained, escaped, renders in headless Chromium; CLI file mode."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from annotate_app.cli.main import app
from calibration import CalibrationOptions, calibrate
from calibration.report_html import render_html
from schemas.protocols import ALIGNMMBENCH, PAIRWISE

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
HOSTILE = '<script>alert(1)</script><img src="http://evil.example/x.png">'


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for u in range(120):
        quality = int(rng.integers(1, 11))
        meta = {
            "item_id": f"item-{u // 2}",
            "task": ["OCR", "Chart", "Meme"][u % 3],
            "category": "c",
            "group": f"g{u // 4}",
            "model": f"model-{u % 2}",
        }
        for r in range(3):
            value = float(np.clip(quality + rng.integers(-1, 2), 1, 10))
            rows.append(
                {
                    "unit": f"r:{u}",
                    "rater": f"annotator:a{r}",
                    "kind": "human",
                    "value": value,
                    "rationale": HOSTILE,
                    **meta,
                }
            )
        value = float(np.clip(quality + rng.integers(-3, 4), 1, 10))
        rows.append(
            {
                "unit": f"r:{u}",
                "rater": "gpt-4",
                "kind": "model",
                "value": value,
                "rationale": HOSTILE,
                **meta,
            }
        )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def html() -> str:
    options = CalibrationOptions(ALIGNMMBENCH, bootstrap=100, by=("task",))
    return render_html(calibrate(_frame(), options))


def test_report_is_self_contained_and_escaped(html):
    assert "http" not in html.replace("http://evil.example", "")  # only the escaped data text
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//)""", html)
    assert "<script" not in html and "&lt;script&gt;" in html
    assert "<img" not in html
    for heading in (
        "What was compared",
        "human ceiling",
        "Largest disagreements",
        "Confusion",
        "Parse coverage",
        "Models (leaderboard)",
        "by task",
    ):
        assert heading in html
    assert "<svg" in html


def test_report_renders_in_headless_chromium(html, tmp_path, browser):
    page_file = tmp_path / "report.html"
    page_file.write_text(html, encoding="utf-8")
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context()
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(page_file.as_uri())
    assert page.locator("h1").inner_text().startswith("CritiqueLab calibration report")
    assert page.locator("svg").count() >= 3
    page.screenshot(path=str(ARTIFACTS / "calibration_report.png"), full_page=True)
    context.close()
    assert requests == [page_file.as_uri()]  # nothing else was fetched


def _write(frame: pd.DataFrame, path: Path) -> Path:
    lines = []
    for row in frame.itertuples():
        kind = "human" if row.kind == "human" else "model"
        lines.append(
            pd.Series(
                {
                    "judge": row.rater,
                    "judge_kind": kind,
                    "protocol": "alignmmbench",
                    "response_id": row.unit[2:],
                    "score": row.value,
                    "rationale": row.rationale,
                }
            ).to_json()
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cli_file_mode_writes_json_and_html(tmp_path):
    files = _write(_frame(), tmp_path / "judgements.jsonl")
    result = CliRunner().invoke(
        app,
        [
            "calibrate",
            "--judgments",
            str(files),
            "--protocol",
            "alignmmbench",
            "--bootstrap",
            "50",
            "--json",
            str(tmp_path / "out.json"),
            "--html",
            str(tmp_path / "out.html"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.html").read_text().startswith("<!DOCTYPE html>")
    assert '"gpt-4"' in (tmp_path / "out.json").read_text()


def test_cli_bad_input_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"judge": "x", "judge_kind": "model", "protocol": "alignmmbench", '
        '"response_id": "r1", "score": 11}\n'
    )
    result = CliRunner().invoke(
        app, ["calibrate", "--judgments", str(bad), "--protocol", "alignmmbench"]
    )
    assert result.exit_code == 2
    assert f"{bad}:1: `score` is 11, but alignmmbench scores are integers 1–10" in result.output
    result = CliRunner().invoke(app, ["calibrate", "--protocol", "alignmmbench"])
    assert result.exit_code == 2 and "nothing to calibrate: give --campaign" in result.output
    good = _write(_frame(), tmp_path / "good.jsonl")
    result = CliRunner().invoke(
        app,
        ["calibrate", "--judgments", str(good), "--protocol", "alignmmbench", "--aggregate", "max"],
    )
    assert result.exit_code == 2
    assert "--aggregate 'max' is not one of mean, fisher, tanh-mean" in result.output


def test_the_charts_come_first_in_the_order_of_the_page(html):
    glance = html.index("<h2>At a glance</h2>")
    assert glance < html.index("<h2>What was compared, and how</h2>")
    assert glance < html.index("<h2>Judges against the reference</h2>")
    charts = html[glance : html.index("<h2>What was compared, and how</h2>")]
    labels = re.findall(r'<svg [^>]*aria-label="([^"]*)"', charts)
    assert labels == [
        "Pearson r with the reference: judges beside the human ceiling",
        "gpt-4 against the reference",
        "Pearson r with the reference, by task",
    ]


def test_setup_says_what_the_fingerprint_and_the_unparsed_rule_mean(html):
    assert "Version of data_sha256" not in html  # a hash of the rows, not a version
    assert re.search(r"<dt>Data fingerprint</dt><dd>SHA-256 of the judgement rows compared: "
                     r"[0-9a-f]{64}</dd>", html)  # fmt: skip
    assert (
        "<dt>Unparsed judge outputs</dt><dd>left out: an unparsed score is not scored and counts "
        "against coverage</dd>"
    ) in html


def test_pairwise_setup_spells_out_the_unparsed_rule():
    rows = []
    for u in range(12):
        for r, label in enumerate(["A", "A", "B"]):
            rows.append({"unit": f"p:{u}", "rater": f"annotator:a{r}", "kind": "human",
                         "value": label, "shown_order": "AB", "parse_status": "ok"})  # fmt: skip
        rows.append({"unit": f"p:{u}", "rater": "gpt-4", "kind": "model", "value": None,
                     "shown_order": "AB", "parse_status": "unparsed"})  # fmt: skip
    frame = pd.DataFrame(rows).assign(item_id="i", task="t", model=None, rationale="")
    html = render_html(calibrate(frame, CalibrationOptions(PAIRWISE, bootstrap=0)))
    assert (
        "<dt>Unparsed judge outputs</dt><dd>wrong: an unparsed verdict counts as a miss (it "
        "matches no reference label)</dd>"
    ) in html


def test_annotators_table_names_the_reference_and_escapes_names():
    frame = _frame()
    straight = frame[frame["rater"] == "annotator:a0"].assign(rater=HOSTILE, value=7.0)
    options = CalibrationOptions(ALIGNMMBENCH, bootstrap=50, consensus="mace")
    html = render_html(calibrate(pd.concat([frame, straight]), options))
    section = html[html.index("<h2>Annotators</h2>") :]
    assert "<script" not in html and "&lt;script&gt;alert(1)" in section
    assert "MACE θ" in section and "longest run of the same answer: 120 of 120" in section
    assert "mace of the human judgements" in html
    assert "Annotators&#x27; weights in the reference" in html or "weights in the reference" in html
