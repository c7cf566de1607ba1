"""``critiquelab gold``: import (exit 2 naming file, line and field, nothing written), settings
with bounded numbers, accuracy table, hold / release / retire."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from annotate_app.cli.main import app

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data"))
from importing_fixtures import item_record, make_image, write_jsonl  # noqa: E402

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_sqlite_template: Path) -> list[str]:
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "files"))
    shutil.copyfile(empty_sqlite_template, tmp_path / "cli.db")  # migrated already
    args = ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    make_image(tmp_path / "images" / "cat.png")
    items = write_jsonl(tmp_path / "items.jsonl", [item_record(n, models=3) for n in range(2)])
    assert runner.invoke(app, [*args, "import", "jsonl", str(items)]).exit_code == 0
    create = ["campaign", "create", "c", "--dataset", "items", "--protocol", "alignmmbench"]
    assert runner.invoke(app, [*args, *create, "--overlap", "2"]).exit_code == 0
    return args


def _keys(db: list[str]) -> list[str]:
    status = runner.invoke(app, [*db, "--json", "campaign", "status", "c", "--units"])
    return [unit["unit_key"] for unit in json.loads(status.stdout)["by_unit"]]


def test_gold_import_settings_and_accuracy(db: list[str], tmp_path: Path) -> None:
    keys = _keys(db)
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [{"unit": keys[0], "score": 7, "explanation": "right"}, {"unit": keys[1], "score": 2}],
    )
    done = runner.invoke(app, [*db, "gold", "import", str(gold), "--campaign", "c"])
    assert done.exit_code == 0, done.output
    assert done.stdout == "campaign 'c': 2 gold answers added, 0 replaced; 2 gold units in all\n"
    status = runner.invoke(app, [*db, "--json", "campaign", "status", "c"])
    assert (json.loads(status.stdout)["units"], json.loads(status.stdout)["gold_units"]) == (4, 2)
    settings = ["gold", "set", "c", "--gold-rate", "0.1", "--qualify", "2"]
    changed = runner.invoke(app, [*db, *settings, "--qualify-accuracy", "0.5", "--gold-feedback"])
    assert changed.exit_code == 0, changed.output
    assert "qualification_gold 0 → 2" in changed.stdout
    table = runner.invoke(app, [*db, "gold", "accuracy", "--campaign", "c"])
    assert table.exit_code == 0 and "(no gold answer yet)" in table.stdout
    runner.invoke(app, [*db, "users", "add", "ann", "--role", "annotator"], input="pw-12345678\n")
    held = runner.invoke(app, [*db, "gold", "hold", "ann", "--campaign", "c"])
    assert held.stdout == "ann is held in campaign 'c'\n"
    listed = runner.invoke(app, [*db, "--json", "gold", "standings", "--campaign", "c", "--held"])
    (row,) = json.loads(listed.stdout)
    assert (row["annotator"], row["by_queue"], row["reason"]) == ("ann", False, None)
    table = runner.invoke(app, [*db, "gold", "standings", "--campaign", "c"])
    assert table.stdout.splitlines()[1].endswith("\theld by an admin (command line)")
    assert "qualification" not in table.stdout.splitlines()[1]
    again = runner.invoke(app, [*db, "gold", "hold", "ann", "--campaign", "c"])
    assert again.exit_code == 2 and again.stderr.startswith("error: ann is held in 'c'")
    released = runner.invoke(app, [*db, "gold", "release", "ann", "--campaign", "c"])
    assert released.stdout == "ann is released in campaign 'c'\n"
    runner.invoke(app, [*db, "users", "add", "root", "--role", "admin"], input="pw-12345678\n")
    hold = ["gold", "hold", "ann", "--campaign", "c", "--reason", "1 s per unit", "--by"]
    by_admin = runner.invoke(app, [*db, *hold, "root"])
    assert by_admin.stdout == "ann is held in campaign 'c': 1 s per unit\n"
    table = runner.invoke(app, [*db, "gold", "standings", "--campaign", "c", "--held"])
    assert table.stdout.splitlines()[1].endswith("\theld by an admin (root): 1 s per unit")
    release = ["gold", "release", "ann", "--campaign", "c"]
    not_admin = runner.invoke(app, [*db, *release, "--by", "ann"])
    assert not_admin.exit_code == 2 and not_admin.stderr.startswith("error: ")


@pytest.mark.parametrize(
    "option",
    [
        ["--gold-rate", "0.9"],
        ["--qualify", "-1"],
        ["--qualify-accuracy", "1.5"],
        ["--qualify", "9"],
    ],
)
def test_gold_settings_out_of_bounds_exit_2(db: list[str], option: list[str]) -> None:
    result = runner.invoke(app, [*db, "gold", "set", "c", *option])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1


def test_a_bad_gold_file_exits_2_naming_line_and_field_and_writes_nothing(
    db: list[str], tmp_path: Path
) -> None:
    keys = _keys(db)
    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"unit": keys[0], "score": 7},
            {"unit": keys[1], "score": 70},
            {"unit": "r:x", "score": 1},
        ],
    )
    result = runner.invoke(app, [*db, "gold", "import", str(bad), "--campaign", "c"])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"error: {bad}:2: ") and "score" in lines[0]
    assert lines[1].startswith(f"error: {bad}:3: `unit` 'r:x' is no unit of campaign 'c'")
    status = runner.invoke(app, [*db, "--json", "campaign", "status", "c"])
    assert json.loads(status.stdout)["gold_units"] == 0


_CREATE = ["campaign", "create", "d", "--dataset", "items", "--protocol", "alignmmbench"]


def _exists(db: list[str], campaign: str) -> bool:
    return runner.invoke(app, [*db, "campaign", "status", campaign]).exit_code == 0


def test_campaign_create_takes_a_gold_file_and_the_gold_options(
    db: list[str], tmp_path: Path
) -> None:
    keys = _keys(db)  # campaign c's units: d is made of the same responses
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"unit": keys[0], "score": 7}])
    options = ["--gold", str(gold), "--gold-rate", "0.25", "--gold-feedback"]
    options += ["--qualify", "1", "--qualify-accuracy", "0.5"]
    made = runner.invoke(app, [*db, "--json", *_CREATE, *options])
    assert made.exit_code == 0, made.output
    created = json.loads(made.stdout)
    assert (created["gold_units"], created["gold_rate"], created["gold_feedback"]) == (
        1,
        0.25,
        True,
    )
    assert (created["qualification_gold"], created["qualification_accuracy"]) == (1, 0.5)
    status = runner.invoke(app, [*db, "--json", "campaign", "status", "d"])
    assert json.loads(status.stdout)["gold_units"] == 1
    text = runner.invoke(app, [*db, *_CREATE[:2], "e", *_CREATE[3:], *options])
    assert text.exit_code == 0, text.output
    assert "; 1 gold units; qualification: 1 gold units, 50% right" in text.stdout


@pytest.mark.parametrize(
    "option",
    [
        ["--gold-rate", "0.9"],
        ["--qualify", "-1"],
        ["--qualify-accuracy", "1.5"],
        ["--qualify", "2"],  # more than the gold file's one unit
        ["--gold-rate", "0.005"],
    ],
)
def test_campaign_create_bounds_the_gold_options_like_gold_set_and_creates_nothing(
    db: list[str], tmp_path: Path, option: list[str]
) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"unit": _keys(db)[0], "score": 7}])
    result = runner.invoke(app, [*db, *_CREATE, "--gold", str(gold), *option])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    same = runner.invoke(app, [*db, "gold", "set", "c", *option])
    assert same.exit_code == 2, same.output  # the same bounds as gold set
    assert not _exists(db, "d") and _exists(db, "c")


def test_campaign_create_without_a_gold_file_refuses_gold_to_serve(db: list[str]) -> None:
    for option in (["--gold-rate", "0.1"], ["--qualify", "3"]):
        result = runner.invoke(app, [*db, *_CREATE, *option])
        assert result.exit_code == 2 and "--gold FILE" in result.output, result.output
    feedback_only = runner.invoke(app, [*db, "--json", *_CREATE, "--gold-feedback"])
    assert feedback_only.exit_code == 0 and json.loads(feedback_only.stdout)["gold_feedback"]


def test_campaign_create_with_a_bad_gold_file_names_the_line_and_creates_nothing(
    db: list[str], tmp_path: Path
) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"unit": _keys(db)[0], "preference": "A"}])
    result = runner.invoke(app, [*db, *_CREATE, "--gold", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {bad}:1: ") and "preference" in result.stderr
    assert not _exists(db, "d") and _exists(db, "c")
