"""Files uploaded in the browser: unpacked safely, then imported by the CLI's own importers.

An upload is a dataset file (JSONL, CSV or Parquet, or a zip holding it and its images) or a
judgements file. It is written to a fresh folder under ``<data dir>/uploads/`` and handed to
exactly the functions that ``critiquelab import`` and ``critiquelab judgments import`` call, so
the browser and the command line accept and refuse the same files. The folder is removed
afterwards; images the importer keeps are copied into the image store by the importer itself.

A zip is checked before a byte is written: no absolute names, no ``..`` (zip-slip), no symbolic
links, at most :data:`MAX_ZIP_FILES` entries and :data:`MAX_ZIP_BYTES` bytes unpacked (counted
while unpacking too, so a zip that lies about its sizes is stopped), names of at most
:data:`MAX_ZIP_NAME_BYTES` bytes, at most :data:`MAX_ZIP_DEPTH` folders deep, and no name that is
both a file and a folder.
"""

from __future__ import annotations

import io
import re
import shutil
import stat
import uuid
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from sqlmodel import Session

from data.io.importers.datasets import ImportSummary
from data.io.importers.errors import InvalidFile, InvalidRecord
from data.io.importers.jsonl import import_jsonl
from data.io.importers.judgements import JudgementImportSummary, import_judgements
from data.io.importers.sources import FILE_SUFFIXES
from data.services.roles import require_actor_role
from data.storage.audit import record_event
from data.storage.engine import data_dir

DATASET_SUFFIXES: tuple[str, ...] = tuple(FILE_SUFFIXES)
"""Dataset and judgements file types, as ``critiquelab import jsonl`` and ``judgments import``
read them."""
ZIP_DATASET_SUFFIXES: tuple[str, ...] = tuple(s for s in DATASET_SUFFIXES if s != ".json")
"""The dataset file of a zip: not ``.json``, which zips of datasets also hold as metadata."""
_FILE_TYPES = ", ".join(DATASET_SUFFIXES)
_ZIP_TYPES = ", ".join(ZIP_DATASET_SUFFIXES)
MAX_ZIP_FILES = 20_000
MAX_ZIP_BYTES = 2 * 1024**3
MAX_ZIP_DEPTH = 64
"""Deepest folder nesting of a zip entry (image folders are a few levels deep)."""
MAX_ZIP_NAME_BYTES = 255
"""Longest file or folder name in a zip entry: what Linux and macOS file systems hold."""
_CHUNK = 1024 * 1024
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


class UnsafeUpload(ValueError):
    """An uploaded file that will not be unpacked or read, and why."""


class UploadRejected(ValueError):
    """The importer refused the upload. ``problems`` are its messages, one per bad line, each
    naming the file inside the upload, the line, the field and the fix; ``stopped`` says that
    reading stopped at :data:`~data.io.importers.errors.MAX_PROBLEMS` and there may be more."""

    def __init__(self, problems: list[str], *, stopped: bool = False) -> None:
        self.problems = problems
        self.stopped = stopped
        note = [f"stopped after {len(problems)} problems"] if stopped else []
        super().__init__("\n".join([*problems, *note]))


def import_dataset_upload(
    session: Session,
    actor_id: int | None,
    name: str,
    data: bytes,
    *,
    dataset: str | None = None,
    update: bool = False,
    allow_missing_images: bool = False,
) -> ImportSummary:
    """Import an uploaded dataset (admins only) with the importer of ``critiquelab import jsonl``.

    ``name`` ends in one of :data:`DATASET_SUFFIXES` (the file itself) or ``.zip`` (the file,
    one of :data:`ZIP_DATASET_SUFFIXES`, with its images, image paths relative to it). On any
    error nothing is written (the caller's transaction rolls back) and :class:`UploadRejected`
    names every bad line inside the upload (up to 50).
    """
    require_actor_role(session, actor_id, "admin")
    suffix = PurePosixPath(name.lower()).suffix
    if suffix not in (*DATASET_SUFFIXES, ".zip"):
        raise UnsafeUpload(
            f"{safe_file_name(name)!r} is not {_FILE_TYPES} or .zip: upload the dataset file, or "
            "a zip holding it and its images"
        )
    with upload_folder() as folder:
        if suffix == ".zip":
            path = find_dataset_file(extract_zip(io.BytesIO(data), folder), folder)
        else:
            path = save_upload(data, name, folder)
        try:
            summary = import_jsonl(
                session,
                path,
                dataset=dataset or None,
                images_root=path.parent,
                update=update,
                allow_missing_images=allow_missing_images,
                actor_id=actor_id,
            )
        except InvalidRecord as error:
            raise _rejected(error, folder) from None
    record_event(
        session,
        actor_id=actor_id,
        action="dataset.upload",
        entity="dataset",
        entity_id=summary.dataset,
        detail={"file": safe_file_name(name), "update": update},
    )
    return summary


def import_judgements_upload(
    session: Session, actor_id: int | None, name: str, data: bytes, *, update: bool = False
) -> JudgementImportSummary:
    """Import an uploaded model judgements file (:data:`DATASET_SUFFIXES`; admins only) with the
    importer of ``critiquelab judgments import``; on any error nothing is written."""
    require_actor_role(session, actor_id, "admin")
    with upload_folder() as folder:
        path = save_upload(data, name, folder)
        try:
            summary = import_judgements(session, path, update_changed=update, actor_id=actor_id)
        except InvalidRecord as error:
            raise _rejected(error, folder) from None
    record_event(
        session,
        actor_id=actor_id,
        action="judgement.upload",
        entity="judgement",
        entity_id=safe_file_name(name),
        detail={"file": safe_file_name(name), "update": update},
    )
    return summary


def _rejected(error: InvalidRecord, folder: Path) -> UploadRejected:
    """The importer's messages with the temporary folder taken out of the file names."""
    found = error.problems if isinstance(error, InvalidFile) else (error,)
    return UploadRejected(
        [str(p).replace(f"{folder}/", "").replace(str(folder), "the upload") for p in found],
        stopped=isinstance(error, InvalidFile) and error.stopped,
    )


@contextmanager
def upload_folder(root: Path | None = None) -> Iterator[Path]:
    """A new empty folder under ``<data dir>/uploads/``, removed when the block ends."""
    folder = (root or data_dir()) / "uploads" / f"upload-{uuid.uuid4().hex}"
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def safe_file_name(name: str) -> str:
    """The last part of an uploaded file's name, reduced to safe characters."""
    base = PurePosixPath(name.replace("\\", "/")).name
    cleaned = _SAFE_NAME.sub("_", base).lstrip(".")
    return cleaned or "upload"


def save_upload(data: bytes, name: str, folder: Path) -> Path:
    """Write an uploaded file into ``folder`` under its safe name."""
    target = folder / safe_file_name(name)
    target.write_bytes(data)
    return target


def extract_zip(
    archive: BinaryIO | Path,
    destination: Path,
    *,
    max_files: int = MAX_ZIP_FILES,
    max_bytes: int = MAX_ZIP_BYTES,
) -> list[Path]:
    """Unpack ``archive`` into ``destination`` after checking every entry; return the files.

    Raises :class:`UnsafeUpload` naming the first offending entry; nothing is unpacked then.
    """
    try:
        zip_file = zipfile.ZipFile(archive)
    except zipfile.BadZipFile:
        raise UnsafeUpload("the upload is not a valid zip file: re-create it with zip") from None
    with zip_file:
        entries = zip_file.infolist()
        if len(entries) > max_files:
            raise UnsafeUpload(
                f"the zip has {len(entries):,} entries; at most {max_files:,} are accepted: "
                "split it into smaller uploads or use the command line"
            )
        declared = sum(entry.file_size for entry in entries)
        if declared > max_bytes:
            raise UnsafeUpload(_too_large(declared, max_bytes))
        root = destination.resolve()
        targets = [(entry, _target(entry, root)) for entry in entries]
        _check_files_and_folders(entries)
        written: list[Path] = []
        total = 0
        for entry, target in targets:
            try:
                if entry.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                total += _copy_entry(zip_file, entry, target, max_bytes - total)
            except OSError as error:  # a limit of this file system the checks above missed
                raise UnsafeUpload(
                    f"zip entry {entry.filename!r} cannot be unpacked here "
                    f"({error.strerror or error}): rename it"
                ) from None
            written.append(target)
    return written


def _check_files_and_folders(entries: list[zipfile.ZipInfo]) -> None:
    """Refuse a name that is both a file and a folder (``images`` and ``images/1.png``): the
    file system holds one of them only."""
    files: set[str] = set()
    folders: set[str] = set()
    for entry in entries:
        parts = PurePosixPath(entry.filename.replace("\\", "/")).parts
        (folders if entry.is_dir() else files).add("/".join(parts))
        folders.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
    both = sorted(files & folders)
    if both:
        raise UnsafeUpload(
            f"zip entry {both[0]!r} is both a file and a folder in the zip: rename one of them"
        )


def _copy_entry(
    zip_file: zipfile.ZipFile, entry: zipfile.ZipInfo, target: Path, budget: int
) -> int:
    copied = 0
    try:
        with zip_file.open(entry) as source, target.open("wb") as sink:
            while chunk := source.read(_CHUNK):
                copied += len(chunk)
                if copied > budget:
                    raise UnsafeUpload(_too_large(copied, budget))
                sink.write(chunk)
    except zipfile.BadZipFile as error:
        raise UnsafeUpload(
            f"zip entry {entry.filename!r} is damaged ({error}): re-create the zip"
        ) from None
    return copied


def _target(entry: zipfile.ZipInfo, root: Path) -> Path:
    name = entry.filename
    normalised = name.replace("\\", "/")
    parts = PurePosixPath(normalised).parts
    if len(parts) - 1 > MAX_ZIP_DEPTH:
        raise UnsafeUpload(
            f"zip entry {name[:80]!r} (cut) is {len(parts) - 1:,} folders deep; at most "
            f"{MAX_ZIP_DEPTH} are accepted: flatten the folders"
        )
    longest = max(parts, key=lambda part: len(part.encode("utf-8")), default="")
    if len(longest.encode("utf-8")) > MAX_ZIP_NAME_BYTES:
        raise UnsafeUpload(
            f"zip entry {name[:80]!r} has a name of {len(longest.encode('utf-8')):,} characters; "
            f"at most {MAX_ZIP_NAME_BYTES} (bytes in UTF-8) fit a file system: shorten it"
        )
    if normalised.startswith("/") or re.match(r"^[A-Za-z]:", normalised):
        raise UnsafeUpload(f"zip entry {name!r} has an absolute name: store relative paths only")
    if ".." in PurePosixPath(normalised).parts:
        raise UnsafeUpload(f"zip entry {name!r} points outside the archive ('..'): remove it")
    if stat.S_ISLNK(entry.external_attr >> 16):
        raise UnsafeUpload(f"zip entry {name!r} is a symbolic link: store the file itself")
    target = (root / normalised).resolve()
    if not target.is_relative_to(root):
        raise UnsafeUpload(f"zip entry {name!r} points outside the archive: remove it")
    return target


def _too_large(size: int, limit: int) -> str:
    return (
        f"the zip unpacks to more than the {limit:,} bytes allowed ({size:,} at least): "
        "split it into smaller uploads or use the command line"
    )


def find_dataset_file(files: list[Path], folder: Path) -> Path:
    """The one dataset file (:data:`ZIP_DATASET_SUFFIXES`) of an unpacked zip (macOS
    ``__MACOSX`` copies ignored)."""
    candidates = [
        path
        for path in files
        if path.suffix.lower() in ZIP_DATASET_SUFFIXES
        and "__MACOSX" not in path.relative_to(folder).parts
    ]
    if len(candidates) != 1:
        found = ", ".join(str(path.relative_to(folder)) for path in candidates) or "none"
        raise UnsafeUpload(
            f"the zip must hold exactly one dataset file, {_ZIP_TYPES} (found: {found}); put "
            "the images beside it, named as the file names them"
        )
    return candidates[0]
