"""Login spam against annotators' writes: what wrong-password tries cost everyone else.

One thread stands for an annotator saving drafts: a one-row write transaction (an audit event,
the size of a draft save) every 20 ms, timed end to end. Meanwhile N attacker threads try wrong
passwords as fast as they can, each try from a new address for a new name, so that no limit
refuses them and every try pays the full argon2 hash (the worst case for this measurement).
Three runs of ``--seconds`` each on one SQLite file, as one app process serves them (threads):

* ``quiet``: no attackers (the floor);
* ``hash_outside``: attackers call ``data.services.auth.login``, which hashes between two short
  transactions;
* ``hash_inside`` (the baseline: how login worked before): each try hashes inside a
  ``session_scope``, which on SQLite holds the process's write turn.

Prints one JSON object: p50 / p95 / max of the write in ms per run, and the attackers' tries.

    python bench/login_spam.py --attackers 4 --seconds 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from sqlalchemy.engine import Engine

from data.services.auth import login
from data.services.users import create_user, password_matches
from data.storage.audit import record_event
from data.storage.engine import make_engine, session_scope, upgrade_database


def _writer(engine: Engine, stop: threading.Event, timings: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        with session_scope(engine) as session:
            record_event(session, actor_id=None, action="draft.save", entity="bench", entity_id=1)
        timings.append((time.perf_counter() - started) * 1000)
        time.sleep(0.02)


def _attacker(
    engine: Engine, index: int, mode: str, stop: threading.Event, tries: list[int]
) -> None:
    count = 0
    while not stop.is_set():
        if mode == "hash_outside":
            # a new name and address per try keep every limit away: each try is hashed
            client = f"10.{index}.{count // 250 % 250}.{count % 250}"
            login(engine, f"victim{index}-{count}", "wrong password", client=client)
        else:
            with session_scope(engine) as session:
                stored = (
                    session.connection()
                    .exec_driver_sql(
                        "SELECT password_hash FROM user_account WHERE name = ?", (f"victim{index}",)
                    )
                    .scalar_one()
                )
                password_matches(stored, "wrong password")
        count += 1
    tries.append(count)


def _run(engine: Engine, mode: str, attackers: int, seconds: float) -> dict[str, float]:
    stop = threading.Event()
    timings: list[float] = []
    tries: list[int] = []
    threads = [threading.Thread(target=_writer, args=(engine, stop, timings))]
    if mode != "quiet":
        threads += [
            threading.Thread(target=_attacker, args=(engine, i, mode, stop, tries))
            for i in range(attackers)
        ]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    ordered = sorted(timings)
    return {
        "writes": len(ordered),
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
        "max_ms": round(ordered[-1], 2),
        "login_tries": sum(tries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attackers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        engine = make_engine(f"sqlite:///{Path(folder) / 'spam.db'}")
        upgrade_database(engine)
        with session_scope(engine) as session:
            for index in range(arguments.attackers):
                create_user(session, f"victim{index}", "the right password", "annotator")
        results = {
            mode: _run(engine, mode, arguments.attackers, arguments.seconds)
            for mode in ("quiet", "hash_outside", "hash_inside")
        }
        engine.dispose()
    print(json.dumps({"attackers": arguments.attackers, "seconds": arguments.seconds,
                      "load_average": os.getloadavg(), **results}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
