"""One judge input, rendered from a template (:mod:`critic.prompts`): the instructions filled from
the protocol's facts (scale, bands, criteria, task guidance), the dialogue, the question, the
reference and the response(s) as chat messages with their images, and the input's hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from critic.prompts import PromptTemplate, TemplateError, format_value
from schemas.benchmarks import MMIE_CATEGORIES
from schemas.guidance import (
    ALIGNMMBENCH_TASK_GUIDANCE,
    ALIGNMMBENCH_TASK_GUIDANCE_ZH,
    MMIE_CRITERIA,
    MMIE_JUDGE_MAX_IMAGES,
    MMIE_JUDGE_SKIP_ABOVE_IMAGES,
)
from schemas.items import ItemContent, ResponseContent
from schemas.protocols import Protocol


@dataclass(frozen=True)
class JudgePrompt:
    """A rendered judge input: chat messages (system + user) and the images they refer to."""

    messages: list[dict[str, Any]]
    """FORMATS.md §4 chat format: vision prompts carry ``[{"type": "image"}, {"type": "text"}]``
    segments, text-only prompts a plain string."""
    images: list[str]
    """Image files in the order of the ``{"type": "image"}`` segments (empty when text-only)."""
    prompt_id: str
    input_sha256: str
    """Hash of the messages and the image bytes: the cache key of remote judges."""
    skipped: str | None = None
    """Why this unit is not judged (MMIE: too many images), else None."""
    meta: dict[str, Any] = field(default_factory=dict)
    answer_spans: tuple[tuple[int, int], ...] = ()
    """Where each response sits in the user message of a text-only prompt: ``(start, end)``
    character offsets, in the shown order (empty for vision prompts). A head critic reads each
    response's hidden states from these (:mod:`critic.head`)."""


def render_instructions(template: PromptTemplate, protocol: Protocol, item: ItemContent) -> str:
    """The general part (scale, bands, criteria, output format) plus the task guidance."""
    zh = template.language == "zh"
    parts = [
        template.instructions.format(
            scale=_scale_words(template, protocol),
            bands=_bands(protocol, zh=zh),
            criteria="\n".join(f"- {line}" for line in _criteria(template, protocol, item)),
        ).strip()
    ]
    task, guidance = _guidance(protocol, item, zh=zh)
    if template.guidance and task:
        parts.append(template.guidance.format(task=task, guidance=guidance).strip())
    parts.append(template.output.format().strip())
    return "\n\n".join(parts)


def build_prompt(
    template: PromptTemplate,
    protocol: Protocol,
    item: ItemContent,
    responses: Sequence[ResponseContent],
    *,
    vision: bool,
    resolve_image: Callable[[str], Path],
    show_reference: bool = True,
) -> JudgePrompt:
    """Render the judge input for one response (pointwise) or two in the shown order (pairwise).

    ``resolve_image`` turns a stored CONTENT image path into a file (``data.storage.content.
    resolve_image``). MMIE follows its released judge: an answer with more than
    ``MMIE_JUDGE_SKIP_ABOVE_IMAGES`` images is skipped; otherwise the answer is cut after
    ``MMIE_JUDGE_MAX_IMAGES`` images (``meta["truncated"]``).
    """
    _check_template_fits(template, protocol)
    headers = template.headers
    meta: dict[str, Any] = {}
    parts: list[tuple[str, str]] = [
        ("text", (template.sees_images if vision else template.no_images) + "\n\n"),
        ("text", render_instructions(template, protocol, item) + "\n"),
    ]
    if item.history:
        parts.append(("text", f"\n## {headers['history']}\n"))
        for turn in item.history:
            speaker = headers["assistant"] if turn.get("role") == "assistant" else headers["user"]
            parts.append(("text", f"{speaker}: "))
            parts += _segments(turn.get("content", "")) + [("text", "\n")]
    parts.append(("text", f"\n## {headers['question']}\n"))
    parts += _segments(item.question)
    if item.reference is not None and show_reference and _judge_sees_reference(protocol, item):
        parts.append(("text", f"\n\n## {headers['reference']}\n"))
        parts += _segments(item.reference)
    answer_headers = ["answer"] if protocol.is_pointwise else ["answer_a", "answer_b"]
    if len(responses) != len(answer_headers):
        raise ValueError(
            f"{protocol.name} judges {len(answer_headers)} response(s), got {len(responses)}"
        )
    skipped = None
    answer_parts: list[tuple[int, int]] = []  # each answer's parts: [first, end)
    for name, response in zip(answer_headers, responses, strict=True):
        answer = _segments(response.content)
        if protocol.name == "mmie":
            answer, cut, skipped = _mmie_cut(answer)
            meta.update({"truncated": True} if cut else {})
        parts.append(("text", f"\n\n## {headers[name]}\n"))
        answer_parts.append((len(parts), len(parts) + len(answer)))
        parts += answer
    messages, images = _to_messages(template, parts, vision=vision, resolve_image=resolve_image)
    return JudgePrompt(
        messages=messages,
        images=images,
        prompt_id=template.prompt_id(vision=vision),
        input_sha256=input_hash(messages, images),
        skipped=skipped,
        meta=meta,
        answer_spans=() if vision else _text_spans(template, parts, answer_parts),
    )


def input_hash(messages: list[dict[str, Any]], images: list[str]) -> str:
    """sha256 of the messages and of each image's bytes (so a changed image changes the hash)."""
    digest = hashlib.sha256(json.dumps(messages, ensure_ascii=False, sort_keys=True).encode())
    for image in images:
        digest.update(hashlib.sha256(Path(image).read_bytes()).digest())
    return digest.hexdigest()


def _check_template_fits(template: PromptTemplate, protocol: Protocol) -> None:
    if template.protocol != protocol.name:
        raise TemplateError(
            f"template {template.id} is written for protocol {template.protocol!r}, but the "
            f"campaign uses {protocol.name!r}; pick a template for {protocol.name}"
        )


def _scale_words(template: PromptTemplate, protocol: Protocol) -> str:
    if not protocol.is_pointwise:
        return ""
    minimum, maximum = protocol.bounds
    low, high = format_value(minimum), format_value(maximum)
    if protocol.step is None:
        words = template.scale_words.get("continuous")
    elif protocol.step == 1 and minimum.is_integer():
        words = template.scale_words.get("integers")
    else:
        words = template.scale_words.get("steps")
    if words is None:
        return protocol.describe_scale()
    return words.format(low=low, high=high, step=format_value(protocol.step or 0))


def _bands(protocol: Protocol, *, zh: bool) -> str:
    lines = []
    for band in protocol.bands:
        text = band.description_zh if zh and band.description_zh else band.description
        lines.append(f"- {band.label()}: {text}")
    return "\n".join(lines)


def _criteria(template: PromptTemplate, protocol: Protocol, item: ItemContent) -> tuple[str, ...]:
    if protocol.name == "mmie" and item.category in MMIE_CRITERIA:
        return template.criteria_by_category.get(item.category) or MMIE_CRITERIA[item.category]
    return template.criteria or protocol.criteria


def _guidance(protocol: Protocol, item: ItemContent, *, zh: bool) -> tuple[str, str]:
    if protocol.name == "mmie":
        return MMIE_CATEGORIES.get(item.category or "", ""), ""
    table = ALIGNMMBENCH_TASK_GUIDANCE_ZH if zh else ALIGNMMBENCH_TASK_GUIDANCE
    if item.task is not None and item.task in table:
        return item.task, table[item.task]
    return "", ""


def _judge_sees_reference(protocol: Protocol, item: ItemContent) -> bool:
    """MMIE: only multi-step reasoning (MSR) items show the ground truth to the judge."""
    return protocol.name != "mmie" or item.category == "MSR"


def _segments(content: Any) -> list[tuple[str, str]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [("text", content)]
    segments = []
    for segment in content:
        if segment.get("type") == "image" and segment.get("image"):
            segments.append(("image", str(segment["image"])))
        elif segment.get("type") == "image":  # let through at import as missing
            segments.append(("text", "[missing image]"))
        else:
            segments.append(("text", str(segment.get("text", ""))))
    return segments


def _mmie_cut(answer: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], bool, str | None]:
    images = sum(kind == "image" for kind, _ in answer)
    if images > MMIE_JUDGE_SKIP_ABOVE_IMAGES:
        limit = MMIE_JUDGE_SKIP_ABOVE_IMAGES
        reason = f"answer has {images} images; the MMIE judge skips more than {limit}"
        return answer, False, reason
    if images <= MMIE_JUDGE_MAX_IMAGES:
        return answer, False, None
    kept, seen = [], 0
    for kind, value in answer:
        kept.append((kind, value))
        seen += kind == "image"
        if seen == MMIE_JUDGE_MAX_IMAGES:
            break
    return kept, True, None


def _to_messages(
    template: PromptTemplate,
    parts: list[tuple[str, str]],
    *,
    vision: bool,
    resolve_image: Callable[[str], Path],
) -> tuple[list[dict[str, Any]], list[str]]:
    system = {"role": "system", "content": template.system}
    images: list[str] = []
    if not vision:
        return [
            system,
            {"role": "user", "content": "".join(_texts(template, parts)).strip()},
        ], images
    segments: list[dict[str, Any]] = []
    for kind, value in parts:
        if kind == "image":
            images.append(str(resolve_image(value)))
            segments.append({"type": "image"})
        elif segments and segments[-1]["type"] == "text":
            segments[-1]["text"] += value
        else:
            segments.append({"type": "text", "text": value})
    for segment in segments:
        if segment["type"] == "text":
            segment["text"] = segment["text"].strip("\n") or " "
    return [system, {"role": "user", "content": segments}], images


def _texts(template: PromptTemplate, parts: list[tuple[str, str]]) -> list[str]:
    """The parts of a text-only prompt as text: images become numbered ``[image N]`` markers."""
    texts, count = [], 0
    for kind, value in parts:
        if kind == "image":
            count += 1
            value = f"[{template.headers['image']} {count}]\n"
        texts.append(value)
    return texts


def _text_spans(
    template: PromptTemplate, parts: list[tuple[str, str]], ranges: list[tuple[int, int]]
) -> tuple[tuple[int, int], ...]:
    """Character spans of part ranges in the stripped user message that :func:`_to_messages`
    writes for a text-only prompt."""
    texts = _texts(template, parts)
    joined = "".join(texts)
    lead, length = len(joined) - len(joined.lstrip()), len(joined.strip())
    starts = [0]
    for text in texts:
        starts.append(starts[-1] + len(text))

    def clip(offset: int) -> int:
        return min(max(offset - lead, 0), length)

    return tuple((clip(starts[first]), clip(starts[end])) for first, end in ranges)
