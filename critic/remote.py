"""``critiquelab judge run``: any OpenAI-compatible chat endpoint judges a campaign.

GPT-4, a vLLM-served critic, anything that speaks ``POST {base_url}/chat/completions``. Images
travel as data URLs. At most ``concurrency`` requests are in flight; 429, 5xx, timeouts and
connection errors are retried with exponential backoff (honouring ``Retry-After``), other errors
fail that unit only. Every answer is cached in ``JudgeCache`` under (model, template, input hash)
before its judgement is stored, so a re-run — or another judge name over the same inputs — costs
nothing. Token usage is stored with each judgement, and ``meta.latency``: the seconds from sending
the request that answered to reading its answer (backoff waits and failed attempts not counted);
an answer from the cache is stored with ``meta.cached: true`` and no latency (the cache keeps none).

The API key is read from the environment variable named by ``api_key_env`` at call time and
sent only in the ``Authorization`` header; it is never logged, stored or put in an error message.
"""

from __future__ import annotations

import asyncio
import base64
import mimetypes
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.engine import Engine
from sqlmodel import Session

from critic.judge_prompt import JudgePrompt
from critic.judging import Answered, JudgeJob, judgement_row, plan_jobs, run_jobs
from critic.prompts import PromptTemplate, builtin_template
from data.readmodels.critic_io import (
    cached_outputs,
    campaign_units,
    image_resolver,
    judged_keys,
    store_cached_output,
)
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from data.storage.engine import read_scope, session_scope
from schemas.bounds import CONCURRENCY, MAX_RETRIES, MAX_TOKENS, first_problem
from schemas.core import stored_id
from schemas.option_text import OptionError

Usage = dict[str, int]
"""Token counts as the endpoint reports them (``prompt_tokens``, ``completion_tokens``...)."""
Answer = tuple[str, Usage, float]
"""An answer's text, its token usage and the seconds its request took."""
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
JOBS_PER_TRANSACTION_PER_SLOT = 8


class RemoteCallFailed(RuntimeError):
    """A request that failed for good (non-retryable status, or retries exhausted)."""


@dataclass(frozen=True)
class RemoteOptions:
    """Where and how to call the remote judge."""

    base_url: str
    """Endpoint root, e.g. ``https://api.openai.com/v1`` or ``http://localhost:8000/v1``."""
    model: str
    judge_name: str
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the key; unset = no Authorization header (local servers)."""
    concurrency: int = 4
    max_retries: int = 5
    timeout: float = 60.0
    """Seconds per request."""
    backoff_base: float = 1.0
    """First retry waits about this long; each further retry doubles it (with jitter)."""
    backoff_max: float = 60.0
    max_tokens: int = 512
    temperature: float = 0.0
    both_orders: bool = False
    vision: bool = True
    """Send images (vision-language judges); False renders the text-only prompt."""
    language: str = "en"
    template: PromptTemplate | None = None


@dataclass(frozen=True)
class RemoteSummary:
    """What a remote judging run did."""

    judge: str
    prompt_id: str
    units: int
    already_judged: int
    stored: int
    cached: int
    """Answers taken from the cache (no request)."""
    requests: int
    """HTTP requests made, retries included."""
    failed: list[str]
    """``unit_key [order]: reason`` of calls that failed for good (not stored; re-run retries)."""
    statuses: dict[str, int]
    usage: dict[str, int] = field(default_factory=dict)
    """Summed token usage of the requests made by this run."""
    seconds: float = 0.0


def chat_messages(prompt: JudgePrompt) -> list[dict[str, Any]]:
    """The prompt in the chat-completions shape: image segments become data-URL ``image_url``s."""
    images = iter(prompt.images)
    messages = []
    for message in prompt.messages:
        content = message["content"]
        if isinstance(content, list):
            content = [
                {"type": "image_url", "image_url": {"url": image_data_url(next(images))}}
                if part["type"] == "image"
                else {"type": "text", "text": part["text"]}
                for part in content
            ]
        messages.append({"role": message["role"], "content": content})
    return messages


def image_data_url(path: str) -> str:
    """``data:<mime>;base64,...`` of an image file."""
    mime = mimetypes.guess_type(path)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(Path(path).read_bytes()).decode()}"


def judge_campaign_remote(
    engine: Engine,
    campaign: str,
    options: RemoteOptions,
    progress: Callable[[int], None] = lambda _n: None,
) -> RemoteSummary:
    """Judge every unit of ``campaign`` not yet judged by ``options.judge_name`` (see module)."""
    started = time.perf_counter()
    problem = first_problem(
        (CONCURRENCY, options.concurrency),
        (MAX_RETRIES, options.max_retries),
        (MAX_TOKENS, options.max_tokens),
    )
    if problem is not None:
        raise OptionError(problem)
    with read_scope(engine) as session:
        found = get_campaign(session, campaign)
        protocol, show_reference = campaign_protocol(found), found.show_reference
        template = options.template or builtin_template(protocol.name, options.language)
        prompt_id = template.prompt_id(vision=options.vision)
        units = campaign_units(session, stored_id(found))
        done = judged_keys(session, options.judge_name, prompt_id)
    jobs = plan_jobs(
        units,
        protocol,
        template,
        vision=options.vision,
        resolve_image=image_resolver(engine),
        both_orders=options.both_orders,
        show_reference=show_reference,
        done=done,
    )
    planned = len(units) * (2 if options.both_orders and not protocol.is_pointwise else 1)
    runner = _Runner(options)
    cached: list[JudgeJob] = []
    failed: list[str] = []

    def ask(chunk: list[JudgeJob]) -> Answered:
        """Cached answers first, then the misses as concurrent requests."""
        with session_scope(engine) as session:
            hits = cached_outputs(
                session, options.model, prompt_id, [j.prompt.input_sha256 for j in chunk]
            )
        misses = [job for job in chunk if job.prompt.input_sha256 not in hits]
        answers = asyncio.run(runner.run(misses))
        rows, new_cache = [], []
        for job in chunk:
            if job.prompt.input_sha256 in hits:
                entry = hits[job.prompt.input_sha256]
                cached.append(job)
                rows.append(
                    judgement_row(
                        job,
                        judge=options.judge_name,
                        protocol=protocol,
                        raw_output=entry.output,
                        usage=entry.usage,
                        meta={"cached": True},
                    )
                )
                continue
            answer = answers[id(job)]
            if isinstance(answer, RemoteCallFailed):
                failed.append(f"{job.unit.unit_key} [{job.shown_order}]: {answer}")
                continue
            text, usage, latency = answer
            new_cache.append((job.prompt.input_sha256, text, usage))
            rows.append(
                judgement_row(
                    job,
                    judge=options.judge_name,
                    protocol=protocol,
                    raw_output=text,
                    usage=usage,
                    meta={"latency": latency},
                )
            )

        def write(session: Session) -> None:
            for input_sha256, text, usage in new_cache:
                store_cached_output(session, options.model, prompt_id, input_sha256, text, usage)

        return Answered(rows, write=write if new_cache else None)

    tally = run_jobs(
        engine,
        jobs,
        ask,
        judge=options.judge_name,
        protocol=protocol,
        chunk_size=options.concurrency * JOBS_PER_TRANSACTION_PER_SLOT,
        progress=progress,
    )
    return RemoteSummary(
        judge=options.judge_name,
        prompt_id=prompt_id,
        units=len(units),
        already_judged=planned - len(jobs),
        stored=tally.stored,
        cached=len(cached),
        requests=runner.requests,
        failed=failed,
        statuses=dict(tally.statuses),
        usage=dict(runner.usage),
        seconds=time.perf_counter() - started,
    )


class _Runner:
    """Sends requests with bounded concurrency and retries; counts requests and token usage."""

    def __init__(self, options: RemoteOptions) -> None:
        self.options = options
        self.requests = 0
        self.usage: Counter[str] = Counter()

    async def run(self, jobs: list[JudgeJob]) -> dict[int, Answer | RemoteCallFailed]:
        if not jobs:
            return {}
        semaphore = asyncio.Semaphore(self.options.concurrency)
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.options.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = self.options.base_url.rstrip("/") + "/chat/completions"
        async with httpx.AsyncClient(timeout=self.options.timeout, headers=headers) as client:

            async def one(job: JudgeJob) -> tuple[int, Answer | RemoteCallFailed]:
                async with semaphore:
                    try:
                        return id(job), await self._call(client, url, job)
                    except RemoteCallFailed as error:
                        return id(job), error

            return dict(await asyncio.gather(*(one(job) for job in jobs)))

    async def _call(self, client: httpx.AsyncClient, url: str, job: JudgeJob) -> Answer:
        payload = {
            "model": self.options.model,
            "messages": chat_messages(job.prompt),
            "max_tokens": self.options.max_tokens,
            "temperature": self.options.temperature,
        }
        last_problem, retry_after = "", None
        for attempt in range(self.options.max_retries + 1):
            if attempt:
                await asyncio.sleep(self._delay(attempt, retry_after))
                retry_after = None
            self.requests += 1
            sent = time.perf_counter()
            try:
                response = await client.post(url, json=payload)
            except (httpx.TimeoutException, httpx.TransportError) as error:
                last_problem = f"{type(error).__name__} after {self.options.timeout:g}s limit"
                continue
            if response.status_code in RETRY_STATUSES:
                last_problem = f"HTTP {response.status_code}"
                retry_after = response.headers.get("retry-after")
                continue
            if response.status_code >= 400:
                hint = (
                    f" (check the key in ${self.options.api_key_env})"
                    if response.status_code in (401, 403)
                    else ""
                )
                raise RemoteCallFailed(f"HTTP {response.status_code}{hint}: {response.text[:200]}")
            text, usage = self._answer(response)
            return text, usage, time.perf_counter() - sent
        raise RemoteCallFailed(
            f"gave up after {self.options.max_retries + 1} attempts ({last_problem})"
        )

    def _answer(self, response: httpx.Response) -> tuple[str, Usage]:
        try:
            body = response.json()
            text = body["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise RemoteCallFailed(
                f"the endpoint answered HTTP {response.status_code} without choices[0].message."
                f"content: {response.text[:200]}"
            ) from None
        usage = {k: int(v) for k, v in (body.get("usage") or {}).items() if isinstance(v, int)}
        self.usage.update(usage)
        return str(text or ""), usage

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        """Exponential backoff with jitter; a numeric ``Retry-After`` wins if longer (capped)."""
        delay = min(self.options.backoff_max, self.options.backoff_base * 2 ** (attempt - 1))
        delay *= 1 + random.random() / 4
        if retry_after and retry_after.isdigit():
            delay = max(delay, min(float(retry_after), self.options.backoff_max))
        return delay
