"""Validate dataset records (FORMATS.md §1) into plans; no database, no file system.

Every adapter (``jsonl``, ``alignmmbench``, ``mmie``) turns its input into §1 objects and passes
them through :func:`parse_item`, so the same rules hold whatever the source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from data.io.importers.errors import InvalidRecord
from data.storage.content import ContentError, validate_content
from schemas.benchmarks import ALIGNMMBENCH_TASKS, MMIE_CATEGORIES
from schemas.ids import check_id, check_response_id
from schemas.option_text import Message

BENCHMARKS: tuple[str, ...] = ("alignmmbench", "mmie", "generic")
ROLES: tuple[str, ...] = ("user", "assistant", "system")
ITEM_KEYS = frozenset(
    (
        "item_id",
        "benchmark",
        "task",
        "category",
        "group",
        "history",
        "question",
        "reference",
        "meta",
        "responses",
        "pairs",
    )
)
RESPONSE_KEYS = frozenset(("response_id", "model", "content", "meta"))

Fail = Callable[[str | None, Message], InvalidRecord]
"""Builds the error for a field of the record being parsed."""


@dataclass
class ResponsePlan:
    """A validated response, content still as in the file (image paths not yet checked)."""

    response_id: str
    model: str
    content: Any
    meta: dict[str, Any]


@dataclass
class ItemPlan:
    """A validated item with its responses and pairs, and where it came from."""

    source: str
    location: int | str
    item_id: str
    benchmark: str
    task: str | None
    category: str | None
    group: str | None
    history: list[dict[str, Any]]
    question: Any
    reference: Any
    meta: dict[str, Any]
    responses: list[ResponsePlan] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)

    def error(self, field_name: str | None, message: Message) -> InvalidRecord:
        return InvalidRecord(self.source, self.location, field_name, message)


def parse_item(record: Any, source: str, location: int | str) -> ItemPlan:
    """Check one §1 record and return its plan, or raise :class:`InvalidRecord`."""

    def fail(field_name: str | None, message: Message) -> InvalidRecord:
        return InvalidRecord(source, location, field_name, message)

    if not isinstance(record, dict):
        raise fail(None, f"the line is {_kind(record)}, but each line must be an object (an item)")
    item_id = _id(record.get("item_id"), "item_id", fail, check_id)
    benchmark = _given(record, "benchmark", "generic")
    if benchmark not in BENCHMARKS:
        raise fail(
            "benchmark",
            f"`benchmark` is {benchmark!r}, which is unknown: use one of " + ", ".join(BENCHMARKS),
        )
    task = _optional_text(record.get("task"), "task", fail)
    category = _optional_text(record.get("category"), "category", fail)
    task, category = _checked_task(benchmark, item_id, task, category, fail)
    try:
        question = validate_content(record.get("question"), "question")
        reference = (
            None
            if record.get("reference") is None
            else validate_content(record["reference"], "reference")
        )
        history = _history(_given(record, "history", []), fail)
    except ContentError as error:
        raise fail(error.field, error.message) from None
    meta = _meta(record, ITEM_KEYS, "meta", fail)
    responses = [
        _response(value, f"responses[{index}]", fail)
        for index, value in enumerate(_list(_given(record, "responses", []), "responses", fail))
    ]
    plan = ItemPlan(
        source=source,
        location=location,
        item_id=item_id,
        benchmark=benchmark,
        task=task,
        category=category,
        group=_optional_text(record.get("group"), "group", fail),
        history=history,
        question=question,
        reference=reference,
        meta=meta,
        responses=responses,
    )
    plan.pairs = _pairs(_given(record, "pairs", []), responses, fail)
    return plan


def _checked_task(
    benchmark: str, item_id: str, task: str | None, category: str | None, fail: Fail
) -> tuple[str | None, str | None]:
    if benchmark == "alignmmbench":
        if task not in ALIGNMMBENCH_TASKS:
            raise fail(
                "task",
                f"`task` is {task!r}, which is not an AlignMMBench task ("
                + ", ".join(ALIGNMMBENCH_TASKS)
                + '): fix the line or import it as "benchmark": "generic"',
            )
        expected = ALIGNMMBENCH_TASKS[task]
        if category is not None and category != expected:
            raise fail(
                "category",
                f"`category` is {category!r}, but AlignMMBench task {task} belongs to "
                f"{expected!r}: fix the category or leave it out",
            )
        return task, expected
    if benchmark == "mmie":
        prefix = item_id.split("_")[0].split("-")[0]
        category = category or (prefix if prefix in MMIE_CATEGORIES else None)
        if category not in MMIE_CATEGORIES:
            raise fail(
                "category",
                f"`category` is {category!r}, but MMIE categories are "
                + ", ".join(MMIE_CATEGORIES)
                + " (or an item id starting with one of them)",
            )
    return task, category


def _history(value: Any, fail: Fail) -> list[dict[str, Any]]:
    turns = _list(value, "history", fail)
    for index, turn in enumerate(turns):
        where = f"history[{index}]"
        if not isinstance(turn, dict) or turn.get("role") not in ROLES:
            raise fail(
                f"{where}.role",
                f"`{where}` must be an object with `role` (user, assistant or system) and "
                "`content`",
            )
        validate_content(turn.get("content"), f"{where}.content")
    return turns


def _response(value: Any, where: str, fail: Fail) -> ResponsePlan:
    if not isinstance(value, dict):
        raise fail(where, f"`{where}` is {_kind(value)}, but a response is an object")
    try:
        content = validate_content(value.get("content"), f"{where}.content")
    except ContentError as error:
        raise fail(error.field, error.message) from None
    return ResponsePlan(
        response_id=_id(value.get("response_id"), f"{where}.response_id", fail, check_response_id),
        model=_text(value.get("model"), f"{where}.model", fail),
        content=content,
        meta=_meta(value, RESPONSE_KEYS, f"{where}.meta", fail),
    )


def _pairs(value: Any, responses: list[ResponsePlan], fail: Fail) -> list[tuple[str, str]]:
    known = {response.response_id for response in responses}
    pairs: list[tuple[str, str]] = []
    for index, pair in enumerate(_list(value, "pairs", fail)):
        where = f"pairs[{index}]"
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            raise fail(where, f"`{where}` is {_kind(pair)}, but a pair is two response ids")
        if pair[0] == pair[1]:
            raise fail(where, f"`{where}` pairs {pair[0]!r} with itself: name two responses")
        unknown = [p for p in pair if p not in known]
        if unknown:
            raise fail(
                where,
                f"`{where}` names {unknown[0]!r}, which is not a response of this item: "
                "pairs compare two of the item's own responses",
            )
        pairs.append((pair[0], pair[1]))
    return pairs


def _meta(record: dict[str, Any], known: frozenset[str], where: str, fail: Fail) -> dict[str, Any]:
    meta = _given(record, "meta", {})
    if not isinstance(meta, dict):
        raise fail(where, f"`{where}` is {_kind(meta)}, but it must be an object")
    extra = {key: value for key, value in record.items() if key not in known}
    clash = sorted(set(extra) & set(meta))
    if clash:
        raise fail(
            where,
            f"`{clash[0]}` appears both as a key and inside `{where}`: keep one of them",
        )
    return {**meta, **extra}


def _given(record: dict[str, Any], key: str, default: Any) -> Any:
    """``record[key]``, or ``default`` when the key is left out or null (the same thing)."""
    value = record.get(key)
    return default if value is None else value


def _text(value: Any, name: str, fail: Fail) -> str:
    if not isinstance(value, str) or not value.strip():
        raise fail(name, f"`{name}` is {_kind(value)}, but it must be a non-empty string")
    return value


def _id(value: Any, name: str, fail: Fail, check: Callable[[str], str]) -> str:
    """An id field: a string that passes the one id rule (:mod:`schemas.ids`)."""
    text = _text(value, name, fail)
    try:
        return check(text)
    except ValueError as error:
        raise fail(name, f"`{name}`: {error}") from None


def _optional_text(value: Any, name: str, fail: Fail) -> str | None:
    return None if value is None else _text(value, name, fail)


def _list(value: Any, name: str, fail: Fail) -> list[Any]:
    if not isinstance(value, list):
        raise fail(name, f"`{name}` is {_kind(value)}, but it must be a list")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "missing"
    text = repr(value)
    return f"{text} ({type(value).__name__})" if len(text) <= 40 else f"a {type(value).__name__}"
