"""``critiquelab calibrate --compare A B`` on PandaLM's real test set (file mode)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from annotate_app.cli.main import app


def _args(files, tmp_path, *extra: str) -> list[str]:
    args = ["calibrate", "--protocol", "pairwise", "--unparsed", "tie", "--bootstrap", "200"]
    for key in ("humans", "gpt", "pandalm"):
        args += ["--judgments", str(files[key])]
    return args + ["--json", str(tmp_path / "out.json"), *extra]


def test_compare_two_real_judges_writes_json_html_and_text(pandalm_files, tmp_path):
    html = tmp_path / "report.html"
    args = _args(pandalm_files, tmp_path, "--compare", "gpt-3.5-turbo", "pandalm-7b")
    result = CliRunner().invoke(app, [*args, "--html", str(html)])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out.json").read_text())
    (comparison,) = summary["comparisons"]
    assert (comparison["a"], comparison["b"], comparison["n_units"]) == (
        "gpt-3.5-turbo",
        "pandalm-7b",
        999,
    )
    accuracy = {m["metric"]: m for m in comparison["metrics"]}["acc_with_tie"]
    # PandaLM's published accuracies on these 999 pairs: 71.07 (GPT-3.5) and 66.77 (PandaLM-7B)
    assert round(accuracy["a"] * 100, 2) == 71.07 and round(accuracy["b"] * 100, 2) == 66.77
    assert accuracy["delta"] == accuracy["a"] - accuracy["b"]
    low, high = accuracy["ci"]
    assert low < accuracy["delta"] < high
    assert 0 <= accuracy["p_a_better"] <= 1 and comparison["bootstrap"] == 200
    page = html.read_text()
    assert "Is judge A better than judge B?" in page
    assert "gpt-3.5-turbo against pandalm-7b" in page
    assert "Δ = A − B" in result.output and "acc_with_tie" in result.output


def test_compare_with_the_human_ceiling_is_the_reports_degradation(pandalm_files, tmp_path):
    result = CliRunner().invoke(
        app, _args(pandalm_files, tmp_path, "--compare", "pandalm-7b", "human")
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out.json").read_text())
    (comparison,) = summary["comparisons"]
    assert comparison["reference"] == "leave_one_out"
    degradation = summary["judges"]["pandalm-7b"]["loo"]["degradation"]
    for entry in comparison["metrics"]:
        assert entry["delta"] == degradation[entry["metric"]], entry["metric"]
    assert "one more human (leave-one-out)" in result.output


def test_compare_with_an_unknown_judge_exits_2_naming_the_judges(pandalm_files, tmp_path):
    result = CliRunner().invoke(app, _args(pandalm_files, tmp_path, "--compare", "gpt-4", "human"))
    assert result.exit_code == 2
    assert "judge 'gpt-4' has no judgements here; present: gpt-3.5-turbo, pandalm-7b, human" in (
        result.output
    )
    assert not (tmp_path / "out.json").exists()


def test_every_compare_pair_is_computed_and_reported(pandalm_files, tmp_path):
    # Two --compare options: each pair gets its comparison, in the JSON, the page and the text
    # (the second used to replace the first); a pair given twice is computed once.
    html = tmp_path / "report.html"
    pairs = [
        ("gpt-3.5-turbo", "pandalm-7b"),
        ("pandalm-7b", "human"),
        ("gpt-3.5-turbo", "pandalm-7b"),
    ]
    extra = [word for pair in pairs for word in ("--compare", *pair)]
    result = CliRunner().invoke(app, [*_args(pandalm_files, tmp_path, *extra), "--html", str(html)])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out.json").read_text())
    assert [(c["a"], c["b"]) for c in summary["comparisons"]] == pairs[:2]
    alone = CliRunner().invoke(
        app, _args(pandalm_files, tmp_path, "--compare", "pandalm-7b", "human")
    )
    assert alone.exit_code == 0, alone.output
    (single,) = json.loads((tmp_path / "out.json").read_text())["comparisons"]
    assert summary["comparisons"][1] == single  # the same figures as when asked alone
    page = html.read_text()
    assert (
        "gpt-3.5-turbo against pandalm-7b" in page and "pandalm-7b against one more human" in page
    )
    assert result.output.count("Δ = A − B") == 2
