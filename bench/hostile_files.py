"""What the file options cost when handed something that is not a small regular file (issue 25 A3).

Before the one reader's rules applied to every file the project reads, ``calibrate --prices
/dev/zero`` and ``--families /dev/zero`` ended in a MemoryError, ``--families FIFO`` hung, and
``campaign create --instructions`` did both. Each case here runs the installed ``critiquelab``
command as a user would, on an empty migrated SQLite database, against a device (``/dev/zero``),
a named pipe nobody writes to, and a regular file one byte over the small-file limit
(:data:`data.io.importers.sources.MAX_SMALL_FILE_BYTES`), and records its exit status, wall
seconds, peak resident memory (``wait4``) and the first line it printed on stderr. A case that
has not ended after ``--ceiling`` seconds is killed and recorded as hung. A bare
``critiquelab --help`` in the same run is the baseline for the time and memory of starting the
command at all. The load average is recorded before and after.

Run: ``.venv/bin/python bench/hostile_files.py [--out FILE.json]`` (prints JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from data.io.importers.sources import MAX_SMALL_FILE_BYTES
from data.storage.engine import make_engine, upgrade_database

COMMAND = Path(sys.executable).with_name("critiquelab")
AUDIT = ["calibrate", "--campaign", "c", "--bootstrap", "0"]
CREATE = ["campaign", "create", "c", "--dataset", "d", "--protocol", "score", "--scale", "1:5"]
OPTIONS = {
    "calibrate --prices": [*AUDIT, "--prices"],
    "calibrate --families": [*AUDIT, "--families"],
    "campaign create --instructions": [*CREATE, "--instructions"],
}


def _run(argv: list[str], db_url: str, ceiling: float) -> dict[str, object]:
    """One ``critiquelab`` process: exit status, wall seconds, peak resident memory (``wait4``),
    the first line of its stderr; killed (``hung``) after ``ceiling`` seconds."""
    with tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(
            [str(COMMAND), "--db", db_url, *argv],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
        hung = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > ceiling:
                os.killpg(process.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(process.pid, 0)
                hung = True
                break
            time.sleep(0.02)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        stderr.seek(0)
        lines = stderr.read().decode(errors="replace").strip().splitlines()
    return {
        "exit_code": None if hung else process.returncode,
        "hung": hung,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: kilobytes
        "message": lines[0][:200] if lines else "",
    }


def main(ceiling: float) -> dict[str, object]:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="critiquelab-hostile-") as folder:
        root = Path(folder)
        os.environ["CRITIQUELAB_DATA_DIR"] = str(root / "data")
        db_url = f"sqlite:///{root / 'bench.db'}"
        engine = make_engine(db_url)
        upgrade_database(engine)
        engine.dispose()
        fifo = root / "pipe.json"
        os.mkfifo(fifo)
        oversized = root / "big.json"
        oversized.write_bytes(b" " * (MAX_SMALL_FILE_BYTES + 1))
        files = {"/dev/zero": "/dev/zero", "named pipe": str(fifo)}
        files["limit + 1 byte"] = str(oversized)
        baseline = _run(["--help"], db_url, ceiling)
        cases = []
        for option, argv in OPTIONS.items():
            for kind, path in files.items():
                result = _run([*argv, path], db_url, ceiling)
                cases.append({"option": option, "file": kind, **result})
    return {
        "command": str(COMMAND.name),
        "small_file_limit_bytes": MAX_SMALL_FILE_BYTES,
        "ceiling_s": ceiling,
        "baseline_help": baseline,
        "cases": cases,
        "cpus": os.cpu_count(),
        "load_average_before_after": [load_before, os.getloadavg()],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ceiling", type=float, default=60.0, help="seconds before a kill")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    arguments = parser.parse_args()
    text = json.dumps(main(arguments.ceiling), indent=2)
    print(text)
    if arguments.out:
        arguments.out.write_text(text + "\n", encoding="utf-8")
