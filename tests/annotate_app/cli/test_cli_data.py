"""``critiquelab import / judgments import / campaign / export`` end to end on a temp database."""

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
    """A migrated empty database (a copy of the template: the CLI migrating a new file is
    ``test_images_go_beside_the_database_named_by_db``'s first step)."""
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "files"))
    shutil.copyfile(empty_sqlite_template, tmp_path / "cli.db")
    return ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]


def test_import_campaign_status_and_export(db: list[str], tmp_path: Path) -> None:
    make_image(tmp_path / "images" / "cat.png")
    items = write_jsonl(tmp_path / "items.jsonl", [item_record(n, models=3) for n in range(2)])
    imported = runner.invoke(app, [*db, "--json", "import", "jsonl", str(items)])
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["responses_added"] == 6
    again = runner.invoke(app, [*db, "import", "jsonl", str(items)])
    assert again.stdout.startswith("dataset 'items': 0 items added, 0 updated, 2 unchanged")
    create = ["campaign", "create", "pairs", "--dataset", "items", "--protocol", "pairwise"]
    created = runner.invoke(app, [*db, *create, "--pairs", "all", "--overlap", "2"])
    assert created.stdout == "created campaign 'pairs': 6 units, 2 annotators each (pairwise)\n"
    pointwise = ["campaign", "create", "one", "--dataset", "items", "--protocol", "alignmmbench"]
    ignored = runner.invoke(app, [*db, *pointwise, "--pairs", "2"])  # it was silently ignored
    assert ignored.exit_code == 2 and "--pairs applies to the pairwise protocol only" in (
        ignored.stderr
    )
    status = runner.invoke(app, [*db, "--json", "campaign", "status", "pairs", "--units"])
    progress = json.loads(status.stdout)
    assert (progress["units"], progress["units_complete"], len(progress["by_unit"])) == (6, 0, 6)
    assert progress["median_seconds_per_unit"] is None
    out = tmp_path / "labels.csv"
    exported = runner.invoke(app, [*db, "export", "annotations", "--campaign", "pairs", "-o",
                                   str(out)])  # fmt: skip
    assert exported.exit_code == 0 and out.read_text().startswith("judge,judge_kind,protocol")
    gpt = write_jsonl(tmp_path / "gpt.jsonl", [
        {"judge": "gpt-4", "judge_kind": "model", "protocol": "alignmmbench",
         "response_id": "item-0/m0", "score": 8, "prompt_id": "p@1"},
    ])  # fmt: skip
    loaded = runner.invoke(app, [*db, "judgments", "import", str(gpt)])
    assert loaded.stdout == "1 judgements added, 0 updated, 0 unchanged\n"
    judged = tmp_path / "judged.jsonl"
    runner.invoke(app, [*db, "export", "judgments", "--judge", "gpt-4", "-o", str(judged)])
    assert json.loads(judged.read_text())["score"] == 8
    typo = runner.invoke(app, [*db, "export", "judgments", "--judge", "gpt4", "-o", str(judged)])
    assert typo.exit_code == 2, typo.output  # it wrote an empty file
    assert "judge(s) gpt4 have no model judgements here; present: gpt-4" in typo.stderr
    assert json.loads(judged.read_text())["score"] == 8  # the earlier file stays


def test_bad_input_exits_2_with_one_line_and_the_database_unchanged(
    db: list[str], tmp_path: Path
) -> None:
    make_image(tmp_path / "images" / "cat.png")
    bad = item_record(1)
    bad["question"][0]["image"] = "/etc/passwd"
    path = write_jsonl(tmp_path / "items.jsonl", [item_record(0), bad])
    result = runner.invoke(app, [*db, "import", "jsonl", str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {path}:2: `question[0].image` is an absolute path (/etc/passwd); image paths "
        f"are relative to {tmp_path}: make it relative; keep images inside it or give "
        "--images-root\n"
    )
    listed = runner.invoke(app, [*db, "--json", "campaign", "create", "c", "--dataset", "items",
                                 "--protocol", "mmie"])  # fmt: skip
    assert listed.exit_code == 2
    assert listed.stderr.startswith("error: no dataset called 'items'")
    mismatch = runner.invoke(app, [*db, "import", "alignmmbench", str(path), "--responses",
                                   str(path)])  # fmt: skip
    assert mismatch.exit_code == 2 and "give one --model for each --responses file" in (
        mismatch.output
    )


def test_real_alignmmbench_through_the_cli(db: list[str], alignmmbench_metadata: Path) -> None:
    metadata = alignmmbench_metadata
    refused = runner.invoke(app, [*db, "import", "alignmmbench", str(metadata)])
    assert refused.exit_code == 2
    assert "4,978 image reference(s) to 1,054 file(s) are missing" in refused.stderr
    assert f"looked for under {metadata.parent}" in refused.stderr
    result = runner.invoke(app, [*db, "--quiet", "import", "alignmmbench", str(metadata),
                                 "--allow-missing-images"])  # fmt: skip
    assert (result.exit_code, result.stdout) == (0, "")


def test_images_go_beside_the_database_named_by_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--db` decides the image store too, whatever $CRITIQUELAB_DB says: the app served on the
    same database finds them."""
    monkeypatch.delenv("CRITIQUELAB_DATA_DIR", raising=False)
    monkeypatch.setenv("CRITIQUELAB_DB", f"sqlite:///{tmp_path / 'other.db'}")
    make_image(tmp_path / "images" / "cat.png")
    items = write_jsonl(tmp_path / "items.jsonl", [item_record(0)])
    target = tmp_path / "project.db"
    result = runner.invoke(app, ["--db", f"sqlite:///{target}", "import", "jsonl", str(items)])
    assert result.exit_code == 0, result.output
    stored = list((tmp_path / "project_files" / "images").rglob("*.png"))
    assert len(stored) == 1
    assert not (tmp_path / "other_files").exists()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def both_backends(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    # images in the test's folder (on PostgreSQL they went to ./critiquelab_files, the repo's)
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "files"))
    if request.param == "sqlite":
        shutil.copyfile(request.getfixturevalue("empty_sqlite_template"), tmp_path / "cli.db")
        return ["--db", f"sqlite:///{tmp_path / 'cli.db'}"]
    return ["--db", request.getfixturevalue("pg_migrated_url")]


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        # accepted, then every next unit crashed (no date is 2^63 - 1 seconds away)
        ("--lease-seconds", "9223372036854775807", "give a whole number from 1 to 604,800"),
        # exit 1: OverflowError (SQLite), DataError with the raw SQL (PostgreSQL)
        ("--lease-seconds", "100000000000000000000", "from 1 to 604,800 (seconds"),
        ("--overlap", "100000000000000000000", "from 1 to 1,000 (annotators per unit)"),
        ("--rationale-min", "100000000000000000000", "from 0 to 10,000 (characters)"),
        ("--overlap", "0", "from 1 to 1,000"),
        ("--rationale-min", "-1", "from 0 to 10,000"),
        ("--pairs", "100000000000000000000", "--pairs K is 100000000000000000000"),
    ],
)
def test_integer_options_are_bounded_before_anything_is_written(
    both_backends: list[str], tmp_path: Path, flag: str, value: str, message: str
) -> None:
    db = both_backends
    make_image(tmp_path / "images" / "cat.png")
    items = write_jsonl(tmp_path / "items.jsonl", [item_record(n, models=2) for n in range(2)])
    assert runner.invoke(app, [*db, "import", "jsonl", str(items)]).exit_code == 0
    create = ["campaign", "create", "c", "--dataset", "items", "--protocol", "pairwise"]
    result = runner.invoke(app, [*db, *create, flag, value])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {flag}") and f" is {value}; " in result.stderr
    assert message in result.stderr and len(result.stderr.splitlines()) == 1
    listed = runner.invoke(app, [*db, "--json", "campaign", "status", "c"])
    assert listed.exit_code == 2 and "no campaign" in listed.stderr


def test_bootstrap_is_bounded(db: list[str], tmp_path: Path) -> None:
    """No upper bound before: 10^12 resamples ran for ever."""
    for value in ("1000001", "100000000000000000000", "-1"):
        result = runner.invoke(app, [*db, "calibrate", "--campaign", "c", "--bootstrap", value])
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"error: --bootstrap is {value}; give a whole number from 0 to 1,000,000 "
            "(resamples; 0 = no intervals)\n"
        )


@pytest.mark.parametrize(
    ("command", "flag", "value", "message"),
    [
        (["judge", "run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
         "--concurrency", "0", "from 1 to 256 (requests in flight)"),
        (["judge", "run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
         "--max-retries", "100000000000000000000", "from 0 to 100 (retries per request)"),
        (["judge", "run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
         "--max-tokens", "0", "from 1 to 1,000,000"),
        (["critic", "score", "--model", "/no/such/model"], "--samples", "100000000000000000000",
         "from 1 to 1,000 (answers per unit)"),
        (["critic", "score", "--model", "/no/such/model"], "--batch-size", "0",
         "from 1 to 4,096"),
        (["critic", "score", "--model", "/no/such/model"], "--max-new-tokens",
         "100000000000000000000", "from 1 to 1,000,000"),
        (["critic", "score", "--model", "/no/such/model"], "--limit", "0", "from 1 to"),
    ],
)  # fmt: skip
def test_judging_options_are_bounded_before_any_request_or_model(
    db: list[str], command: list[str], flag: str, value: str, message: str
) -> None:
    options = ["--campaign", "c", "--judge-name", "j", flag, value]
    result = runner.invoke(app, [*db, *command, *options])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {flag} is {value}; give a whole number")
    assert message in result.stderr


def test_critic_score_checks_its_options_and_campaign_before_loading_the_model(
    db: list[str], tmp_path: Path
) -> None:
    """Each refusal came after the model load (minutes on a CPU), or as its load error: the
    model here does not exist, so a refusal naming something else was made before the load."""
    make_image(tmp_path / "images" / "cat.png")
    items = write_jsonl(tmp_path / "items.jsonl", [item_record(0)])
    assert runner.invoke(app, [*db, "import", "jsonl", str(items)]).exit_code == 0
    create = ["campaign", "create", "amb", "--dataset", "items", "--protocol", "alignmmbench"]
    assert runner.invoke(app, [*db, *create]).exit_code == 0
    score = [*db, "critic", "score", "--model", str(tmp_path / "no-model"), "--judge-name", "j"]
    for options, message in [
        (["--campaign", "nope"], "no campaign"),
        (["--campaign", "amb", "--language", "fr"], "--language 'fr' is not one of: en, zh"),
        (["--campaign", "amb", "--sample", "--temperature", "-1"], "--temperature is -1.0"),
        (["--campaign", "amb", "--preference-probs"], "--preference-probs needs a pairwise"),
    ]:
        result = runner.invoke(app, [*score, *options])
        assert result.exit_code == 2 and message in result.stderr, (options, result.output)
        assert "no-model" not in result.stderr


def test_messages_name_the_flag_the_user_types(db: list[str], tmp_path: Path) -> None:
    """--reference is the flag (--consensus its older name); nothing given is not 'both'."""
    nothing = runner.invoke(app, [*db, "calibrate", "--bootstrap", "0"])
    assert nothing.exit_code == 2 and "nothing to calibrate: give --campaign" in nothing.stderr
    files = ["--judgments", str(tmp_path / "j.jsonl"), "--protocol", "alignmmbench"]
    line = {"judge": "j", "judge_kind": "model", "protocol": "alignmmbench",
            "response_id": "q/m", "score": 5}  # fmt: skip
    (tmp_path / "j.jsonl").write_text(json.dumps(line) + "\n")
    bogus = runner.invoke(app, [*db, "calibrate", *files, "--reference", "bogus"])
    assert bogus.exit_code == 2 and "--reference 'bogus' is not one of" in bogus.stderr
