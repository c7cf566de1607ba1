"""The critic's commands: documented, with help, and ``critic train`` end to end from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from campaign_factory import write_short_template
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from annotate_app.cli.main import app

runner = CliRunner()
WALKTHROUGH = Path(__file__).resolve().parents[2] / "docs" / "WALKTHROUGH.md"
COMMANDS = [
    ("export", "sft"),
    ("critic", "train"),
    ("critic", "score"),
    ("critic", "convert-gguf"),
    ("judge", "run"),
]


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_command_has_help_and_is_documented(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0 and "Usage" in result.output
    assert f"critiquelab {' '.join(path)}" in WALKTHROUGH.read_text(encoding="utf-8")


def test_train_command_prints_progress_on_stderr_and_the_summary_on_stdout(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    url = engine.url.render_as_string(hide_password=False)
    data = tmp_path / "sft.jsonl"
    exported = runner.invoke(
        app,
        [
            "--db",
            url,
            "export",
            "sft",
            "--campaign",
            "amb",
            "-o",
            str(data),
            "--eval-fraction",
            "0.34",
            "--template",
            str(write_short_template(tmp_path)),
        ],
    )
    assert exported.exit_code == 0, exported.output
    args = ["critic", "train", "--data", str(data), "--base-model", str(tiny_llama),
            "--max-steps", "2", "--logging-steps", "1", "--learning-rate", "0.005",
            "--eval-max-new-tokens", "8", "--eval-limit", "3"]  # fmt: skip
    result = runner.invoke(app, ["--json", *args, "-o", str(tmp_path / "critic")])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["steps"] == 2 and len(summary["losses"]) == 2
    assert summary["eval"]["units"] == 3 and Path(summary["calibration_file"]).is_file()
    assert "train: step" not in result.stderr  # --json keeps both streams clean
    text = runner.invoke(app, [*args, "-o", str(tmp_path / "critic-2")])
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("trained 2 steps in ") and "eval agreement n " in text.stdout
    assert "train: step 1, loss" in text.stderr
    again = runner.invoke(app, [*args, "-o", str(tmp_path / "critic")])
    assert again.exit_code == 2 and "pass --resume" in again.stderr


@pytest.mark.parametrize("command", [("judge", "run"), ("critic", "score")])
@pytest.mark.parametrize("name", ["gpt-4o\u202e", " gpt-4o", "g" * 513])
def test_a_judge_name_follows_the_id_rule(
    tmp_path: Path, command: tuple[str, ...], name: str
) -> None:
    """It is stored with every judgement and exported as an id (schemas.ids)."""
    first = ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    if command[0] == "critic":
        first = ["--model", str(tmp_path)]
    result = runner.invoke(app, [*command, *first, "--campaign", "c", "--judge-name", name])
    assert result.exit_code == 2
    assert "the judge name" in result.output and "--judge-name" in result.output
