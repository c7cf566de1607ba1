"""bench/pandalm.py: PandaLM's test set as one item per instruction + input, checked against the
raw file by an independent count, with stable ids, and imported by the product's own commands."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from typer.testing import CliRunner

from annotate_app.cli.main import app
from bench.pandalm import GPT_FILE, PANDALM_DIR, PANDALM_FILE, TESTSET, convert, write_files

runner = CliRunner()


def test_one_item_per_instruction_and_input_with_deduplicated_responses() -> None:
    raw = json.loads((PANDALM_DIR / TESTSET).read_text())
    conversion = convert()
    # independent count from the raw rows
    instructions = {(row["instruction"], row["input"]) for row in raw}
    responses = {
        (row["instruction"], row["input"], model, row[f"response{side}"])
        for row in raw
        for side, model in zip((1, 2), row["cmp_key"].split("_"), strict=True)
    }
    assert len(conversion.items) == len(instructions) == 170
    assert sum(len(item["responses"]) for item in conversion.items) == len(responses)
    assert sum(len(item["pairs"]) for item in conversion.items) == len(raw) == 999
    ids = [r["response_id"] for item in conversion.items for r in item["responses"]]
    assert len(ids) == len(set(ids))
    for item in conversion.items:
        own = {r["response_id"] for r in item["responses"]}
        assert all(a in own and b in own and a != b for a, b in item["pairs"])
    # every pair points at the texts and models of its PandaLM row, in PandaLM's order
    texts = {r["response_id"]: r for item in conversion.items for r in item["responses"]}
    for row in raw:
        a, b = conversion.pair_of_idx[row["idx"]]
        models = row["cmp_key"].split("_")
        for rid, side, model in ((a, "response1", models[0]), (b, "response2", models[1])):
            text = row[side] if isinstance(row[side], str) else json.dumps(row[side])
            assert (texts[rid]["content"], texts[rid]["model"]) == (text, model)
    assert len(conversion.humans) == 3 * 999
    gpt = conversion.judges["gpt-3.5-turbo"]
    assert sum(r["preference"] is None for r in gpt) == 25  # PandaLM's 'garbage' verdicts
    assert all(r["parse_status"] == "unparsed" for r in gpt if r["preference"] is None)


def test_ids_do_not_depend_on_the_order_of_the_rows(tmp_path: Path) -> None:
    shuffled = json.loads((PANDALM_DIR / TESTSET).read_text())
    random.Random(1).shuffle(shuffled)
    (tmp_path / TESTSET).write_text(json.dumps(shuffled))
    for name in (GPT_FILE, PANDALM_FILE):
        shutil.copy(PANDALM_DIR / name, tmp_path / name)
    first, second = convert(), convert(tmp_path)
    assert first.pair_of_idx == second.pair_of_idx
    assert {i["item_id"] for i in first.items} == {i["item_id"] for i in second.items}


def test_files_import_through_the_commands(tmp_path: Path) -> None:
    files = write_files(convert(), tmp_path)
    db = ["--db", f"sqlite:///{tmp_path / 'p.db'}"]
    steps = [
        ["import", "jsonl", str(files["dataset"])],
        ["judgments", "import", str(files["gpt-3.5-turbo"])],
        ["judgments", "import", str(files["pandalm-7b"])],
    ]
    outputs = []
    for step in steps:
        result = runner.invoke(app, [*db, *step])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert "170 items added" in outputs[0] and "999 pairs added" in outputs[0]
    assert "800 responses added" in outputs[0]
    again = runner.invoke(app, [*db, *steps[1]])
    assert again.exit_code == 0 and "0 judgements added" in again.output
