"""``import jsonl``: validated, atomic, idempotent; images checked and content-addressed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from importing_fixtures import item_record, make_image, snapshot, write_jsonl
from sqlalchemy.engine import Engine
from sqlmodel import select

from annotate_app.cli.context import cli_flag
from data.io.importers import InvalidRecord, MissingImages, import_jsonl
from data.storage.content import iter_images, resolve_image
from data.storage.engine import data_dir, session_scope
from schemas.tables import Dataset, Item, Pair, Response


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "incoming"
    make_image(root / "images" / "cat.png")
    return root


def _import(engine: Engine, path: Path, **options: object):  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        return import_jsonl(session, path, **options)  # type: ignore[arg-type]


def test_import_stores_items_responses_pairs_and_content_addressed_images(
    any_engine: Engine, folder: Path
) -> None:
    engine = any_engine
    record = item_record(0)
    record["extra_field"] = {"kept": True}
    path = write_jsonl(folder / "data.jsonl", [record, item_record(1)])
    summary = _import(engine, path)
    assert (summary.items_added, summary.responses_added, summary.pairs_added) == (2, 4, 2)
    assert summary.images_stored == 1
    digest = hashlib.sha256((folder / "images" / "cat.png").read_bytes()).hexdigest()
    with session_scope(engine) as session:
        dataset = session.exec(select(Dataset)).one()
        item = session.exec(select(Item).where(Item.item_id == "item-0")).one()
        assert (dataset.name, dataset.benchmark) == ("data", "alignmmbench")
        assert (item.task, item.category, item.group) == (
            "Description", "Perception & Understanding", "g0",
        )  # fmt: skip
        assert item.meta == {"extra_field": {"kept": True}}
        assert item.question[0] == {
            "type": "image", "image": f"images/{digest[:2]}/{digest}.png",
            "source": "images/cat.png",
        }  # fmt: skip
        stored = resolve_image(iter_images(item.question)[0])
        assert stored == data_dir() / "images" / digest[:2] / f"{digest}.png"
        assert stored.read_bytes() == (folder / "images" / "cat.png").read_bytes()
        assert len(session.exec(select(Response)).all()) == 4
        assert len(session.exec(select(Pair).where(Pair.source == "import")).all()) == 2


def test_reimport_is_idempotent_and_changes_need_update(any_engine: Engine, folder: Path) -> None:
    engine = any_engine
    path = write_jsonl(folder / "data.jsonl", [item_record(0), item_record(1)])
    _import(engine, path)
    before = snapshot(engine)
    again = _import(engine, path)
    assert (again.items_added, again.items_unchanged, again.responses_unchanged) == (0, 2, 4)
    after = snapshot(engine)
    assert {t: rows for t, rows in after.items() if t != "audit_event"} == {
        t: rows for t, rows in before.items() if t != "audit_event"
    }
    changed = item_record(1)
    changed["responses"][0]["content"] = "a better answer"
    write_jsonl(path, [item_record(0), changed])
    before = snapshot(engine)
    with pytest.raises(InvalidRecord) as error:
        _import(engine, path)
    assert str(error.value) == (
        f"{path}:2: response 'item-1/m0' is already stored with different content: import "
        "with update to replace it, or give it a new response_id"
    )
    assert error.value.render(cli_flag) == str(error.value).replace(" update ", " --update ")
    assert snapshot(engine) == before
    updated = _import(engine, path, update=True)
    assert (updated.responses_updated, updated.responses_unchanged) == (1, 3)
    with session_scope(engine) as session:
        response = session.exec(select(Response).where(Response.response_id == "item-1/m0")).one()
        assert response.content == "a better answer"


def _bad_cases(folder: Path) -> list[tuple[str, object, str]]:
    """(name, line 2 of the file, the exact error after 'FILE:2: ')."""
    (folder / "images" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    outside = make_image(folder.parent / "outside.png")
    os.symlink(outside, folder / "images" / "link.png")
    root = str(folder)

    def with_image(path: str) -> dict[str, object]:
        return item_record(1, image=path)

    wrong_type = item_record(1)
    wrong_type["item_id"] = 17
    unknown_task = item_record(1)
    unknown_task["task"] = "Poetry"
    unknown_benchmark = item_record(1)
    unknown_benchmark["benchmark"] = "mmbench"
    duplicate_item = item_record(0)
    duplicate_response = item_record(1)
    duplicate_response["responses"][0]["response_id"] = "item-0/m0"
    duplicate_response["pairs"] = []
    bad_pair = item_record(1)
    bad_pair["pairs"] = [["item-1/m0", "item-9/m1"]]
    return [
        ("malformed JSON", '{"item_id": "x",', "not valid JSON (Expecting property name enclosed "
         "in double quotes at column 17): fix the line"),
        ("wrong type", wrong_type, "`item_id` is 17 (int), but it must be a non-empty string"),
        ("unknown task", unknown_task, "`task` is 'Poetry', which is not an AlignMMBench task "
         "(Description, Recognition, Counting, OCR, Meme, Knowledge, Reasoning, Chart, Problem, "
         "Comparison, Writing, Coherence, Incoherence): fix the line or import it as "
         '"benchmark": "generic"'),
        ("unknown benchmark", unknown_benchmark, "`benchmark` is 'mmbench', which is unknown: "
         "use one of alignmmbench, mmie, generic"),
        ("duplicate item id", duplicate_item, "duplicate item_id 'item-0' (also at 1): item ids "
         "are unique within a dataset"),
        ("duplicate response id", duplicate_response, "duplicate response_id 'item-0/m0' (also "
         "at 1): response ids are unique"),
        ("pair outside the item", bad_pair, "`pairs[0]` names 'item-9/m1', which is not a "
         "response of this item: pairs compare two of the item's own responses"),
        ("corrupt image", with_image("images/broken.png"), "`question[0].image` names "
         "images/broken.png, which Pillow cannot read as an image (UnidentifiedImageError: "
         f"cannot identify image file '{folder / 'images' / 'broken.png'}'): replace the file"),
        ("path escaping the root", with_image("../outside.png"), "`question[0].image` path "
         f"../outside.png leads outside the image root {root}: keep images inside it or give "
         "images root"),
        ("symlink escaping the root", with_image("images/link.png"), "`question[0].image` path "
         f"images/link.png leads outside the image root {root}: keep images inside it or give "
         "images root"),
        ("absolute path", with_image(str(outside)), f"`question[0].image` is an absolute path "
         f"({outside}); image paths are relative to {root}: make it relative; keep images "
         "inside it or give images root"),
        ("URL", with_image("https://example.com/cat.png"), "`question[0].image` is a URL "
         "(https://example.com/cat.png); CritiqueLab does not download images: save the file "
         f"under {root} and give its relative path"),
        ("missing image", with_image("images/dog.png"), "`question[0].image` images/dog.png not "
         "found: 1 image reference(s) to 1 file(s) are missing; they were looked for under "
         f"{root}. Give images root where the images are, or import the text alone with "
         "allow missing images"),
    ]  # fmt: skip


def test_every_bad_record_is_refused_with_its_line_and_field_and_nothing_changes(
    any_engine: Engine, folder: Path
) -> None:
    engine = any_engine
    _import(engine, write_jsonl(folder / "first.jsonl", [item_record(5)]))
    for name, bad_line, message in _bad_cases(folder):
        path = write_jsonl(folder / "data.jsonl", [item_record(0), bad_line, item_record(2)])
        before = snapshot(engine)
        stored_before = sorted((data_dir() / "images").rglob("*"))
        with pytest.raises(InvalidRecord) as error:
            _import(engine, path)
        assert str(error.value) == f"{path}:2: {message}", name
        assert snapshot(engine) == before, name
        assert sorted((data_dir() / "images").rglob("*")) == stored_before, name


def test_missing_images_can_be_allowed_and_are_marked(engine: Engine, folder: Path) -> None:
    path = write_jsonl(folder / "data.jsonl", [item_record(0, image="images/dog.png")])
    with pytest.raises(MissingImages):
        _import(engine, path)
    summary = _import(engine, path, allow_missing_images=True)
    assert summary.images_missing == 1
    with session_scope(engine) as session:
        item = session.exec(select(Item)).one()
    assert item.question[0] == {
        "type": "image", "image": None, "source": "images/dog.png", "missing": True,
    }  # fmt: skip
    assert iter_images(item.question) == []


def test_images_root_option_and_bomb_guard(
    engine: Engine, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "pictures"
    make_image(elsewhere / "images" / "cat.png", color=(1, 2, 3))
    path = write_jsonl(folder / "data.jsonl", [item_record(0)])
    monkeypatch.setattr("data.storage.content.MAX_IMAGE_PIXELS", 40)
    with pytest.raises(InvalidRecord) as error:
        _import(engine, path, images_root=elsewhere)
    assert str(error.value) == (
        f"{path}:1: `question[0].image` names images/cat.png with 48 pixels, over the 40 limit: "
        "shrink the image"
    )
    monkeypatch.undo()
    assert _import(engine, path, images_root=elsewhere).images_stored == 1


def test_unknown_keys_are_kept_in_meta(engine: Engine, folder: Path) -> None:
    record = item_record(0)
    record["meta"] = {"source": "survey"}
    record["responses"][0]["temperature"] = 0.7
    _import(engine, write_jsonl(folder / "d.jsonl", [record]), dataset="named")
    with session_scope(engine) as session:
        response = session.exec(select(Response).where(Response.response_id == "item-0/m0")).one()
        item = session.exec(select(Item)).one()
        dataset = session.exec(select(Dataset)).one()
    assert (response.meta, item.meta, dataset.name) == ({"temperature": 0.7}, {"source": "survey"},
                                                       "named")  # fmt: skip
    assert json.dumps(item.question)  # stored CONTENT is plain JSON


@pytest.mark.parametrize("name", ["named\u202e", " named", "n" * 513])
def test_a_dataset_name_follows_the_id_rule(engine: Engine, folder: Path, name: str) -> None:
    path = write_jsonl(folder / "d.jsonl", [item_record(0)])
    with pytest.raises(InvalidRecord, match="the dataset name .* (holds|starts|has 513)"):
        _import(engine, path, dataset=name)
    with session_scope(engine) as session:
        assert session.exec(select(Dataset)).all() == []
