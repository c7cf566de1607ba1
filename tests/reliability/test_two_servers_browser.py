"""Two real ``critiquelab serve`` processes on one PostgreSQL database, as behind a reverse
proxy: an annotator on each, working on the same campaign at the same time in Chromium. Every
answer the pages acknowledged (they moved to the next unit) is stored once, no unit gets more
answers than its overlap, and nobody is given a unit twice."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sqlmodel import select

from data.services.users import create_user
from data.storage.engine import make_engine, session_scope, upgrade_database
from schemas.tables import Annotation, Assignment
from tests.browser_fixtures import app_context, wait_until_healthy
from tests.pg_cluster import free_port

pytestmark = pytest.mark.e2e
PASSWORD = "correct horse battery"
ANSWERS_EACH = 4


def _serve(db_url: str, folder: Path, port: int) -> subprocess.Popen[bytes]:
    """``critiquelab --db URL serve --port P`` (the installed command, as an operator runs it)."""
    command = shutil.which("critiquelab") or str(Path(sys.executable).parent / "critiquelab")
    environment = {**os.environ, "CRITIQUELAB_DATA_DIR": str(folder / "data")}
    log_path = folder / f"serve-{port}.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [command, "--db", db_url, "serve", "--port", str(port)], env=environment,
            cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    wait_until_healthy(f"http://127.0.0.1:{port}", process, log_path)
    return process


@pytest.fixture
def two_servers(
    tmp_path: Path, pg_url: str, load_test: ModuleType
) -> Iterator[tuple[list[str], Any]]:
    engine = make_engine(pg_url)
    upgrade_database(engine)
    load_test.seed_campaign(engine, units=12, annotators=0, overlap=2)
    with session_scope(engine) as session:
        for name in ("kim", "lee"):
            create_user(session, name, PASSWORD, "annotator")
    ports = [free_port(), free_port()]
    processes = [_serve(pg_url, tmp_path, port) for port in ports]
    try:
        yield [f"http://127.0.0.1:{port}" for port in ports], engine
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
        engine.dispose()


def _unit(page: Any) -> int:
    from playwright.sync_api import expect

    expect(page.locator(".cl-answer")).to_have_count(1)
    return int(page.locator(".cl-answer").get_attribute("data-unit"))


def _answer(page: Any, n: int, rationale: str) -> int:
    """Score and submit the unit on the page; return its lease once the page has moved on."""
    from playwright.sync_api import expect

    lease = _unit(page)
    page.locator("body").press(str(n % 9 + 1))
    page.keyboard.type(rationale)
    page.keyboard.press("Control+Enter")
    expect(page.locator(f'.cl-answer[data-unit="{lease}"]')).to_have_count(0)
    return lease


def test_two_serve_processes_on_one_postgres_database(
    two_servers: tuple[list[str], Any], browser: Any, page: Any, login: Any
) -> None:
    (url_a, url_b), engine = two_servers
    context_b = app_context(browser)
    page_b = context_b.new_page()
    try:
        login(page, url_a, "kim", PASSWORD)
        login(page_b, url_b, "lee", PASSWORD)
        page.goto(f"{url_a}/annotate?campaign=load")
        page_b.goto(f"{url_b}/annotate?campaign=load")
        acknowledged = []
        for n in range(ANSWERS_EACH):  # alternate, so both servers write while the other holds
            for annotator, on_page in (("kim", page), ("lee", page_b)):
                text = f"{annotator} answer {n}: the count matches the picture."
                acknowledged.append((_answer(on_page, n, text), text))
    finally:
        context_b.close()

    with session_scope(engine) as session:
        live = session.exec(select(Annotation).where(Annotation.is_live)).all()
        assignments = session.exec(select(Assignment)).all()
        stored = {(a.assignment_id, a.rationale) for a in live}
        per_pair = Counter((a.unit_id, a.annotator_id) for a in live)
        per_unit = Counter(a.unit_id for a in live)
        given = Counter((a.unit_id, a.annotator_id) for a in assignments)
    assert set(acknowledged) <= stored, f"lost: {set(acknowledged) - stored}"
    assert len(live) == 2 * ANSWERS_EACH
    assert max(per_pair.values()) == 1, "an annotator's answer stored twice"
    assert max(per_unit.values()) <= 2, "a unit got more answers than its overlap"
    assert max(given.values()) == 1, "a unit given twice to one annotator"
