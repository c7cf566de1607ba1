"""Fixtures of the reliability tests: the bench load-test module and database URLs by backend.
The browser fixtures (``app_server``, ``browser``, ``page``, ``login``) come from
tests/browser_fixtures.py, shared by every test folder."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def load_bench(name: str) -> ModuleType:
    """Import ``bench/<name>.py`` (bench/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", REPO_ROOT / "bench" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_test() -> ModuleType:
    return load_bench("load_test")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database URL on each backend (PostgreSQL from the shared test server)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'critiquelab.db'}"
    return request.getfixturevalue("pg_url")
