"""The core install has no torch: the annotation commands work without it and the critic commands
say how to get the critic extra."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test starts processes (or trains models)

# Runs the CLI in a fresh interpreter in which the critic extra's modules cannot be imported,
# as in an install of the core package alone: each command given (a JSON list of argument
# lists) in turn, as the console script runs it, stopping at the first that fails.
_WITHOUT_CRITIC_EXTRA = textwrap.dedent(
    """
    import json
    import sys

    EXTRA = {"torch", "transformers", "tokenizers", "peft", "accelerate", "gguf"}

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in EXTRA:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
    from annotate_app.cli.main import app
    for argv in json.loads(sys.argv[1]):
        try:
            app(argv, prog_name="critiquelab")
        except SystemExit as done:
            if done.code:
                raise
    """
)


def _cli(*commands: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``commands`` run in one interpreter (one import of the CLI, not one per command)."""
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_CRITIC_EXTRA, json.dumps(commands)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[3]), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize(
    ("command", "module"),
    [
        (["critic", "train", "--data", "x.jsonl", "--base-model", "m", "-o", "out"], "torch"),
        (["critic", "convert-gguf", "model.gguf", "-o", "out"], "transformers"),
    ],
)
def test_critic_commands_name_the_extra_when_it_is_missing(
    tmp_path: Path, command: list[str], module: str
) -> None:
    for name in ("x.jsonl", "model.gguf"):
        (tmp_path / name).write_text("{}\n", encoding="utf-8")
    result = _cli(["--db", f"sqlite:///{tmp_path / 'c.db'}", *command], cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"error: this command needs {module}, which comes with the")
    assert "pip install torch==2.13.0 -e '.[critic]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_annotation_commands_run_without_the_critic_extra(tmp_path: Path) -> None:
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(
        '{"item_id": "i1", "question": "Q?", "responses": [{"response_id": "r1", '
        '"model": "m", "content": "A."}]}\n',
        encoding="utf-8",
    )
    db = f"sqlite:///{tmp_path / 'c.db'}"
    done = _cli(
        ["--db", db, "--quiet", "import", "jsonl", str(dataset)],
        ["--db", db, "campaign", "create", "c1", "--dataset", "d", "--protocol", "alignmmbench"],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "created campaign 'c1': 1 units" in done.stdout, done.stdout
