"""``critiquelab demo``: builds once, prints the logins, then hands over to the app server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select
from typer.testing import CliRunner

import annotate_app.cli.demo
from annotate_app.cli.main import app
from data.sample import DEMO_ACCOUNTS
from data.storage.engine import make_engine
from schemas.tables import Annotation, DisagreementTag, Item

pytestmark = pytest.mark.slow  # each test builds the sample project through the CLI

runner = CliRunner()


@pytest.fixture
def db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "files"))
    return f"sqlite:///{tmp_path / 'demo.db'}"


def _count(db_url: str, table: type) -> int:
    engine = make_engine(db_url)
    with Session(engine) as session:
        count = session.exec(select(func.count()).select_from(table)).one()
    engine.dispose()
    return count


def test_demo_no_serve_builds_once_and_prints_the_logins(db_url: str) -> None:
    first = runner.invoke(app, ["--db", db_url, "demo", "--no-serve"])
    assert first.exit_code == 0, first.output
    assert "built the sample project" in first.output
    for account in DEMO_ACCOUNTS:
        assert f"{account.name}" in first.output and account.password in first.output
    items, annotations = _count(db_url, Item), _count(db_url, Annotation)
    tags = _count(db_url, DisagreementTag)
    assert items >= 60 and annotations > 0 and tags > 0
    assert f"{tags} disagreement tags" in first.output

    second = runner.invoke(app, ["--db", db_url, "demo", "--no-serve"])
    assert second.exit_code == 0, second.output
    assert "the sample project is ready" in second.output
    assert (_count(db_url, Item), _count(db_url, Annotation)) == (items, annotations)
    assert _count(db_url, DisagreementTag) == tags


def test_demo_json_output_is_the_summary(db_url: str) -> None:
    result = runner.invoke(app, ["--db", db_url, "--json", "demo", "--no-serve"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["created"] is True
    assert summary["items"] == _count(db_url, Item)
    assert {a["name"] for a in summary["accounts"]} == {a.name for a in DEMO_ACCOUNTS}


def test_demo_serves_the_app_on_the_same_database(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def fake_serve(url: str, host: str, port: int) -> int:
        calls.append((url, host, port, _count(url, Item)))
        return 0

    monkeypatch.setattr(annotate_app.cli.demo, "serve_app", fake_serve)
    result = runner.invoke(app, ["--db", db_url, "demo", "--port", "8611", "--host", "0.0.0.0"])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1
    url, host, port, items = calls[0]
    assert (url, host, port) == (db_url, "0.0.0.0", 8611)
    assert items >= 60, "the project must be built before the app starts"
