"""The lines of an ``annotations import`` file as labels: each line checked against the protocol
into a :class:`Label`, and the labels grouped into revisions per annotator and unit.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from data.io.importers.errors import InvalidRecord, Problems
from data.io.importers.reader import JudgementLine
from data.services.users import USER_NAME_PATTERN
from schemas.ids import HUMAN_PREFIX
from schemas.option_text import Message
from schemas.protocols import InvalidJudgement, Protocol
from schemas.tables import utcnow

MAX_LABEL_SECONDS = 30 * 24 * 3600
"""Longest time one label may record; more is a clock or unit error (and 10^12 s broke the
import: no date is that far before the label's)."""
EARLIEST_LABEL = datetime(1970, 1, 1, tzinfo=UTC)


class AnnotationImportError(ValueError):
    """The labels cannot become the campaign asked for (name taken, mixed datasets...)."""


@dataclass(frozen=True, slots=True)
class Label:
    """One validated line: who labelled which unit how (preference in canonical order)."""

    source: str
    location: int | str
    annotator: str
    unit: tuple[str, ...]
    """``(response_id,)`` or the pair ``(a, b)`` in canonical order."""
    shown_order: str
    score: float | None
    preference: str | None
    rationale: str
    seconds: float
    revision: int | None
    created_at: datetime | None
    synthetic: bool
    meta: dict[str, Any]

    def error(self, field: str | None, message: Message) -> InvalidRecord:
        return InvalidRecord(self.source, self.location, field, message)


Revisions = dict[tuple[str, tuple[str, ...]], list[Label]]


def label_of(line: JudgementLine, protocol: Protocol, *, forced: bool) -> Label:
    record = line.record
    if record.judge_kind != "human":
        raise line.error(
            "judge_kind",
            f"`judge_kind` is {record.judge_kind!r}: annotations import loads human labels; "
            "import model judgements with `critiquelab judgments import`",
        )
    if not forced and record.protocol != protocol.name:
        raise line.error(
            "protocol",
            f"`protocol` is {record.protocol!r}, but the file's first line says "
            f"{protocol.name!r}: a campaign has one protocol; split the file by protocol",
        )
    if (record.protocol == "pairwise") != (not protocol.is_pointwise):
        raise line.error(
            "protocol",
            f"`protocol` is {record.protocol!r}, but this file is imported as {protocol.name!r}: "
            "a campaign has one protocol; import pointwise and pairwise labels separately",
        )
    if record.parse_status not in (None, "ok"):
        raise line.error(
            "parse_status",
            f"`parse_status` is {record.parse_status!r}: a human label is a value, not a "
            "parser's output; leave the field out",
        )
    score = preference = None
    if protocol.is_pointwise:
        if record.score is None:
            raise line.error("score", "a human label needs a `score`: fill it or drop the line")
        try:
            score = protocol.validate_score(record.score)
        except InvalidJudgement as error:
            raise line.error(
                "score", f"{error}; fix the line, or import the file under the score protocol"
            ) from None
    elif record.preference is None:
        raise line.error("preference", "a human label needs a `preference`: A, B or tie")
    else:
        preference = record.preference
    seconds = 0.0 if record.seconds is None else float(record.seconds)
    if not math.isfinite(seconds) or seconds < 0:
        raise line.error("seconds", f"`seconds` is {record.seconds}: give 0 or more")
    if seconds > MAX_LABEL_SECONDS:
        raise line.error(
            "seconds",
            f"`seconds` is {record.seconds}: at most {MAX_LABEL_SECONDS:,} (30 days) on one "
            "label; give the seconds spent answering",
        )
    moment = record.created_at
    if moment is not None and not EARLIEST_LABEL <= moment <= utcnow() + timedelta(days=1):
        raise line.error(
            "created_at",
            f"`created_at` is {moment.isoformat()}: a label is made between 1970-01-01 and "
            "now; fix the date (or leave it out: the import's time is used)",
        )
    if record.revision is not None and record.revision < 1:
        raise line.error("revision", f"`revision` is {record.revision}: revisions count from 1")
    unit: tuple[str, ...]
    if record.pair is not None:
        unit = tuple(record.pair)
        swapped = record.shown is not None and tuple(record.shown) != unit
    else:
        assert record.response_id is not None  # the reader checked the unit
        unit, swapped = (record.response_id,), False
    meta = dict(record.meta)
    synthetic = meta.pop("synthetic", None)
    if synthetic is None:  # null is the same as left out
        synthetic = False
    elif not isinstance(synthetic, bool):  # "yes" was dropped, the label stored as real
        raise line.error(
            "meta.synthetic",
            f"`meta.synthetic` is {synthetic!r}, but it must be true or false (JSON booleans)",
        )
    return Label(
        source=line.source,
        location=line.location,
        annotator=_annotator(line),
        unit=unit,
        shown_order="BA" if swapped else "AB",
        score=score,
        preference=preference,
        rationale=record.rationale,
        seconds=seconds,
        revision=record.revision,
        created_at=record.created_at,
        synthetic=synthetic,
        meta=meta,
    )


def _annotator(line: JudgementLine) -> str:
    """The account name: ``annotator``, else ``judge`` without ``annotator:``; both must agree."""
    record = line.record
    from_judge = record.judge.removeprefix(HUMAN_PREFIX)
    name = record.annotator or from_judge
    if record.annotator is not None and record.judge not in (name, HUMAN_PREFIX + name):
        raise line.error(
            "annotator",
            f"`annotator` is {record.annotator!r} but `judge` is {record.judge!r}: they must "
            f"name the same person (judge 'annotator:{record.annotator}'); fix one of them",
        )
    if not USER_NAME_PATTERN.match(name):
        raise line.error(
            "judge",
            f"annotator name {name!r} must be 1–64 letters, digits, '_', '.' or '-', starting "
            "with a letter or digit (it becomes an account name): rename it in the file",
        )
    return name


def revisions_of(labels: list[Label], problems: Problems) -> Revisions:
    """Per (annotator, unit): the labels in revision order (one without revision numbers)."""
    grouped: dict[tuple[str, tuple[str, ...]], list[Label]] = defaultdict(list)
    for label in labels:
        grouped[(label.annotator, label.unit)].append(label)
    result = {}
    for (annotator, unit), group in grouped.items():
        if len(group) > 1 and any(label.revision is None for label in group):
            first, again = group[0], group[1]
            problems.add(
                again.error(
                    "revision",
                    f"annotator {annotator!r} labelled {_unit_text(unit)} again (first at line "
                    f"{first.location}): give every such line its `revision` number (1, 2, ...) "
                    "to keep them as revisions, or keep one line",
                )
            )
            continue
        ordered = sorted(group, key=lambda label: label.revision or 1)
        numbers = [label.revision or 1 for label in ordered]
        if numbers != list(range(1, len(ordered) + 1)):
            problems.add(
                ordered[-1].error(
                    "revision",
                    f"annotator {annotator!r} has revisions {numbers} of {_unit_text(unit)}: they "
                    "must be 1, 2, ... without gaps",
                )
            )
            continue
        shown = {label.shown_order for label in ordered}
        if len(shown) > 1:
            problems.add(
                ordered[-1].error(
                    "shown",
                    f"the revisions of {annotator!r} on {_unit_text(unit)} give different shown "
                    "orders: an annotator edits the pair in the order first shown",
                )
            )
            continue
        result[(annotator, unit)] = ordered
    return result


def _unit_text(unit: tuple[str, ...]) -> str:
    return f"pair {unit[0]} | {unit[1]}" if len(unit) == 2 else f"response {unit[0]}"
