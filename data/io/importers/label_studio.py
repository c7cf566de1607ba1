"""A Label Studio JSON export read as human labels (FORMATS.md §7).

The file is Label Studio's JSON export: a list of tasks, each with ``data`` and ``annotations``.
Every annotation becomes one :class:`~data.io.importers.reader.JudgementLine` (``judge_kind``
human), so ``annotations import`` applies every rule of a judgements file to it. Which result
means what is told by :class:`LabelStudioFields` (the ``from_name`` of each control; the default
matches the labelling configs in ``docs/label-studio/``):

* ``choices`` under ``preference``: ``A``, ``B`` or ``tie`` (the pair in the task's order,
  ``pair_a`` then ``pair_b``, which ``export label-studio`` writes in canonical order);
* ``rating`` or ``number`` under ``score``: the score;
* ``textarea`` under ``rationale``: the rationale (several lines joined by a newline).

The unit is ``data.response_id`` (pointwise) or ``data.pair_a`` / ``data.pair_b`` (pairwise); the
protocol is ``data.protocol`` unless the import names one. The annotator is ``completed_by``: a
name, the local part of an ``email``, or ``ls-<id>`` for a bare Label Studio user id.
``lead_time`` gives ``seconds``, ``created_at`` the label's time. A cancelled (skipped)
annotation is left out. Every image a task names (``data.image`` and ``data.images``) must be a
file under the images root (a ``/data/local-files/?d=PATH`` URL names PATH) or a ``data:`` URL,
with the bytes of one of the stored images of the unit's item.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import ValidationError
from sqlmodel import Session, col, select

from data.io.importers.errors import InvalidRecord, Problems
from data.io.importers.reader import JudgementLine
from data.io.importers.sources import open_regular
from data.io.importers.strict_json import loads
from data.storage.content import ContentError, check_image, data_url_bytes, iter_images
from schemas.records import JudgementRecord
from schemas.tables import Item, Response

LOCAL_FILES_PREFIX = "/data/local-files/?d="
"""How Label Studio's local-files storage serves a file; ``export label-studio`` may prefix it."""


@dataclass(frozen=True)
class LabelStudioFields:
    """The ``from_name`` of each control in the labelling config."""

    preference: str = "preference"
    score: str = "score"
    rationale: str = "rationale"


def read_label_studio(
    path: Path,
    problems: Problems,
    *,
    fields: LabelStudioFields | None = None,
    images_root: Path | None = None,
    protocol: str | None = None,
    session: Session | None = None,
) -> list[JudgementLine]:
    """One judgement line per annotation of the export ``path``; problems go to ``problems``.

    ``images_root``: where the tasks' image paths are resolved (default: the file's folder);
    ``protocol``: the protocol of every task (default: each task's ``data.protocol``);
    ``session``: check that every image of a task is an image of its unit's stored item.
    """
    fields = fields or LabelStudioFields()
    source = str(path)
    root = images_root if images_root is not None else Path(path).parent
    with open_regular(Path(path)) as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRecord(source, None, None, "the file is not UTF-8 text") from None
    tasks = loads(text, source, None, per_line=False)
    if not isinstance(tasks, list) or not tasks:
        raise InvalidRecord(
            source,
            None,
            None,
            "a Label Studio export is a JSON list of tasks (Export → JSON in Label Studio); "
            "this file is not, or has no task",
        )
    lines: list[JudgementLine] = []
    for index, task in enumerate(tasks):
        try:
            lines.extend(_task_lines(source, index, task, fields, root, protocol, session))
        except InvalidRecord as error:
            problems.add(error)
    _check_identities(lines, problems)
    if not lines and not problems:
        problems.add(
            InvalidRecord(
                source, None, "annotations", "no task has an annotation: nothing to import"
            )
        )
    return lines


def _check_identities(lines: list[JudgementLine], problems: Problems) -> None:
    """Two Label Studio users (``meta.label_studio_user``) who would become one annotator."""
    first: dict[str, tuple[str, JudgementLine]] = {}
    for line in lines:
        name, identity = str(line.record.annotator), str(line.record.meta["label_studio_user"])
        seen = first.setdefault(name, (identity, line))
        if seen[0] != identity:
            problems.add(
                line.error(
                    "completed_by",
                    f"`completed_by` {identity} and {seen[0]} (at {seen[1].location}) would both "
                    f"become annotator {name!r}: they are two people; give them e-mails with "
                    "different names before the @, then export again",
                )
            )


def _task_lines(
    source: str,
    index: int,
    task: Any,
    fields: LabelStudioFields,
    root: Path,
    protocol: str | None,
    session: Session | None,
) -> list[JudgementLine]:
    where = f"task {index}"
    if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
        raise InvalidRecord(
            source, where, "data", "a task is an object with a `data` object: add `data`"
        )
    if task.get("id") is not None:
        where = f"task {index} (id {task['id']})"
    data = task["data"]
    unit = _unit(source, where, data)
    shown = _check_images(source, where, data, root)
    if session is not None and shown:
        _check_item_images(session, source, where, unit, shown)
    name = protocol or data.get("protocol")
    if not isinstance(name, str):
        raise InvalidRecord(
            source,
            where,
            "data.protocol",
            "`data.protocol` is missing: give the protocol of the import",
        )
    annotations = task.get("annotations") or []
    if not isinstance(annotations, list):
        raise InvalidRecord(
            source, where, "annotations", "`annotations` must be a list of annotations"
        )
    lines = []
    for number, annotation in enumerate(annotations):
        at = f"{where}, annotation {number}"
        if not isinstance(annotation, dict):
            raise InvalidRecord(
                source, at, None, "an annotation must be an object with a `result` list"
            )
        if annotation.get("was_cancelled") is True:
            continue
        record = _record(source, at, annotation, unit, name, fields)
        lines.append(JudgementLine(source, at, record))
    return lines


def _unit(source: str, where: str, data: dict[str, Any]) -> dict[str, Any]:
    if "response_id" in data:
        return {"response_id": data["response_id"]}
    if "pair_a" in data and "pair_b" in data:
        return {"pair": [data["pair_a"], data["pair_b"]]}
    raise InvalidRecord(
        source,
        where,
        "data.response_id",
        "`data` names no unit: give `data.response_id` (pointwise) or `data.pair_a` and "
        "`data.pair_b` (pairwise), as `export label-studio` writes them",
    )


def _record(
    source: str,
    at: str,
    annotation: dict[str, Any],
    unit: dict[str, Any],
    protocol: str,
    fields: LabelStudioFields,
) -> JudgementRecord:
    results = annotation.get("result")
    if not isinstance(results, list):
        raise InvalidRecord(
            source, at, "result", "`result` must be a list of results (Label Studio's format)"
        )
    values: dict[str, Any] = {}
    for result in results:
        if not isinstance(result, dict) or not isinstance(result.get("value"), dict):
            raise InvalidRecord(
                source, at, "result", "each entry of `result` must have a `value` object"
            )
        name, value = result.get("from_name"), result["value"]
        if name == fields.preference:
            values["preference"] = _choice(source, at, name, value)
        elif name == fields.score:
            values["score"] = _score(source, at, name, value)
        elif name == fields.rationale:
            text = value.get("text")
            texts = [text] if isinstance(text, str) else text
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise InvalidRecord(
                    source,
                    at,
                    f"result.{name}",
                    f"result `{name}`: a textarea's `value.text` is a list of strings",
                )
            values["rationale"] = "\n".join(texts)
    annotator, identity = _annotator(source, at, annotation.get("completed_by"))
    try:
        return JudgementRecord(
            judge=f"annotator:{annotator}",
            judge_kind="human",
            protocol=protocol,
            annotator=annotator,
            **unit,
            **values,
            seconds=annotation.get("lead_time"),
            created_at=annotation.get("created_at"),
            meta={"label_studio_user": identity},
        )
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InvalidRecord(source, at, field, f"{first['msg']}: fix `{field}`") from None


def _choice(source: str, at: str, name: str, value: dict[str, Any]) -> str:
    choices = value.get("choices")
    if not isinstance(choices, list) or len(choices) != 1 or choices[0] not in ("A", "B", "tie"):
        raise InvalidRecord(
            source,
            at,
            f"result.{name}",
            f"result `{name}`: `value.choices` is {choices!r}: choose exactly one of A, B or tie",
        )
    return str(choices[0])


def _score(source: str, at: str, name: str, value: dict[str, Any]) -> float:
    for key in ("rating", "number"):
        if key in value:
            score = value[key]
            if isinstance(score, bool) or not isinstance(score, int | float):
                raise InvalidRecord(
                    source,
                    at,
                    f"result.{name}",
                    f"result `{name}`: `value.{key}` is {score!r}: give a number",
                )
            return float(score)
    raise InvalidRecord(
        source,
        at,
        f"result.{name}",
        f"result `{name}` has neither `value.rating` nor `value.number`: use a Rating or "
        "Number control",
    )


def _annotator(source: str, at: str, completed_by: Any) -> tuple[str, str]:
    """The annotator's name, and who Label Studio says it is (an e-mail or a user id)."""
    if isinstance(completed_by, dict):
        email = completed_by.get("email")
        if isinstance(email, str) and "@" in email:
            return email.split("@", 1)[0], email
        completed_by = completed_by.get("id")
    if isinstance(completed_by, str) and completed_by:
        return completed_by, completed_by
    if isinstance(completed_by, int) and not isinstance(completed_by, bool):
        return f"ls-{completed_by}", f"user id {completed_by}"
    raise InvalidRecord(
        source,
        at,
        "completed_by",
        "`completed_by` names no annotator: give a user id, or an object with an `email`",
    )


def _check_images(source: str, where: str, data: dict[str, Any], root: Path) -> dict[str, str]:
    """The SHA-256 of every image the task names, by its reference."""
    found: dict[str, str] = {}
    named = data.get("images") or []
    if not isinstance(named, list):
        named = [named]
    if data.get("image"):
        named = [data["image"], *named]
    for reference in named:
        if isinstance(reference, str) and reference.startswith("data:"):
            found[reference[:40] + "…"] = _check_data_url(source, where, reference)
            continue
        path = reference
        if isinstance(reference, str) and reference.startswith(LOCAL_FILES_PREFIX.split("?")[0]):
            path = (parse_qs(urlsplit(reference).query).get("d") or [""])[0]
        try:
            found[str(reference)] = check_image(path, root, "data.images").sha256
        except ContentError as error:
            raise InvalidRecord(source, where, "data.images", error.message) from None
    return found


def _check_item_images(
    session: Session, source: str, where: str, unit: dict[str, Any], shown: dict[str, str]
) -> None:
    """Every image of the task must be one of its item's stored images (the same bytes): a task
    whose picture differs was made for another item, or the item was imported again."""
    first = unit["response_id"] if "response_id" in unit else unit["pair"][0]
    if not isinstance(first, str):
        return  # the unit is refused with its field by the import
    row = session.execute(
        select(Item)
        .join(Response, col(Response.item_pk) == col(Item.id))
        .where(col(Response.response_id) == first)
    ).first()
    if row is None:
        return  # not in the database: the import names the unit
    item: Item = row[0]
    contents = [item.question, *(turn["content"] for turn in item.history or [])]
    contents += list(
        session.execute(
            select(col(Response.content)).where(col(Response.item_pk) == item.id)
        ).scalars()
    )
    stored = {PurePosixPath(path).stem for content in contents for path in iter_images(content)}
    for reference, sha256 in shown.items():
        if sha256 not in stored:
            raise InvalidRecord(
                source,
                where,
                "data.images",
                f"image {reference} is not an image of item {item.item_id!r} (no stored image "
                "has its bytes): the task was made for another item, or the image was changed; "
                "fix the task's images or its unit",
            )


def _check_data_url(source: str, where: str, reference: str) -> str:
    """The SHA-256 of the bytes of a base64 ``data:`` URL."""
    try:
        decoded = data_url_bytes(reference, "data.images")
    except ContentError as error:
        raise InvalidRecord(source, where, error.field, error.message) from None
    return hashlib.sha256(decoded).hexdigest()
