"""``import mmie``: the benchmark's JSON list of interleaved questions and model answers.

Each entry is ``{"id", "question": [{"text", "image"}], "answer": [{"text", "image"}], "model",
"gt_answer": [...]}``. Entries with the same ``id`` are one item answered by several models; the
category comes from the id prefix (SA / PBL / MSR) and ``gt_answer`` becomes the reference.
Errors name the entry as ``FILE:entry N`` (N counts from 1).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlmodel import Session

from data.io.importers.datasets import ImportSummary, import_items
from data.io.importers.errors import InvalidRecord
from data.io.importers.records import ItemPlan, parse_item
from data.io.importers.sources import read_json_document
from schemas.option_text import Message

ENTRY_KEYS = ("id", "question", "answer", "model", "gt_answer")


def import_mmie(
    session: Session,
    path: Path,
    *,
    dataset: str = "mmie",
    images_root: Path | None = None,
    allow_missing_images: bool = False,
    update: bool = False,
    on_progress: Callable[[int], None] | None = None,
    actor_id: int | None = None,
) -> ImportSummary:
    """Import an MMIE file into ``dataset``; image paths relative to ``images_root``."""
    return import_items(
        session,
        read_mmie(path),
        dataset_name=dataset,
        source=str(path),
        images_root=images_root or path.parent,
        allow_missing_images=allow_missing_images,
        update_changed=update,
        on_progress=on_progress,
        actor_id=actor_id,
    )


def read_mmie(path: Path) -> list[ItemPlan]:
    """Validated plans of an MMIE file, one per distinct ``id``, in file order."""
    entries = read_json_document(path)
    if not isinstance(entries, list):
        raise InvalidRecord(str(path), 1, None, "the file must hold a JSON list of entries")
    records: dict[str, tuple[int, dict[str, Any]]] = {}
    for number, entry in enumerate(entries, start=1):
        location = f"entry {number}"
        item_id, record, response = _entry(entry, str(path), location)
        if item_id not in records:
            records[item_id] = (number, record)
        elif _without_responses(records[item_id][1]) != _without_responses(record):
            raise InvalidRecord(
                str(path),
                location,
                "question",
                f"entry {number} has id {item_id!r} like entry {records[item_id][0]} but a "
                "different question or gt_answer: give it its own id",
            )
        if response is not None:
            records[item_id][1]["responses"].append(response)
    return [parse_item(record, str(path), f"entry {number}") for number, record in records.values()]


def _entry(
    entry: Any, source: str, location: str
) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    def fail(field: str, message: Message) -> InvalidRecord:
        return InvalidRecord(source, location, field, message)

    if not isinstance(entry, dict):
        raise fail("id", "the entry must be an object with " + ", ".join(ENTRY_KEYS))
    item_id = entry.get("id")
    if not isinstance(item_id, str) or not item_id:
        raise fail("id", f"`id` is {item_id!r}, but it must be a string like 'SA_12'")
    record = {
        "item_id": item_id,
        "benchmark": "mmie",
        "question": _content(entry.get("question"), "question", fail),
        "reference": None
        if entry.get("gt_answer") is None
        else _content(entry["gt_answer"], "gt_answer", fail),
        "meta": {k: v for k, v in entry.items() if k not in ENTRY_KEYS},
        "responses": [],
    }
    response = None
    if entry.get("answer") is not None:
        model = entry.get("model")
        if not isinstance(model, str) or not model:
            raise fail("model", f"`model` is {model!r}, but an answer needs the model's name")
        response = {
            "response_id": f"{item_id}/{model}",
            "model": model,
            "content": _content(entry["answer"], "answer", fail),
        }
    return item_id, record, response


def _content(value: Any, field: str, fail: Callable[[str, Message], InvalidRecord]) -> Any:
    """MMIE segments ``{"text", "image"}`` (either may be null) as CONTENT segments, text first."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise fail(field, f"`{field}` must be a list of {{text, image}} segments or a string")
    segments: list[dict[str, Any]] = []
    for index, part in enumerate(value):
        if isinstance(part, str):
            segments.append({"type": "text", "text": part})
            continue
        if not isinstance(part, dict):
            raise fail(f"{field}[{index}]", f"`{field}[{index}]` must be an object")
        if part.get("text") is not None:
            segments.append({"type": "text", "text": part["text"]})
        if part.get("image") is not None:
            segments.append({"type": "image", "image": part["image"]})
    return segments


def _without_responses(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key != "responses"}
