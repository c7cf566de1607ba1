"""``import alignmmbench``: the benchmark's metadata file plus model response files.

Metadata lines have ``question_id, image_path, history [{user, assistant}], prompt, ref_answer,
task, category``; response files ``{"question_id", "predict"}``. Items become
``amb-<question_id>`` in §1 form, with ``group`` = the part of ``question_id`` before ``-`` (the
seed question of the prompt variants), the image before the prompt in the question, and
responses ``amb-<question_id>/<model>``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session

from data.io.importers.datasets import ImportSummary, import_items
from data.io.importers.errors import InvalidRecord
from data.io.importers.records import ItemPlan, parse_item
from data.io.importers.sources import read_json_lines
from schemas.option_text import Message

METADATA_KEYS = ("question_id", "image_path", "history", "prompt", "ref_answer", "task", "category")
RESPONSE_KEYS = ("question_id", "predict")


@dataclass
class _Answers:
    """Response-file lines by question id, and where each question id was first seen.

    Each answer is kept as ``(model, predict, other keys or None)`` until its item is planned:
    a tuple instead of the response record saves about 300 bytes an answer, which is what bounds
    the memory of a million-response import."""

    by_question: dict[str, list[tuple[str, str, dict[str, Any] | None]]] = field(
        default_factory=dict
    )
    where: dict[str, tuple[str, int]] = field(default_factory=dict)


def item_id_of(question_id: str) -> str:
    return f"amb-{question_id}"


def import_alignmmbench(
    session: Session,
    metadata: Path,
    *,
    responses: Sequence[tuple[Path, str]] = (),
    dataset: str = "alignmmbench",
    images_root: Path | None = None,
    allow_missing_images: bool = False,
    update: bool = False,
    on_progress: Callable[[int], None] | None = None,
    actor_id: int | None = None,
) -> ImportSummary:
    """Import AlignMMBench items (and ``(file, model)`` response files) into ``dataset``.

    Image paths are relative to ``images_root`` (default: the metadata file's folder).
    """
    answers = _read_responses(responses)
    return import_items(
        session,
        _plans(metadata, answers),
        dataset_name=dataset,
        source=str(metadata),
        images_root=images_root or metadata.parent,
        allow_missing_images=allow_missing_images,
        update_changed=update,
        on_progress=on_progress,
        actor_id=actor_id,
    )


def _plans(metadata: Path, answers: _Answers) -> Iterator[ItemPlan]:
    seen: set[str] = set()
    for number, line in read_json_lines(metadata):
        record = _item_record(line, str(metadata), number)
        question_id = record["meta"]["question_id"]
        seen.add(question_id)
        # popped: each answer is held until its item is written, not for the whole import
        record["responses"] = [
            {
                "response_id": f"{item_id_of(question_id)}/{model}",
                "model": model,
                "content": predict,
                "meta": {} if extra is None else extra,
            }
            for model, predict, extra in answers.by_question.pop(question_id, [])
        ]
        yield parse_item(record, str(metadata), number)
    unknown = [qid for qid in answers.by_question if qid not in seen]
    if unknown:
        source, number = answers.where[unknown[0]]
        raise InvalidRecord(
            source,
            number,
            "question_id",
            f"`question_id` {unknown[0]!r} is not in the metadata {metadata}: "
            "check that the responses belong to this benchmark file",
        )


def _item_record(line: Any, source: str, number: int) -> dict[str, Any]:
    def fail(field: str, message: Message) -> InvalidRecord:
        return InvalidRecord(source, number, field, message)

    if not isinstance(line, dict):
        raise fail("question_id", "the line must be an object with " + ", ".join(METADATA_KEYS))
    for key in ("question_id", "prompt", "task"):
        if not isinstance(line.get(key), str) or not line[key]:
            raise fail(key, f"`{key}` is {line.get(key)!r}, but it must be a non-empty string")
    question_id = line["question_id"]
    image_path = line.get("image_path")
    if image_path is not None and not isinstance(image_path, str):
        raise fail("image_path", f"`image_path` is {image_path!r}, but it must be a path string")
    reference = line.get("ref_answer")
    if reference is not None and not isinstance(reference, str):
        raise fail("ref_answer", f"`ref_answer` is {reference!r}, but it must be a string")
    question: list[dict[str, Any]] = [{"type": "image", "image": image_path}] if image_path else []
    question.append({"type": "text", "text": line["prompt"]})
    extra = {key: value for key, value in line.items() if key not in METADATA_KEYS}
    return {
        "item_id": item_id_of(question_id),
        "benchmark": "alignmmbench",
        "task": line["task"],
        "category": line.get("category"),
        "group": question_id.split("-")[0],
        "history": _history([] if line.get("history") is None else line["history"], fail),
        "question": question,
        "reference": reference,
        "meta": {"question_id": question_id, **extra},
    }


def _history(turns: Any, fail: Callable[[str, Message], InvalidRecord]) -> list[dict[str, Any]]:
    if not isinstance(turns, list):
        raise fail("history", f"`history` is {turns!r}, but it must be a list of turns")
    history = []
    for index, turn in enumerate(turns):
        if not (
            isinstance(turn, dict)
            and all(isinstance(turn.get(k), str) for k in ("user", "assistant"))
        ):
            raise fail(
                f"history[{index}]",
                f"`history[{index}]` must be an object with string `user` and `assistant`",
            )
        history.append({"role": "user", "content": turn["user"]})
        history.append({"role": "assistant", "content": turn["assistant"]})
    return history


def _read_responses(files: Sequence[tuple[Path, str]]) -> _Answers:
    answers = _Answers()
    for path, model in files:
        seen: dict[str, int] = {}
        for number, line in read_json_lines(path):
            if not isinstance(line, dict):
                raise InvalidRecord(str(path), number, None, "the line must be an object")
            question_id, predict = line.get("question_id"), line.get("predict")
            if not isinstance(question_id, str) or not question_id:
                raise InvalidRecord(
                    str(path),
                    number,
                    "question_id",
                    f"`question_id` is {question_id!r}, but it must be a non-empty string",
                )
            if not isinstance(predict, str):
                raise InvalidRecord(
                    str(path),
                    number,
                    "predict",
                    f"`predict` is {predict!r}, but it must be the model's answer as a string",
                )
            if question_id in seen:
                raise InvalidRecord(
                    str(path),
                    number,
                    "question_id",
                    f"duplicate question_id {question_id!r} (also on line {seen[question_id]}): "
                    f"one answer per question for model {model}",
                )
            seen[question_id] = number
            extra = {k: v for k, v in line.items() if k not in RESPONSE_KEYS} or None
            answers.where.setdefault(question_id, (str(path), number))
            answers.by_question.setdefault(question_id, []).append((model, predict, extra))
    return answers
