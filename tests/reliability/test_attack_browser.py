"""Attack through a real browser: script and HTML payloads in every free-text field render inert,
logout ends the session, and the running server is locked down (XSRF, CORS, loopback, upload
limit). Headless Chromium against the app served by ``critiquelab serve``'s own code path."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from hostile_world import PASSWORD, PAYLOADS, HostileWorld, build_hostile_world

from annotate_app.navigation import PAGES, PageSpec
from tests.browser_fixtures import app_context, wait_for_run_to_end

pytestmark = pytest.mark.e2e
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
MARKER = "window.__pwned='script'"  # the first payload, shown as text where it is rendered


@pytest.fixture(scope="module")
def hostile(app_server: Any) -> HostileWorld:
    return build_hostile_world(app_server.engine)


class Watch:
    """Everything a payload could do that we can observe from outside the page."""

    def __init__(self, page: Any) -> None:
        self.page, self.dialogs, self.outside = page, [], []
        page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("request", self._request)

    def _request(self, request: Any) -> None:
        url = urlparse(request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.hostname not in LOCAL_HOSTS:
            self.outside.append(request.url)

    def assert_inert(self, where: str) -> None:
        page = self.page
        _settle(page)  # late handlers (onerror, onload) have fired if they would
        assert page.evaluate("window.__pwned") is None, f"{where}: a payload ran"
        assert self.dialogs == [], f"{where}: dialogs {self.dialogs}"
        from_payloads = [url for url in self.outside if "evil.example" in url]
        assert from_payloads == [], f"{where}: a payload made requests {from_payloads}"
        assert page.locator('a[href^="javascript:" i]').count() == 0, f"{where}: javascript: link"
        assert page.locator("[onerror], [onload], iframe[src^='javascript' i]").count() == 0, where
        scripts = page.evaluate("[...document.scripts].map((s) => s.textContent).join(' ')")
        assert "__pwned" not in scripts, f"{where}: a payload script element is in the page"
        hidden = page.evaluate("getComputedStyle(document.body).display === 'none'")
        assert not hidden and page.locator('[data-testid="stApp"]').is_visible(), where


def _settle(page: Any) -> None:
    """Wait until the document and every image in it finished loading (or failing), then two
    frames: by then an image's onerror / onload handler has run if it was going to."""
    page.wait_for_function(
        "document.readyState === 'complete' && [...document.images].every((i) => i.complete)"
    )
    page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")


def _open(page: Any, url: str, file: str) -> None:
    page.goto(f"{url}/{Path(file).stem}")
    page.locator('[data-testid="stApp"]').wait_for()
    wait_for_run_to_end(page)


def _visit(page: Any, spec: PageSpec) -> None:
    """Open ``spec``'s page from the menu, as a user does: the app stays loaded (one session, one
    document for every page), so a payload that ran on an earlier page is still seen
    (``window.__pwned``, dialogs, requests), and no page load is paid per page. Waits until the
    menu marks the page as current (the new page's run has begun) and that run has ended."""
    from playwright.sync_api import expect

    link = page.get_by_test_id("stSidebarNavLink").filter(has_text=spec.title)
    if link.get_attribute("aria-current") != "page":  # the page after login is Home
        link.click()
        expect(link).to_have_attribute("aria-current", "page")
    wait_for_run_to_end(page)


def test_the_watch_sees_a_payload_that_runs(page: Any) -> None:
    """Control: the same checks fail on a page where the payloads are live HTML."""
    watch = Watch(page)
    page.set_content(f"<div data-testid='stApp'>{' '.join(PAYLOADS[:2])}</div>")
    with pytest.raises(AssertionError, match="a payload ran"):
        watch.assert_inert("raw HTML")


def test_annotator_pages_render_payloads_as_text(
    app_server: Any, hostile: HostileWorld, page: Any, login: Any
) -> None:
    from playwright.sync_api import expect

    watch = Watch(page)
    login(page, app_server.url, "ann", PASSWORD)
    watch.assert_inert("login")
    _open(page, app_server.url, "pages/annotate.py")
    expect(page.get_by_text(MARKER).first).to_be_visible()  # the payload is there, as text
    watch.assert_inert("annotate")
    for spec in PAGES:
        if "annotator" in spec.roles:
            _visit(page, spec)
            watch.assert_inert(spec.file)


def test_app_requests_nothing_from_outside_hosts(
    app_server: Any, hostile: HostileWorld, page: Any, login: Any
) -> None:
    """Offline use and privacy: the app itself fetches nothing from another host."""
    watch = Watch(page)
    login(page, app_server.url, "ann", PASSWORD)
    _open(page, app_server.url, "pages/annotate.py")
    assert watch.outside == [], f"requests to outside hosts: {sorted(set(watch.outside))}"


def test_staff_pages_render_payloads_as_text(
    app_server: Any, hostile: HostileWorld, page: Any, login: Any
) -> None:
    watch = Watch(page)
    login(page, app_server.url, "root", PASSWORD)
    for spec in PAGES:
        _visit(page, spec)
        watch.assert_inert(spec.file)


def test_logout_ends_the_session_and_the_cookie_cannot_be_replayed(
    app_server: Any, hostile: HostileWorld, page: Any, login: Any, browser: Any
) -> None:
    from playwright.sync_api import expect

    login(page, app_server.url, "bob", PASSWORD)
    cookies = page.context.cookies()
    assert any(cookie["name"] == "critiquelab_session" for cookie in cookies), cookies
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_label("Password", exact=True)).to_be_visible()
    replay = app_context(browser)
    try:
        replay.add_cookies(cookies)
        other = replay.new_page()
        other.goto(f"{app_server.url}/annotate")
        expect(other.get_by_label("Password", exact=True)).to_be_visible()
        expect(other.get_by_text("Logged in as bob")).to_have_count(0)
    finally:
        replay.close()


def _streamlit_command_line(port: int) -> list[str]:
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if any("annotate_app.launch" in a for a in argv) and f"--server.port={port}" in argv:
            return argv
    raise AssertionError(f"no Streamlit process serving port {port}")


def _listening_addresses(port: int) -> set[str]:
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


def test_running_server_is_locked_down(app_server: Any) -> None:
    port = urlparse(app_server.url).port
    assert port is not None
    argv = _streamlit_command_line(port)
    for flag in ("--server.enableXsrfProtection=true", "--server.enableCORS=true",
                 "--server.address=127.0.0.1", "--server.headless=true"):  # fmt: skip
        assert flag in argv, (flag, argv)
    limits = [a for a in argv if a.startswith("--server.maxUploadSize=")]
    assert limits and 0 < int(limits[0].split("=")[1]) <= 1024, limits
    assert _listening_addresses(port) == {"0100007F"}, "listens beyond 127.0.0.1"
    cross_origin = urllib.request.Request(
        f"{app_server.url}/_stcore/health", headers={"Origin": "http://evil.example"}
    )
    with urllib.request.urlopen(cross_origin, timeout=10) as response:
        allowed = response.headers.get("Access-Control-Allow-Origin")
    assert allowed in (None, app_server.url), f"CORS allows {allowed!r}"
    forged = urllib.request.Request(
        f"{app_server.url}/_stcore/upload_file/some-session/some-file", data=b"x", method="PUT",
        headers={"Origin": "http://evil.example"},
    )  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(forged, timeout=10)
    assert refused.value.code == 403, "an upload without the XSRF token was not refused"
