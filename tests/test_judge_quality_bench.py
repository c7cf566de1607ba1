"""bench/judge_quality.py's stacked judges ``head+no-lm`` (and ``head+no-lm+consensus``, the same
fit with features of its own) on hand-made data: fitted on the head's out-of-fold train
predictions only and written for every test pair the head judged."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from bench.judge_quality import LABELS, _head_with_shortcuts

MODELS = ("m1", "m2", "m3")


def _unit(item: int, n: int, split: str, label: str) -> tuple[str, dict[str, Any]]:
    """A pair whose responses' lengths and models say nothing about ``label``."""
    pair = [f"i{item}/r{n}a", f"i{item}/r{n}b"]
    responses = tuple(
        {"response_id": rid, "model": MODELS[(n + side) % 3], "content": "x" * (10 + side)}
        for side, rid in enumerate(pair)
    )
    unit = {"split": split, "item_id": f"i{item}", "pair": pair, "label": label,
            "responses": responses}  # fmt: skip
    return "p:" + "|".join(pair), unit


def _probs(label: str, swapped: bool = False, knows: bool = True) -> dict[str, float]:
    """The head is sure of ``label`` (in the shown order when ``swapped``), or knows nothing."""
    if not knows:
        return {k: 1 / 3 for k in LABELS}
    shown = {"A": "B", "B": "A", "tie": "tie"}[label] if swapped else label
    return {k: 0.8 if k == shown else 0.1 for k in LABELS}


def _world(
    tmp_path: Path, head_knows: bool
) -> tuple[dict[str, dict[str, Any]], Path, dict[tuple[str, ...], str]]:
    """120 train pairs of 20 items with the head's out-of-fold rows, 6 test pairs with the
    head's stored judgements; the test labels by pair."""
    rng = random.Random(0)
    units: dict[str, dict[str, Any]] = {}
    out_of_fold = []
    for item in range(20):
        for n in range(6):
            key, unit = _unit(item, n, "train", rng.choice(LABELS))
            units[key] = unit
            swapped = n % 2 == 1  # half the rows were shown the other way round
            shown = unit["pair"][::-1] if swapped else unit["pair"]
            out_of_fold.append({"unit_key": key, "item_id": unit["item_id"], "shown": shown,
                                "label": unit["label"],
                                "probs": _probs(unit["label"], swapped, head_knows)})  # fmt: skip
    (tmp_path / "head" / "final").mkdir(parents=True)
    (tmp_path / "head" / "final" / "head_cv.json").write_text(json.dumps(out_of_fold))
    exported = tmp_path / "judges.jsonl"
    expected = {}
    with exported.open("w") as out:
        for n, label in enumerate(["A", "B", "tie", "B", "A", "tie"]):
            key, unit = _unit(100, n, "eval", label)
            units[key] = unit
            expected[tuple(unit["pair"])] = label
            for judge in ("head-debiased", "head"):  # only the debiased read-out is stacked
                probs = _probs(label, knows=head_knows)
                record = {"judge": judge, "pair": unit["pair"], "meta": {"probs": probs}}
                out.write(json.dumps(record) + "\n")
    return units, exported, expected


def test_the_stacked_judge_follows_a_head_that_predicts_the_train_labels(tmp_path: Path) -> None:
    units, exported, expected = _world(tmp_path, head_knows=True)

    written = _head_with_shortcuts(units, tmp_path / "head", exported, tmp_path, seed=0)

    rows = [json.loads(line) for line in written.read_text().splitlines()]
    assert {row["judge"] for row in rows} == {"head+no-lm"}
    assert {tuple(row["pair"]): row["preference"] for row in rows} == expected
    assert all(math.isfinite(row["meta"]["C"]["logisticregression__C"]) for row in rows)


def test_extra_features_of_a_unit_enter_the_fit_beside_the_head(tmp_path: Path) -> None:
    """The head knows nothing here; a feature of each unit (as the peer consensus is) names the
    label, and the judge written under its own name follows it."""
    units, exported, expected = _world(tmp_path, head_knows=False)
    signal = {"A": [1.0, 0.0], "B": [0.0, 1.0], "tie": [0.0, 0.0]}

    written = _head_with_shortcuts(
        units, tmp_path / "head", exported, tmp_path, seed=0, name="with-extra",
        extra=lambda unit: signal[unit["label"]],
    )  # fmt: skip

    rows = [json.loads(line) for line in written.read_text().splitlines()]
    assert written.name == "with-extra.jsonl" and {row["judge"] for row in rows} == {"with-extra"}
    assert {tuple(row["pair"]): row["preference"] for row in rows} == expected
