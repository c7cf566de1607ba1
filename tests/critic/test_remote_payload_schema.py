"""The chat payload of ``judge run`` against the OpenAI API's own request types.

Issue 28 asks for the image payload to be tested against a vision-language model behind
``transformers serve``: ``test_remote_transformers_serve.py`` serves a tiny LLaVA and checks that
the server takes the images in. That is one server, lenient where others may not be; here the
payload (a pairwise prompt with images in the question and both answers, a text-only prompt) is
checked against the request types the ``openai`` package publishes
(``CompletionCreateParamsNonStreaming``, a ``TypedDict`` validated by pydantic), which is what
vLLM, llama.cpp and ``transformers serve`` accept.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from pydantic import TypeAdapter, ValidationError

from critic.judge_prompt import build_prompt
from critic.prompts import builtin_template
from critic.remote import chat_messages
from schemas.items import ItemContent, ResponseContent
from schemas.protocols import MMIE, PAIRWISE


@functools.cache
def _request_type() -> TypeAdapter[Any]:
    """OpenAI's request type, imported when a test runs: the package takes half a second to
    import, which every test process would pay while collecting."""
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    return TypeAdapter(CompletionCreateParamsNonStreaming)


def _validated(payload: dict[str, Any]) -> Any:
    """The request validated whole: pydantic checks the ``Iterable`` fields of OpenAI's types
    (messages, content parts) only as they are iterated, so every one is walked."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: walk(inner) for key, inner in value.items()}
        if isinstance(value, Iterator):
            return [walk(inner) for inner in value]
        return value

    return walk(_request_type().validate_python(payload))


def _payload(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "judge", "messages": messages, "max_tokens": 64, "temperature": 0.0}


def _images(folder: Path, count: int) -> list[dict[str, str]]:
    for index in range(count):
        Image.new("RGB", (4, 4), (index * 60, 0, 0)).save(folder / f"p{index}.png")
    return [{"type": "image", "image": f"p{index}.png"} for index in range(count)]


def test_an_interleaved_pair_with_images_is_a_valid_openai_request(tmp_path: Path) -> None:
    images = _images(tmp_path, 3)
    item = ItemContent(
        item_id="i1", benchmark="generic", task=None, category=None, group=None, history=[],
        question=[images[0], {"type": "text", "text": "What changed between the pictures?"}],
        reference=None,
    )  # fmt: skip
    responses = [
        ResponseContent("i1/a", "m1", [{"type": "text", "text": "It got red."}, images[1]], 1),
        ResponseContent("i1/b", "m2", [images[2], {"type": "text", "text": "Nothing."}], 1),
    ]
    prompt = build_prompt(
        builtin_template("pairwise"), PAIRWISE, item, responses, vision=True,
        resolve_image=lambda path: tmp_path / path,
    )  # fmt: skip
    request = _validated(_payload(chat_messages(prompt)))
    system, user = request["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    urls = [part["image_url"]["url"] for part in user["content"] if part["type"] == "image_url"]
    assert len(urls) == 3
    sent = [base64.b64decode(url.removeprefix("data:image/png;base64,")) for url in urls]
    assert sent == [(tmp_path / f"p{index}.png").read_bytes() for index in range(3)]
    texts = "".join(part["text"] for part in user["content"] if part["type"] == "text")
    assert "What changed between the pictures?" in texts and "It got red." in texts


def test_a_text_only_prompt_is_a_valid_openai_request(tmp_path: Path) -> None:
    item = ItemContent(
        item_id="i2", benchmark="mmie", task=None, category="situational analysis", group=None,
        history=[], question="Continue the story.", reference="GT",
    )  # fmt: skip
    prompt = build_prompt(
        builtin_template("mmie"), MMIE, item, [ResponseContent("i2/a", "m1", "Then…", 1)],
        vision=False, resolve_image=lambda path: tmp_path / path,
    )  # fmt: skip
    request = _validated(_payload(chat_messages(prompt)))
    assert isinstance(request["messages"][1]["content"], str)


@pytest.mark.parametrize(
    "part",
    [
        {"type": "image", "image_url": {"url": "data:image/png;base64,AA=="}},  # our own shape
        {"type": "image_url", "image_url": "data:image/png;base64,AA=="},  # url not an object
        {"type": "image_url"},  # no url
    ],
)
def test_the_schema_refuses_what_a_server_would_refuse(part: dict[str, Any]) -> None:
    """The check can fail: the shapes a server rejects are refused here too."""
    with pytest.raises(ValidationError):
        _validated(_payload([{"role": "user", "content": [part]}]))
