"""Round trip: import a dataset, export it, import the export elsewhere — the same records."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from importing_fixtures import item_record, make_image, write_jsonl
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from data.io.exporters import export_dataset
from data.io.importers import import_jsonl
from data.storage.engine import make_engine, session_scope, upgrade_database
from schemas.tables import Item, Pair, Response


def _records(session: Session) -> list[tuple[object, ...]]:
    items = [
        (i.item_id, i.benchmark, i.task, i.category, i.group, i.history, i.question, i.reference,
         i.meta, i.content_sha256)
        for i in session.exec(select(Item).order_by(Item.item_id))
    ]  # fmt: skip
    responses = [
        (r.response_id, r.model, r.content, r.meta, r.content_sha256)
        for r in session.exec(select(Response).order_by(Response.response_id))
    ]
    return [*items, *responses, len(session.exec(select(Pair)).all())]


def test_import_export_import_gives_the_same_records(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_image(tmp_path / "in" / "images" / "cat.png")
    make_image(tmp_path / "in" / "images" / "dog.png", color=(9, 9, 9))
    first = item_record(0)
    first["history"] = [{"role": "user", "content": [{"type": "image", "image": "images/dog.png"},
                                                     {"type": "text", "text": "and this?"}]},
                        {"role": "assistant", "content": "a dog"}]  # fmt: skip
    first["kept"] = "unknown key"
    second = item_record(1, image="images/missing.png")
    path = write_jsonl(tmp_path / "in" / "items.jsonl", [first, second])
    with session_scope(engine) as session:
        import_jsonl(session, path, dataset="d", allow_missing_images=True)
        original = _records(session)
        exported = export_dataset(session, "d", tmp_path / "out" / "d.jsonl")
    assert (exported.items, exported.responses, exported.pairs, exported.images) == (2, 4, 2, 2)
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "elsewhere-files"))
    other = make_engine(f"sqlite:///{tmp_path / 'elsewhere.db'}")
    upgrade_database(other)
    with session_scope(other) as session:
        summary = import_jsonl(session, tmp_path / "out" / "d.jsonl", dataset="d")
        assert _records(session) == original
        export_dataset(session, "d", tmp_path / "again" / "d.jsonl")
    assert summary.images_stored == 2 and summary.images_missing == 0
    assert (tmp_path / "again" / "d.jsonl").read_bytes() == (
        tmp_path / "out" / "d.jsonl"
    ).read_bytes()
    other.dispose()


def test_each_database_exports_the_images_of_its_own_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given with ``--db``, a SQLite file's images are in ``<stem>_files`` beside it, not in the
    default database's folder; an image gone from there leaves no export that names it."""
    monkeypatch.delenv("CRITIQUELAB_DATA_DIR", raising=False)
    monkeypatch.delenv("CRITIQUELAB_DB", raising=False)
    monkeypatch.chdir(tmp_path)  # the default database's folder: ./critiquelab_files
    make_image(tmp_path / "in" / "images" / "cat.png")
    path = write_jsonl(tmp_path / "in" / "items.jsonl", [item_record(0)])
    engine = make_engine(f"sqlite:///{tmp_path / 'own.db'}")
    upgrade_database(engine)
    with session_scope(engine) as session:
        import_jsonl(session, path, dataset="d")
        exported = export_dataset(session, "d", tmp_path / "out" / "d.jsonl")
    assert exported.images == 1 and not (tmp_path / "critiquelab_files").exists()
    umask = os.umask(0)
    os.umask(umask)
    # the mode any new file gets, not mkstemp's owner-only 0600
    assert stat.S_IMODE((tmp_path / "out" / "d.jsonl").stat().st_mode) == 0o666 & ~umask
    (stored,) = [p for p in (tmp_path / "own_files").rglob("*") if p.is_file()]
    (copied,) = [p for p in (tmp_path / "out").rglob("*") if p.is_file() and p.suffix != ".jsonl"]
    assert copied.read_bytes() == stored.read_bytes()
    shutil.rmtree(tmp_path / "own_files")
    with session_scope(engine) as session, pytest.raises(FileNotFoundError, match="data folder"):
        export_dataset(session, "d", tmp_path / "gone" / "d.jsonl")
    assert list((tmp_path / "gone").iterdir()) == []
    engine.dispose()
