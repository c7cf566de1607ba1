"""Start-up time of the ``critiquelab`` command: whole processes, against ``python -c pass``.

Each case is one new interpreter running the command as the console script does (``from
annotate_app.cli.main import run; run()``), timed from start to exit: ``--help``, a few
subcommands' ``--help``, ``import jsonl`` of a 10-item file into an up-to-date SQLite database
(and into a new one, which creates the schema), and ``users list``. The baseline is ``python -c
pass`` in the same run; the cases take turns, so that a change of load falls on all of them.

Run: ``.venv/bin/python bench/cli_start.py [--repeats 10] [--repo DIR] [--out FILE]`` (``--repo``:
time another checkout of CritiqueLab, e.g. a ``git worktree`` of an older commit, with this
interpreter). Prints one JSON object (and writes it to ``--out``): seconds per case, median and
p90, each median less the baseline's, the targets of issue 26 and the load average before and
after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUN_CLI = "import sys; from annotate_app.cli.main import run; sys.argv[0] = 'critiquelab'; run()"
TARGETS_S = {"--help": 0.3, "import jsonl": 1.0, "users list": 0.8}
"""Issue 26: seconds a case may take beyond the baseline (a subcommand's help as ``--help``)."""
HELP_COMMANDS = (
    ("import", "jsonl"),
    ("users", "list"),
    ("campaign", "create"),
    ("calibrate",),
    ("export", "annotations"),
    ("critic", "score"),
    ("critic", "train"),
)


def _dataset(path: Path, items: int) -> Path:
    """A §1 dataset file: ``items`` text-only items, two responses and one pair each."""
    with path.open("w", encoding="utf-8") as handle:
        for n in range(items):
            record = {
                "item_id": f"item-{n}",
                "benchmark": "alignmmbench",
                "task": "Description",
                "question": f"What is in picture {n}?",
                "reference": "a cat",
                "responses": [
                    {"response_id": f"item-{n}/m{m}", "model": f"m{m}", "content": f"answer {m}"}
                    for m in range(2)
                ],
                "pairs": [[f"item-{n}/m0", f"item-{n}/m1"]],
            }
            handle.write(json.dumps(record) + "\n")
    return path


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[3:]) or argv}: exit {done.returncode}\n{done.stderr}")
    return seconds


def _summary(seconds: list[float], baseline: float) -> dict[str, float]:
    median = statistics.median(seconds)
    p90 = statistics.quantiles(seconds, n=10, method="inclusive")[-1]
    return {
        "median_s": round(median, 3),
        "p90_s": round(p90, 3),
        "median_over_baseline_s": round(median - baseline, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="processes per case")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to time")
    parser.add_argument("--items", type=int, default=10, help="items of the imported file")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    repo = args.repo.resolve()
    env = {**os.environ, "PYTHONPATH": str(repo)}
    env.pop("CRITIQUELAB_DB", None)
    cli = [sys.executable, "-c", RUN_CLI]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env["CRITIQUELAB_DATA_DIR"] = str(folder / "files")
        found = subprocess.run(
            [sys.executable, "-c", "import annotate_app; print(annotate_app.__file__)"],
            env=env, cwd=folder, capture_output=True, text=True, check=True,
        )  # fmt: skip
        if not Path(found.stdout.strip()).is_relative_to(repo):
            sys.exit(f"annotate_app comes from {found.stdout.strip()}, not from {repo}")
        dataset = _dataset(folder / "ten.jsonl", args.items)
        empty = folder / "empty.db"  # schema at the newest revision, no rows
        _run([*cli, "--db", f"sqlite:///{empty}", "users", "list"], env, folder)
        users_db = f"sqlite:///{folder / 'users.db'}"
        shutil.copy(empty, folder / "users.db")
        target = folder / "import.db"
        cases: dict[str, tuple[list[str], Path | None]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], None),
            "critiquelab --help": ([*cli, "--help"], None),
            **{
                f"critiquelab {' '.join(path)} --help": ([*cli, *path, "--help"], None)
                for path in HELP_COMMANDS
            },
            "critiquelab import jsonl (10 items, up-to-date database)": (
                [*cli, "--db", f"sqlite:///{target}", "--quiet", "import", "jsonl", str(dataset)],
                empty,
            ),
            "critiquelab import jsonl (10 items, new database)": (
                [*cli, "--db", f"sqlite:///{target}", "--quiet", "import", "jsonl", str(dataset)],
                folder / "absent.db",
            ),
            "critiquelab users list": ([*cli, "--db", users_db, "users", "list"], None),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        load_before = os.getloadavg()
        for _ in range(args.repeats):
            for name, (argv, start_from) in cases.items():
                if start_from is not None:  # untimed: the database the import starts from
                    target.unlink(missing_ok=True)
                    for suffix in ("-wal", "-shm"):
                        Path(f"{target}{suffix}").unlink(missing_ok=True)
                    shutil.rmtree(folder / "files", ignore_errors=True)
                    if start_from.exists():
                        shutil.copy(start_from, target)
                times[name].append(_run(argv, env, folder))
        load_after = os.getloadavg()
    baseline = statistics.median(times["python -c pass"])
    results = {name: _summary(seconds, baseline) for name, seconds in times.items()}
    help_over = max(v["median_over_baseline_s"] for k, v in results.items() if "--help" in k)
    import_over = results["critiquelab import jsonl (10 items, up-to-date database)"]
    within = {
        "--help": help_over <= TARGETS_S["--help"],
        "import jsonl": import_over["median_over_baseline_s"] <= TARGETS_S["import jsonl"],
        "users list": results["critiquelab users list"]["median_over_baseline_s"]
        <= TARGETS_S["users list"],
    }
    output = {
        "benchmark": "critiquelab start-up: whole processes against python -c pass, same run",
        "repo": str(repo),
        "commit": _commit(repo),
        "python": sys.version.split()[0],
        "repeats": args.repeats,
        "cases": results,
        "raw_seconds": {name: [round(s, 3) for s in seconds] for name, seconds in times.items()},
        "targets_over_baseline_s": TARGETS_S,
        "within_targets": within,
        "load_average_before_after": [load_before, load_after],
    }
    text = json.dumps(output, indent=2)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


def _commit(repo: Path) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(repo), "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    return done.stdout.strip() or None


if __name__ == "__main__":
    main()
