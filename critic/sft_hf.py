"""Critic training data as a Hugging Face ``datasets`` folder (FORMATS.md §4, ``--format hf``).

The folder is what :meth:`datasets.DatasetDict.save_to_disk` writes: splits ``train`` and
``eval``, each with the chat ``messages`` column in the conversational format TRL's
``SFTTrainer`` reads, ``images`` (a list of :class:`datasets.Image`, the image bytes embedded, so
the folder is self-contained) when any record shows images, and ``meta`` (the record's meta as a
JSON object in a string, since its values differ in type from record to record).

Arrow columns have one type, so in a dataset with images every message's ``content`` is a list
of segments (``{"type": "text", "text": ...}`` / ``{"type": "image", "text": null}``) — TRL's
vision-language format; reading it back gives the system and assistant turns as the strings the
JSON Lines file has. ``datasets`` is imported only here, when the format is used.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from critic.sft_errors import SftFileError

SPLITS = ("train", "eval")
SftRow = tuple[str, Any, Any, Any]
"""One record to write: its split, chat ``messages``, image paths and ``meta``."""
_CACHE = "critiquelab-sft-images"


def write_sft_dataset(records: Iterable[SftRow], folder: Path) -> None:
    """Save records as a ``datasets`` folder at ``folder`` (written beside it, then moved into
    place; nothing is left behind if making a record fails). ``folder`` must not exist yet, or
    be a folder this writer made before (``dataset_dict.json`` in it), which is replaced."""
    import shutil

    import datasets

    folder = Path(folder)
    if folder.exists() and not (folder / "dataset_dict.json").is_file():
        raise SftFileError(
            f"{folder} exists and is not a dataset folder written by export sft: give a new folder"
        )
    rows: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    for split, messages, images, meta in records:
        rows["eval" if split == "eval" else "train"].append(_row(messages, images, meta))
    vision = any(row["images"] for split in rows.values() for row in split)
    features = _features(datasets, vision=vision)
    splits = {}
    for split, split_rows in rows.items():
        if vision:
            split_rows = [_as_segments(row) for row in split_rows]
        else:
            split_rows = [{k: v for k, v in row.items() if k != "images"} for row in split_rows]
        splits[split] = datasets.Dataset.from_list(split_rows, features=features)
    partial = folder.with_name(folder.name + ".part")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        with _quiet(datasets):
            datasets.DatasetDict(splits).save_to_disk(str(partial))
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    partial.replace(folder)


def is_sft_dataset(path: Path) -> bool:
    """Whether ``path`` is a ``datasets`` folder (``save_to_disk`` of a dict or one split)."""
    path = Path(path)
    return path.is_dir() and (
        (path / "dataset_dict.json").is_file() or (path / "dataset_info.json").is_file()
    )


def read_sft_dataset(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """The rows of a ``datasets`` folder as JSON-Lines-shaped objects (``messages``, ``images``
    as file paths, ``meta``), each with where it is (``folder [split row N]``), for
    :func:`critic.sft.read_sft` to check like the lines of a file. A folder of one dataset (no
    splits) is read as the train split unless its rows' ``meta.split`` says otherwise.

    Embedded images are written once, named by their content's SHA-256, to a folder in the
    system's temporary directory (the trainer opens images by path)."""
    import datasets

    with _quiet(datasets):
        loaded = datasets.load_from_disk(str(folder))
    parts = loaded.items() if isinstance(loaded, datasets.DatasetDict) else [("train", loaded)]
    found: list[tuple[str, dict[str, Any]]] = []
    for split, part in parts:
        if "images" in part.column_names:
            part = part.cast_column("images", datasets.Sequence(datasets.Image(decode=False)))
        for number, row in enumerate(part):
            where = f"{folder} [{split} row {number}]"
            try:
                meta = json.loads(row["meta"]) if isinstance(row.get("meta"), str) else {}
            except json.JSONDecodeError as error:
                raise SftFileError(f"{where}: `meta` is not JSON text ({error.msg})") from None
            if not isinstance(meta, dict):
                raise SftFileError(f"{where}: `meta` must be a JSON object")
            meta.setdefault("split", split)
            raw = {
                "messages": _from_segments(row.get("messages")),
                "images": [_image_path(image, Path(folder)) for image in row.get("images") or []],
                "meta": meta,
            }
            found.append((where, raw))
    return found


@contextmanager
def _quiet(datasets: Any) -> Iterator[None]:
    """No progress bars from ``datasets`` (a command's ``--json`` output stays JSON)."""
    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def _row(messages: Any, image_paths: Iterable[str], meta: Any) -> dict[str, Any]:
    images = []
    for path in image_paths:
        data = Path(path).read_bytes()
        images.append({"bytes": data, "path": Path(path).name})
    return {"messages": messages, "images": images, "meta": json.dumps(meta, ensure_ascii=False)}


def _features(datasets: Any, *, vision: bool) -> Any:
    value = datasets.Value("string")
    if not vision:
        turn = {"role": value, "content": value}
        return datasets.Features({"messages": datasets.List(turn), "meta": value})
    segment = {"type": value, "text": value}
    turn = {"role": value, "content": datasets.List(segment)}
    return datasets.Features(
        {
            "messages": datasets.List(turn),
            "images": datasets.List(datasets.Image()),
            "meta": value,
        }
    )


def _as_segments(row: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for message in row["messages"]:
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        segments = [{"type": s.get("type"), "text": s.get("text")} for s in content]
        messages.append({"role": message["role"], "content": segments})
    return {**row, "messages": messages}


def _from_segments(messages: Any) -> Any:
    """Segments back to the JSON Lines shapes: no null keys; system and assistant as text."""
    if not isinstance(messages, list):
        return messages
    restored = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            content = [
                {key: value for key, value in segment.items() if value is not None}
                for segment in content
                if isinstance(segment, dict)
            ]
            only_text = len(content) == 1 and content[0].get("type") == "text"
            if only_text and message.get("role") in ("system", "assistant"):
                content = content[0].get("text", "")
            message = {**message, "content": content}
        restored.append(message)
    return restored


def _image_path(image: Any, folder: Path) -> str:
    if not isinstance(image, dict):
        return str(image)
    data, named = image.get("bytes"), image.get("path")
    if data is None:  # an image stored by path only: relative to the dataset folder
        return str((folder / str(named)).resolve()) if named else ""
    suffix = Path(str(named or "")).suffix or ".png"
    cache = Path(tempfile.gettempdir()) / _CACHE
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / (hashlib.sha256(data).hexdigest() + suffix)
    if not target.is_file():
        partial = target.with_name(target.name + f".{os.getpid()}.part")
        partial.write_bytes(data)
        partial.replace(target)
    return str(target)
