"""The rows of a dataset import in the database: look-ups, bulk inserts and fingerprints.

Used by :func:`data.io.importers.datasets.import_items`, one batch at a time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from operator import itemgetter
from typing import Any

from sqlalchemy import JSON, Connection, insert, select
from sqlmodel import Session

from data.io.importers.records import ItemPlan
from schemas.core_tables import ITEMS, PAIRS, RESPONSES

_LOOKUP_CHUNK = 500
# json.dumps(sort_keys=True, ensure_ascii=False, default=str) without building an encoder per call
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


def insert_responses(connection: Connection, rows: list[dict[str, Any]]) -> None:
    """Bulk ``INSERT`` of response rows.

    On SQLite the rows go to the driver's ``executemany`` as tuples, the JSON columns serialised
    as SQLAlchemy's JSON type does (``json.dumps``): its per-row parameter processing was half
    the CPU time of inserting a million responses. Other databases take the Core ``INSERT``.
    """
    if connection.dialect.name != "sqlite":
        connection.execute(insert(RESPONSES), rows)
        return
    columns = [column for column in RESPONSES.columns if column.name != "id"]
    as_json = [index for index, column in enumerate(columns) if isinstance(column.type, JSON)]
    values_of = itemgetter(*(column.name for column in columns))
    statement = (
        f"INSERT INTO {RESPONSES.name} ({', '.join(column.name for column in columns)}) "
        f"VALUES ({', '.join('?' for _ in columns)})"
    )
    parameters = []
    for row in rows:
        values = list(values_of(row))
        for index in as_json:
            values[index] = json.dumps(values[index])
        parameters.append(tuple(values))
    connection.exec_driver_sql(statement, parameters)


def existing_items(session: Session, dataset_id: int) -> dict[str, tuple[int, str]]:
    """Item id → (primary key, content fingerprint) of the items the dataset already holds."""
    query = select(ITEMS.c.item_id, ITEMS.c.id, ITEMS.c.content_sha256).where(
        ITEMS.c.dataset_id == dataset_id
    )
    return {item_id: (pk, sha) for item_id, pk, sha in session.connection().execute(query)}


def existing_responses(
    session: Session, response_ids: list[str]
) -> Iterator[tuple[str, tuple[int, str, int, str]]]:
    query = select(
        RESPONSES.c.response_id,
        RESPONSES.c.id,
        RESPONSES.c.content_sha256,
        ITEMS.c.dataset_id,
        ITEMS.c.item_id,
    ).join(ITEMS, ITEMS.c.id == RESPONSES.c.item_pk)
    for start in range(0, len(response_ids), _LOOKUP_CHUNK):
        chunk = response_ids[start : start + _LOOKUP_CHUNK]
        for response_id, pk, sha, dataset_id, item_id in session.connection().execute(
            query.where(RESPONSES.c.response_id.in_(chunk))
        ):
            yield response_id, (pk, sha, dataset_id, item_id)


def item_pks(session: Session, dataset_id: int, item_ids: list[str]) -> dict[str, int]:
    query = select(ITEMS.c.item_id, ITEMS.c.id).where(ITEMS.c.dataset_id == dataset_id)
    pks: dict[str, int] = {}
    for start in range(0, len(item_ids), _LOOKUP_CHUNK):
        chunk = item_ids[start : start + _LOOKUP_CHUNK]
        pks.update(session.connection().execute(query.where(ITEMS.c.item_id.in_(chunk))).all())
    return pks


def insert_pairs(
    session: Session, dataset_id: int, with_pairs: list[tuple[ItemPlan, dict[str, int]]]
) -> int:
    """Insert the pairs of the plans in ``with_pairs`` (each with its batch's item keys)."""
    if not with_pairs:
        return 0
    connection = session.connection()
    response_pks: dict[str, int] = dict(
        connection.execute(
            select(RESPONSES.c.response_id, RESPONSES.c.id)
            .join(ITEMS, ITEMS.c.id == RESPONSES.c.item_pk)
            .where(ITEMS.c.dataset_id == dataset_id)
        ).all()
    )
    existing = {
        (a, b)
        for a, b in connection.execute(
            select(PAIRS.c.response_a_pk, PAIRS.c.response_b_pk)
            .join(ITEMS, ITEMS.c.id == PAIRS.c.item_pk)
            .where(ITEMS.c.dataset_id == dataset_id)
        )
    }
    rows = []
    for plan, item_pks in with_pairs:
        for index, (a, b) in enumerate(plan.pairs):
            key = (response_pks[a], response_pks[b])
            if key in existing:
                continue
            if key[::-1] in existing:
                raise plan.error(
                    f"pairs[{index}]",
                    f"pair [{a!r}, {b!r}] is already stored in the other order [{b!r}, {a!r}]: "
                    "keep the stored canonical order",
                )
            existing.add(key)
            rows.append(
                {
                    "item_pk": item_pks[plan.item_id],
                    "response_a_pk": key[0],
                    "response_b_pk": key[1],
                    "source": "import",
                }
            )
    if rows:
        connection.execute(insert(PAIRS), rows)
    return len(rows)


def fingerprint(row: dict[str, Any]) -> str:
    """SHA-256 of a stored record, ignoring where its images were read from (``source``)."""
    for value in row.values():
        if isinstance(value, list):  # content or history with segments: drop image sources
            row = {key: _without_sources(value) for key, value in row.items()}
            break
    text = _CANONICAL.encode(row)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _without_sources(value: Any) -> Any:
    """CONTENT (or history) without the ``source`` of its image segments; other values as is."""
    if not isinstance(value, list):
        return value
    return [_segment_without_source(part) for part in value]


def _segment_without_source(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    if part.get("type") == "image":
        return {key: value for key, value in part.items() if key != "source"}
    if isinstance(part.get("content"), list):  # a history turn
        return {**part, "content": _without_sources(part["content"])}
    return part
