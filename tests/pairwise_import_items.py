"""The items of the ``annotations import`` tests, in one place: generic questions with two
model answers each and the pair between them, as a JSONL dataset file."""

from __future__ import annotations

import json
from pathlib import Path


def pairwise_items(count: int) -> list[dict]:
    """``count`` items ``q0``, ``q1``, …, each with answers ``q<i>/a`` (m1) and ``q<i>/b`` (m2)
    and the pair ``[q<i>/a, q<i>/b]``."""
    return [
        {
            "item_id": f"q{i}",
            "benchmark": "generic",
            "question": f"question {i}",
            "responses": [
                {"response_id": f"q{i}/a", "model": "m1", "content": f"answer a{i}"},
                {"response_id": f"q{i}/b", "model": "m2", "content": f"answer b{i}"},
            ],
            "pairs": [[f"q{i}/a", f"q{i}/b"]],
        }
        for i in range(count)
    ]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """``records`` written to ``path``, one JSON object a line."""
    path.write_text("".join(json.dumps(record) + "\n" for record in records), "utf-8")
    return path
