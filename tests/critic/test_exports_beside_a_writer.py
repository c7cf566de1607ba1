"""Exports only read: they run while another program holds SQLite's write lock, so a writer
never waits for them. They used to open a writing session (``BEGIN IMMEDIATE``) and hold the
lock for the whole read: 27 s for ``export sft`` of a 200,000-unit campaign, during which every
annotator's submit waited."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from campaign_factory import build_annotated_campaigns
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

import data.storage.engine
from annotate_app.cli.main import app


def test_every_export_reads_while_another_program_holds_the_write_lock(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data.storage.engine, "SQLITE_BUSY_TIMEOUT_MS", 300)  # fail fast if waiting
    build_annotated_campaigns(engine)
    out = tmp_path / "out"
    commands = [
        ["export", "sft", "--campaign", "amb", "-o", str(out / "sft.jsonl")],
        ["export", "annotations", "--campaign", "amb", "-o", str(out / "annotations.jsonl")],
        ["export", "judgments", "-o", str(out / "judgments.jsonl")],
        ["export", "disagreement-tags", "--campaign", "amb", "-o", str(out / "tags.jsonl")],
        ["export", "dataset", "tiny", "-o", str(out / "dataset" / "tiny.jsonl")],
    ]
    writer = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another program's write transaction, left open
    try:
        for command in commands:
            result = CliRunner().invoke(app, ["--db", db_url, *command])
            assert result.exit_code == 0, (command, result.output)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert (out / "sft.jsonl").read_text("utf-8").count("\n") == 12  # the 12 annotated units
