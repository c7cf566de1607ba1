"""``import jsonl``: the CritiqueLab dataset file (FORMATS.md §1), streamed line by line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from sqlmodel import Session

from data.importers.datasets import ImportSummary, import_items
from data.importers.records import ItemPlan, parse_item
from data.importers.strict_json import read_json_lines


def read_dataset_jsonl(path: Path) -> Iterator[ItemPlan]:
    """Validated plans of a §1 dataset file, one per line."""
    for number, record in read_json_lines(path):
        yield parse_item(record, str(path), number)


def import_jsonl(
    session: Session,
    path: Path,
    *,
    dataset: str | None = None,
    images_root: Path | None = None,
    allow_missing_images: bool = False,
    update: bool = False,
    on_progress: Callable[[int], None] | None = None,
    actor_id: int | None = None,
    data_root: Path | None = None,
) -> ImportSummary:
    """Import a §1 file into ``dataset`` (default: the file name without extension).

    Image paths are relative to ``images_root`` (default: the file's folder); images are stored
    under ``data_root`` (default :func:`data.storage.data_dir`).
    """
    return import_items(
        session, read_dataset_jsonl(path), dataset_name=dataset or path.stem, source=str(path),
        images_root=images_root or path.parent, allow_missing_images=allow_missing_images,
        update_changed=update, on_progress=on_progress, actor_id=actor_id, data_root=data_root,
    )  # fmt: skip
