"""Fixtures of the reliability tests: the bench load-test module, database URLs by backend, and
the browser fixtures of tests/e2e (``app_server``, ``browser``, ``page``, ``login``)."""

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


def _e2e_fixtures() -> ModuleType:
    """The browser fixtures of tests/e2e (APP's conftest), loaded by path: tests/ is no package."""
    path = REPO_ROOT / "tests" / "e2e" / "conftest.py"
    spec = importlib.util.spec_from_file_location("e2e_fixtures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_E2E = _e2e_fixtures()
app_server = _E2E.app_server
browser = _E2E.browser
page = _E2E.page
login = _E2E.login
