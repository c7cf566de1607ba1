"""``import jsonl``: the CritiqueLab dataset file (FORMATS.md §1: JSON Lines, CSV or Parquet),
streamed row by row through :func:`data.io.importers.reader.read_dataset`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlmodel import Session

from data.io.importers.datasets import ImportSummary, import_items
from data.io.importers.errors import Problems
from data.io.importers.reader import read_dataset


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

    Every problem of the file and of its records against the database is reported together
    (:class:`~data.io.importers.errors.InvalidFile`); nothing is written then. Image paths
    are relative to ``images_root`` (default: the file's folder); images are stored under
    ``data_root`` (default :func:`data.storage.engine.data_dir`).
    """
    problems = Problems()
    return import_items(
        session,
        read_dataset(path, problems),
        problems=problems,
        dataset_name=dataset or path.stem,
        source=str(path),
        images_root=images_root or path.parent,
        allow_missing_images=allow_missing_images,
        update_changed=update,
        on_progress=on_progress,
        actor_id=actor_id,
        data_root=data_root,
    )
