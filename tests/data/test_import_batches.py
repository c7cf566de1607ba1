"""Imports are checked and written a batch at a time (memory bounded by a batch, not the file):
the result is the same as one pass, and a problem anywhere leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from importing_fixtures import item_record, make_image, snapshot, write_jsonl
from sqlalchemy import insert, text
from sqlalchemy.engine import Engine
from sqlmodel import func, select

from data.io.importers import InvalidFile, import_jsonl
from data.io.importers import datasets as datasets_module
from data.storage.engine import data_dir, make_engine, session_scope, upgrade_database
from schemas.tables import Dataset, Item, Pair, Response


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datasets_module, "_BATCH_ROWS", 7)  # 3 rows per item: 3 items a batch


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    make_image(tmp_path / "incoming" / "images" / "cat.png")
    return tmp_path / "incoming"


def _counts(engine: Engine) -> tuple[int, int, int, int]:
    with session_scope(engine) as session:
        return tuple(  # type: ignore[return-value]
            session.exec(select(func.count()).select_from(table)).one()
            for table in (Dataset, Item, Response, Pair)
        )


@pytest.mark.usefixtures("small_batches")
def test_a_file_of_many_batches_imports_whole_and_reimports_unchanged(
    any_engine: Engine, folder: Path
) -> None:
    path = write_jsonl(folder / "many.jsonl", [item_record(n) for n in range(10)])
    with session_scope(any_engine) as session:
        summary = import_jsonl(session, path)
    assert (summary.items_added, summary.responses_added, summary.pairs_added) == (10, 20, 10)
    assert _counts(any_engine) == (1, 10, 20, 10)
    with session_scope(any_engine) as session:
        again = import_jsonl(session, path)
    assert (again.items_added, again.items_unchanged, again.responses_unchanged) == (0, 10, 20)
    assert _counts(any_engine) == (1, 10, 20, 10)


@pytest.mark.usefixtures("small_batches")
def test_a_bad_line_after_written_batches_leaves_nothing_even_if_the_caller_commits(
    any_engine: Engine, folder: Path
) -> None:
    """Batches before the bad line were written; the import's savepoint takes them back, so a
    caller that catches the error and commits its transaction still finds nothing imported."""
    bad = item_record(9)
    bad["responses"][0]["response_id"] = "item-9/m|0"  # a response id may not hold '|'
    path = write_jsonl(folder / "late.jsonl", [*(item_record(n) for n in range(9)), bad])
    before = snapshot(any_engine)
    # session_scope commits at the end of the block: the error is caught inside it
    with session_scope(any_engine) as session, pytest.raises(InvalidFile) as refused:
        import_jsonl(session, path)
    assert "late.jsonl:10" in str(refused.value)
    assert snapshot(any_engine) == before
    stored = (
        [path for path in data_dir().rglob("*") if path.is_file()] if data_dir().exists() else []
    )
    assert stored == []  # no image stored for a refused import


def test_the_sqlite_bulk_insert_stores_what_the_core_insert_stores(
    tmp_path: Path, folder: Path
) -> None:
    """Responses go to SQLite's executemany as tuples (JSON serialised by the importer): the
    stored text is byte for byte what SQLAlchemy's JSON type stores, and reads back the same."""
    engine = make_engine(f"sqlite:///{tmp_path / 'fast.db'}")
    upgrade_database(engine)
    record = item_record(0, image=None)
    record["responses"][0]["content"] = "naïve “quotes” \u2028 and a tab\t"
    record["responses"][0]["meta"] = {"b": [1, 2.5, None], "a": {"é": True}}
    with session_scope(engine) as session:
        import_jsonl(session, write_jsonl(folder / "fast.jsonl", [record]))
    with session_scope(engine) as session:
        stored = session.exec(select(Response).where(Response.response_id == "item-0/m0")).one()
        assert stored.content == record["responses"][0]["content"]
        assert stored.meta == record["responses"][0]["meta"]
        copy = {
            "response_id": "copy",
            "item_pk": stored.item_pk,
            "model": stored.model,
            "content": stored.content,
            "meta": stored.meta,
            "content_sha256": "x",
        }
        session.connection().execute(insert(Response.__table__), copy)  # type: ignore[attr-defined]
    with engine.connect() as connection:
        raw = {
            response_id: (content, meta)
            for response_id, content, meta in connection.execute(
                text("SELECT response_id, content, meta FROM response")
            )
        }
    engine.dispose()
    assert raw["item-0/m0"] == raw["copy"]
