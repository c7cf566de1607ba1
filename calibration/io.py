"""File mode: judgement files (FORMATS.md §3) and a dataset file (§1) into the judgement frame.

No database is involved. Every bad line is an error naming the file, the line, the field and the
fix; nothing is clamped or skipped silently.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from calibration.errors import CalibrationInputError
from schemas.protocols import InvalidJudgement, Protocol
from schemas.records import JUDGEMENT_FRAME_COLUMNS, JudgementRecord

_RESERVED = set(JUDGEMENT_FRAME_COLUMNS) | {"code", "unit_index"}


def read_judgement_frame(
    judgement_files: Iterable[Path], protocol: Protocol, dataset: Path | None = None
) -> tuple[pd.DataFrame, str]:
    """The judgement frame of the files, with item metadata from ``dataset``; and a data hash.

    The hash is the SHA-256 of the files' bytes in the order given (dataset last).
    """
    digest = hashlib.sha256()
    rows: list[dict] = []
    for path in judgement_files:
        path = Path(path)
        digest.update(_read_bytes(path))
        rows.extend(_frame_row(record, protocol, path, line) for line, record in _records(path))
    if not rows:
        raise CalibrationInputError("the judgement files hold no judgements")
    frame = pd.DataFrame(rows)
    if dataset is not None:
        digest.update(_read_bytes(Path(dataset)))
        frame = _with_metadata(frame, read_response_metadata(Path(dataset)))
    return frame.drop(columns="response_id"), digest.hexdigest()


def read_response_metadata(path: Path) -> pd.DataFrame:
    """One row per response of a dataset file: response_id, item_id, task, category, group,
    model and the scalar keys of the item's and the response's ``meta``."""
    rows = []
    for line, item in _json_lines(path):
        for field in ("item_id", "responses"):
            if field not in item:
                raise CalibrationInputError(f"{path}:{line}: field `{field}` is missing")
        base = {
            "item_id": str(item["item_id"]),
            "task": item.get("task"),
            "category": item.get("category"),
            "group": item.get("group"),
        }
        base |= _scalars(item.get("meta") or {})
        for response in item["responses"]:
            if "response_id" not in response:
                raise CalibrationInputError(f"{path}:{line}: a response lacks `response_id`")
            entry = base | _scalars(response.get("meta") or {})
            entry |= {"response_id": str(response["response_id"]), "model": response.get("model")}
            rows.append(entry)
    return pd.DataFrame(rows)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise CalibrationInputError(f"{path}: cannot read it ({error.strerror})") from None


def _json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    text = _read_bytes(path).decode("utf-8", errors="strict")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise CalibrationInputError(
                f"{path}:{number}: not valid JSON ({error.msg}); each line must be one object"
            ) from None
        if not isinstance(value, dict):
            raise CalibrationInputError(f"{path}:{number}: a line must be a JSON object")
        yield number, value


def _records(path: Path) -> Iterator[tuple[int, JudgementRecord]]:
    for number, value in _json_lines(path):
        try:
            yield number, JudgementRecord.model_validate(value)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "line"
            raise CalibrationInputError(
                f"{path}:{number}: field `{field}`: {first['msg']} (see FORMATS.md §3)"
            ) from None


def _frame_row(record: JudgementRecord, protocol: Protocol, path: Path, line: int) -> dict:
    where = f"{path}:{line}"
    expected = protocol.name
    if record.protocol != expected and not (protocol.name == "score" and record.protocol):
        raise CalibrationInputError(
            f"{where}: protocol is {record.protocol!r} but --protocol is {expected!r}; "
            "calibrate one protocol at a time"
        )
    try:
        if protocol.is_pointwise:
            if record.response_id is None:
                raise CalibrationInputError(f"{where}: field `response_id` is missing")
            unit = f"r:{record.response_id}"
            value = (
                None
                if record.score is None
                else protocol.validate_score(record.score, field_name="score")
            )
            shown_order = "AB"
        else:
            if record.pair is None:
                raise CalibrationInputError(f"{where}: field `pair` is missing")
            unit = f"p:{record.pair[0]}|{record.pair[1]}"
            value = record.preference
            shown = record.shown or record.pair
            shown_order = "AB" if tuple(shown) == tuple(record.pair) else "BA"
    except InvalidJudgement as error:
        raise CalibrationInputError(
            f"{where}: {error}; fix the line or choose --protocol score --scale MIN:MAX[:STEP]"
        ) from None
    status = record.parse_status or ("ok" if value is not None else "unparsed")
    return {
        "unit": unit,
        "rater": record.judge,
        "kind": record.judge_kind,
        "value": value,
        "shown_order": shown_order,
        "parse_status": status,
        "rationale": record.rationale,
        "expected_score": record.expected_score,
        "response_id": record.response_id or (record.pair[0] if record.pair else None),
    }


def _with_metadata(frame: pd.DataFrame, metadata: pd.DataFrame) -> pd.DataFrame:
    if metadata.empty:
        return frame
    merged = frame.merge(metadata.drop_duplicates("response_id"), on="response_id", how="left")
    merged.loc[merged["unit"].str.startswith("p:"), "model"] = None  # a pair has two models
    return merged


def _scalars(meta: dict) -> dict:
    return {
        str(key): value
        for key, value in meta.items()
        if isinstance(value, str | int | float | bool) and str(key) not in _RESERVED
    }
