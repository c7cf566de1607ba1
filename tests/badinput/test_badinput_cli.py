"""Every hostile file of the corpus through the command line: exit 2, one clear line naming
file, line and field, the database unchanged, nothing written outside the data folder.

The manifest (what is wrong with each file, what the error must say) is the table in
``tests/badinput/README.md``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from badinput_checks import copy_database, critiquelab, database_snapshot, outside_data_folder
from badinput_files import CORPUS, CORPUS_SUFFIXES, Case, manifest_cases

from data.storage.engine import make_engine

CASES = manifest_cases()
# Cases whose failure mode differs by backend (NUL and NaN are fine in SQLite, not in PostgreSQL).
POSTGRES_CASES = {"jsonl_nul_escape_in_id.jsonl", "jsonl_nan_in_meta.jsonl", "judg_score_nan.jsonl"}
PG_CASES = [case for case in CASES if case.file in POSTGRES_CASES]


def _seed_valid_dataset(db_url: str) -> None:
    code, _, err = critiquelab(db_url, ["import", "jsonl", "valid_dataset.jsonl"])
    assert code == 0, f"the positive control valid_dataset.jsonl did not import: {err}"


def _database_for(case: Case, isolated: dict[str, Path], template: Path, backend: str) -> str:
    # on PostgreSQL a copy of the migrated template database (``pg_migrated_url``)
    db_url = copy_database(template, isolated["db"]) if backend == "sqlite" else isolated["pg_url"]
    if case.command == "judgments import":
        _seed_valid_dataset(db_url)
    return db_url


def assert_refused(case: Case, db_url: str, isolated: dict[str, Path]) -> str:
    engine = make_engine(db_url)
    before_db, before_files = database_snapshot(engine), outside_data_folder(isolated)
    code, out, err = critiquelab(db_url, case.argv)
    message = err.strip()
    assert code == 2, f"{case.file}: exit {code}, expected 2; stderr={err[-500:]!r}"
    assert "Traceback" not in out + err, f"{case.file}: traceback shown: {err[-800:]}"
    assert message and "\n" not in message, f"{case.file}: not one line: {message[:800]!r}"
    assert case.file in message, f"{case.file}: the file is not named: {message!r}"
    if case.line is not None:
        assert re.search(rf"(:|line ){case.line}\b", message), f"line {case.line}: {message!r}"
    if case.field:
        assert case.field in message, f"{case.file}: field {case.field!r} not named: {message!r}"
    lowered = message.lower()
    assert any(fragment.lower() in lowered for fragment in case.expected), (
        f"{case.file}: none of {case.expected} in {message!r}"
    )
    assert database_snapshot(engine) == before_db, f"{case.file}: the database changed"
    assert outside_data_folder(isolated) == before_files, f"{case.file}: wrote outside data dir"
    engine.dispose()
    return message


@pytest.mark.parametrize("case", CASES, ids=[case.file for case in CASES])
def test_bad_file_is_refused_on_sqlite(
    case: Case, isolated: dict[str, Path], empty_sqlite_template: Path
) -> None:
    db_url = _database_for(case, isolated, empty_sqlite_template, "sqlite")
    assert_refused(case, db_url, isolated)


@pytest.mark.postgres
@pytest.mark.parametrize("case", PG_CASES, ids=[case.file for case in PG_CASES])
def test_bad_file_is_refused_on_postgresql(
    case: Case, isolated: dict[str, Path], empty_sqlite_template: Path, pg_migrated_url: str
) -> None:
    isolated["pg_url"] = pg_migrated_url  # type: ignore[assignment]
    db_url = _database_for(case, isolated, empty_sqlite_template, "postgresql")
    assert_refused(case, db_url, isolated)


@pytest.mark.parametrize(
    ("command", "file"),
    [("import jsonl", "valid_dataset.jsonl"), ("import mmie", "valid_mmie.json"),
     ("judgments import", "valid_judgments.jsonl")],
)  # fmt: skip
def test_positive_controls_import(
    command: str, file: str, isolated: dict[str, Path], empty_sqlite_template: Path
) -> None:
    """The valid files next to the corpus do import: the refusals above are about the defect."""
    db_url = copy_database(empty_sqlite_template, isolated["db"])
    if command == "judgments import":
        _seed_valid_dataset(db_url)
    engine = make_engine(db_url)
    before = database_snapshot(engine)
    code, _, err = critiquelab(db_url, [*command.split(), file])
    assert code == 0, err
    assert database_snapshot(engine) != before
    engine.dispose()


def test_manifest_covers_corpus(workspace: dict[str, Path]) -> None:
    listed = {case.file for case in CASES}
    committed = {
        p.name for p in CORPUS.iterdir() if p.is_file() and p.name.endswith(CORPUS_SUFFIXES)
    }
    controls = {name for name in committed if name.startswith("valid_")}
    assert committed - controls - listed == set(), "corpus files missing from README.md"
    assert {f for f in listed if not (workspace["root"] / f).exists()} == set()
    assert len(listed) >= 30


@pytest.mark.slow  # a process of its own: the installed console script
def test_real_process_exits_2_with_one_line(
    isolated: dict[str, Path], empty_sqlite_template: Path
) -> None:
    """The installed console script, not just the Typer app: exit 2 and one stderr line. One
    file is enough for the script's own part (exit code, stderr); what the reader says of each
    corpus file, the 50 MB line included, ``test_bad_file_is_refused_on_sqlite`` checks."""
    file = "jsonl_invalid_utf8.jsonl"
    db_url = copy_database(empty_sqlite_template, isolated["db"])
    script = Path(sys.executable).with_name("critiquelab")
    done = subprocess.run(
        [str(script), "--db", db_url, "import", "jsonl", file],
        capture_output=True, text=True, timeout=120, cwd=isolated["root"],
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-800:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr[-800:]
    assert file in done.stderr
