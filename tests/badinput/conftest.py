"""Fixtures of the bad-input tests: the workspace, a migrated template database, isolation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from badinput_files import build_workspace


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The corpus and its generated files, shared read-only by all bad-input tests."""
    return build_workspace(tmp_path_factory.mktemp("badinput"))


@pytest.fixture
def isolated(
    tmp_path: Path, workspace: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Path]]:
    """A per-test data folder and database folder; the working directory is the corpus root."""
    store, db = tmp_path / "store", tmp_path / "db"
    store.mkdir()
    db.mkdir()
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(store))
    monkeypatch.delenv("CRITIQUELAB_DB", raising=False)
    monkeypatch.chdir(workspace["root"])
    yield {**workspace, "store": store, "db": db, "tmp": tmp_path}
