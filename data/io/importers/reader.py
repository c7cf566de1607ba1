"""The one reader of dataset and judgement files, for every command and the Data page.

Public API::

    read_judgements(path, problems=None) -> list[JudgementLine]
    read_judgement_files(paths) -> list[JudgementLine]      # several files, no duplicate across
    read_judgement_records(path) -> Iterator[(location, JudgementRecord)]
    read_dataset(path, problems=None) -> Iterator[ItemPlan]  # streamed, one plan per item
    dataset_metadata(path) -> pandas.DataFrame               # one row per response (calibration)
    files_sha256(paths) -> str

Files are JSON Lines (``.jsonl``, ``.json``, ``.ndjson``), CSV or Parquet, told apart by their
extension, or a Hugging Face ``datasets`` folder (``save_to_disk``);
:mod:`data.io.importers.sources` opens them (regular files or such a folder only) and splits
them into rows. A bad line is collected, not fatal: after the whole file (or :data:`MAX_PROBLEMS`
problems) every problem is raised at once as :class:`InvalidFile`, each naming the file, the line,
the field and the fix. Pass your own :class:`Problems` to add the problems that you find later
(in the database) to the same report. An empty file is an error: nothing is created from it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from data.io.importers.errors import MAX_PROBLEMS, InvalidFile, InvalidRecord, Problems
from data.io.importers.judgement_files import decode_table_row, judgement_key, parse_judgement
from data.io.importers.records import ItemPlan, parse_item
from data.io.importers.sources import (
    file_kind,
    open_regular,
    read_json_lines,
    read_table_rows,
    report,
)
from data.io.importers.strict_json import loads
from schemas.option_text import Message
from schemas.records import JUDGEMENT_FRAME_COLUMNS, JudgementRecord

__all__ = [
    "MAX_PROBLEMS",
    "InvalidFile",
    "InvalidRecord",
    "JudgementLine",
    "Problems",
    "dataset_metadata",
    "files_sha256",
    "read_dataset",
    "read_judgement_files",
    "read_judgement_records",
    "read_judgements",
]

DATASET_JSON_COLUMNS = frozenset(("history", "responses", "pairs", "meta"))
"""Dataset columns that hold JSON text in CSV and Parquet files (``question`` and ``reference``
are plain text there)."""
_RESERVED = set(JUDGEMENT_FRAME_COLUMNS) | {"code", "unit_index", "response_id"}


@dataclass(frozen=True)
class JudgementLine:
    """A judgement and where it was read: ``source`` (the file) and ``location`` (line number,
    or ``"row N"`` in Parquet)."""

    source: str
    location: int | str
    record: JudgementRecord

    @property
    def where(self) -> str:
        return f"{self.source}:{self.location}"

    def error(self, field: str | None, message: Message) -> InvalidRecord:
        """An error about this line."""
        return InvalidRecord(self.source, self.location, field, message)


def read_judgements(path: Path, problems: Problems | None = None) -> list[JudgementLine]:
    """Every judgement of ``path``; a duplicate (same judge, prompt, unit, shown order and
    ``meta.sample``) is a problem. Raises :class:`InvalidFile` unless ``problems`` is given."""
    return _read_judgements([Path(path)], problems)


def read_judgement_records(path: Path) -> Iterator[tuple[int | str, JudgementRecord]]:
    """``(location, record)`` of every judgement of ``path`` (the exporters' round-trip tests
    read their output back with it); :class:`InvalidFile` if any line is bad."""
    for line in read_judgements(path):
        yield line.location, line.record


def read_judgement_files(paths: Iterable[Path]) -> list[JudgementLine]:
    """The judgements of several files, duplicates refused across files as well."""
    return _read_judgements([Path(path) for path in paths], None)


def iter_judgements(path: Path, problems: Problems) -> Iterator[JudgementLine]:
    """:func:`read_judgements` one line at a time, so a large file is not held whole: bad lines
    go to ``problems``, which the caller checks when the lines are consumed."""
    return _judgement_lines([Path(path)], problems)


def _read_judgements(paths: list[Path], problems: Problems | None) -> list[JudgementLine]:
    collector = problems if problems is not None else Problems()
    lines = list(_judgement_lines(paths, collector))
    if problems is None:
        collector.check()
    return lines


def _judgement_lines(paths: list[Path], collector: Problems) -> Iterator[JudgementLine]:
    seen: dict[tuple[Any, ...], str] = {}
    for path in paths:
        count = 0
        for location, raw in _rows(path, collector, decode_table_row):
            source = str(path)
            try:
                record = parse_judgement(raw, source, location)
            except InvalidRecord as error:
                collector.add(error)
                continue
            line = JudgementLine(source, location, record)
            key = judgement_key(record)
            if key in seen:
                collector.add(
                    line.error(
                        "judge",
                        "duplicate judgement (same judge, prompt_id, unit, shown order and sample "
                        f"as {seen[key]}): keep one, or give them different `sample` numbers in "
                        "meta",
                    )
                )
                continue
            seen[key] = line.where if len(paths) > 1 else f"line {location}"
            count += 1
            yield line
        if count == 0 and not collector:
            raise InvalidFile([InvalidRecord(str(path), None, None, "holds no judgements")])


def read_dataset(path: Path, problems: Problems | None = None) -> Iterator[ItemPlan]:
    """Validated plans of a dataset file (FORMATS.md §1), one per item, in file order.

    Without ``problems`` the bad lines are raised together when the file has been read.
    """
    path = Path(path)
    collector = problems if problems is not None else Problems()
    count = 0
    for location, raw in _rows(path, collector, _dataset_row):
        try:
            plan = parse_item(raw, str(path), location)
        except InvalidRecord as error:
            collector.add(error)
            continue
        count += 1
        yield plan
    if count == 0 and not collector:
        raise InvalidFile([InvalidRecord(str(path), None, None, "holds no items")])
    if problems is None:
        collector.check()


def dataset_metadata(path: Path) -> Any:
    """One row per response of a dataset file: ``response_id``, ``item_id``, ``task``,
    ``category``, ``group``, ``model`` and the scalar keys of the item's and the response's
    ``meta`` (the columns calibration groups by); a pandas DataFrame."""
    import pandas as pd

    rows = []
    seen: dict[str, str] = {}
    problems = Problems()
    for plan in read_dataset(path, problems):
        base = {
            "item_id": plan.item_id,
            "task": plan.task,
            "category": plan.category,
            "group": plan.group,
        } | _scalars(plan.meta)
        for index, response in enumerate(plan.responses):
            where = f"{plan.source}:{plan.location}"
            if response.response_id in seen:
                problems.add(
                    plan.error(
                        f"responses[{index}].response_id",
                        f"duplicate response_id {response.response_id!r} (also at "
                        f"{seen[response.response_id]}): response ids are unique",
                    )
                )
                continue
            seen[response.response_id] = where
            rows.append(
                base
                | _scalars(response.meta)
                | {
                    "response_id": response.response_id,
                    "model": response.model,
                }
            )
    problems.check()
    return pd.DataFrame(rows)


def files_sha256(paths: Iterable[Path]) -> str:
    """SHA-256 of the files' bytes, one after the other in the order given."""
    import hashlib

    digest = hashlib.sha256()
    for path in _data_files(paths):
        with open_regular(path) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _data_files(paths: Iterable[Path]) -> Iterator[Path]:
    """The files themselves; a ``datasets`` folder stands for its files, in name order."""
    for path in map(Path, paths):
        if path.is_dir() and file_kind(path) == "datasets":
            yield from sorted(child for child in path.iterdir() if child.is_file())
        else:
            yield path


def _rows(
    path: Path, problems: Problems, decode: Callable[[dict[str, Any], str, str, int | str], Any]
) -> Iterator[tuple[int | str, Any]]:
    """``(location, JSON object)`` of each row; a table row is turned into the object it
    stands for by ``decode``."""
    kind = file_kind(path)
    if kind == "jsonl":
        yield from read_json_lines(path, problems)
        return
    source = str(path)
    for location, row in read_table_rows(path, kind, problems):
        try:
            yield location, decode(row, kind, source, location)
        except InvalidRecord as error:
            report(problems, error)


def _dataset_row(
    row: dict[str, Any], kind: str, source: str, location: int | str
) -> dict[str, Any]:
    """A CSV, Parquet or ``datasets`` row as its §1 object: JSON text in
    :data:`DATASET_JSON_COLUMNS`, empty cells left out; outside CSV, ``Image`` values as images
    (:func:`_with_images`)."""
    decoded: dict[str, Any] = {}
    for key, value in row.items():
        if value is None:
            continue
        if kind != "csv":
            value = _embedded_images(value, source, location, key)
        if key in DATASET_JSON_COLUMNS and isinstance(value, str):
            try:
                value = loads(value, source, location)
            except InvalidRecord as error:
                raise InvalidRecord(
                    source, location, key, f"`{key}` is not valid JSON text ({error.message})"
                ) from None
        decoded[key] = value
    return decoded if kind == "csv" else _with_images(decoded, source, location)


def _is_image_value(value: Any) -> bool:
    """A Hugging Face ``Image`` value as Arrow holds it: ``{"bytes": ..., "path": ...}``."""
    return isinstance(value, dict) and set(value) == {"bytes", "path"}


def _embedded_images(value: Any, source: str, location: int | str, field: str) -> Any:
    """``value`` with every ``Image`` value in it turned into an image reference: its bytes as a
    base64 ``data:`` URL, or, with no bytes, its ``path`` (relative to the images root)."""
    if _is_image_value(value):
        data, path = value["bytes"], value["path"]
        if isinstance(data, bytes) and data:
            return "data:application/octet-stream;base64," + base64.b64encode(data).decode()
        if isinstance(path, str) and path:
            return path
        raise InvalidRecord(
            source,
            location,
            field,
            f"`{field}` is an Image with neither bytes nor a path: give the image, or leave the "
            "value out",
        )
    if isinstance(value, list):
        return [_embedded_images(v, source, location, f"{field}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _embedded_images(v, source, location, f"{field}.{k}") for k, v in value.items()}
    return value


def _with_images(row: dict[str, Any], source: str, location: int | str) -> dict[str, Any]:
    """The row's ``images`` column (a list of ``Image``) or ``image`` column (one ``Image``),
    turned into image segments before the question's text: how vision-language datasets on the
    Hub keep their pictures."""
    if not ({"image", "images"} & row.keys()):
        return row
    row = dict(row)
    found: list[Any] = []
    for key in ("image", "images"):
        value = row.pop(key, None)
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        for index, reference in enumerate(values):
            where = key if key == "image" else f"{key}[{index}]"
            if not isinstance(reference, str):
                raise InvalidRecord(
                    source,
                    location,
                    where,
                    f"`{where}` is not an image: make the column a datasets Image (or a list of "
                    "them), or a relative image path",
                )
            found.append(reference)
    segments = [{"type": "image", "image": reference} for reference in found]
    question = row.get("question")
    if isinstance(question, str):
        segments.append({"type": "text", "text": question})
    elif isinstance(question, list):
        segments += question
    else:
        return row  # no question: the item is refused for it
    row["question"] = segments
    return row


def _scalars(meta: dict[str, Any]) -> dict[str, Any]:
    return {
        str(key): value
        for key, value in meta.items()
        if isinstance(value, str | int | float | bool) and str(key) not in _RESERVED
    }
