"""File mode, the pure part: judgement records into the judgement frame.

The files themselves are read by the data layer (``data.io.importers.reader``), with the same rules
as ``import`` and ``judgments import``; what arrives here are typed
:class:`~schemas.records.JudgementRecord` objects, each with the place it was read from. Every
record that does not fit the protocol is named (up to 50 at once); nothing is clamped or
skipped silently.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from calibration.errors import CalibrationInputError
from schemas.ids import pair_unit_key, response_unit_key
from schemas.protocols import InvalidJudgement, Protocol
from schemas.records import JudgementRecord

MAX_PROBLEMS = 50
"""Records named in one error before the rest are left out."""


def judgement_frame(
    records: Iterable[tuple[str, JudgementRecord]], protocol: Protocol
) -> pd.DataFrame:
    """The judgement frame (:data:`~schemas.records.JUDGEMENT_FRAME_COLUMNS`, plus
    ``response_id`` for :func:`with_response_metadata`) of ``(where, record)`` pairs.

    ``where`` (``file:line``) starts each error message. Raises
    :class:`~calibration.errors.CalibrationInputError` naming every record that is of another
    protocol or off the protocol's scale, one per line.
    """
    rows: list[dict[str, object]] = []
    problems: list[str] = []
    for where, record in records:
        try:
            rows.append(_frame_row(record, protocol))
        except (CalibrationInputError, InvalidJudgement) as error:
            problems.append(f"{where}: {error}")
            if len(problems) == MAX_PROBLEMS:
                problems.append(f"stopped after {MAX_PROBLEMS} problems")
                break
    if problems:
        raise CalibrationInputError("\n".join(problems))
    if not rows:
        raise CalibrationInputError("the judgement files hold no judgements")
    return pd.DataFrame(rows)


def with_response_metadata(frame: pd.DataFrame, metadata: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the columns of ``metadata`` (one row per ``response_id``: item_id, task,
    category, group, model, meta keys) joined on the response; a pair takes its first
    response's item columns and no ``model``."""
    if metadata.empty:
        return frame
    merged = frame.merge(metadata, on="response_id", how="left")
    merged.loc[merged["unit"].str.startswith("p:"), "model"] = None  # a pair has two models
    return merged


def _frame_row(record: JudgementRecord, protocol: Protocol) -> dict[str, object]:
    if record.protocol != protocol.name and not (protocol.name == "score" and record.protocol):
        raise CalibrationInputError(
            f"`protocol` is {record.protocol!r} but the protocol to calibrate is "
            f"{protocol.name!r}: calibrate one protocol at a time"
        )
    if protocol.is_pointwise:
        if record.response_id is None:
            raise CalibrationInputError("`response_id` is missing: pointwise judgements name one")
        unit = response_unit_key(record.response_id)
        value: object = None if record.score is None else _on_scale(protocol, record.score)
        if record.expected_score is not None:
            try:
                protocol.validate_expected_score(record.expected_score)
            except InvalidJudgement as error:
                raise CalibrationInputError(f"{error}: fix the line") from None
        shown_order = "AB"
    else:
        if record.pair is None:
            raise CalibrationInputError("`pair` is missing: pairwise judgements name one")
        unit = pair_unit_key(*record.pair)
        value = record.preference
        shown = record.shown or record.pair
        shown_order = "AB" if tuple(shown) == tuple(record.pair) else "BA"
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


def _on_scale(protocol: Protocol, score: float) -> float:
    try:
        return protocol.validate_score(score, field_name="score")
    except InvalidJudgement as error:
        raise CalibrationInputError(
            f"{error}: fix the line, or calibrate the protocol 'score' with a wider scale"
        ) from None
