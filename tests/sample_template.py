"""The bundled sample project built once per test session and copied for each test that reads it.

Building it takes seconds (datasets, images, campaigns, synthetic labels and judges); a copy of the
SQLite file and its image store takes milliseconds. Under pytest-xdist the first worker to need it
builds it, under a file lock, into the folder the workers share; the others wait and read it.
Tests of the build itself (``tests/data/test_sample_build.py``, ``test_sample_cli.py``,
``tests/annotate_app/test_sample_tags.py``) still build it, or the part they check, themselves.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

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
def sample_template(tmp_path_factory: pytest.TempPathFactory) -> SampleTemplate:
    """The sample project, built once per test session (shared by the pytest-xdist workers)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / "sample-template"
    summary_file = folder / "summary.pickle"
    with FileLock(shared / "sample-template.lock"):
        if not summary_file.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed half-way
            folder.mkdir()
            engine = make_engine(f"sqlite:///{folder / 'sample.db'}")
            upgrade_database(engine)
            summary = build_sample_project(engine, data_dir=folder / "data")
            engine.dispose()  # the last connection to close folds the WAL into the file
            summary_file.write_bytes(pickle.dumps(summary))  # written last: the build is whole
    summary = pickle.loads(summary_file.read_bytes())
    return SampleTemplate(folder / "sample.db", folder / "data", summary)
