"""A dataset back out as a §1 file (FORMATS.md), with its images, ready to import elsewhere.

Every item becomes one line with its responses and imported pairs; ``meta`` is written back as
it was stored (unknown keys included). Stored images are copied next to the output file under
their store path (``images/ab/<sha256>.<ext>``), so ``import jsonl OUT`` on another machine finds
them, and image segments keep their original ``source``.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from data.io.exporters.files import atomic_write
from data.storage.content import iter_images, resolve_image
from data.storage.engine import engine_data_dir
from schemas.core import stored_id
from schemas.tables import Dataset, Item, Pair, Response


class DatasetNotFound(ValueError):
    """No dataset of that name."""


@dataclass(frozen=True)
class DatasetExport:
    """What an export wrote."""

    dataset: str
    items: int
    responses: int
    pairs: int
    images: int
    output: str


def export_dataset(session: Session, name: str, output: Path) -> DatasetExport:
    """Write dataset ``name`` to ``output`` (JSON Lines) and copy its images beside it."""
    dataset = session.exec(select(Dataset).where(Dataset.name == name)).first()
    if dataset is None:
        known = ", ".join(session.exec(select(Dataset.name).order_by(Dataset.name))) or "none yet"
        raise DatasetNotFound(f"no dataset called {name!r} (datasets: {known})")
    items = list(
        session.exec(select(Item).where(Item.dataset_id == dataset.id).order_by(col(Item.id)))
    )
    responses: dict[int, list[Response]] = defaultdict(list)
    by_pk: dict[int, str] = {}
    query = (
        select(Response).join(Item).where(Item.dataset_id == dataset.id).order_by(col(Response.id))
    )
    for response in session.exec(query):
        responses[response.item_pk].append(response)
        by_pk[stored_id(response)] = response.response_id
    pairs: dict[int, list[list[str]]] = defaultdict(list)
    pair_query = (
        select(Pair).join(Item).where(Item.dataset_id == dataset.id, Pair.source == "import")
    )
    for pair in session.exec(pair_query.order_by(col(Pair.id))):
        pairs[pair.item_pk].append([by_pk[pair.response_a_pk], by_pk[pair.response_b_pk]])
    images: set[str] = set()

    def write(temporary: Path) -> None:
        with temporary.open("w", encoding="utf-8") as out:
            for item in items:
                line = _line(item, responses[stored_id(item)], pairs[stored_id(item)])
                images.update(path for content in _contents(line) for path in iter_images(content))
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        # the images before the file is in place: a missing one leaves no file that names it
        copy_images(images, engine_data_dir(session.get_bind().engine), output.parent)

    atomic_write(output, write)
    return DatasetExport(
        dataset=name,
        items=len(items),
        responses=len(by_pk),
        pairs=sum(len(p) for p in pairs.values()),
        images=len(images),
        output=str(output),
    )


def copy_images(stored_paths: set[str], data_root: Path, folder: Path) -> None:
    """Copy each stored image of the database's data folder (``data_root``) to the same relative
    path under ``folder``, beside an exported file that names it (once: an existing one stays)."""
    for path in sorted(stored_paths):
        target = folder / path
        if not target.exists():
            source = resolve_image(path, data_root)
            if not source.is_file():
                raise FileNotFoundError(
                    f"the stored image {path} is missing from the data folder {data_root}: "
                    "restore the folder from a backup, or import its dataset again"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def _line(item: Item, responses: list[Response], pairs: list[list[str]]) -> dict[str, Any]:
    line: dict[str, Any] = {
        "item_id": item.item_id,
        "benchmark": item.benchmark,
        "task": item.task,
        "category": item.category,
        "group": item.group,
        "history": item.history,
        "question": item.question,
        "reference": item.reference,
        "meta": item.meta,
        "responses": [
            {"response_id": r.response_id, "model": r.model, "content": r.content, "meta": r.meta}
            for r in responses
        ],
    }
    if pairs:
        line["pairs"] = pairs
    return {key: value for key, value in line.items() if value is not None}


def _contents(line: dict[str, Any]) -> list[Any]:
    return [
        line["question"],
        line.get("reference"),
        *(turn["content"] for turn in line["history"]),
        *(response["content"] for response in line["responses"]),
    ]
