"""``critiquelab calibrate --baselines`` on PandaLM's real test set (file mode, with its dataset):
the shortcut baseline is one more judge of the JSON, the HTML report and ``--compare``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from annotate_app.cli.main import app
from bench.pandalm import convert, write_files
from calibration.shortcut import SHORTCUT_JUDGE


def test_baselines_add_the_shortcut_judge_to_every_table_and_the_comparison(pandalm_dir, tmp_path):
    files = write_files(convert(pandalm_dir), tmp_path / "files")
    out, html = tmp_path / "out.json", tmp_path / "report.html"
    args = ["calibrate", "--protocol", "pairwise", "--unparsed", "tie", "--bootstrap", "50",
            "--dataset", str(files["dataset"]), "--baselines", "--json", str(out),
            "--html", str(html), "--compare", "pandalm-7b", SHORTCUT_JUDGE]  # fmt: skip
    for key in ("humans", "gpt-3.5-turbo", "pandalm-7b"):
        args += ["--judgments", str(files[key])]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text())
    assert set(summary["judges"]) == {"gpt-3.5-turbo", "pandalm-7b", SHORTCUT_JUDGE}
    baseline = summary["judges"][SHORTCUT_JUDGE]
    assert baseline["n"] == 999 and baseline["coverage"] == 1.0
    (comparison,) = summary["comparisons"]
    assert (comparison["a"], comparison["b"]) == ("pandalm-7b", SHORTCUT_JUDGE)
    page = html.read_text()
    assert SHORTCUT_JUDGE in page
    assert f"pandalm-7b against {SHORTCUT_JUDGE} (baseline, no language model)" in page
    assert "longer chosen: them / others" in page
    # the dataset gives the Annotators table the responses' lengths: each annotator's share
    # choosing the longer response, computed here from PandaLM's own file (a response that is
    # not a string is written as its JSON text, as bench/pandalm.py writes it)
    items = json.loads((pandalm_dir / "testset-v1.json").read_text())
    text = lambda value: value if isinstance(value, str) else json.dumps(value)  # noqa: E731
    sizes = np.array([[len(text(item[f"response{k}"])) for k in (1, 2)] for item in items])
    unequal = sizes[:, 0] != sizes[:, 1]
    longer = np.where(sizes[:, 0] > sizes[:, 1], 1, 2)  # PandaLM's labels: 1 = A, 2 = B
    labels = np.array([[int(item[f"annotator{k}"]) for item in items] for k in (1, 2, 3)])
    rows = {row["annotator"]: row for row in summary["annotators"]["rows"]}
    for k in (1, 2, 3):
        length = rows[f"annotator{k}"]["length"]
        chose = labels[k - 1][unequal] == longer[unequal]
        assert length["n"] == int(unequal.sum())
        assert length["share_longer"]["value"] == pytest.approx(chose.mean())
        assert not rows[f"annotator{k}"]["flags"]  # so the others are the other two
        others = [j for j in (1, 2, 3) if j != k]
        share = np.mean([labels[j - 1][unequal] == longer[unequal] for j in others], axis=0)
        assert length["others_share"] == pytest.approx(share.mean())


def test_baselines_in_file_mode_need_the_dataset(pandalm_files, tmp_path):
    args = ["calibrate", "--protocol", "pairwise", "--baselines",
            "--judgments", str(pandalm_files["humans"])]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--baselines in file mode needs --dataset" in result.output
