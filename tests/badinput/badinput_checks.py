"""Checks of the bad-input tests: the database row by row, the files outside the data folder."""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy import inspect, select, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel
from typer.testing import CliRunner

Snapshot = dict[str, list[tuple]]


def database_snapshot(engine: Engine) -> Snapshot:
    """Every row of every table (and the schema revision), in primary-key order."""
    snapshot: Snapshot = {}
    with engine.connect() as connection:
        names = set(inspect(connection).get_table_names())
        for table in SQLModel.metadata.sorted_tables:
            if table.name in names:
                query = select(table).order_by(*table.primary_key.columns)
                snapshot[table.name] = [tuple(row) for row in connection.execute(query)]
        snapshot["alembic_version"] = [
            tuple(row) for row in connection.execute(text("SELECT * FROM alembic_version"))
        ]
    return snapshot


def tree_snapshot(*folders: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file and link under ``folders``, links not followed."""
    found = {}
    for folder in folders:
        for path in folder.rglob("*"):
            stat = path.lstat()
            found[str(path)] = (stat.st_size, stat.st_mtime_ns)
    return found


def copy_database(template: Path, folder: Path) -> str:
    target = folder / "critiquelab.db"
    shutil.copyfile(template, target)
    return f"sqlite:///{target}"


def outside_data_folder(isolated: dict[str, Path]) -> dict[str, tuple[int, int]]:
    """Everything a failed import must leave alone: the whole workspace (corpus, `outside/`,
    their parent) and the test's temp folder less its data folder and database folder."""
    snapshot = tree_snapshot(isolated["root"].parent)
    for path in isolated["tmp"].iterdir():
        if path.name not in ("store", "db"):
            snapshot |= tree_snapshot(path) | {str(path): (0, 0)}
    return snapshot


def critiquelab(db_url: str, argv: list[str]) -> tuple[int, str, str]:
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    from annotate_app.cli.main import app

    result = CliRunner().invoke(app, ["--db", db_url, *argv])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"the CLI raised instead of exiting: {result.exception!r}")
    return result.exit_code, result.stdout, result.stderr
