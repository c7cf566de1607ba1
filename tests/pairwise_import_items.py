"""The items and labels of the ``annotations import`` tests, in one place: generic questions with
two model answers each and the pair between them, and raters' preferences on those pairs."""

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


def pairwise_labels(count: int, raters: int = 3) -> list[dict]:
    """Preferences of external raters ``ext0``, ``ext1``, … on the pairs of
    :func:`pairwise_items` (``count`` items), alternating A and B by item and rater."""
    return [
        {
            "judge": f"annotator:ext{rater}",
            "judge_kind": "human",
            "protocol": "pairwise",
            "pair": [f"q{i}/a", f"q{i}/b"],
            "preference": "AB"[(i + rater) % 2],
            "rationale": f"rater {rater} on item {i}",
        }
        for i in range(count)
        for rater in range(raters)
    ]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """``records`` written to ``path``, one JSON object a line."""
    path.write_text("".join(json.dumps(record) + "\n" for record in records), "utf-8")
    return path
