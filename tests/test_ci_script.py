"""`.ci/run` runs README's test command, split only where it waits for Debian's packages."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("**Install and run every test**", 1)[1]
    return re.search(r"```bash\n(.+?)\n```", section, re.DOTALL).group(1).strip()  # type: ignore[union-attr]


def test_the_ci_script_runs_the_readme_test_command_in_two_parts() -> None:
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    install = [line for line in lines if line.startswith("python3 -m venv .venv")]
    tests = [line for line in lines if line.startswith(".venv/bin/pytest")]
    assert len(install) == 1 and len(tests) == 1, "one install line and one test line"
    assert install[0] + " && " + tests[0] == _readme_test_command()
    # the tests run after the wait for apt, the install before it
    wait = next(i for i, line in enumerate(lines) if "wait" in line and "apt_pid" in line)
    assert lines.index(install[0]) < wait < lines.index(tests[0])
