"""``import mmie``: interleaved entries grouped by id, category from the id prefix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from importing_fixtures import make_image, snapshot
from sqlalchemy.engine import Engine
from sqlmodel import select

from data.io.importers import InvalidRecord, import_mmie
from data.storage.engine import session_scope
from schemas.tables import Item, Response


def _entry(item_id: str, model: str, **changes: object) -> dict[str, object]:
    entry = {
        "id": item_id,
        "question": [{"text": "Plan a garden.", "image": None}, {"text": None, "image": "q.png"}],
        "answer": [{"text": "Step 1", "image": "a.png"}],
        "model": model,
        "gt_answer": [{"text": "A plan", "image": None}],
        "field": "art",
    }
    entry.update(changes)
    return entry


def _write(path: Path, entries: list[object]) -> Path:
    make_image(path.parent / "q.png")
    make_image(path.parent / "a.png", color=(0, 90, 0))
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def test_entries_with_one_id_are_one_item_with_several_responses(
    engine: Engine, tmp_path: Path
) -> None:
    path = _write(tmp_path / "mmie.json", [_entry("PBL_1", "anole"), _entry("PBL_1", "gill"),
                                            _entry("MSR_2", "anole")])  # fmt: skip
    with session_scope(engine) as session:
        summary = import_mmie(session, path)
    assert (summary.items_added, summary.responses_added, summary.images_stored) == (2, 3, 2)
    with session_scope(engine) as session:
        item = session.exec(select(Item).where(Item.item_id == "PBL_1")).one()
        responses = session.exec(select(Response).where(Response.item_pk == item.id)).all()
    assert (item.benchmark, item.category, item.meta) == ("mmie", "PBL", {"field": "art"})
    assert [segment["type"] for segment in item.question] == ["text", "image"]
    assert item.reference == [{"type": "text", "text": "A plan"}]
    assert sorted(r.response_id for r in responses) == ["PBL_1/anole", "PBL_1/gill"]
    assert responses[0].content[1]["source"] == "a.png"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([_entry("PBL_1", "anole"), _entry("XX_2", "anole")], "entry 2: `category` is None, but "
         "MMIE categories are SA, PBL, MSR (or an item id starting with one of them)"),
        ([_entry("PBL_1", "anole"), _entry("PBL_1", "gill", question="other")], "entry 2: entry "
         "2 has id 'PBL_1' like entry 1 but a different question or gt_answer: give it its own "
         "id"),
        ([_entry("SA_1", "anole"), _entry("SA_2", None)], "entry 2: `model` is None, but an "
         "answer needs the model's name"),
        ([_entry("SA_1", "anole", answer=[{"image": "../a.png"}])], "entry 1: "
         "`responses[0].content[0].image` path ../a.png leads outside the image root ROOT: keep "
         "images inside it or give images root"),
    ],
)  # fmt: skip
def test_errors_name_the_entry_and_write_nothing(
    engine: Engine, tmp_path: Path, entries: list[object], message: str
) -> None:
    path = _write(tmp_path / "data" / "mmie.json", entries)
    before = snapshot(engine)
    with pytest.raises(InvalidRecord) as error, session_scope(engine) as session:
        import_mmie(session, path)
    assert str(error.value) == f"{path}:" + message.replace("ROOT", str(path.parent))
    assert snapshot(engine) == before
