"""The real Streamlit server SIGKILLed while an annotator works in the browser: after a restart
on the same database every submit the page acknowledged (it moved to the next unit) is stored,
and the draft the annotator was typing comes back in the text box."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sqlmodel import select

from annotate_app.cli.serve import streamlit_command
from data.services.users import create_user
from data.storage.engine import make_engine, session_scope, upgrade_database
from schemas.tables import Annotation, Assignment, Draft
from tests.browser_fixtures import UI_TIMEOUT_MS, wait_until, wait_until_healthy
from tests.pg_cluster import free_port

pytestmark = pytest.mark.e2e
PASSWORD = "correct horse battery"
RATIONALE = "The count in the answer matches the picture exactly."
DRAFT = "half a thought typed before the crash"


class Server:
    """``streamlit run`` of the app, started and SIGKILLed at will, always on the same port."""

    def __init__(self, db_url: str, folder: Path, port: int) -> None:
        self.db_url, self.folder, self.port = db_url, folder, port
        self.url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        environment = {**os.environ, "CRITIQUELAB_DB": self.db_url,
                       "CRITIQUELAB_DATA_DIR": str(self.folder / "data")}  # fmt: skip
        log_path = self.folder / "server.log"
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                streamlit_command("127.0.0.1", self.port), env=environment, cwd=self.folder,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        wait_until_healthy(self.url, self.process, log_path)

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


@pytest.fixture
def server(tmp_path: Path, load_test: ModuleType) -> Iterator[tuple[Server, Any]]:
    db_url = f"sqlite:///{tmp_path / 'critiquelab.db'}"
    engine = make_engine(db_url)
    upgrade_database(engine)
    load_test.seed_campaign(engine, units=30, annotators=0, overlap=1)
    with session_scope(engine) as session:
        create_user(session, "kim", PASSWORD, "annotator")
    running = Server(db_url, tmp_path, free_port())
    running.start()
    yield running, engine
    if running.process and running.process.poll() is None:
        running.kill()
    engine.dispose()


def _unit(page: Any) -> int:
    from playwright.sync_api import expect

    expect(page.locator(".cl-answer")).to_have_count(1)
    return int(page.locator(".cl-answer").get_attribute("data-unit"))


def test_sigkill_of_the_streamlit_server_loses_nothing(
    server: tuple[Server, Any], page: Any, login: Any
) -> None:
    from playwright.sync_api import expect

    running, engine = server
    login(page, running.url, "kim", PASSWORD)  # and the session cookie is set
    page.goto(f"{running.url}/annotate?campaign=load")
    acknowledged = []
    for n in range(3):
        lease = _unit(page)
        page.locator("body").press(str(n + 4))
        page.keyboard.type(f"{RATIONALE} ({n})")
        page.keyboard.press("Control+Enter")
        expect(page.locator(f'.cl-answer[data-unit="{lease}"]')).to_have_count(0)
        acknowledged.append((lease, float(n + 4), f"{RATIONALE} ({n})"))
    drafting = _unit(page)
    page.locator("body").press("7")
    page.keyboard.type(DRAFT)

    def draft_stored() -> bool:  # the page saves drafts as one types
        with session_scope(engine) as session:
            draft = session.exec(select(Draft)).first()
        return draft is not None and draft.rationale == DRAFT

    wait_until(draft_stored, "the draft's save")

    running.kill()
    running.start()

    with session_scope(engine) as session:
        stored = {
            (a.assignment_id, a.score, a.rationale)
            for a in session.exec(select(Annotation).where(Annotation.is_live))
        }
        assert session.get(Assignment, drafting).status == "leased"
    assert set(acknowledged) <= stored, f"lost: {set(acknowledged) - stored}"
    page.reload()
    expect(page.get_by_test_id("cl-rationale")).to_have_value(DRAFT, timeout=UI_TIMEOUT_MS)
    assert _unit(page) == drafting
    expect(page.get_by_test_id("cl-choice-7")).to_have_attribute("aria-checked", "true")
