"""The ``critiquelab`` command starts at once (issue 26): importing it, and ``--help`` anywhere in
the command tree, load none of the heavy libraries; each command imports what it calls when it
runs. The time itself is measured by ``bench/cli_start.py``, not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test starts a fresh interpreter (its modules are the point)

REPO = Path(__file__).resolve().parents[3]
HEAVY = (
    "alembic",
    "altair",
    "calibration",
    "numpy",
    "pandas",
    "PIL",
    "pyarrow",
    "scipy",
    "sklearn",
    "sqlalchemy",
    "sqlmodel",
    "streamlit",
    "torch",
    "transformers",
)
"""Top-level modules that ``import annotate_app.cli.main`` and every ``--help`` must leave
unloaded: data frames, statistics, models, migrations and the database layer."""

_WALK_HELP = textwrap.dedent(
    """
    import json, sys

    import typer
    from typer.testing import CliRunner

    from annotate_app.cli.main import app

    HEAVY = set(sys.argv[1:])
    on_import = sorted({name.partition(".")[0] for name in sys.modules} & HEAVY)

    def paths(command, path=()):
        found = [path]
        for name, sub in getattr(command, "commands", {}).items():
            found += paths(sub, (*path, name))
        return found

    runner = CliRunner()
    failures, seen = [], []
    for path in paths(typer.main.get_command(app)):
        result = runner.invoke(app, [*path, "--help"])
        seen.append(" ".join(path))
        if result.exit_code != 0 or "Usage:" not in result.output:
            failures.append([" ".join(path), result.exit_code, result.output[-300:]])
    version = runner.invoke(app, ["--version"])
    if version.exit_code != 0:
        failures.append(["--version", version.exit_code, version.output])
    loaded = sorted({name.partition(".")[0] for name in sys.modules} & HEAVY)
    print(json.dumps({"commands": seen, "failures": failures, "loaded": loaded,
                      "on_import": on_import}))
    """
)


def _python(code: str, *args: str, cwd: Path) -> str:
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    environment.pop("CRITIQUELAB_DB", None)
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env=environment,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_importing_the_command_and_every_help_load_no_heavy_library_nor_the_database(
    tmp_path: Path,
) -> None:
    """One fresh interpreter: the import checked first, then every ``--help``."""
    report = json.loads(_python(_WALK_HELP, *HEAVY, cwd=tmp_path))
    assert report["on_import"] == []
    assert report["failures"] == []
    assert {"", "import jsonl", "users list", "calibrate", "critic score", "export sft",
            "campaign create", "judge run", "serve", "demo"} <= set(report["commands"])  # fmt: skip
    assert report["loaded"] == []
    assert list(tmp_path.iterdir()) == [], "--help created files (a database?)"
