"""The rows an ``annotations import`` writes (:mod:`data.io.importers.annotations`): the closed
campaign with its units, submitted assignments, annotations and their revisions, and the audit
events the app would have written; and the labels a campaign already holds, to compare a
re-import with.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Table, insert, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from data.io.importers.annotation_labels import Label, Revisions
from data.io.importers.annotation_units import ImportedUnit
from data.storage.audit import record_event
from data.storage.campaign_imports import (
    begin_import,
    finish_import,
    renew_import,
    roll_back_import,
)
from data.storage.campaign_lookup import unit_key_map
from data.storage.engine import between_bulk_transactions, outside_turn
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
    new_accounts: list[User],
    audit_accounts: Callable[[], None],
    rationale_min: int,
    imported: dict[str, Any],
    actor_id: int | None,
    now: datetime,
) -> int:
    """Write the closed campaign with its units, assignments and annotations; return how many
    annotations (all revisions) were written.

    ``accounts`` maps the annotators to existing accounts; ``new_accounts`` (unsaved) are added
    in the first transaction, with the campaign row in the importing state
    (:mod:`data.storage.campaign_imports`: no reader sees it); then every
    :data:`ROWS_PER_TRANSACTION` answers are committed with their units and assignments, so
    other writers on the database (annotators submitting) wait for one such transaction at
    most; the last transaction writes the audit events (``audit_accounts`` writes the
    accounts') and leaves the importing state. When any step fails, what was written is deleted
    (campaign and ``new_accounts``) and the error raised again; when the process dies, the next
    command does so (:func:`data.storage.engine.roll_back_abandoned_imports`)."""
    by_unit: dict[tuple[str, ...], list[tuple[str, list[Label]]]] = defaultdict(list)
    for (annotator, unit), labels in revisions.items():
        by_unit[unit].append((annotator, labels))
    for entries in by_unit.values():  # slots in the order the annotators first answered
        entries.sort(key=lambda entry: (_moment(entry[1][0], now), entry[0]))
    overlap = max(len(entries) for entries in by_unit.values())
    dataset_id = next(iter(units.values())).dataset_id
    options = {"models": None, "pairs": None, "imported": imported}
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
        status="closed",
        created_by=actor_id,
        created_at=now,
        options=options,
    )
    engine = session.get_bind()
    assert isinstance(engine, Engine)
    session.add_all(new_accounts)
    session.add(campaign)
    session.flush()
    campaign_id = stored_id(campaign)
    added = [stored_id(user) for user in new_accounts]
    accounts = {**accounts, **{user.name: stored_id(user) for user in new_accounts}}
    begin_import(session, campaign_id, added)
    session.commit()
    try:
        ordered = list(by_unit)
        revised: list[_Revision] = []
        written = 0
        per_chunk = max(1, ROWS_PER_TRANSACTION // overlap)
        for start in range(0, len(ordered), per_chunk):
            chunk = ordered[start : start + per_chunk]
            with outside_turn(session):  # annotators' sessions of this process run meanwhile
                between_bulk_transactions(engine)
                unit_rows = _unit_rows(campaign_id, chunk, units, by_unit)
            written += _write_units(
                session, campaign_id, overlap, chunk, unit_rows, by_unit, accounts, now, revised
            )
            renew_import(session, campaign_id)
            session.commit()
        audit_accounts()
        record_event(
            session,
            actor_id=actor_id,
            action="campaign.create",
            entity="campaign",
            entity_id=campaign_id,
            detail={
                "name": name,
                "dataset": units[ordered[0]].dataset_name,
                "protocol": protocol.name,
                "overlap": overlap,
                "units": len(ordered),
                "options": options,
            },
        )
        for revision in revised:
            _audit_revision(session, *revision)
        record_event(
            session,
            actor_id=actor_id,
            action="annotation.import",
            entity="campaign",
            entity_id=campaign_id,
            detail={
                **imported,
                "annotations": written,
                "annotators": len(accounts),
                "units": len(ordered),
            },
        )
        record_event(
            session,
            actor_id=actor_id,
            action="campaign.close",
            entity="campaign",
            entity_id=campaign_id,
            detail={"campaign": name, "before": "active", "after": "closed"},
        )
        finish_import(session, campaign_id)
        session.commit()
    except BaseException:
        session.rollback()
        roll_back_import(session, campaign_id)
        session.commit()
        raise
    return written


ROWS_PER_TRANSACTION = 2000
"""About how many answers one transaction of an import writes (whole units at a time): an
annotator's submit that arrives meanwhile waits for the rest of it (about 0.1 s on an idle
machine; 5,000 made the p95 of a submit during an import exceed 200 ms)."""

_Revision = tuple[tuple[int, int, int, list[Label]], tuple[int, Label], Label, int, int]


def _unit_rows(
    campaign_id: int,
    chunk: list[tuple[str, ...]],
    units: dict[tuple[str, ...], ImportedUnit],
    by_unit: dict[tuple[str, ...], list[tuple[str, list[Label]]]],
) -> list[dict[str, Any]]:
    return [
        {
            "campaign_id": campaign_id,
            "item_pk": units[u].item_pk,
            "response_pk": units[u].response_pk,
            "pair_pk": units[u].pair_pk,
            "slots_taken": len(by_unit[u]),
            "n_submitted": len(by_unit[u]),
        }
        for u in chunk
    ]


def _write_units(
    session: Session,
    campaign_id: int,
    overlap: int,
    chunk: list[tuple[str, ...]],
    unit_rows: list[dict[str, Any]],
    by_unit: dict[tuple[str, ...], list[tuple[str, list[Label]]]],
    accounts: dict[str, int],
    now: datetime,
    revised: list[_Revision],
) -> int:
    """Units ``chunk`` (their ``unit_rows``) with their assignments and annotations; return the
    annotations written."""
    unit_ids = _insert(session, UNITS, unit_rows)
    placed = [
        (unit_id, slot, accounts[annotator], labels)
        for unit, unit_id in zip(chunk, unit_ids, strict=True)
        for slot, (annotator, labels) in enumerate(by_unit[unit])
    ]
    assignment_ids = _insert(
        session,
        ASSIGNMENTS,
        [
            _assignment(campaign_id, overlap, unit_id, slot, annotator_id, labels[0], now)
            for unit_id, slot, annotator_id, labels in placed
        ],
    )
    written = _annotations(session, campaign_id, placed, assignment_ids, now, revised)
    return written


def _assignment(
    campaign_id: int,
    overlap: int,
    unit_id: int,
    slot: int,
    annotator_id: int,
    first: Label,
    now: datetime,
) -> dict[str, Any]:
    submitted = _moment(first, now)
    leased = submitted - timedelta(seconds=first.seconds)
    return {
        "campaign_id": campaign_id,
        "unit_id": unit_id,
        "annotator_id": annotator_id,
        "slot": slot,
        "overlap": overlap,
        "status": "submitted",
        "shown_order": first.shown_order,
        "leased_at": leased,
        "expires_at": leased + timedelta(seconds=LEASE_SECONDS),
        "closed_at": submitted,
    }


def _annotations(
    session: Session,
    campaign_id: int,
    placed: list[tuple[int, int, int, list[Label]]],
    assignment_ids: list[int],
    now: datetime,
    revised: list[_Revision],
) -> int:
    """Revision 1 of every answer, then 2, ...: each later one revises the one before (the
    events that audit it are added to ``revised``, written with the import's last transaction)."""
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
                    "campaign_id": campaign_id,
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
                revised.append(
                    (placed[position], previous[position], label, annotation_id, revision)
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
