"""``judge run`` end to end against a real OpenAI-compatible server: ``transformers serve``
(transformers' own server, extra ``serving``), started here on a free localhost port with tiny
models built offline (random weights, a real BPE tokenizer and ChatML chat template): a Llama, and
a LLaVA (CLIP vision tower, ``CLIPImageProcessorPil``: no torchvision) for images.

What a random model can show, and what is checked: the server applies the chat template (the
prompt tokens it reports are those of ``apply_chat_template`` over the very messages sent), usage
and latency are stored, its answer (noise) is stored as ``unparsed`` with the raw text, the server
stopped mid-run leaves a resumable run (the rest stored on the next run against another server,
nothing twice), and the cache answers a second judge with no request. With the LLaVA, the images
``critiquelab judge run`` sends as data URLs are decoded and fed to the vision tower: the prompt
tokens the server reports are the template's, with each image's one placeholder token standing for
its CLIP patches; ``--text-only`` against the same server reports the text-only template's tokens
(images marked ``[image N]`` in text). A parsed answer needs a model that answers on the scale;
the scripted server of ``test_remote.py`` covers parsing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from campaign_factory import build_mmie_campaign
from sqlalchemy.engine import Engine
from sqlmodel import select
from transformers import AutoTokenizer
from typer.testing import CliRunner

from critic.judging import plan_jobs
from critic.prompts import builtin_template
from critic.remote import RemoteOptions, chat_messages, judge_campaign_remote
from data.readmodels.critic_io import campaign_units, image_resolver
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from data.storage.engine import read_scope, session_scope
from schemas.core import stored_id
from schemas.guidance import MMIE_JUDGE_MAX_IMAGES
from schemas.tables import JudgeCache, Judgement
from tests.pg_cluster import free_port
from tests.servers import wait_until_healthy
from tests.skips import missing

START_CEILING_S = 900  # imports torch and transformers: minutes on a loaded 2-core machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2 * START_CEILING_S + 600)]
SERVE = "from transformers.cli.transformers import main; main()"
UNITS = 12  # the "amb" campaign


class Server:
    """``transformers serve [MODEL]`` in its own process group, logging to a file. Without a
    model it serves whichever model a request names (a local folder here), loaded on first use."""

    def __init__(self, model: Path | None, port: int, log: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-c", SERVE, "serve", *([str(model)] if model else [])]
        command += ["--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
        command += ["--log-level", "warning"]
        with log.open("ab") as sink:
            self.process = subprocess.Popen(
                command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_until_healthy(
            self.url, self.process, log, health_path="/health", ceiling_s=START_CEILING_S
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=60)


def _serving_extra() -> None:
    for module in ("fastapi", "uvicorn", "openai"):
        if importlib.util.find_spec(module) is None:
            missing(f"transformers serve needs the `serving` extra ({module} is not installed)")


@pytest.fixture
def model(tiny_llama: Path) -> Path:
    _serving_extra()
    return tiny_llama


@pytest.fixture
def vl_model(tiny_llava: Path) -> Path:
    _serving_extra()
    return tiny_llava


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the module's tests, serving both tiny models (each start imports torch and
    transformers: tens of seconds of CPU on the 2-core machine)."""
    _serving_extra()
    server = Server(None, free_port(), tmp_path_factory.mktemp("serve") / "serve.log")
    yield server
    server.stop()


def _options(server: Server, model: Path, judge: str, *, vision: bool = False) -> RemoteOptions:
    return RemoteOptions(
        base_url=f"{server.url}/v1",
        model=str(model),
        judge_name=judge,
        concurrency=1,
        max_retries=1,
        timeout=120.0,
        backoff_base=0.01,
        backoff_max=0.05,
        max_tokens=8,
        vision=vision,
    )


def _sent_prompt_tokens(
    engine: Engine, model: Path, campaign_name: str = "amb", *, image_tokens: int = 0
) -> dict[str, tuple[int, int]]:
    """Unit key → (prompt tokens, images) of each request ``judge run`` sends (skipped units
    send none): the tokens of the chat template applied to the messages sent, computed here with
    the model's own tokenizer, where each ``image_url`` part is the template's one image
    placeholder token, plus ``image_tokens - 1`` per image (the placeholder stands for
    ``image_tokens`` tokens). ``image_tokens`` 0 plans the text-only prompts."""
    tokenizer = AutoTokenizer.from_pretrained(model)
    with read_scope(engine) as session:
        campaign = get_campaign(session, campaign_name)
        protocol = campaign_protocol(campaign)
        units = campaign_units(session, stored_id(campaign))
        show_reference = campaign.show_reference
    jobs = plan_jobs(
        units,
        protocol,
        builtin_template(protocol.name, "en"),
        vision=image_tokens > 0,
        resolve_image=image_resolver(engine),
        show_reference=show_reference,
    )
    counts = {}
    for job in jobs:
        if job.prompt.skipped:
            continue
        messages = chat_messages(job.prompt)
        images = 0
        for message in messages:
            if isinstance(message["content"], list):
                images += sum(part["type"] == "image_url" for part in message["content"])
                message["content"] = [
                    {"type": "image"} if part["type"] == "image_url" else part
                    for part in message["content"]
                ]
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        tokens = len(ids["input_ids"] if hasattr(ids, "keys") else ids)
        counts[job.unit.unit_key] = (tokens + images * (image_tokens - 1), images)
    return counts


def test_judge_run_against_transformers_serve(
    engine: Engine, campaigns: dict, model: Path, serving: Server, tmp_path: Path
) -> None:
    # A server of its own, pinned to the model, that stops mid-run; the run resumes on `serving`.
    stopping = Server(model, free_port(), tmp_path / "serve.log")
    judged = 0

    def stop_after_the_first_chunk(count: int) -> None:
        nonlocal judged
        judged += count
        if judged:
            stopping.stop()  # the next chunk's requests meet a closed port

    try:
        first = judge_campaign_remote(
            engine, "amb", _options(stopping, model, "served"), progress=stop_after_the_first_chunk
        )
    finally:
        stopping.stop()
    chunk = 8  # concurrency 1 × JOBS_PER_TRANSACTION_PER_SLOT
    assert (first.units, first.stored, len(first.failed)) == (UNITS, chunk, UNITS - chunk)
    assert all("ConnectError" in failure for failure in first.failed), first.failed
    assert first.statuses == {"unparsed": chunk}

    second = judge_campaign_remote(engine, "amb", _options(serving, model, "served"))
    assert (second.already_judged, second.stored, second.failed) == (chunk, UNITS - chunk, [])
    assert second.requests == UNITS - chunk

    expected_tokens = _sent_prompt_tokens(engine, model)
    with session_scope(engine) as session:
        rows = list(session.exec(select(Judgement).where(Judgement.judge == "served")))
        cache = list(session.exec(select(JudgeCache)))
    assert len(rows) == len({row.unit_key for row in rows}) == UNITS  # nothing twice
    assert len(cache) == UNITS
    for row in rows:
        assert row.parse_status == "unparsed" and row.score is None
        assert isinstance(row.raw_output, str) and row.raw_output
        assert row.usage["completion_tokens"] <= 8
        assert row.usage["prompt_tokens"] == expected_tokens[row.unit_key][0]
        assert row.usage["total_tokens"] == (
            row.usage["prompt_tokens"] + row.usage["completion_tokens"]
        )
        assert row.meta["latency"] > 0

    third = judge_campaign_remote(engine, "amb", _options(serving, model, "served-again"))
    assert (third.stored, third.cached, third.requests) == (UNITS, UNITS, 0)
    with session_scope(engine) as session:
        again = list(session.exec(select(Judgement).where(Judgement.judge == "served-again")))
    outputs = {row.unit_key: row.raw_output for row in rows}
    assert {row.unit_key: row.raw_output for row in again} == outputs
    assert all(row.meta == {"cached": True} for row in again)


def test_judge_run_sends_images_that_transformers_serve_feeds_a_vision_language_model(
    engine: Engine, vl_model: Path, serving: Server
) -> None:
    from tiny_models import IMAGE_SIZE, PATCH_SIZE

    from annotate_app.cli.main import app

    campaign = build_mmie_campaign(engine)  # answers with 1, 4 and 5 images
    url = engine.url.render_as_string(hide_password=False)
    args = ["--db", url, "--json", "judge", "run", "--base-url", f"{serving.url}/v1",
            "--model", str(vl_model), "--campaign", campaign, "--judge-name", "served-vl",
            "--concurrency", "1", "--max-retries", "1", "--timeout", "120",
            "--max-tokens", "8"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    # MMIE's released judge: the 5-image answer is skipped, the 4-image one cut to 3 images.
    assert (summary["stored"], summary["requests"], summary["failed"]) == (3, 2, [])
    assert summary["statuses"] == {"skipped": 1, "unparsed": 2}
    text_only = judge_campaign_remote(engine, campaign, _options(serving, vl_model, "served-tx"))
    assert (text_only.stored, text_only.requests, text_only.failed) == (3, 2, [])

    # LLaVA's "default" feature selection: one token per CLIP patch, the CLS feature dropped.
    patches = (IMAGE_SIZE // PATCH_SIZE) ** 2
    vision = _sent_prompt_tokens(engine, vl_model, campaign, image_tokens=patches)
    text = _sent_prompt_tokens(engine, vl_model, campaign)
    assert {key: images for key, (_, images) in vision.items()} == {
        "r:PBL-0/m": 1,
        "r:PBL-1/m": MMIE_JUDGE_MAX_IMAGES,
    }
    assert all(images == 0 for _, images in text.values())
    assert summary["usage"]["prompt_tokens"] == sum(tokens for tokens, _ in vision.values())
    with session_scope(engine) as session:
        rows = {
            (row.judge, row.unit_key): row
            for row in session.exec(select(Judgement).where(Judgement.judge.startswith("served")))
        }
    for judge, expected in (("served-vl", vision), ("served-tx", text)):
        assert rows[(judge, "r:PBL-2/m")].parse_status == "skipped"
        for key, (tokens, _) in expected.items():
            row = rows[(judge, key)]
            assert row.parse_status == "unparsed" and row.score is None, row.raw_output
            assert isinstance(row.raw_output, str) and row.raw_output
            assert row.usage["prompt_tokens"] == tokens
            assert row.usage["completion_tokens"] <= 8
            assert row.usage["total_tokens"] == (
                row.usage["prompt_tokens"] + row.usage["completion_tokens"]
            )
            assert row.meta["latency"] > 0
