"""Annotation latency on a 100k-unit campaign: the service, and the browser round trip.

Service: one "step" is what the page does when an annotator submits —
``data.queue.submit_and_next``, which stores the answer and leases the next unit in one
transaction — timed end to end, with 1 and with 20 concurrent annotators (threads, as Streamlit
serves sessions), ≥ 2,000 submits each. The 20 run back to back (saturation: each submits again
the moment the next unit is there) and paced: each thinks 0.5–1.5 s (uniform, seeded) between
submits, starting at a random moment of the first second, as independent people do. Baselines in
the same run: an empty write transaction (``BEGIN IMMEDIATE`` + commit on SQLite), the floor any
submit pays; and one annotator paced the same way, which shows what a step costs after an idle
second on this machine (a machine whose idle memory goes cold makes every paced step slower,
with or without contention). Browser: the app served on the same database in headless Chromium
at 1280×720; an annotator answers units by keyboard and we time Ctrl+Enter → the whole next unit
usable (its question and response rendered, nothing left over from the previous unit, and an
enabled, empty answer panel), timed inside the page (keydown to the first animation frame that
shows all of it), with the load average before and after (the machine may be shared). Targets:
service p95 ≤ 50 ms, browser p95 ≤ 250 ms. Prints one JSON object.

    python bench/annotate_bench.py                      # SQLite, 100k units, service + browser
    python bench/annotate_bench.py --postgresql         # also PostgreSQL (throw-away server, or
                                                        # $CRITIQUELAB_TEST_PG_URL)
    python bench/annotate_bench.py --units 20000 --browser-units 0
    python bench/annotate_bench.py --browser-only       # seed, then only the browser run
    python bench/annotate_bench.py --dashboard-load     # 20 annotators while the calibration
                                                        # page reads the judged campaign: in the
                                                        # app's process (before) and in the
                                                        # calibration worker (now)

The campaign is seeded in bulk by ``seed_campaign`` of ``bench/load_test.py`` (rows inserted
directly, then ``data.services.campaigns.create_campaign``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from sqlalchemy import insert, select, text
from sqlalchemy.engine import Engine
from sqlmodel import col

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests/
sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_test import percentiles, seed_campaign, throwaway_postgres  # noqa: E402

from annotate_app import calibration_worker  # noqa: E402
from annotate_app.calibration_worker import (  # noqa: E402
    CampaignScope,
    campaign_overview,
    page_calibration,
)
from annotate_app.campaign_calibration import load_campaign  # noqa: E402
from data import queue  # noqa: E402
from data.readmodels.campaign_input import campaign_version  # noqa: E402
from data.services.users import create_user  # noqa: E402
from data.storage.engine import (  # noqa: E402
    make_engine,
    read_scope,
    session_scope,
    upgrade_database,
)
from schemas.tables import Judgement, Response, utcnow  # noqa: E402
from tests.system_binaries import chromium_missing, chromium_path  # noqa: E402

RATIONALE = "Benchmark rationale: the answer counts the apples correctly, unit {unit}."
TARGET_SERVICE_P95_MS = 50.0
TARGET_BROWSER_P95_MS = 250.0
PASSWORD = "benchmark password"
PACED_BASELINE_SUBMITS = 60
PACED_THINK_SECONDS = 1.0
"""Paced runs: 1 s of thinking on average between submits (real annotators take 10 s or more)."""


def _step(engine: Engine, view: queue.UnitView, annotator_id: int) -> tuple:
    """Submit ``view`` and lease the next unit, as the page does; (seconds, next view)."""
    start = time.perf_counter()
    with session_scope(engine) as session:
        step = queue.submit_and_next(
            session, view.assignment_id, annotator_id, score=7,
            rationale=RATIONALE.format(unit=view.unit_id), seconds=10.0,
        )  # fmt: skip
    return time.perf_counter() - start, step.next_unit


def _annotator(
    engine: Engine, campaign_id: int, annotator_id: int, steps: int, think: float, out: list
) -> None:
    """One annotator's steps; with ``think`` > 0 a seeded uniform 0.5–1.5 × ``think`` pause."""
    pauses = random.Random(annotator_id)
    with session_scope(engine) as session:
        view = queue.next_unit(session, campaign_id, annotator_id)
    if think:
        time.sleep(pauses.uniform(0, think))  # independent people do not start in step
    for _ in range(steps):
        if view is None:
            break
        if think:
            time.sleep(pauses.uniform(0.5 * think, 1.5 * think))
        seconds, view = _step(engine, view, annotator_id)
        out.append(seconds)


def service_latency(
    engine: Engine, campaign_id: int, annotators: list[int], submits: int, think: float = 0.0
) -> dict[str, object]:
    """Submit + next-unit latency with ``len(annotators)`` concurrent annotators.

    ``think``: mean seconds between an annotator's steps (0: back to back, the saturation case).
    """
    per_thread = -(-submits // len(annotators))
    results: list[list[float]] = [[] for _ in annotators]
    threads = [
        threading.Thread(target=_annotator, args=(engine, campaign_id, a, per_thread, think, out))
        for a, out in zip(annotators, results, strict=True)
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    values = [v for out in results for v in out]
    return {
        "annotators": len(annotators),
        "think_seconds": think,
        "submits": len(values),
        "submits_per_second": round(len(values) / wall, 1),
        "submit_plus_next_unit": percentiles(values),
    }


def empty_transaction_baseline(engine: Engine, runs: int = 500) -> dict[str, float]:
    values = []
    for _ in range(runs):
        start = time.perf_counter()
        with session_scope(engine) as session:
            session.execute(text("SELECT 1"))
        values.append(time.perf_counter() - start)
    return percentiles(values)


def run_service(url: str, units: int, submits: int) -> tuple[Engine, int, dict[str, object]]:
    engine = make_engine(url)
    upgrade_database(engine)
    started = time.perf_counter()
    campaign_id, annotators = seed_campaign(engine, units, 42, overlap=3)
    seeded = time.perf_counter() - started
    paced = PACED_THINK_SECONDS
    result: dict[str, object] = {
        "backend": engine.dialect.name,
        "units": units,
        "seed_seconds": round(seeded, 1),
        "baseline_empty_transaction": empty_transaction_baseline(engine),
        "single": service_latency(engine, campaign_id, annotators[:1], submits),
        "concurrent_20": service_latency(engine, campaign_id, annotators[1:21], submits),
        "baseline_single_paced": service_latency(
            engine, campaign_id, annotators[41:42], PACED_BASELINE_SUBMITS, think=paced
        ),
        "concurrent_20_paced": service_latency(
            engine, campaign_id, annotators[21:41], submits, think=paced
        ),
    }
    for run in ("single", "concurrent_20", "concurrent_20_paced"):
        p95 = result[run]["submit_plus_next_unit"]["p95_ms"]  # type: ignore[index]
        result[run]["meets_target_p95_50ms"] = p95 <= TARGET_SERVICE_P95_MS  # type: ignore[index]
    return engine, campaign_id, result


def _seed_model_judgements(engine: Engine, judges: tuple[str, ...] = ("bench-a", "bench-b")) -> int:
    """A score from each of ``judges`` for every response (rows inserted directly), so that the
    calibration page's read of the campaign is as large as a fully judged campaign's."""
    now = utcnow()
    with session_scope(engine) as session:
        responses = session.execute(select(col(Response.id), col(Response.response_id))).all()
        connection = session.connection()
        rows = [
            {"judge": judge, "protocol": "alignmmbench", "unit_key": f"r:{response_id}",
             "response_pk": pk, "score": float(1 + (pk * (j + 3)) % 10), "usage": {}, "meta": {},
             "created_at": now}
            for j, judge in enumerate(judges) for pk, response_id in responses
        ]  # fmt: skip
        for start in range(0, len(rows), 5000):
            connection.execute(insert(Judgement), rows[start : start + 5000])
    return len(rows)


def _read_campaign_repeatedly(
    engine: Engine, campaign_id: int, stop: threading.Event, seconds: list[float]
) -> None:
    """What the calibration page did before the worker: read the whole campaign in the app's own
    process (a thread beside the annotators'), on every open, until ``stop``."""
    while not stop.is_set():
        start = time.perf_counter()
        load_campaign(engine, campaign_id)
        seconds.append(time.perf_counter() - start)


def _page_in_worker_repeatedly(
    engine: Engine, campaign_id: int, stop: threading.Event, seconds: list[float]
) -> None:
    """What the calibration page does now on a rerun, until ``stop``: look up the campaign's
    version, then ask the worker process for the pickers' choices and the calibration
    (B = 1000, the page's default). Annotators keep submitting, so every request finds a new
    version: the worker reads and calibrates the whole campaign each time (the worst case)."""
    url = engine.url.render_as_string(hide_password=False)
    while not stop.is_set():
        start = time.perf_counter()
        with read_scope(engine) as session:
            version = campaign_version(session, campaign_id)
        scope = CampaignScope(url, campaign_id, version)
        campaign_overview(scope)
        page_calibration(scope, bootstrap=1000)
        seconds.append(time.perf_counter() - start)


def _while_reading(
    engine: Engine, campaign_id: int, annotators: list[int], submits: int, reader: Callable
) -> dict[str, object]:
    """20 annotators' submits while ``reader`` runs in a thread of this process (from its first
    finished read until the annotators are done)."""
    reads: list[float] = []
    stop = threading.Event()
    thread = threading.Thread(target=reader, args=(engine, campaign_id, stop, reads))
    thread.start()
    while not reads and thread.is_alive():  # the first read is done: the reads are under way
        stop.wait(0.05)
    load_before = os.getloadavg()
    loaded = service_latency(engine, campaign_id, annotators, submits)
    loaded["load_average_before_after"] = [load_before, os.getloadavg()]
    stop.set()
    thread.join()
    loaded["page_reads"] = len(reads)
    loaded["page_read"] = percentiles(reads)
    return loaded


def dashboard_contention(
    engine: Engine, campaign_id: int, annotators: list[int], submits: int
) -> dict[str, object]:
    """20 annotators submitting back to back: alone; while the calibration page's old path reads
    the whole (judged) campaign over and over in the same process; while the page's current
    path has the worker process read and calibrate it over and over; alone again. Each phase
    has its own 20 annotators. Target: the current path's p95 within 2x of alone."""
    judgements = _seed_model_judgements(engine)
    load_before = os.getloadavg()
    alone = service_latency(engine, campaign_id, annotators[:20], submits)
    alone["load_average_before_after"] = [load_before, os.getloadavg()]
    in_process = _while_reading(
        engine, campaign_id, annotators[20:40], submits, _read_campaign_repeatedly
    )
    in_worker = _while_reading(
        engine, campaign_id, annotators[40:60], submits, _page_in_worker_repeatedly
    )
    calibration_worker.shutdown()
    load_before = os.getloadavg()
    again = service_latency(engine, campaign_id, annotators[60:80], submits)
    again["load_average_before_after"] = [load_before, os.getloadavg()]

    def p95(run: dict[str, object]) -> float:
        return run["submit_plus_next_unit"]["p95_ms"]  # type: ignore[index]

    baseline = max(p95(alone), p95(again))
    return {
        "model_judgements_in_campaign": judgements,
        "without_dashboard": alone,
        "while_the_page_reads_in_the_app_process (before)": in_process,
        "while_the_page_computes_in_the_worker (now)": in_worker,
        "without_dashboard_again": again,
        "p95_ratio_in_process": round(p95(in_process) / p95(alone), 2),
        "p95_ratio_worker": round(p95(in_worker) / p95(alone), 2),
        "p95_ratio_worker_vs_worse_baseline": round(p95(in_worker) / baseline, 2),
        "meets_target_within_2x": p95(in_worker) <= 2.0 * p95(alone),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def served_app(db_url: str, data_dir: Path) -> Iterator[str]:
    """``critiquelab serve`` on ``db_url`` in a child process; yields its URL."""
    port = _free_port()
    environment = {**os.environ, "CRITIQUELAB_DB": db_url, "CRITIQUELAB_DATA_DIR": str(data_dir)}
    script = (
        "import sys; from annotate_app.cli.serve import serve_app; "
        "sys.exit(serve_app(sys.argv[1], host='127.0.0.1', port=int(sys.argv[2])))"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script, db_url, str(port)], env=environment,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2),
            ):
                break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the app server did not start")
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


_WATCH_WHOLE_UNIT = """(previous) => {
  // Time, inside the page, from the Ctrl+Enter keydown to the first animation frame in which the
  // whole next unit is usable: its question and response rendered (nothing left in the unit
  // column from the previous run: no element marked data-stale), the previous unit's panel gone,
  // and the next unit's panel enabled (not "Saving…") with an empty rationale box. Panels live in
  // shadow roots.
  window.__clSeconds = undefined;
  const panels = () => [...document.querySelectorAll("*")]
    .filter((node) => node.shadowRoot)
    .flatMap((node) => [...node.shadowRoot.querySelectorAll(".cl-answer")]);
  const unitReady = () => {
    const unit = document.querySelector(".st-key-cl-unit");
    if (!unit || unit.querySelector('[data-stale="true"]')) return false;
    const text = unit.textContent;  // not innerText: no layout forced per frame
    return text.includes("Question") && text.includes("Response");
  };
  const onKey = (event) => {
    if (event.key !== "Enter" || !event.ctrlKey) return;
    document.removeEventListener("keydown", onKey, true);
    const start = performance.now();
    const check = () => {
      const shown = panels();
      const next = shown.find((panel) => panel.dataset.unit !== String(previous));
      const gone = !shown.some((panel) => panel.dataset.unit === String(previous));
      const box = next && next.querySelector("textarea");
      const usable = next && gone && next.getAttribute("aria-busy") === "false" && box
        && box.value === "" && !box.readOnly;
      if (usable && unitReady()) window.__clSeconds = (performance.now() - start) / 1000;
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  };
  document.addEventListener("keydown", onKey, true);
}"""


_DRAFT_OF = text(
    "SELECT d.rationale FROM draft d JOIN assignment a"
    " ON a.unit_id = d.unit_id AND a.annotator_id = d.annotator_id WHERE a.id = :assignment"
)


def _wait_for_draft(engine: Engine, assignment: int, rationale: str) -> None:
    """Poll until the server holds the typed draft (its save reran the page), at most 60 s."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with engine.connect() as connection:
            if connection.execute(_DRAFT_OF, {"assignment": assignment}).scalar() == rationale:
                return
        time.sleep(0.02)
    raise RuntimeError(f"the draft of assignment {assignment} never reached the server")


def browser_latency(
    engine: Engine, db_url: str, data_dir: Path, units: int, *, settle: bool
) -> dict[str, object]:
    """Ctrl+Enter → the whole next unit usable, for ``units`` units answered by keyboard in
    Chromium at 1280×720, with the machine's load average before and after.

    ``settle``: before Ctrl+Enter, wait until the typed draft is on the server and that save's
    rerun has finished, as it has for a person who takes more than a second to write (the
    realistic case). Without it the bot submits within milliseconds of typing, and the submit
    waits behind the rerun that saves the chosen score."""
    from playwright.sync_api import expect, sync_playwright  # only the browser part needs it

    with session_scope(engine) as session:
        name = f"bench-browser-{'settled' if settle else 'typing'}"
        create_user(session, name, PASSWORD, "annotator")
        campaign = session.execute(text("SELECT name FROM campaign LIMIT 1")).scalar_one()
    values = []
    with served_app(db_url, data_dir) as url, sync_playwright() as playwright:
        chromium = chromium_path()
        if chromium is None:
            raise RuntimeError(chromium_missing())
        browser = playwright.chromium.launch(
            executable_path=str(chromium), headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )  # fmt: skip
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(30_000)
        page.goto(url)
        page.get_by_label("User name", exact=True).fill(name)
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_text(f"Logged in as {name}")).to_be_visible()
        page.wait_for_function("document.cookie.length > 0")  # the session cookie is written
        page.goto(f"{url}/annotate?campaign={campaign}")
        load_before = os.getloadavg()
        for n in range(units + 1):
            panel = page.locator(".cl-answer")
            expect(panel).to_have_count(1)
            unit = panel.get_attribute("data-unit")
            assert unit is not None  # every answer panel names its unit (answer_box.js)
            page.locator("body").press("7")
            page.keyboard.type(RATIONALE.format(unit=unit))
            if settle:
                _wait_for_draft(engine, int(unit), RATIONALE.format(unit=unit))
                page.wait_for_function("!document.querySelector('[data-stale=\"true\"]')")
            page.evaluate(_WATCH_WHOLE_UNIT, unit)
            page.keyboard.press("Control+Enter")
            page.wait_for_function("window.__clSeconds !== undefined")
            if n:  # the first round warms the server's caches
                values.append(page.evaluate("window.__clSeconds"))
        load_after = os.getloadavg()
        browser.close()
    result: dict[str, object] = {
        "measures": "Ctrl+Enter -> question, response and an enabled, empty answer panel",
        "settled_before_submit": settle,
        **percentiles(values),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
    }
    result["meets_target_p95_250ms"] = result["p95_ms"] <= TARGET_BROWSER_P95_MS  # type: ignore[operator]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--submits", type=int, default=2000)
    parser.add_argument("--browser-units", type=int, default=50)
    parser.add_argument("--postgresql", action="store_true", help="also measure PostgreSQL")
    parser.add_argument(
        "--browser-only", action="store_true", help="seed the campaign, then only the browser run"
    )
    parser.add_argument(
        "--dashboard-load",
        action="store_true",
        help="only: 20 annotators with and without the calibration page reading the campaign",
    )
    args = parser.parse_args()
    report: dict[str, object] = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="annotate-bench-") as folder:
        db_url = f"sqlite:///{folder}/bench.db"
        data_dir = Path(folder) / "data"
        os.environ["CRITIQUELAB_DATA_DIR"] = str(data_dir)
        if args.dashboard_load:
            engine = make_engine(db_url)
            upgrade_database(engine)
            campaign_id, annotators = seed_campaign(engine, args.units, 80, overlap=3)
            report["sqlite_dashboard_load"] = dashboard_contention(
                engine, campaign_id, annotators, args.submits
            )
            args.browser_units = 0
        elif args.browser_only:
            engine = make_engine(db_url)
            upgrade_database(engine)
            seed_campaign(engine, args.units, 42, overlap=3)
        else:
            engine, _, report["sqlite"] = run_service(db_url, args.units, args.submits)
        if args.browser_units:
            report["browser_sqlite"] = browser_latency(
                engine, db_url, data_dir, args.browser_units, settle=True
            )
            report["browser_sqlite_submit_while_typing"] = browser_latency(
                engine, db_url, data_dir, args.browser_units, settle=False
            )
        engine.dispose()
    if args.postgresql:
        external = os.environ.get("CRITIQUELAB_TEST_PG_URL")
        with contextlib.ExitStack() as stack:
            url = (
                external.rstrip("/") + "/postgres"
                if external
                else stack.enter_context(throwaway_postgres())
            )
            engine, _, report["postgresql"] = run_service(url, args.units, args.submits)
            engine.dispose()
    report["load_average_at_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
