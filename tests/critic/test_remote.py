"""``judge run`` against a local HTTP server speaking the chat-completions API, started by the
test: good answers, malformed answers, 429s, 5xx, timeouts; cache, usage, images, the API key."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

import critic.remote
from annotate_app.cli.main import app
from critic.remote import RemoteOptions, judge_campaign_remote
from data.storage.engine import session_scope
from schemas.tables import JudgeCache, Judgement

runner = CliRunner()
KEY = "sk-test-secret-0123456789"
USAGE = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}


class FakeEndpoint:
    """Scripted answers per unit, keyed by (question index, counted apples) from the prompt."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[int, int]] = Counter()
        self.in_flight = self.max_in_flight = 0
        """Requests the client is waiting for: the scripted stall, which it abandons, is not one."""
        self.lock = threading.Lock()
        self.all_in_flight = threading.Condition(self.lock)
        self.hold_until_in_flight = 0
        """When set, each request waits until this many are in flight together before answering."""
        self.healthy = False
        self.plain: str | None = None
        """When set, every request gets this answer at once (after ``throttle`` 429s)."""
        self.throttle = 0
        """With ``plain``: the first this many requests are answered 429."""
        self.retry_after = "0"
        """The ``Retry-After`` header of a 429."""
        self.authorizations: set[str] = set()
        self.image_urls: list[str] = []

    def respond(self, body: dict, authorization: str) -> tuple[int, dict, float]:
        """``(status, json body, seconds to wait first)`` for one request."""
        self.authorizations.add(authorization)
        if self.plain is not None:
            with self.lock:
                self.throttle -= 1
                if self.throttle >= 0:
                    return 429, {"error": "slow down"}, 0.0
            return 200, _completion(self.plain), 0.0
        user = body["messages"][1]["content"]
        text = user if isinstance(user, str) else "".join(p.get("text", "") for p in user)
        if not isinstance(user, str):
            self.image_urls += [p["image_url"]["url"] for p in user if p["type"] == "image_url"]
        unit = (
            int(re.search(r"Question (\d)", text).group(1)),
            int(re.search(r"I count (\d+)", text).group(1)),
        )
        with self.lock:
            self.requests[unit] += 1
            attempt = self.requests[unit]
        rating = 8 if unit[1] == unit[0] + 2 else 3
        good = f'{{"Rating": {rating}, "Reason": "scripted"}}'
        if unit == (0, 2) and attempt <= 2:
            return 429, {"error": "slow down"}, 0.0
        if unit == (1, 3) and attempt == 1:
            return 200, _completion(good), 4.0  # longer than the client's timeout
        if unit == (2, 4):
            return 200, _completion("I would rather not say."), 0.0
        if unit == (2, 7) and not self.healthy:
            return 200, {"id": "x", "object": "chat.completion"}, 0.0  # no choices
        if unit == (3, 5) and not self.healthy:
            return 503, {"error": "overloaded"}, 0.0
        if unit == (4, 9):
            return 200, _completion("Final Score: 85"), 0.0
        return 200, _completion(good), 0.0


def _completion(text: str) -> dict:
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": USAGE,
    }


@pytest.fixture
def endpoint() -> Iterator[tuple[str, FakeEndpoint]]:
    fake = FakeEndpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            assert self.path == "/v1/chat/completions"
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, payload, wait = fake.respond(body, self.headers.get("Authorization", ""))
            counted = wait == 0.0
            with fake.lock:
                fake.in_flight += counted
                fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                fake.all_in_flight.notify_all()
                fake.all_in_flight.wait_for(
                    lambda: fake.max_in_flight >= fake.hold_until_in_flight, timeout=60
                )
            try:
                time.sleep(wait + 0.02)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", fake.retry_after)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout)
            finally:
                with fake.lock:
                    fake.in_flight -= counted

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", fake
    server.shutdown()
    server.server_close()


def _options(url: str, judge: str = "gpt-test", **changes: object) -> RemoteOptions:
    settings: dict = dict(
        base_url=url,
        model="gpt-test-model",
        judge_name=judge,
        api_key_env="CRITIC_TEST_KEY",
        concurrency=3,
        max_retries=2,
        timeout=2.0,
        backoff_base=0.01,
        backoff_max=0.05,
    )
    settings.update(changes)
    return RemoteOptions(**settings)


def test_retries_cache_usage_and_failures(
    engine: Engine,
    campaigns: dict,
    endpoint: tuple[str, FakeEndpoint],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    url, fake = endpoint
    monkeypatch.setenv("CRITIC_TEST_KEY", KEY)
    first = judge_campaign_remote(engine, "amb", _options(url))
    assert first.stored == 10 and len(first.failed) == 2
    assert any("r:item-3/model-x" in f and "HTTP 503" in f for f in first.failed)
    assert any("r:item-2/model-y" in f and "without choices" in f for f in first.failed)
    assert first.statuses == {"ok": 8, "unparsed": 1, "out_of_scale": 1}
    assert fake.requests[(0, 2)] == 3 and fake.requests[(1, 3)] == 2  # 429 ×2, timeout ×1 retried
    assert fake.requests[(3, 5)] == 3  # max_retries 2 → three attempts, then given up
    assert fake.max_in_flight <= 3  # the limit; that it is reached: the test below
    assert (
        first.usage["total_tokens"] == 16 * 10
    )  # answers received (the body without choices has none)
    assert fake.authorizations == {f"Bearer {KEY}"}
    # 4 units with an image; item-0/model-x was sent 3 times, item-1/model-x twice
    assert len(fake.image_urls) == 7 and all(
        u.startswith("data:image/png;base64,") for u in fake.image_urls
    )
    with session_scope(engine) as session:
        rows = list(session.exec(select(Judgement).where(Judgement.judge == "gpt-test")))
        cache = list(session.exec(select(JudgeCache)))
    assert len(rows) == 10 and len(cache) == 10
    assert all(row.usage == USAGE and row.prompt_id == "alignmmbench-en-vl@1" for row in rows)
    by_key = {row.unit_key: row for row in rows}
    assert by_key["r:item-0/model-x"].score == 8 and by_key["r:item-1/model-x"].score == 8
    assert by_key["r:item-2/model-x"].parse_status == "unparsed"
    assert by_key["r:item-4/model-y"].parse_status == "out_of_scale"
    assert by_key["r:item-4/model-y"].raw_output == "Final Score: 85"
    # the server waits 0.02 s before answering; the abandoned first attempt of item-1/model-x
    # (answered after 4 s, dropped at the 2 s timeout) is not in its latency
    latencies = {row.unit_key: row.meta["latency"] for row in rows}
    assert all(seconds >= 0.02 for seconds in latencies.values()), latencies
    assert latencies["r:item-1/model-x"] < 2.0
    stored_text = json.dumps([r.model_dump(mode="json") for r in rows + cache])
    assert KEY not in stored_text

    fake.healthy = True
    before = sum(fake.requests.values())
    second = judge_campaign_remote(engine, "amb", _options(url))
    assert (second.stored, second.already_judged, second.failed, second.requests) == (2, 10, [], 2)
    assert sum(fake.requests.values()) == before + 2

    third = judge_campaign_remote(engine, "amb", _options(url, judge="gpt-test-again"))
    assert (third.stored, third.cached, third.requests) == (12, 12, 0)  # a re-run costs nothing
    assert sum(fake.requests.values()) == before + 2
    with session_scope(engine) as session:
        again = list(session.exec(select(Judgement).where(Judgement.judge == "gpt-test-again")))
        paid = list(session.exec(select(Judgement).where(Judgement.judge == "gpt-test")))
    assert all(row.meta["cached"] is True and "latency" not in row.meta for row in again)

    # the audit's time per 1,000 units: 1000 × the mean latency of the paid calls (one per unit)
    db = engine.url.render_as_string(hide_password=False)
    out = tmp_path / "audit.json"
    args = ["--db", db, "calibrate", "--campaign", "amb", "--price-in", "1", "--price-out", "2"]
    result = runner.invoke(app, [*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    costs = {c["judge"]: c for c in json.loads(out.read_text())["judge_audit"]["costs"]}
    mean = sum(row.meta["latency"] for row in paid) / len(paid)
    assert costs["gpt-test"]["n_units_time"] == 12
    assert costs["gpt-test"]["seconds_per_1000"] == pytest.approx(1000 * mean)
    assert costs["gpt-test"]["cost_per_1000"] == pytest.approx((11 * 1 + 5 * 2) * 1000 / 1e6)
    assert costs["gpt-test-again"]["seconds_per_1000"] is None  # every call from the cache


def test_requests_are_in_flight_together_up_to_the_limit(
    engine: Engine,
    campaigns: dict,
    endpoint: tuple[str, FakeEndpoint],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the server answers nobody until three requests are waiting: a client that sent one at a
    # time would stall here for the server's 60 s ceiling and then show a maximum of 1
    url, fake = endpoint
    fake.plain = "[[A]]\nThe first one counts right."
    fake.hold_until_in_flight = 3
    monkeypatch.setenv("CRITIC_TEST_KEY", KEY)
    result = judge_campaign_remote(engine, "pairs", _options(url, timeout=120.0))
    assert result.stored == 6 and result.failed == []
    assert fake.max_in_flight == 3


class _RecordedSleeps:
    """``asyncio`` as :mod:`critic.remote` sees it, but ``sleep`` records the seconds asked for
    and returns at once: what a retry waits is read, not timed."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __getattr__(self, name: str) -> object:
        return getattr(asyncio, name)

    async def sleep(self, seconds: float) -> None:
        self.seconds.append(seconds)


@pytest.mark.parametrize(
    ("header", "waits"),
    [("2", 2.0), ("100", 3.0), ("Wed, 21 Oct 2015 07:28:00 GMT", None), ("0", None)],
)
def test_a_retry_waits_what_retry_after_asks_up_to_the_backoff_ceiling(
    engine: Engine,
    campaigns: dict,
    endpoint: tuple[str, FakeEndpoint],
    monkeypatch: pytest.MonkeyPatch,
    header: str,
    waits: float | None,
) -> None:
    """Two 429s carrying ``Retry-After: header``, then answers: each retry waits the seconds the
    server asked for, capped at ``backoff_max`` (3 s here); a date or 0 leaves the exponential
    backoff (0.01 s, then 0.02 s, each with up to 25% jitter)."""
    url, fake = endpoint
    fake.plain, fake.throttle, fake.retry_after = "[[A]]\nThe first one.", 2, header
    sleeps = _RecordedSleeps()
    monkeypatch.setattr(critic.remote, "asyncio", sleeps)
    monkeypatch.setenv("CRITIC_TEST_KEY", KEY)
    options = _options(url, concurrency=1, backoff_base=0.01, backoff_max=3.0)
    result = judge_campaign_remote(engine, "pairs", options)
    assert result.stored == 6 and result.failed == [] and result.requests == 6 + 2
    assert len(sleeps.seconds) == 2  # the two retries of the first request
    if waits is not None:
        assert sleeps.seconds == [waits, waits]
    else:
        assert 0.01 <= sleeps.seconds[0] <= 0.0125 and 0.02 <= sleeps.seconds[1] <= 0.025


def test_judge_run_command_reads_the_key_from_the_named_variable(
    engine: Engine,
    campaigns: dict,
    endpoint: tuple[str, FakeEndpoint],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, fake = endpoint
    fake.plain = "[[A]]\nThe first one counts right."
    monkeypatch.setenv("MY_JUDGE_KEY", KEY)
    db = engine.url.render_as_string(hide_password=False)
    args = [
        "--db",
        db,
        "--json",
        "judge",
        "run",
        "--base-url",
        url,
        "--model",
        "m",
        "--campaign",
        "pairs",
        "--judge-name",
        "cli-judge",
        "--api-key-env",
        "MY_JUDGE_KEY",
        "--text-only",
        "--both-orders",
        "--timeout",
        "2",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["stored"] == 12 and summary["prompt_id"] == "pairwise-en-text@1"
    assert summary["statuses"] == {"ok": 12} and summary["usage"]["total_tokens"] == 16 * 12
    with session_scope(engine) as session:
        rows = list(session.exec(select(Judgement).where(Judgement.judge == "cli-judge")))
    # "A" as shown is the canonical A in order AB and the canonical B in order BA
    assert (
        sorted((r.shown_order, r.preference) for r in rows) == [("AB", "A")] * 6 + [("BA", "B")] * 6
    )
    assert fake.authorizations == {f"Bearer {KEY}"} and not fake.image_urls
    assert KEY not in result.output
