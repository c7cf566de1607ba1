"""PandaLM's published rows reproduced exactly through ``critiquelab calibrate`` (file mode).

Published (github.com/WeOpenML/PandaLM, README): against the majority of the 3 annotators, tie a
class of its own, GPT-3.5: accuracy 71.07, macro P/R/F1 58.79 / 57.36 / 57.55; PandaLM-7B: 66.77 /
57.38 / 57.50 / 57.43. GPT-3.5's row needs ``--unparsed tie`` (its 25 'garbage' verdicts read as
tie). PandaLM-7B's file has no unparsed verdict (every result is 0/1/2), so its row reproduces
under every ``--unparsed`` rule; the only choices that matter are 0 → tie and tie as a class.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from annotate_app.cli.main import app

PUBLISHED = {
    "gpt-3.5-turbo": (71.07, 58.79, 57.36, 57.55),
    "pandalm-7b": (66.77, 57.38, 57.50, 57.43),
}


def _calibrate(files: dict[str, Path], out: Path, unparsed: str, html: Path | None = None) -> dict:
    args = [
        "calibrate",
        "--protocol",
        "pairwise",
        "--unparsed",
        unparsed,
        "--bootstrap",
        "0",
        "--json",
        str(out),
    ]
    args += ["--html", str(html)] if html else []
    for key in ("humans", "gpt", "pandalm"):
        args += ["--judgments", str(files[key])]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def _row(block: dict) -> tuple[float, ...]:
    keys = ("acc_with_tie", "precision_macro", "recall_macro", "f1_macro")
    return tuple(round(block[k] * 100, 2) for k in keys)


def test_gpt35_row_reproduces_with_unparsed_tie(pandalm_files, tmp_path):
    summary = _calibrate(pandalm_files, tmp_path / "out.json", "tie", html=tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    assert "prefer_first" in html and "Largest disagreements of gpt-3.5-turbo" in html
    assert summary["reference"]["consensus"] == "majority"
    assert summary["reference"]["n_units"] == 999
    assert _row(summary["judges"]["gpt-3.5-turbo"]) == PUBLISHED["gpt-3.5-turbo"]
    assert summary["judges"]["gpt-3.5-turbo"]["coverage"] == pytest.approx(974 / 999)
    assert summary["options"]["unparsed"] == "tie"


@pytest.mark.parametrize("unparsed", ["tie", "wrong", "drop"])
def test_pandalm_row_reproduces_under_every_unparsed_rule(pandalm_files, tmp_path, unparsed):
    summary = _calibrate(pandalm_files, tmp_path / "out.json", unparsed)
    assert _row(summary["judges"]["pandalm-7b"]) == PUBLISHED["pandalm-7b"]
    assert summary["judges"]["pandalm-7b"]["coverage"] == 1.0


def test_gpt35_row_differs_when_garbage_counts_as_wrong(pandalm_files, tmp_path):
    summary = _calibrate(pandalm_files, tmp_path / "out.json", "wrong")
    assert _row(summary["judges"]["gpt-3.5-turbo"]) != PUBLISHED["gpt-3.5-turbo"]


def test_human_alpha_and_pairwise_agreement_are_reported(pandalm_files, tmp_path):
    import krippendorff
    import numpy as np

    summary = _calibrate(pandalm_files, tmp_path / "out.json", "tie")
    rows = [json.loads(line) for line in pandalm_files["humans"].read_text().splitlines()]
    codes = {"A": 0, "B": 1, "tie": 2}
    matrix = np.array([codes[r["preference"]] for r in rows], dtype=float).reshape(-1, 3).T
    expected = krippendorff.alpha(matrix, level_of_measurement="nominal")
    assert summary["human"]["alpha_nominal"] == pytest.approx(expected, abs=1e-12)
    assert summary["human"]["n_annotators"] == 3
