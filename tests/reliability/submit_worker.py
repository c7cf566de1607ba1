"""A stand-in app server for the SIGKILL test: annotators submitting through ``data.queue``.

    python submit_worker.py DB_URL CAMPAIGN_ID ANNOTATOR_ID[,ANNOTATOR_ID...] TYPIST_ID

One thread per annotator opens a unit, saves a draft, submits; a last "typist" thread keeps
saving a growing draft on its unit and never submits. Each line on stdout is printed only after
its transaction committed: ``ACK {...}`` is what the user saw confirmed, ``DRAFT {...}`` a draft
the page reported saved. The test kills this process with SIGKILL and checks the database.
"""

from __future__ import annotations

import json
import sys
import threading

from data import queue
from data.storage.engine import make_engine, session_scope

_print_lock = threading.Lock()


def _say(kind: str, **fields: object) -> None:
    with _print_lock:
        sys.stdout.write(f"{kind} {json.dumps(fields)}\n")
        sys.stdout.flush()


def submitter(engine, campaign_id: int, annotator_id: int) -> None:  # type: ignore[no-untyped-def]
    n = 0
    while True:
        n += 1
        with session_scope(engine) as session:
            view = queue.next_unit(session, campaign_id, annotator_id)
        if view is None:
            return
        text = f"annotator {annotator_id} unit {view.unit_id}: the count is right ({n})"
        with session_scope(engine) as session:
            queue.save_draft(session, view.assignment_id, annotator_id, score=5.0, rationale=text)
        _say("DRAFT", annotator=annotator_id, unit=view.unit_id, rationale=text)
        score = float(n % 10 + 1)
        with session_scope(engine) as session:
            queue.submit(session, view.assignment_id, annotator_id, score=score, rationale=text)
        _say("ACK", annotator=annotator_id, unit=view.unit_id, score=score, rationale=text)


def typist(engine, campaign_id: int, annotator_id: int) -> None:  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        view = queue.next_unit(session, campaign_id, annotator_id)
    assert view is not None
    words = []
    while True:
        words.append(f"w{len(words)}")
        text = " ".join(words)
        with session_scope(engine) as session:
            queue.save_draft(session, view.assignment_id, annotator_id, score=3.0, rationale=text)
        _say("TYPED", annotator=annotator_id, unit=view.unit_id, words=len(words), rationale=text)


def main() -> None:
    db_url, campaign_id, annotators, typist_id = sys.argv[1:5]
    engine = make_engine(db_url)
    threads = [
        threading.Thread(target=submitter, args=(engine, int(campaign_id), int(a)), daemon=True)
        for a in annotators.split(",")
    ]
    threads.append(
        threading.Thread(
            target=typist, args=(engine, int(campaign_id), int(typist_id)), daemon=True
        )
    )
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
