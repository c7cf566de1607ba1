"""Judge the eval split of a training file and compute the critic's agreement with the humans.

Each eval unit is judged once (per-annotator files repeat a unit per annotator), with the prompt
stored in the file. The judgements and the human labels kept in ``meta.labels`` form a judgement
frame (:data:`schemas.records.JUDGEMENT_FRAME_COLUMNS`); :func:`calibration.calibrate` turns it
into the METRICS.md report, with adjudicated labels as reference overrides.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pandas as pd

from calibration import CalibrationOptions, calibrate
from calibration.result import CalibrationResult
from critic.judge_prompt import JudgePrompt
from critic.local import GenerationOptions, generate
from critic.modeling import LoadedModel
from critic.parsing import parse_judgement
from critic.sft import SftRecord
from schemas.protocols import Protocol, get_protocol, to_canonical

CRITIC_RATER = "critic"
"""Name of the trained critic in its own calibration report."""


@dataclass(frozen=True)
class EvalSummary:
    """The eval split as judged by the critic."""

    n_units: int
    statuses: dict[str, int]
    report: CalibrationResult
    """The calibration of the critic on the eval split (``judges["critic"]``)."""
    seconds: float


def protocol_of(meta: dict[str, Any]) -> Protocol:
    """The protocol named in a training record's meta (with its scale for ``score``)."""
    scale = meta.get("scale") or [None, None, None]
    return get_protocol(
        str(meta.get("protocol")), scale_min=scale[0], scale_max=scale[1], step=scale[2]
    )


def evaluate_records(
    loaded: LoadedModel,
    records: list[SftRecord],
    *,
    max_new_tokens: int = 256,
    batch_size: int = 8,
    bootstrap: int = 1000,
    limit: int | None = None,
) -> EvalSummary:
    """Judge each eval unit once with ``loaded`` and calibrate it against the human labels
    (only the first ``limit`` units when given)."""
    started = time.perf_counter()
    protocol = protocol_of(records[0].meta)
    by_unit: dict[str, SftRecord] = {}
    for record in records:
        if limit is None or len(by_unit) < limit or str(record.meta.get("unit_key")) in by_unit:
            by_unit.setdefault(str(record.meta.get("unit_key")), record)
    prompts = [
        JudgePrompt(record.messages[:-1], record.images, str(record.meta.get("prompt_id")), "")
        for record in by_unit.values()
    ]
    options = GenerationOptions(max_new_tokens=max_new_tokens, batch_size=batch_size)
    outputs = [answers[0] for answers in generate(loaded, prompts, options)]
    rows: list[dict[str, Any]] = []
    overrides: dict[str, object] = {}
    statuses: dict[str, int] = {}
    for (unit, record), output in zip(by_unit.items(), outputs, strict=True):
        parsed = parse_judgement(output, protocol)
        statuses[parsed.status] = statuses.get(parsed.status, 0) + 1
        swapped = record.meta.get("shown") not in (None, record.meta.get("pair"))
        value: object = parsed.value
        if not protocol.is_pointwise and parsed.value is not None:
            value = to_canonical(str(parsed.value), swapped=swapped)
        order = "BA" if swapped else "AB"
        rows.append(
            _row(record, unit, CRITIC_RATER, "model", value, order, parsed.status, parsed.rationale)
        )
        labels = record.meta.get("labels") or {"reference": record.meta.get("label")}
        for annotator, label in labels.items():
            if label is not None:
                rows.append(
                    _row(record, unit, f"annotator:{annotator}", "human", label, "AB", "ok", "")
                )
        if record.meta.get("label_source") == "adjudicated":
            overrides[unit] = record.meta["label"]
    frame = pd.DataFrame(rows)
    report = calibrate(
        frame, CalibrationOptions(protocol=protocol, bootstrap=bootstrap), overrides=overrides
    )
    return EvalSummary(len(by_unit), statuses, report.result, time.perf_counter() - started)


def _row(
    record: SftRecord,
    unit: str,
    rater: str,
    kind: str,
    value: object,
    shown_order: str,
    parse_status: str,
    rationale: str,
) -> dict[str, Any]:
    meta = record.meta
    return {
        "unit": unit,
        "rater": rater,
        "kind": kind,
        "value": value,
        "shown_order": shown_order,
        "parse_status": parse_status,
        "item_id": meta.get("item_id"),
        "task": meta.get("task"),
        "category": meta.get("category"),
        "group": None,
        "model": meta.get("model"),
        "rationale": rationale,
        "expected_score": float("nan"),
    }
