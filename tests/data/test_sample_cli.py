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
from tests.sample_template import SampleTemplate

pytestmark = pytest.mark.slow  # each test builds the sample project (or its tags) through the CLI

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

    # a third run, with --json: its output is the summary (a build from scratch only for the
    # JSON, as a test of its own did, would repeat the first run's)
    third = runner.invoke(app, ["--db", db_url, "--json", "demo", "--no-serve"])
    assert third.exit_code == 0, third.output
    summary = json.loads(third.stdout)
    assert summary["created"] is False
    assert summary["added_annotations"] == summary["added_tags"] == 0
    assert (summary["items"], summary["annotations"]) == (items, annotations)
    assert summary["disagreement_tags"] == tags
    assert {a["name"] for a in summary["accounts"]} == {a.name for a in DEMO_ACCOUNTS}
    assert (_count(db_url, Item), _count(db_url, Annotation)) == (items, annotations)
    assert _count(db_url, DisagreementTag) == tags


def _sample_copy(
    tmp_path: Path, sample_template: SampleTemplate, monkeypatch: pytest.MonkeyPatch
) -> str:
    """A copy of the session's sample project: built without disagreement tags, which ``demo``
    adds (:mod:`data.sample.tags`)."""
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "files"))
    sample_template.copy_to(tmp_path / "demo.db", tmp_path / "files")
    db_url = f"sqlite:///{tmp_path / 'demo.db'}"
    assert _count(db_url, DisagreementTag) == 0
    return db_url


def test_demo_serves_the_app_on_the_same_database(
    tmp_path: Path, sample_template: SampleTemplate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build finishes before the app starts: the tags the build adds are there when it does
    (on a copy of the session's sample project, which lacks only the tags)."""
    db_url = _sample_copy(tmp_path, sample_template, monkeypatch)
    calls = []

    def fake_serve(url: str, host: str, port: int) -> int:
        calls.append((url, host, port, _count(url, DisagreementTag)))
        return 0

    monkeypatch.setattr(annotate_app.cli.demo, "serve_app", fake_serve)
    result = runner.invoke(app, ["--db", db_url, "demo", "--port", "8611", "--host", "0.0.0.0"])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1
    url, host, port, tags = calls[0]
    assert (url, host, port) == (db_url, "0.0.0.0", 8611)
    assert tags > 0, "the project must be built before the app starts"
