"""The bundled sample project built once per test process and copied for each test that reads it.

Building it takes seconds (datasets, images, campaigns, synthetic labels and judges); a copy of the
SQLite file and its image store takes milliseconds. Tests of the build itself
(``tests/data/test_sample_build.py``) still build it from scratch.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from data.sample.build import SampleSummary, build_sample_project
from data.storage.engine import make_engine, upgrade_database


@dataclass(frozen=True)
class SampleTemplate:
    """A built sample project: its SQLite file, its image store and the build's summary."""

    db_file: Path
    data_dir: Path
    summary: SampleSummary

    def copy_to(self, db_file: Path, data_dir: Path) -> None:
        """Write a copy of the database to ``db_file`` (SQLite's online backup: consistent even
        with a write-ahead log beside the file) and of the image store to ``data_dir``."""
        with (
            contextlib.closing(sqlite3.connect(self.db_file)) as source,
            contextlib.closing(sqlite3.connect(db_file)) as target,
        ):
            source.backup(target)
        shutil.copytree(self.data_dir, data_dir, dirs_exist_ok=True)


@pytest.fixture(scope="session")
def sample_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SampleTemplate]:
    """The sample project, built once per test process (each pytest-xdist worker builds its own)."""
    folder = tmp_path_factory.mktemp("sample-template")
    engine = make_engine(f"sqlite:///{folder / 'sample.db'}")
    upgrade_database(engine)
    summary = build_sample_project(engine, data_dir=folder / "data")
    engine.dispose()
    yield SampleTemplate(folder / "sample.db", folder / "data", summary)
