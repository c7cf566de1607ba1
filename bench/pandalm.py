"""PandaLM's test set as CritiqueLab files: a FORMATS.md §1 dataset and §3 judgement files.

PandaLM (Wang et al., 2023, github.com/WeOpenML/PandaLM) ships ``testset-v1.json``: 999 pairs
``(instruction, input, response1, response2)`` with the models that wrote them (``cmp_key``
``m1_m2``) and three human labels (0 = tie, 1 = response1, 2 = response2), plus the verdicts of
GPT-3.5 (``"1"``, ``"2"``, ``"Tie"`` or ``"garbage"``) and PandaLM-7B (0 / 1 / 2) in files with
the same ``idx``.

The 999 pairs come from 170 instructions, and the same response text recurs across pairs, so
the dataset is built for a split by instruction:

* one **item** per distinct ``(instruction, input)``, ``item_id`` = ``pandalm-`` + the first 12
  hex digits of the sha256 of the two texts (stable whatever the file order);
* its **responses** de-duplicated by ``(model, text)``, ``response_id`` = ``<item_id>/<model>-``
  + 8 hex digits of the text's sha256 (two models that wrote the same text keep two responses);
* its **pairs** listed in PandaLM's order ``(response1, response2)``, the canonical order.

Judgement files: ``annotator1``–``annotator3`` (``judge_kind: human``), ``gpt-3.5-turbo``
(``garbage`` = an unparsed verdict, preference null) and ``pandalm-7b``; ``meta.idx`` keeps
PandaLM's row number.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PANDALM_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pandalm"
"""The vendored copy (Apache-2.0, see its LICENSE-NOTICE.md); scripts take another as argument."""
TESTSET = "testset-v1.json"
GPT_FILE = "gpt-3.5-turbo-testset-v1.json"
PANDALM_FILE = "pandalm-7b-testset-v1.json"
HUMAN_LABELS = {0: "tie", 1: "A", 2: "B"}
GPT_LABELS: dict[str, str | None] = {"1": "A", "2": "B", "Tie": "tie", "garbage": None}
ANNOTATORS = ("annotator1", "annotator2", "annotator3")


@dataclass
class PandaLMConversion:
    """The dataset records and the judgement records of one PandaLM test set."""

    items: list[dict[str, Any]]
    humans: list[dict[str, Any]]
    judges: dict[str, list[dict[str, Any]]]
    """Judge name → its model judgements (gpt-3.5-turbo, pandalm-7b)."""
    pair_of_idx: dict[int, tuple[str, str]] = field(default_factory=dict)
    """PandaLM ``idx`` → the pair's response ids (canonical order)."""


def item_id(instruction: str, text_input: str) -> str:
    """``pandalm-`` + 12 hex digits of sha256(instruction, NUL, input)."""
    digest = hashlib.sha256(f"{instruction}\0{text_input}".encode()).hexdigest()
    return f"pandalm-{digest[:12]}"


def response_id(item: str, model: str, text: str) -> str:
    """``<item>/<model>-`` + 8 hex digits of sha256(text)."""
    return f"{item}/{model}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def convert(folder: Path = PANDALM_DIR) -> PandaLMConversion:
    """Read PandaLM's three files from ``folder`` and build the CritiqueLab records."""
    rows = _load(folder / TESTSET)
    gpt = {int(row["idx"]): row for row in _load(folder / GPT_FILE)}
    pandalm = {int(row["idx"]): row for row in _load(folder / PANDALM_FILE)}
    items: dict[str, dict[str, Any]] = {}
    pair_of_idx: dict[int, tuple[str, str]] = {}
    for row in rows:
        key = item_id(row["instruction"], row["input"])
        item = items.setdefault(key, _new_item(key, row))
        models = str(row["cmp_key"]).split("_")
        if len(models) != 2:
            raise ValueError(f"idx {row['idx']}: cmp_key {row['cmp_key']!r} is not model1_model2")
        pair = tuple(
            _add_response(item, model, _text(row[f"response{side}"]))
            for side, model in zip((1, 2), models, strict=True)
        )
        item["pairs"].append(list(pair))
        item["meta"]["idx"].append(int(row["idx"]))
        pair_of_idx[int(row["idx"])] = pair  # type: ignore[assignment]
    humans = [
        _judgement(annotator, "human", pair_of_idx[int(row["idx"])], row["idx"],
                   HUMAN_LABELS[int(row[annotator])])
        for row in rows
        for annotator in ANNOTATORS
    ]  # fmt: skip
    judges = {
        "gpt-3.5-turbo": [_gpt_row(gpt[idx], pair) for idx, pair in pair_of_idx.items()],
        "pandalm-7b": [
            {
                **_judgement(
                    "pandalm-7b",
                    "model",
                    pair,
                    idx,
                    HUMAN_LABELS[int(pandalm[idx]["pandalm_result"])],
                ),
                "rationale": str(pandalm[idx]["pandalm_reason"]),
                "raw_output": str(pandalm[idx]["pandalm_result"]),
            }
            for idx, pair in pair_of_idx.items()
        ],
    }
    return PandaLMConversion(list(items.values()), humans, judges, pair_of_idx)


def write_jsonl(records: Iterable[dict[str, Any]], path: Path) -> Path:
    """Write ``records`` as JSON Lines (UTF-8)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def write_files(conversion: PandaLMConversion, folder: Path) -> dict[str, Path]:
    """``dataset.jsonl``, ``humans.jsonl`` and ``<judge>.jsonl`` in ``folder``."""
    paths = {
        "dataset": write_jsonl(conversion.items, folder / "dataset.jsonl"),
        "humans": write_jsonl(conversion.humans, folder / "humans.jsonl"),
    }
    for name, records in conversion.judges.items():
        paths[name] = write_jsonl(records, folder / f"{name}.jsonl")
    return paths


def _load(path: Path) -> list[dict[str, Any]]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(rows, list):
        raise ValueError(f"{path}: expected a JSON list of PandaLM rows")
    return rows


def _text(value: Any) -> str:
    """A response as text: six PandaLM responses are the JSON literal ``true``, kept as ``true``."""
    return value if isinstance(value, str) else json.dumps(value)


def _new_item(key: str, row: dict[str, Any]) -> dict[str, Any]:
    question = str(row["instruction"])
    if row["input"]:
        question += "\n\n" + str(row["input"])
    return {
        "item_id": key,
        "benchmark": "generic",
        "question": question,
        "responses": [],
        "pairs": [],
        "meta": {"source": "PandaLM testset-v1", "motivation_app": row["motivation_app"],
                 "idx": []},
    }  # fmt: skip


def _add_response(item: dict[str, Any], model: str, text: str) -> str:
    rid = response_id(item["item_id"], model, text)
    if all(response["response_id"] != rid for response in item["responses"]):
        item["responses"].append({"response_id": rid, "model": model, "content": text})
    return rid


def _judgement(
    judge: str, kind: str, pair: tuple[str, str], idx: Any, preference: str | None
) -> dict[str, Any]:
    return {
        "judge": judge,
        "judge_kind": kind,
        "protocol": "pairwise",
        "pair": list(pair),
        "preference": preference,
        "meta": {"idx": int(idx)},
    }


def _gpt_row(row: dict[str, Any], pair: tuple[str, str]) -> dict[str, Any]:
    verdict = str(row["gpt_result"])
    if verdict not in GPT_LABELS:
        raise ValueError(f"idx {row['idx']}: gpt_result {verdict!r} is not 1, 2, Tie or garbage")
    preference = GPT_LABELS[verdict]
    return {
        **_judgement("gpt-3.5-turbo", "model", pair, row["idx"], preference),
        "rationale": str(row["gpt_reason"]),
        "raw_output": verdict,
        "parse_status": "ok" if preference else "unparsed",
    }
