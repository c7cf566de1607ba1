"""The ``critiquelab`` root: help everywhere, version, exit codes, one-line errors, --json."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from sqlalchemy import text
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data.storage.engine import make_engine

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "files"))
    monkeypatch.delenv("CRITIQUELAB_DB", raising=False)
    return f"sqlite:///{tmp_path / 'cli.db'}"


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


def test_every_command_has_help_text() -> None:
    root = typer.main.get_command(app)
    paths = _commands(root)
    assert {("import", "jsonl"), ("judgments", "import"), ("export", "annotations"),
            ("campaign", "status"), ("users", "add")} <= set(paths)  # fmt: skip
    for path in paths:
        command = root
        for name in path:
            command = command.commands[name]
        assert (command.help or "").strip(), f"critiquelab {' '.join(path)} has no help text"
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"critiquelab {importlib.metadata.version('critiquelab')}\n"


def test_users_add_reads_the_password_from_stdin_and_errors_are_one_line(db: str) -> None:
    added = runner.invoke(app, ["--db", db, "users", "add", "alice", "--role", "admin"],
                          input="correct horse\n")  # fmt: skip
    assert added.exit_code == 0, added.output
    assert added.stdout == "added admin 'alice' (id 1)\n"
    again = runner.invoke(app, ["--db", db, "users", "add", "alice", "--role", "admin"],
                          input="correct horse\n")  # fmt: skip
    assert again.exit_code == 2
    assert again.stderr == "error: user 'alice' already exists: choose another name\n"
    listed = runner.invoke(app, ["--db", db, "--json", "users", "list"])
    assert json.loads(listed.stdout) == [
        {"id": 1, "name": "alice", "role": "admin", "active": True, "synthetic": False}
    ]


def test_debug_shows_the_exception_instead_of_one_line(db: str) -> None:
    result = runner.invoke(app, ["--db", db, "--debug", "campaign", "status", "nope"])
    assert result.exit_code == 1 and isinstance(result.exception, ValueError)
    assert "no campaign called 'nope'" in str(result.exception)


def test_the_database_is_upgraded_on_start_and_a_newer_one_refused(db: str) -> None:
    assert runner.invoke(app, ["--db", db, "users", "list"]).exit_code == 0
    engine = make_engine(db)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    engine.dispose()
    result = runner.invoke(app, ["--db", db, "users", "list"])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: the database sqlite:///")
    assert "is at schema revision 9999_future" in result.stderr
    assert "Traceback" not in result.output
