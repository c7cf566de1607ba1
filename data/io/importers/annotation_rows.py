"""The rows an ``annotations import`` writes (:mod:`data.io.importers.annotations`): the closed
campaign with its units, submitted assignments, annotations and their revisions, and the audit
events the app would have written; and the labels a campaign already holds, to compare a
re-import with.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Table, insert, select
from sqlmodel import Session, col

from data.io.importers.annotation_labels import Label, Revisions
from data.io.importers.annotation_units import ImportedUnit
from data.storage.audit import record_event
from data.storage.campaign_lookup import unit_key_map
from schemas.core import stored_id
from schemas.core_tables import ANNOTATIONS, ASSIGNMENTS, UNITS
from schemas.protocols import Protocol
from schemas.tables import Annotation, Campaign, User

LEASE_SECONDS = 900


LabelKey = tuple[str, str, int]
"""(annotator, unit key, revision): one stored answer of an imported campaign."""
COMPARED_FIELDS = (
    "score", "preference", "shown_order", "rationale", "seconds", "created_at", "meta"
)  # fmt: skip
"""What a re-import must hold the same of every answer for "nothing changed" to be true."""


def existing_labels(session: Session, campaign: Campaign) -> dict[LabelKey, dict[str, Any]]:
    """Every annotation of ``campaign``, keyed by :data:`LabelKey`, with its
    :data:`COMPARED_FIELDS` as the import wrote them (``meta`` without the ``revises`` link the
    import adds), to compare a re-import with."""
    keys = unit_key_map(session, stored_id(campaign))
    rows = session.execute(
        select(
            col(User.name),
            col(Annotation.unit_id),
            col(Annotation.revision),
            *(getattr(Annotation, name) for name in COMPARED_FIELDS),
        )
        .join(User, col(User.id) == col(Annotation.annotator_id))
        .where(col(Annotation.campaign_id) == campaign.id)
    )
    found = {}
    for name, unit, revision, *values in rows:
        fields = dict(zip(COMPARED_FIELDS, values, strict=True))
        fields["meta"] = {k: v for k, v in (fields["meta"] or {}).items() if k != "revises"}
        moment = fields["created_at"]
        if moment is not None and moment.tzinfo is None:  # SQLite gives stored UTC back naive
            fields["created_at"] = moment.replace(tzinfo=UTC)
        found[(name, keys[unit], revision)] = fields
    return found


def label_fields(label: Label) -> dict[str, Any]:
    """A label's :data:`COMPARED_FIELDS` as :func:`write_campaign` stores them; ``created_at``
    None when the file gives none (the import time was stored, which a re-import cannot know)."""
    return {
        "score": label.score,
        "preference": label.preference,
        "shown_order": label.shown_order if label.preference is not None else None,
        "rationale": label.rationale,
        "seconds": label.seconds,
        "created_at": label.created_at,
        "meta": {k: v for k, v in label.meta.items() if k != "revises"},  # as existing_labels
    }


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
        UNITS,
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
        ASSIGNMENTS,
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
        ids = _insert(session, ANNOTATIONS, rows)
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
    """The event an edit in *My work* writes (:func:`data.queue.revisions.revise`)."""
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
