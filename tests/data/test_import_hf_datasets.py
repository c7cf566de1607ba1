"""``import jsonl`` reads a Hugging Face ``datasets`` folder (``save_to_disk``) and Parquet with
``Image`` columns: real ``datasets`` folders and files built here; images land in the store."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from importing_fixtures import snapshot
from PIL import Image
from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data.io.importers import InvalidRecord, import_jsonl
from data.io.importers.sources import file_kind
from data.storage.content import iter_images, resolve_image
from data.storage.engine import session_scope
from schemas.tables import Item, Pair, Response

FEATURES = datasets.Features(
    {
        "item_id": datasets.Value("string"),
        "benchmark": datasets.Value("string"),
        "task": datasets.Value("string"),
        "question": datasets.Value("string"),
        "reference": datasets.Value("string"),
        "images": datasets.List(datasets.Image()),
        "responses": datasets.List(
            {
                "response_id": datasets.Value("string"),
                "model": datasets.Value("string"),
                "content": datasets.Value("string"),
            }
        ),
        "pairs": datasets.List(datasets.List(datasets.Value("string"))),
    }
)


def _png(color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), color).save(buffer, format="PNG")
    return buffer.getvalue()


def _row(n: int, images: list[bytes]) -> dict[str, object]:
    return {
        "item_id": f"item-{n}", "benchmark": "alignmmbench", "task": "Description",
        "question": f"What is in picture {n}?", "reference": "a cat",
        "images": [{"bytes": data, "path": None} for data in images],
        "responses": [
            {"response_id": f"item-{n}/m{m}", "model": f"m{m}", "content": f"answer {m} to {n}"}
            for m in range(2)
        ],
        "pairs": [[f"item-{n}/m0", f"item-{n}/m1"]],
    }  # fmt: skip


def _dataset(rows: list[dict[str, object]]) -> datasets.Dataset:
    return datasets.Dataset.from_list(rows, features=FEATURES)


RED, BLUE = _png((200, 30, 30)), _png((30, 30, 200))


def _write(dataset: datasets.Dataset, tmp_path: Path, form: str) -> Path:
    if form == "folder":
        dataset.save_to_disk(str(tmp_path / "critic_data"))
        return tmp_path / "critic_data"
    dataset.to_parquet(str(tmp_path / "critic_data.parquet"))
    return tmp_path / "critic_data.parquet"


@pytest.mark.parametrize("form", ["folder", "parquet"])
def test_image_columns_become_stored_image_segments(
    engine: Engine, tmp_path: Path, form: str
) -> None:
    path = _write(_dataset([_row(0, [RED, BLUE]), _row(1, [RED]), _row(2, [])]), tmp_path, form)
    assert file_kind(path) == ("datasets" if form == "folder" else "parquet")
    with session_scope(engine) as session:
        summary = import_jsonl(session, path, dataset="hf")
    assert (summary.items_added, summary.responses_added, summary.pairs_added) == (3, 6, 3)
    assert summary.images_stored == 2  # RED twice, stored once
    with session_scope(engine) as session:
        items = {item.item_id: item for item in session.exec(select(Item)).all()}
        first = items["item-0"].question
        assert [segment["type"] for segment in first] == ["image", "image", "text"]
        assert first[2]["text"] == "What is in picture 0?"
        for segment, data in zip(first[:2], [RED, BLUE], strict=True):
            digest = hashlib.sha256(data).hexdigest()
            assert segment["image"] == f"images/{digest[:2]}/{digest}.png"
            assert resolve_image(segment["image"]).read_bytes() == data
        assert iter_images(items["item-1"].question) == [first[0]["image"]]
        assert items["item-2"].question == [{"type": "text", "text": "What is in picture 2?"}]
        assert len(session.exec(select(Response)).all()) == 6
        assert len(session.exec(select(Pair)).all()) == 3


@pytest.mark.parametrize("form", ["folder", "parquet"])
def test_bad_rows_name_the_row_and_field_and_nothing_is_stored(
    engine: Engine, tmp_path: Path, form: str
) -> None:
    no_id = _row(1, [RED]) | {"item_id": None}
    rows = [_row(0, [RED]), no_id, _row(2, [b"not an image at all"])]
    path = _write(_dataset(rows), tmp_path, form)
    before = snapshot(engine)
    with pytest.raises(InvalidRecord) as raised, session_scope(engine) as session:
        import_jsonl(session, path, dataset="hf")
    report = str(raised.value)
    assert f"{path}:row 2" in report and "item_id" in report
    assert f"{path}:row 3" in report and "question[0].image" in report
    assert "Pillow cannot read" in report
    assert snapshot(engine) == before


def test_a_dataset_dict_folder_asks_for_one_split(tmp_path: Path) -> None:
    datasets.DatasetDict({"train": _dataset([_row(0, [RED])])}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(InvalidRecord, match="give one split's folder, e.g. .*dd/train"):
        file_kind(tmp_path / "dd")


def test_import_jsonl_command_takes_the_folder(engine: Engine, tmp_path: Path) -> None:
    path = _write(_dataset([_row(0, [RED])]), tmp_path, "folder")
    db = ["--db", engine.url.render_as_string(hide_password=False)]
    result = CliRunner().invoke(app, [*db, "import", "jsonl", str(path), "--dataset", "hf"])
    assert result.exit_code == 0, result.output
    with session_scope(engine) as session:
        assert len(session.exec(select(Item)).all()) == 1


def test_an_image_given_by_path_is_read_under_the_images_root(
    engine: Engine, tmp_path: Path
) -> None:
    (tmp_path / "pictures").mkdir()
    (tmp_path / "pictures" / "cat.png").write_bytes(RED)
    row = _row(0, []) | {"images": [{"bytes": None, "path": "pictures/cat.png"}]}
    table = _dataset([row]).with_format("arrow")[:]
    assert table.column("images").to_pylist() == [[{"bytes": None, "path": "pictures/cat.png"}]]
    pq.write_table(table, tmp_path / "by_path.parquet")
    with session_scope(engine) as session:
        import_jsonl(session, tmp_path / "by_path.parquet", dataset="hf", images_root=tmp_path)
    digest = hashlib.sha256(RED).hexdigest()
    with session_scope(engine) as session:
        item = session.exec(select(Item)).one()
        assert item.question[0] == {
            "type": "image", "image": f"images/{digest[:2]}/{digest}.png",
            "source": "pictures/cat.png",
        }  # fmt: skip
