"""The rows of an imported campaign (:mod:`data.io.importers.annotations`): units found in the
database, and the campaign, units, assignments, annotations and audit events written for them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Table, insert, select
from sqlmodel import Session, col

from data.io.importers.errors import InvalidRecord, Problems
from data.services.campaigns import unit_key_map
from data.storage.audit import record_event
from schemas.core import core_table, stored_id
from schemas.ids import pair_unit_key, response_unit_key
from schemas.protocols import Protocol
from schemas.tables import (
    Annotation,
    Assignment,
    Campaign,
    Dataset,
    Item,
    Pair,
    Response,
    Unit,
    User,
)

_UNITS: Table = core_table(Unit)
_ASSIGNMENTS: Table = core_table(Assignment)
_ANNOTATIONS: Table = core_table(Annotation)
_CHUNK = 500
LEASE_SECONDS = 900


class AnnotationImportError(ValueError):
    """The labels cannot become the campaign asked for (name taken, mixed datasets...)."""


@dataclass(frozen=True)
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

    def error(self, field: str | None, message: str) -> InvalidRecord:
        return InvalidRecord(self.source, self.location, field, message)


@dataclass(frozen=True)
class ImportedUnit:
    """A unit of the file, found in the database."""

    unit_key: str
    item_pk: int
    response_pk: int | None
    pair_pk: int | None
    dataset_id: int
    dataset_name: str


Revisions = dict[tuple[str, tuple[str, ...]], list[Label]]


def resolve_units(
    session: Session, labels: list[Label], dataset: str | None, problems: Problems
) -> dict[tuple[str, ...], ImportedUnit]:
    """The stored response or pair of every unit; a unit outside the dataset is a problem.

    ``dataset``: the dataset the units must belong to; None: the one dataset they belong to.
    """
    wanted = sorted({rid for label in labels for rid in label.unit})
    responses = _responses(session, wanted)
    if (
        dataset is not None
        and session.execute(select(Dataset.id).where(Dataset.name == dataset)).first() is None
    ):
        raise AnnotationImportError(
            f"no dataset called {dataset!r}: import the dataset with its responses first"
        )
    pairs = _pairs(session, [r[0] for r in responses.values()])
    units: dict[tuple[str, ...], ImportedUnit] = {}
    for label in labels:
        if label.unit in units:
            continue
        try:
            units[label.unit] = _unit(label, responses, pairs, dataset)
        except InvalidRecord as error:
            problems.add(error)
    names = sorted({unit.dataset_name for unit in units.values()})
    if len(names) > 1:
        raise AnnotationImportError(
            f"the labels' units belong to datasets {', '.join(map(repr, names))}: a campaign "
            "annotates one dataset; split the file by dataset"
        )
    return units


def _unit(
    label: Label,
    responses: dict[str, tuple[int, int, int, str]],
    pairs: dict[tuple[int, int], int],
    dataset: str | None,
) -> ImportedUnit:
    field = "pair" if len(label.unit) == 2 else "response_id"
    for rid in label.unit:
        if rid not in responses:
            raise label.error(
                field,
                f"`{field}` names {rid!r}, which is not in the database: import the dataset "
                "with its responses first",
            )
        if dataset is not None and responses[rid][3] != dataset:
            raise label.error(
                field, f"{rid!r} belongs to dataset {responses[rid][3]!r}, not {dataset!r}"
            )
    first = responses[label.unit[0]]
    if len(label.unit) == 1:
        return ImportedUnit(
            response_unit_key(label.unit[0]), first[1], first[0], None, first[2], first[3]
        )
    second = responses[label.unit[1]]
    if first[1] != second[1]:
        raise label.error(
            "pair",
            "`pair` names responses to two different items: a pair compares two "
            "answers to the same item",
        )
    if (first[0], second[0]) not in pairs:
        reversed_ = (second[0], first[0]) in pairs
        raise label.error(
            "pair",
            "`pair` is stored in the other order: swap the two ids (and map A/B) to the stored "
            "canonical order"
            if reversed_
            else f"`pair` {label.unit[0]} | {label.unit[1]} is not a pair of dataset {first[3]!r}: "
            "list it under the item's `pairs` in the dataset file and import the dataset again",
        )
    return ImportedUnit(
        pair_unit_key(*label.unit),
        first[1],
        None,
        pairs[(first[0], second[0])],
        first[2],
        first[3],
    )


def _responses(session: Session, ids: list[str]) -> dict[str, tuple[int, int, int, str]]:
    """``response_id -> (response pk, item pk, dataset id, dataset name)`` of the stored ones."""
    found = {}
    query = (
        select(Response.response_id, Response.id, Response.item_pk, Dataset.id, Dataset.name)
        .join(Item, col(Item.id) == Response.item_pk)
        .join(Dataset, col(Dataset.id) == Item.dataset_id)
    )
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        for rid, pk, item_pk, dataset_id, name in session.execute(
            query.where(col(Response.response_id).in_(chunk))
        ):
            found[rid] = (pk, item_pk, dataset_id, name)
    return found


def _pairs(session: Session, response_pks: list[int]) -> dict[tuple[int, int], int]:
    found = {}
    for start in range(0, len(response_pks), _CHUNK):
        chunk = response_pks[start : start + _CHUNK]
        for pk, a, b in session.execute(
            select(Pair.id, Pair.response_a_pk, Pair.response_b_pk).where(
                col(Pair.response_a_pk).in_(chunk)
            )
        ):
            found[(a, b)] = pk
    return found


def existing_labels(session: Session, campaign: Campaign) -> set[tuple[Any, ...]]:
    """Every annotation of ``campaign`` as (annotator, unit key, revision, score, preference,
    shown order, rationale), to compare a re-import with."""
    keys = unit_key_map(session, stored_id(campaign))
    rows = session.execute(
        select(
            User.name,
            Annotation.unit_id,
            Annotation.revision,
            Annotation.score,
            Annotation.preference,
            Annotation.shown_order,
            Annotation.rationale,
        )
        .join(User, col(User.id) == Annotation.annotator_id)
        .where(Annotation.campaign_id == campaign.id)
    )
    return {(name, keys[unit], *rest) for name, unit, *rest in rows}


def write_campaign(
    session: Session,
    *,
    name: str,
    protocol: Protocol,
    revisions: Revisions,
    units: dict[tuple[str, ...], ImportedUnit],
    accounts: dict[str, int],
    rationale_min: int,
    imported: dict[str, Any],
    actor_id: int | None,
    now: datetime,
) -> int:
    """Write the closed campaign with its units, assignments and annotations; return how many
    annotations (all revisions) were written."""
    by_unit: dict[tuple[str, ...], list[tuple[str, list[Label]]]] = defaultdict(list)
    for (annotator, unit), labels in revisions.items():
        by_unit[unit].append((annotator, labels))
    for entries in by_unit.values():  # slots in the order the annotators first answered
        entries.sort(key=lambda entry: (_moment(entry[1][0], now), entry[0]))
    overlap = max(len(entries) for entries in by_unit.values())
    dataset_id = next(iter(units.values())).dataset_id
    campaign = Campaign(
        name=name,
        dataset_id=dataset_id,
        protocol=protocol.name,
        scale_min=protocol.scale_min if protocol.name == "score" else None,
        scale_max=protocol.scale_max if protocol.name == "score" else None,
        scale_step=protocol.step if protocol.name == "score" else None,
        overlap=overlap,
        rationale_min=rationale_min,
        lease_seconds=LEASE_SECONDS,
        status="active",
        created_by=actor_id,
        created_at=now,
        options={"models": None, "pairs": None, "imported": imported},
    )
    session.add(campaign)
    session.flush()
    assert campaign.id is not None
    ordered = list(by_unit)
    unit_ids = _insert(
        session,
        _UNITS,
        [
            {
                "campaign_id": campaign.id,
                "item_pk": units[u].item_pk,
                "response_pk": units[u].response_pk,
                "pair_pk": units[u].pair_pk,
                "slots_taken": len(by_unit[u]),
                "n_submitted": len(by_unit[u]),
            }
            for u in ordered
        ],
    )
    record_event(
        session,
        actor_id=actor_id,
        action="campaign.create",
        entity="campaign",
        entity_id=campaign.id,
        detail={
            "name": name,
            "dataset": units[ordered[0]].dataset_name,
            "protocol": protocol.name,
            "overlap": overlap,
            "units": len(ordered),
            "options": campaign.options,
        },
    )
    placed = [
        (unit_id, slot, accounts[annotator], labels)
        for unit, unit_id in zip(ordered, unit_ids, strict=True)
        for slot, (annotator, labels) in enumerate(by_unit[unit])
    ]
    assignment_ids = _insert(
        session,
        _ASSIGNMENTS,
        [
            _assignment(campaign, unit_id, slot, annotator_id, labels[0], now)
            for unit_id, slot, annotator_id, labels in placed
        ],
    )
    written = _annotations(session, campaign, placed, assignment_ids, now)
    record_event(
        session,
        actor_id=actor_id,
        action="annotation.import",
        entity="campaign",
        entity_id=campaign.id,
        detail={
            **imported,
            "annotations": written,
            "annotators": len(accounts),
            "units": len(ordered),
        },
    )
    campaign.status = "closed"
    session.add(campaign)
    record_event(
        session,
        actor_id=actor_id,
        action="campaign.close",
        entity="campaign",
        entity_id=campaign.id,
        detail={"campaign": name, "before": "active", "after": "closed"},
    )
    session.flush()
    return written


def _assignment(
    campaign: Campaign, unit_id: int, slot: int, annotator_id: int, first: Label, now: datetime
) -> dict[str, Any]:
    submitted = _moment(first, now)
    leased = submitted - timedelta(seconds=first.seconds)
    return {
        "campaign_id": campaign.id,
        "unit_id": unit_id,
        "annotator_id": annotator_id,
        "slot": slot,
        "overlap": campaign.overlap,
        "status": "submitted",
        "shown_order": first.shown_order,
        "leased_at": leased,
        "expires_at": leased + timedelta(seconds=campaign.lease_seconds),
        "closed_at": submitted,
    }


def _annotations(
    session: Session,
    campaign: Campaign,
    placed: list[tuple[int, int, int, list[Label]]],
    assignment_ids: list[int],
    now: datetime,
) -> int:
    """Revision 1 of every answer, then 2, ...: each later one revises the one before."""
    previous: dict[int, tuple[int, Label]] = {}  # position in ``placed`` -> (id, label)
    written = 0
    depth = max(len(labels) for *_, labels in placed)
    for revision in range(1, depth + 1):
        batch = [
            (position, labels[revision - 1], revision == len(labels))
            for position, (*_, labels) in enumerate(placed)
            if len(labels) >= revision
        ]
        rows = []
        for position, label, live in batch:
            unit_id, _slot, annotator_id, _labels = placed[position]
            meta = dict(label.meta)
            if revision > 1:
                meta["revises"] = previous[position][0]
            rows.append(
                {
                    "campaign_id": campaign.id,
                    "unit_id": unit_id,
                    "annotator_id": annotator_id,
                    "assignment_id": assignment_ids[position],
                    "revision": revision,
                    "is_live": live,
                    "score": label.score,
                    "preference": label.preference,
                    "shown_order": label.shown_order if label.preference is not None else None,
                    "rationale": label.rationale,
                    "seconds": label.seconds,
                    "synthetic": label.synthetic,
                    "created_at": _moment(label, now),
                    "meta": meta,
                }
            )
        ids = _insert(session, _ANNOTATIONS, rows)
        for (position, label, _live), annotation_id in zip(batch, ids, strict=True):
            if revision > 1:
                _audit_revision(
                    session, placed[position], previous[position], label, annotation_id, revision
                )
            previous[position] = (annotation_id, label)
        written += len(rows)
    return written


def _audit_revision(
    session: Session,
    placed: tuple[int, int, int, list[Label]],
    previous: tuple[int, Label],
    label: Label,
    annotation_id: int,
    revision: int,
) -> None:
    """The event an edit in *My work* writes (:func:`data.queue.answers.revise`)."""
    unit_id, _slot, annotator_id, _labels = placed
    old_id, old = previous
    record_event(
        session,
        actor_id=annotator_id,
        action="annotation.revise",
        entity="annotation",
        entity_id=annotation_id,
        detail={
            "unit_id": unit_id,
            "revision": revision,
            "previous_id": old_id,
            "before": {
                "score": old.score,
                "preference": old.preference,
                "rationale": old.rationale,
            },
            "after": {
                "score": label.score,
                "preference": label.preference,
                "rationale": label.rationale,
            },
            "imported": True,
        },
    )


def _insert(session: Session, table: Table, rows: list[dict[str, Any]]) -> list[int]:
    """Insert ``rows``; their ids in the same order."""
    if not rows:
        return []
    result = session.connection().execute(
        insert(table).returning(table.c.id, sort_by_parameter_order=True), rows
    )
    return list(result.scalars())


def _moment(label: Label, now: datetime) -> datetime:
    return label.created_at or now
