"""Fixtures of the calibration tests: the PandaLM and HANNA data as judgement files / frames."""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.sample_template import SampleTemplate


@dataclass(frozen=True)
class SampleDatabase:
    """The bundled sample project in a fresh SQLite database."""

    url: str
    engine: Any
    summary: Any
    """What :func:`data.sample.build.build_sample_project` reports."""
    folder: Path


@contextmanager
def sample_database(folder: Path, template: SampleTemplate) -> Iterator[SampleDatabase]:
    """A copy of the sample project (finished campaigns with humans and judges) in ``folder``."""
    from data.storage.engine import make_engine

    template.copy_to(folder / "critiquelab.db", folder / "data")
    url = f"sqlite:///{folder / 'critiquelab.db'}"
    engine = make_engine(url)
    try:
        yield SampleDatabase(url, engine, template.summary, folder)
    finally:
        engine.dispose()


PANDALM_LABELS = {0: "tie", 1: "A", 2: "B"}
GPT_LABELS = {"1": "A", "2": "B", "Tie": "tie", "garbage": None}


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


@pytest.fixture(scope="session")
def pandalm_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "pandalm"


@pytest.fixture
def pandalm_files(pandalm_dir: Path, tmp_path: Path) -> dict[str, Path]:
    """PandaLM's test set as FORMATS.md §3 files: the 3 annotators, GPT-3.5 and PandaLM-7B.

    Pair (response1, response2) is the canonical order, shown as is; annotator and PandaLM
    labels 0/1/2 are tie/A/B; GPT-3.5's 'garbage' is an unparsed verdict (preference null).
    """
    items = json.loads((pandalm_dir / "testset-v1.json").read_text())
    gpt = json.loads((pandalm_dir / "gpt-3.5-turbo-testset-v1.json").read_text())
    pandalm = json.loads((pandalm_dir / "pandalm-7b-testset-v1.json").read_text())
    humans, gpt_rows, pandalm_rows = [], [], []
    for item, g, p in zip(items, gpt, pandalm, strict=True):
        assert item["idx"] == g["idx"] == p["idx"]
        pair = [f"{item['idx']}/1", f"{item['idx']}/2"]
        for k in (1, 2, 3):
            humans.append(
                {
                    "judge": f"annotator:{k}",
                    "judge_kind": "human",
                    "protocol": "pairwise",
                    "pair": pair,
                    "preference": PANDALM_LABELS[int(item[f"annotator{k}"])],
                }
            )
        status = "ok" if GPT_LABELS[g["gpt_result"]] else "unparsed"
        gpt_rows.append(
            {
                "judge": "gpt-3.5-turbo",
                "judge_kind": "model",
                "protocol": "pairwise",
                "pair": pair,
                "preference": GPT_LABELS[g["gpt_result"]],
                "rationale": g["gpt_reason"],
                "raw_output": g["gpt_result"],
                "parse_status": status,
            }
        )
        pandalm_rows.append(
            {
                "judge": "pandalm-7b",
                "judge_kind": "model",
                "protocol": "pairwise",
                "pair": pair,
                "preference": PANDALM_LABELS[int(p["pandalm_result"])],
                "rationale": p["pandalm_reason"],
                "parse_status": "ok",
            }
        )
    return {
        "humans": write_jsonl(tmp_path / "humans.jsonl", humans),
        "gpt": write_jsonl(tmp_path / "gpt.jsonl", gpt_rows),
        "pandalm": write_jsonl(tmp_path / "pandalm.jsonl", pandalm_rows),
    }


@pytest.fixture(scope="session")
def hanna(fixtures_dir: Path) -> pd.DataFrame:
    return pd.read_csv(fixtures_dir / "hanna" / "hanna_human_and_llm_scores_long.csv")


def majority(labels: list[str]) -> str:
    label, count = collections.Counter(labels).most_common(1)[0]
    return label if count * 2 > len(labels) else "tie"
