"""Browser-test fixtures: the app served on a temp database, headless Chromium, login, screenshots.

* ``app_server`` (one per test module): a fresh migrated SQLite database and data folder, the app
  served on them by :func:`annotate_app.cli.serve.serve_app` on a free 127.0.0.1 port. Seed it
  with ``app_server.add_user(...)`` or ``with app_server.session() as session: ...`` (the data
  folder is ``$CRITIQUELAB_DATA_DIR`` for the whole module). The server log is saved to
  ``test-artifacts/<module>-server.log``. ``sample_app_server`` is the same on a copy of the
  sample project.
* ``browser`` (one per run): Debian's Chromium driven by Playwright; skips (fails under
  ``CRITIQUELAB_REQUIRE_E2E=1``) when no Chromium is found (:mod:`tests.system_binaries`).
* ``page``: a fresh browser context per test; when a test fails, a screenshot of the whole page
  goes to ``test-artifacts/<module>-<test>-FAILED.png``. ``CRITIQUELAB_SCREENSHOTS=all`` saves
  one after every test (``<module>-<test>.png``), to look at the pages after a UI change; left
  off by default because a full-page screenshot per test cost about a second each.
* ``login``: ``login(page, base_url, name, password)`` logs in through the app's login endpoint
  (:func:`login_by_request`) and waits until the app shows the user as logged in. The form itself
  is driven by :func:`login_in_browser`, in the tests whose subject is logging in.

Mark browser tests with ``pytest.mark.e2e``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from annotate_app.auth import COOKIE_NAME as SESSION_COOKIE
from annotate_app.session_routes import LOGIN_PATH
from data.services.users import UserRecord, create_user
from data.storage.engine import make_engine, session_scope, upgrade_database
from tests.sample_template import SampleTemplate
from tests.servers import wait_until_healthy
from tests.skips import missing
from tests.system_binaries import chromium_missing, chromium_path

REPO_ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO_ROOT / "test-artifacts"
CHROMIUM = chromium_path()
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# Ceilings on waits for a state, not speed tests: a test waits for what the page shows, and fails
# only when it never shows. Two busy cores at load 7 make a Streamlit rerun take tens of seconds,
# and a page that bootstraps calibration minutes; a ceiling that is too short is a flaky test.
UI_TIMEOUT_MS = 60_000
SLOW_UI_TIMEOUT_MS = 300_000
"""For what a page computes first (calibration with bootstrap, a judge audit)."""
SCREENSHOT_EVERY_TEST = os.environ.get("CRITIQUELAB_SCREENSHOTS") == "all"
LoginHelper = Callable[[Any, str, str, str], None]
_FAILED = pytest.StashKey[bool]()


@dataclass
class AppServer:
    """A running app: its URL, its database, and ways to seed it."""

    url: str
    db_url: str
    data_dir: Path
    engine: Engine
    log_path: Path

    def session(self) -> AbstractContextManager[Session]:
        """A session on the app's database that commits when the block succeeds."""
        return session_scope(self.engine)

    def add_user(self, name: str, password: str, role: str) -> UserRecord:
        with self.session() as session:
            return create_user(session, name, password, role)

    def log_tail(self, characters: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-characters:]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


def _serve(
    folder: Path, request: pytest.FixtureRequest, seed: Callable[[Path, Path], None] | None = None
) -> Iterator[AppServer]:
    """The app served on the database ``folder/critiquelab.db`` (``seed(db_file, data_dir)``
    first writes it, when given), migrated, on a free port; stopped afterwards."""
    db_file, data_dir = folder / "critiquelab.db", folder / "data"
    db_url = f"sqlite:///{db_file}"
    if seed is not None:
        seed(db_file, data_dir)
    ARTIFACTS.mkdir(exist_ok=True)
    log_path = ARTIFACTS / f"{request.module.__name__.rsplit('.', 1)[-1]}-server.log"
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("CRITIQUELAB_DATA_DIR", str(data_dir))
        environment.setenv("CRITIQUELAB_DB", db_url)
        engine = make_engine(db_url)
        upgrade_database(engine)
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        script = (
            "import sys; from annotate_app.cli.serve import serve_app; "
            "sys.exit(serve_app(sys.argv[1], host='127.0.0.1', port=int(sys.argv[2])))"
        )
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-c", script, db_url, str(port)],
                stdout=log, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True,
            )  # fmt: skip
        try:
            wait_until_healthy(url, process, log_path)
            yield AppServer(url, db_url, data_dir, engine, log_path)
        finally:
            _stop(process)
            engine.dispose()


@pytest.fixture(scope="module")
def app_server(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[AppServer]:
    """The app served on a fresh database for the tests of one module."""
    yield from _serve(tmp_path_factory.mktemp("app"), request)


@pytest.fixture(scope="module")
def sample_app_server(
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
    sample_template: SampleTemplate,
) -> Iterator[AppServer]:
    """The app served on a copy of the sample project (built once per test session)."""
    yield from _serve(tmp_path_factory.mktemp("app"), request, sample_template.copy_to)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium under Playwright (never a downloaded browser).

    One per test module: Playwright's sync API keeps an event loop running while it is open, which
    would break later tests of other modules that call ``asyncio.run``."""
    if CHROMIUM is None:
        missing(chromium_missing())
    from playwright.sync_api import expect, sync_playwright

    # A rerun keeps the previous unit's widgets on screen until it ends; under CI load that can
    # take longer than Playwright's 5 s default for assertions.
    expect.set_options(timeout=UI_TIMEOUT_MS)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield chromium
        chromium.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[_FAILED] = report.failed


# CSS animations and transitions off in every page the tests open. Chromium renders in software
# here, and the app's spinners, skeletons and fades kept its renderer drawing frames while a test
# waited for the server: the browser tests of test_annotate.py spent 80 s of CPU in the renderer
# with them and 67 s without (121 s → 103 s wall, alone on the 2-core machine). Playwright also
# waits for an element to stop moving before it clicks it. What a test checks (text, roles, values,
# where an element is once drawn) does not depend on how it was animated in.
_NO_ANIMATIONS = """
document.addEventListener("DOMContentLoaded", () => {
  const style = document.createElement("style");
  style.textContent = "*, *::before, *::after { animation: none !important; "
    + "transition: none !important; }";
  document.head.appendChild(style);
});
"""


def app_context(browser: Any, **options: Any) -> Any:
    """A fresh browser context for the app: a 1280×900 viewport, English, reduced motion asked
    for and CSS animations off (:data:`_NO_ANIMATIONS`), the UI ceiling as its default timeout.
    ``options`` go to Playwright's ``new_context`` (they replace these defaults)."""
    settings = {"viewport": {"width": 1280, "height": 900}, "locale": "en-US"}
    context = browser.new_context(**{**settings, "reduced_motion": "reduce", **options})
    context.add_init_script(_NO_ANIMATIONS)
    context.set_default_timeout(UI_TIMEOUT_MS)
    return context


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A page in a fresh browser context (:func:`app_context`); a screenshot saved when the test
    fails (after every test with ``CRITIQUELAB_SCREENSHOTS=all``)."""
    context = app_context(browser)
    new_page = context.new_page()
    try:
        yield new_page
    finally:
        module, _, test = request.node.nodeid.partition("::")
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{Path(module).stem}-{test}")
        failed = request.node.stash.get(_FAILED, False)
        ARTIFACTS.mkdir(exist_ok=True)
        for stale in (f"{name}.png", f"{name}-FAILED.png"):
            (ARTIFACTS / stale).unlink(missing_ok=True)
        try:
            if failed or SCREENSHOT_EVERY_TEST:
                path = ARTIFACTS / f"{name}{'-FAILED' if failed else ''}.png"
                new_page.screenshot(path=str(path), full_page=True)
        finally:
            context.close()


def login_in_browser(page: Any, base_url: str, name: str, password: str) -> None:
    """Log in through the form; wait until the app shows the user as logged in. The server set
    the (HttpOnly) session cookie before the page reloaded logged in, so a reload or
    ``page.goto`` right after stays logged in."""
    from playwright.sync_api import expect

    page.goto(base_url)
    page.get_by_label("User name", exact=True).fill(name)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_text(f"Logged in as {name}")).to_be_visible()
    assert any(c["name"] == SESSION_COOKIE for c in page.context.cookies()), "no session cookie"


def login_by_request(page: Any, base_url: str, name: str, password: str) -> None:
    """Log in as the login form's script does (``POST /session/login`` from the app's origin;
    the context keeps the session cookie the server sets), then open the app and wait until it
    shows the user as logged in.

    One page load instead of the form's two (the login page, then the app after the reload): most
    browser tests log in once or more, and their subject is not the form, which
    ``tests/e2e/test_login.py`` and the attack tests drive through :func:`login_in_browser`."""
    from playwright.sync_api import expect

    response = page.request.post(
        f"{base_url}{LOGIN_PATH}",
        data=json.dumps({"name": name, "password": password}),
        headers={"Origin": base_url, "Content-Type": "application/json"},
    )
    assert response.ok, f"login of {name} refused: {response.status} {response.text()}"
    assert any(c["name"] == SESSION_COOKIE for c in page.context.cookies()), "no session cookie"
    page.goto(base_url)
    expect(page.get_by_text(f"Logged in as {name}")).to_be_visible()


def wait_until(condition: Callable[[], bool], what: str, ceiling_s: float = 120) -> None:
    """Poll ``condition`` until it holds, for a state that no event announces (a row in the
    database, a cookie). ``ceiling_s`` only bounds a wait for something that never happens."""
    deadline = time.monotonic() + ceiling_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never happened (waited {ceiling_s:.0f} s)")
        time.sleep(0.1)


def wait_for_run_to_end(page: Any) -> None:
    """Wait until the app's script run has ended (Streamlit's own ``data-test-script-state``).

    With the slow ceiling: the run may be one that calibrates (the Calibration page computes its
    first campaign's bootstrap before anything can be picked), which took over 60 s at load 18."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stApp")).to_have_attribute(
        "data-test-script-state", "notRunning", timeout=SLOW_UI_TIMEOUT_MS
    )


def drawn_by_this_run(page: Any) -> Any:
    """The elements the app's latest script run has drawn. While a rerun is under way Streamlit
    keeps the previous run's elements on screen, marked ``data-stale``, until the run ends: a
    widget keyed per unit then briefly exists twice, and a plain locator for it sees both."""
    return page.locator('[data-testid="stElementContainer"][data-stale="false"]')


def click_option(page: Any, box: Any, option: str, *, exact: bool = True) -> None:
    """Open the list of the select box ``box``, type ``option`` (the list filters, so an option
    below the fold is reachable) and click it (``exact`` False: the only option whose text holds
    ``option``).

    The list is a react-aria popover, which closes when the page scrolls; the scroll that brings
    the box into view can land just after the list opened. Then the list is opened again, at most
    three times in all: what is typed replaces the text typed before."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    wait_for_run_to_end(page)  # open the list on the page the last run drew, not mid-run
    if exact:
        choice = page.get_by_role("option", name=option, exact=True)
    else:
        choice = page.get_by_role("option").filter(has_text=option)
    for attempt in range(3):
        box.click()
        page.keyboard.press("ControlOrMeta+A")
        page.keyboard.type(option)
        try:
            choice.click(timeout=10_000)
            return
        except PlaywrightTimeout:
            if attempt == 2:
                raise


def choose_option(page: Any, label: str, option: str) -> None:
    """Choose ``option`` in the single-choice select box named ``label``, and check that the box
    shows it with its list closed (while the list is open the box shows the typed text)."""
    from playwright.sync_api import expect

    box = page.get_by_role("combobox", name=label)
    click_option(page, box, option)
    expect(page.get_by_role("option")).to_have_count(0)
    expect(box).to_have_value(option)


@pytest.fixture
def login() -> LoginHelper:
    """``login(page, base_url, name, password)``: log in through the login endpoint."""
    return login_by_request
