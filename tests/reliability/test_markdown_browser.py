"""The hostile Markdown corpus (tests/badinput/markdown/) in the real browser: nothing it holds
makes Streamlit's frontend fetch, link, typeset or draw.

Every corpus text is an annotator's rationale on the unit a reviewer adjudicates, a text segment
of that unit's response, and the name of a model judge shown on the Calibration page (subheaders,
the judges' expanders on Adjudicate). Every URL in the corpus points at a local HTTP server that
records what reaches it. Headless Chromium, the app served by ``critiquelab serve``'s code path.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlmodel import select

from data import queue
from data.services.campaigns import CampaignSpec, create_campaign
from data.services.users import create_user
from schemas.tables import Dataset, Item, Judgement, Response, User
from tests.badinput.markdown_corpus import markdown_corpus, trap_paths
from tests.browser_fixtures import SLOW_UI_TIMEOUT_MS, login_by_request

pytestmark = pytest.mark.e2e
PASSWORD = "correct horse battery"
WORD_JOINER = "\u2060"
# 1×1 transparent PNG, so an image that does get requested loads and the check can wait for it
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8ffff3f0005fe02fe0d0a2db40000000049454e44ae426082"
)


class _Trap(BaseHTTPRequestHandler):
    hits: list[str]

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(PIXEL)))
        self.end_headers()
        self.wfile.write(PIXEL)

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class MarkdownWorld:
    target: str
    """host:port of the trap server that every corpus URL points at"""
    hits: list[str]
    corpus: dict[str, str]


@pytest.fixture(scope="module")
def trap() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Trap", (_Trap,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def world(app_server: Any, trap: tuple[str, list[str]]) -> MarkdownWorld:
    """Two units answered by one annotator per corpus text (that text is the rationale), whose
    responses hold every corpus text, judged by one model judge per corpus text (named by it)."""
    target, hits = trap
    corpus = markdown_corpus(target)
    texts = list(corpus.values())
    with app_server.session() as session:
        create_user(session, "rev", PASSWORD, "reviewer")
        annotators = [User(name=f"md{n:02d}", password_hash="!", role="annotator") for n in
                      range(len(texts))]  # fmt: skip
        session.add_all(annotators)
        dataset = Dataset(name="markdown", benchmark="alignmmbench", description="corpus")
        session.add(dataset)
        session.flush()
        for n in range(2):
            item = Item(dataset_id=dataset.id, item_id=f"md-{n}", benchmark="alignmmbench",
                        task="Counting", category="Perception & Understanding", group="g",
                        history=[], question=[{"type": "text", "text": f"Question {n}"}],
                        reference=None, meta={}, content_sha256=f"{n:064d}")  # fmt: skip
            session.add(item)
            session.flush()
            segments = [{"type": "text", "text": text} for text in texts]
            session.add(Response(response_id=f"md-{n}/m", item_pk=item.id, model="m",
                                 content=segments, meta={},
                                 content_sha256=f"{n + 2:064d}"))  # fmt: skip
        session.flush()
        campaign = create_campaign(
            session,
            CampaignSpec(name="markdown-campaign", dataset="markdown", protocol="alignmmbench",
                         overlap=len(texts), rationale_min=1),
        )  # fmt: skip
        for n, (annotator, text) in enumerate(zip(annotators, texts, strict=True)):
            for _ in range(2):
                view = queue.next_unit(session, campaign.id, annotator.id)
                assert view is not None
                queue.submit(session, view.assignment_id, annotator.id, score=float(1 + n % 10),
                             rationale=text)  # fmt: skip
        responses = session.exec(select(Response).where(Response.response_id.like("md-%"))).all()
        for n, text in enumerate(texts):
            for response in responses:
                session.add(Judgement(judge=text, protocol="alignmmbench",
                                      unit_key=f"r:{response.response_id}",
                                      response_pk=response.id, score=float(1 + (n * 3) % 10),
                                      prompt_id="p@1"))  # fmt: skip
    return MarkdownWorld(target, hits, corpus)


def _assert_inert(page: Any, world: MarkdownWorld, fetched: list[str], where: str) -> None:
    """No request reached the trap; no image, outside link, KaTeX, Mermaid chart or icon came
    from the corpus; nothing is wider than the window; every trap URL is on the page as text."""
    # The script run is over (no status widget) and every lazily loaded renderer (KaTeX, Mermaid,
    # emoji, charts) has replaced its skeleton: the page holds all it will show. Requests for
    # images start when an <img> enters the page: once every image has loaded or failed, every
    # request the page will make for them has been made.
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stStatusWidget"]')
                 && !document.querySelector('[data-testid="stSkeleton"]')""",
        timeout=SLOW_UI_TIMEOUT_MS,
    )
    page.evaluate(
        """() => Promise.all([...document.images].map((img) => img.complete ? null :
             new Promise((done) => { img.onload = img.onerror = done; })))"""
    )
    assert world.hits == [], f"{where}: the trap server was asked for {world.hits}"
    assert fetched == [], f"{where}: the browser requested {fetched}"
    found = page.evaluate(
        """() => {
          const inMarkdown = (selector) =>
            [...document.querySelectorAll(`[data-testid="stMarkdownContainer"] ${selector}`)];
          return {
            images: inMarkdown("img").map((e) => e.outerHTML.slice(0, 120)),
            links: inMarkdown("a[href]").map((e) => e.getAttribute("href"))
              .filter((href) => !href.startsWith("#")),
            katex: document.querySelectorAll(".katex, .katex-display").length,
            mermaid: document.querySelectorAll('[data-testid="stMermaidChart"]').length,
            icons: inMarkdown('[data-testid="stIconMaterial"]').length,
            pwned: window.__pwned ?? null,
            // a data frame's grid and a code block's lines scroll inside their own box
            wide: [...document.querySelectorAll("body *")]
              .filter((e) => e.getBoundingClientRect().width > window.innerWidth)
              .filter((e) => !e.closest('[data-testid="stDataFrame"]'))
              .filter((e) => !e.parentElement?.closest("pre"))
              .map((e) => `${e.tagName}.${e.className}`.slice(0, 80)),
            scrolls: document.documentElement.scrollWidth > window.innerWidth,
            text: document.body.innerText.replaceAll("\\u2060", ""),
          };
        }"""
    )
    assert found["images"] == [], f"{where}: images {found['images']}"
    assert found["links"] == [], f"{where}: links {found['links']}"
    assert found["katex"] == 0, f"{where}: {found['katex']} KaTeX elements"
    assert found["mermaid"] == 0, f"{where}: a Mermaid chart"
    assert found["icons"] == 0, f"{where}: {found['icons']} Material icons from the text"
    assert found["pwned"] is None, f"{where}: a payload ran"
    assert found["wide"] == [], f"{where}: wider than the window: {found['wide'][:5]}"
    assert not found["scrolls"], f"{where}: the page scrolls sideways"
    missing = [
        (name, path)
        for name, text in world.corpus.items()
        for path in trap_paths(text, world.target)
        if path not in found["text"]
    ]
    assert missing == [], f"{where}: not shown as text: {missing}"


def _watch(page: Any, world: MarkdownWorld) -> list[str]:
    """The page's requests to the trap; the trap's own record starts empty for this test."""
    world.hits.clear()
    target = world.target
    fetched: list[str] = []
    page.on("request", lambda request: target in request.url and fetched.append(request.url))
    return fetched


def _wait_for_text(page: Any, script: str, argument: Any) -> None:
    """Wait for the page text to satisfy ``script`` (a JS function of the text and
    ``argument``). Read in the page, not through locators: payloads that render (on the old
    code) nest elements so deep that Playwright's locator engine overflows its stack."""
    page.wait_for_function(
        f"(argument) => ({script})(document.body.innerText, argument)",
        arg=argument,
        timeout=SLOW_UI_TIMEOUT_MS,
        polling=500,
    )


def test_adjudicate_shows_corpus_rationales_and_judge_names_as_text(
    app_server: Any, world: MarkdownWorld, page: Any
) -> None:
    fetched = _watch(page, world)
    login_by_request(page, app_server.url, "rev", PASSWORD)
    page.goto(f"{app_server.url}/review_adjudicate")
    words = [f"md{len(world.corpus) - 1:02d}", "Record final label"]  # the last answer, the form
    _wait_for_text(page, "(text, words) => words.every((word) => text.includes(word))", words)
    _assert_inert(page, world, fetched, "Adjudicate")


def test_calibration_shows_corpus_judge_names_as_text(
    app_server: Any, world: MarkdownWorld, page: Any
) -> None:
    fetched = _watch(page, world)
    login_by_request(page, app_server.url, "rev", PASSWORD)
    page.goto(f"{app_server.url}/calibration_dashboard")
    # one "Parse coverage" line under each judge's subheader: every judge is on the page
    _wait_for_text(page, "(text, n) => text.split('Parse coverage').length - 1 === n",
                   len(world.corpus))  # fmt: skip
    _assert_inert(page, world, fetched, "Calibration")
