"""Helpers for the importer and exporter tests: tiny images, files, database snapshots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image
from sqlalchemy import text
from sqlalchemy.engine import Engine

SNAPSHOT_TABLES = ("dataset", "item", "response", "pair", "judgement", "audit_event", "unit")


def make_image(path: Path, color: tuple[int, int, int] = (200, 30, 30), fmt: str = "PNG") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 6), color).save(path, format=fmt)
    return path


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text(
        "".join(
            (r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records
        ),
        encoding="utf-8",
    )
    return path


def snapshot(engine: Engine) -> dict[str, list[str]]:
    """Every row of the tables an import may touch, as text (to compare before and after)."""
    with engine.connect() as connection:
        return {
            table: sorted(
                repr(tuple(row)) for row in connection.execute(text(f"SELECT * FROM {table}"))
            )
            for table in SNAPSHOT_TABLES
        }


def item_record(n: int, *, image: str | None = "images/cat.png", models: int = 2) -> dict[str, Any]:
    """A valid §1 record: an AlignMMBench item with ``models`` responses and one pair."""
    question: Any = [{"type": "text", "text": f"What is in picture {n}?"}]
    if image is not None:
        question.insert(0, {"type": "image", "image": image})
    responses = [
        {"response_id": f"item-{n}/m{m}", "model": f"m{m}", "content": f"answer {m} to {n}"}
        for m in range(models)
    ]
    return {
        "item_id": f"item-{n}", "benchmark": "alignmmbench", "task": "Description",
        "group": f"g{n // 2}", "question": question, "reference": "a cat",
        "responses": responses, "pairs": [[f"item-{n}/m0", f"item-{n}/m1"]] if models > 1 else [],
    }  # fmt: skip
