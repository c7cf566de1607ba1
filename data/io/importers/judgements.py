"""``judgments import``: model judgements from a file (FORMATS.md §3) into the database.

Everything is checked first — the protocol and its scale, the unit (a stored response, or a pair
of two stored responses of one item), the shown order, the parse status — then new judgements are
inserted in bulk with :func:`data.services.judgements.insert_judgements`. A judgement is
identified by ``(judge, prompt_id, unit, shown order, sample)``: re-importing the same file adds
nothing, and a judgement that exists with different values is refused unless ``update=True``.

The columns without a field of their own in the file format travel in ``meta``: ``sample``,
``usage`` and ``input_sha256``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select, tuple_, update
from sqlmodel import Session

from data.io.importers.errors import InvalidRecord, Problems
from data.io.importers.judgement_files import import_protocol
from data.io.importers.reader import iter_judgements
from data.services.judgements import insert_judgements
from data.storage.audit import record_event
from schemas.core_tables import JUDGEMENTS, PAIRS, RESPONSES
from schemas.ids import pair_unit_key, response_unit_key
from schemas.option_text import Message, OptionText
from schemas.protocols import InvalidJudgement, Protocol
from schemas.records import JudgementRecord
from schemas.tables import Judgement, utcnow

KEY_COLUMNS: tuple[str, ...] = ("judge", "prompt_id", "unit_key", "shown_order", "sample")
COLUMNS_IN_META: tuple[str, ...] = ("sample", "usage", "input_sha256")
COMPARED_COLUMNS: tuple[str, ...] = (
    "protocol",
    "score",
    "preference",
    "expected_score",
    "rationale",
    "raw_output",
    "parse_status",
    "input_sha256",
    "usage",
    "meta",
)
_CHUNK = 500
_Fail = Callable[[str, Message], InvalidRecord]


@dataclass(frozen=True)
class JudgementImportSummary:
    """What a judgements import added, updated and found unchanged."""

    added: int
    updated: int
    unchanged: int
    pairs_added: int

    def describe(self) -> str:
        return (
            f"{self.added} judgements added, {self.updated} updated, {self.unchanged} unchanged"
            + (f"; {self.pairs_added} pairs added" if self.pairs_added else "")
        )


@dataclass
class _Line:
    location: int | str
    record: JudgementRecord
    row: dict[str, Any]


def import_judgements(
    session: Session,
    path: Path,
    *,
    protocol: str | None = None,
    scale: tuple[float, float, float | None] | None = None,
    update_changed: bool = False,
    on_progress: Callable[[int], None] | None = None,
    actor_id: int | None = None,
) -> JudgementImportSummary:
    """Import the model judgements of ``path`` (.jsonl, .csv or .parquet).

    ``protocol`` overrides the protocol named on every line; ``scale`` is the scale of a
    ``score`` protocol, whether forced or named by the lines.
    """
    source = str(path)
    forced = import_protocol(protocol, scale, source, None) if protocol else None
    problems = Problems()
    lines: list[_Line] = []
    for line in iter_judgements(path, problems):
        try:
            row = _row(line.record, forced, scale, source, line.location)
            lines.append(_Line(line.location, line.record, row))
        except InvalidRecord as error:
            problems.add(error)
        if on_progress is not None:
            on_progress(1)
    problems.check()
    pairs_added = _attach_units(session, lines, source, problems)
    new, changed, unchanged = _classify(session, lines, source, update_changed, problems)
    added = insert_judgements(session, [Judgement(**line.row) for line in new])
    for changed_line, pk in changed:
        session.connection().execute(
            update(JUDGEMENTS).where(JUDGEMENTS.c.id == pk).values(**_compared(changed_line.row))
        )
    summary = JudgementImportSummary(added, len(changed), unchanged, pairs_added)
    record_event(
        session,
        actor_id=actor_id,
        action="judgement.import",
        entity="judgement",
        entity_id=source,
        detail={
            "source": source,
            "added": added,
            "updated": len(changed),
            "unchanged": unchanged,
            "pairs_added": pairs_added,
        },
    )
    return summary


def _row(
    record: JudgementRecord,
    forced: Protocol | None,
    scale: tuple[float, float, float | None] | None,
    source: str,
    location: int | str,
) -> dict[str, Any]:
    def fail(field: str, message: Message) -> InvalidRecord:
        return InvalidRecord(source, location, field, message)

    if record.judge_kind != "model":
        raise fail(
            "judge_kind",
            f"`judge_kind` is {record.judge_kind!r}: judgments import loads model judgements; "
            "human labels are collected in the app",
        )
    protocol = forced or import_protocol(record.protocol, scale, source, location)
    if protocol.is_pointwise != (record.protocol != "pairwise"):
        raise fail(
            "protocol",
            f"`protocol` is {record.protocol!r}, but the protocol to import with is "
            f"{protocol.name!r}: pointwise and pairwise judgements do not mix",
        )
    meta = dict(record.meta)
    columns = {name: meta.pop(name) for name in COLUMNS_IN_META if name in meta}
    row: dict[str, Any] = {
        "judge": record.judge,
        "protocol": protocol.name,
        "prompt_id": record.prompt_id or "",
        "rationale": record.rationale,
        "raw_output": record.raw_output or "",
        "expected_score": record.expected_score,
        "sample": int(columns.get("sample", 0)),
        "usage": columns.get("usage") or {},
        "input_sha256": str(columns.get("input_sha256") or ""),
        "created_at": record.created_at or utcnow(),
        "meta": meta,
    }
    row.update(_pointwise(record, protocol, fail) if protocol.is_pointwise else _pairwise(record))
    has_value = row.pop("_has_value")
    row["parse_status"] = record.parse_status or ("ok" if has_value else "unparsed")
    return row


def _pointwise(record: JudgementRecord, protocol: Protocol, fail: _Fail) -> dict[str, Any]:
    assert record.response_id is not None  # the reader checked the unit
    score = None
    if record.score is not None:
        try:
            score = protocol.validate_score(record.score)
        except InvalidJudgement as error:
            low = min(0, math.floor(record.score))
            high = max(protocol.scale_max or 0, math.ceil(record.score))
            raise fail(
                "score",
                OptionText(
                    "{error}. Fix the line or import with {protocol} score {scale} {low}:{high}.",
                    error=error,
                    low=_number(low),
                    high=_number(high),
                ),
            ) from None
        if record.score_percent is not None and protocol.percent:
            expected = protocol.percent_of(score)
            if abs(record.score_percent - expected) > 1e-6:
                raise fail(
                    "score_percent",
                    f"`score_percent` is {record.score_percent:g}, but score {score:g} is "
                    f"{expected:g}%: drop score_percent or fix it",
                )
    if record.expected_score is not None:
        try:
            protocol.validate_expected_score(record.expected_score)
        except InvalidJudgement as error:
            raise fail("expected_score", f"{error}: fix the line") from None
    return {
        "unit_key": response_unit_key(record.response_id),
        "_response_id": record.response_id,
        "shown_order": "AB",
        "score": score,
        "preference": None,
        "_has_value": score is not None,
    }


def _pairwise(record: JudgementRecord) -> dict[str, Any]:
    assert record.pair is not None  # the reader checked the unit and the shown order
    a, b = record.pair
    shown = tuple(record.shown) if record.shown else (a, b)
    return {
        "unit_key": pair_unit_key(a, b),
        "_pair": (a, b),
        "shown_order": "AB" if shown == (a, b) else "BA",
        "score": None,
        "preference": record.preference,
        "_has_value": record.preference is not None,
    }


def _attach_units(session: Session, lines: list[_Line], source: str, problems: Problems) -> int:
    """Set ``response_pk`` / ``pair_pk`` on every row; create pairs that do not exist yet.

    Lines whose units are not in the database go to ``problems``; nothing is written then."""
    wanted = {line.row["_response_id"] for line in lines if "_response_id" in line.row}
    wanted |= {rid for line in lines if "_pair" in line.row for rid in line.row["_pair"]}
    responses = _responses(session, sorted(wanted))
    pairs = (
        {
            (a, b): pk
            for pk, a, b in session.connection().execute(
                select(PAIRS.c.id, PAIRS.c.response_a_pk, PAIRS.c.response_b_pk)
            )
        }
        if any("_pair" in line.row for line in lines)
        else {}
    )
    new_pairs: dict[tuple[int, int], int] = {}
    for line in lines:
        try:
            _attach(line, responses, pairs, new_pairs, source)
        except InvalidRecord as error:
            problems.add(error)
    problems.check()
    if new_pairs:
        session.connection().execute(
            insert(PAIRS),
            [
                {"item_pk": item, "response_a_pk": a, "response_b_pk": b, "source": "import"}
                for (a, b), item in new_pairs.items()
            ],
        )
        pairs.update(
            {
                (a, b): pk
                for pk, a, b in session.connection().execute(
                    select(PAIRS.c.id, PAIRS.c.response_a_pk, PAIRS.c.response_b_pk).where(
                        tuple_(PAIRS.c.response_a_pk, PAIRS.c.response_b_pk).in_(list(new_pairs))
                    )
                )
            }
        )
    for line in lines:
        if "_pair_pks" in line.row:
            line.row["pair_pk"] = pairs[line.row.pop("_pair_pks")]
    return len(new_pairs)


def _attach(
    line: _Line,
    responses: dict[str, tuple[int, int]],
    pairs: dict[tuple[int, int], int],
    new_pairs: dict[tuple[int, int], int],
    source: str,
) -> None:
    row = line.row
    named = row.get("_pair", (row.get("_response_id"),))
    missing = [rid for rid in named if rid not in responses]
    if missing:
        field = "pair" if "_pair" in row else "response_id"
        raise InvalidRecord(
            source,
            line.location,
            field,
            f"`{field}` names {missing[0]!r}, which is not in the database: import the "
            "dataset with its responses first",
        )
    if "_response_id" in row:
        row["response_pk"] = responses[row.pop("_response_id")][0]
        return
    (a_pk, a_item), (b_pk, b_item) = (responses[rid] for rid in row.pop("_pair"))
    if a_item != b_item:
        raise InvalidRecord(
            source,
            line.location,
            "pair",
            "`pair` names responses to two different items: a pair compares two answers "
            "to the same item",
        )
    if (a_pk, b_pk) not in pairs and (b_pk, a_pk) in pairs:
        raise InvalidRecord(
            source,
            line.location,
            "pair",
            "`pair` is stored in the other order: swap the two ids (and map A/B) to the "
            "stored canonical order",
        )
    if (a_pk, b_pk) not in pairs:
        new_pairs[(a_pk, b_pk)] = a_item
        pairs[(a_pk, b_pk)] = -1
    row["_pair_pks"] = (a_pk, b_pk)


def _responses(session: Session, response_ids: list[str]) -> dict[str, tuple[int, int]]:
    """``response_id -> (response pk, item pk)`` for the ids that exist."""
    found: dict[str, tuple[int, int]] = {}
    query = select(RESPONSES.c.response_id, RESPONSES.c.id, RESPONSES.c.item_pk)
    for start in range(0, len(response_ids), _CHUNK):
        chunk = response_ids[start : start + _CHUNK]
        for response_id, pk, item_pk in session.connection().execute(
            query.where(RESPONSES.c.response_id.in_(chunk))
        ):
            found[response_id] = (pk, item_pk)
    return found


def _classify(
    session: Session, lines: list[_Line], source: str, update_changed: bool, problems: Problems
) -> tuple[list[_Line], list[tuple[_Line, int]], int]:
    judges = sorted({line.row["judge"] for line in lines})
    columns = [JUDGEMENTS.c[name] for name in ("id", *KEY_COLUMNS, *COMPARED_COLUMNS)]
    existing: dict[tuple[Any, ...], tuple[int, dict[str, Any]]] = {}
    for start in range(0, len(judges), _CHUNK):
        query = select(*columns)
        for row in session.connection().execute(
            query.where(JUDGEMENTS.c.judge.in_(judges[start : start + _CHUNK]))
        ):
            values = row._mapping
            existing[_key(values)] = (values["id"], {c: values[c] for c in COMPARED_COLUMNS})
    new, changed, unchanged = [], [], 0
    for line in lines:
        found = existing.get(_key(line.row))
        if found is None:
            new.append(line)
        elif found[1] == _compared(line.row):
            unchanged += 1
        elif update_changed:
            changed.append((line, found[0]))
        else:
            problems.add(
                InvalidRecord(
                    source,
                    line.location,
                    "judge",
                    OptionText(
                        "judge {judge!r} already has a different judgement of {unit_key} (prompt "
                        "{prompt_id!r}): import with {update} to replace it",
                        judge=line.row["judge"],
                        unit_key=line.row["unit_key"],
                        prompt_id=line.row["prompt_id"],
                    ),
                )
            )
    problems.check()
    return new, changed, unchanged


def _key(row: Any) -> tuple[Any, ...]:
    return tuple(row[name] for name in KEY_COLUMNS)


def _compared(row: dict[str, Any]) -> dict[str, Any]:
    return {name: row[name] for name in COMPARED_COLUMNS}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
