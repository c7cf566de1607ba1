"""The tests and benchmarks find PostgreSQL and Chromium without assuming install locations."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import system_binaries
from tests.system_binaries import chromium_missing, chromium_path, postgres_bindir


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def test_postgres_bindir_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _executable(tmp_path / "initdb")
    _executable(tmp_path / "pg_ctl")
    monkeypatch.setenv(system_binaries.POSTGRES_BINDIR_ENV, str(tmp_path))
    assert postgres_bindir() == tmp_path


def test_postgres_bindir_named_but_without_a_server_is_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _executable(tmp_path / "initdb")  # no pg_ctl beside it
    monkeypatch.setenv(system_binaries.POSTGRES_BINDIR_ENV, str(tmp_path))
    assert postgres_bindir() is None


def test_postgres_bindir_from_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _executable(tmp_path / "initdb")
    _executable(tmp_path / "pg_ctl")
    monkeypatch.delenv(system_binaries.POSTGRES_BINDIR_ENV, raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert postgres_bindir() == tmp_path


def test_chromium_from_the_environment_or_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = _executable(tmp_path / "chromium")
    monkeypatch.setenv(system_binaries.CHROMIUM_ENV, str(browser))
    assert chromium_path() == browser
    monkeypatch.delenv(system_binaries.CHROMIUM_ENV)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert chromium_path() == browser
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert chromium_path() is None
    assert "set $CRITIQUELAB_CHROMIUM" in chromium_missing()
