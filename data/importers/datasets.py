"""Write validated items into a dataset: check everything first, then insert in bulk.

The import runs in two phases inside the caller's transaction. Phase one reads every plan,
checks every image (Pillow, confinement, size) and compares every id with the database; any
problem raises :class:`~data.importers.errors.InvalidRecord` before a single row is written.
Phase two copies the accepted images into the content-addressed store and inserts items,
responses and pairs with bulk ``INSERT``s. Records already present with the same content are
skipped, so re-importing a file changes nothing; a changed record is refused unless
``update=True``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Connection, Table, insert, update
from sqlmodel import Session, select

from data.audit import record_event
from data.content import store_image
from data.importers.errors import InvalidRecord, MissingImages, Problems
from data.importers.images import ImageChecker
from data.importers.records import ItemPlan
from data.storage import engine_data_dir
from schemas.ids import id_problem
from schemas.tables import Dataset, Item, Pair, Response

_ITEMS: Table = Item.__table__  # type: ignore[attr-defined]
_RESPONSES: Table = Response.__table__  # type: ignore[attr-defined]
_PAIRS: Table = Pair.__table__  # type: ignore[attr-defined]
_LOOKUP_CHUNK = 500
_BATCH_ROWS = 20_000  # items + responses checked and written at once
# json.dumps(sort_keys=True, ensure_ascii=False, default=str) without building an encoder per call
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class ImportSummary:
    """What an import added, updated and found unchanged."""

    dataset: str
    items_added: int
    items_updated: int
    items_unchanged: int
    responses_added: int
    responses_updated: int
    responses_unchanged: int
    pairs_added: int
    images_stored: int
    images_missing: int

    def describe(self) -> str:
        text = (
            f"dataset {self.dataset!r}: {self.items_added} items added, "
            f"{self.items_updated} updated, {self.items_unchanged} unchanged; "
            f"{self.responses_added} responses added, {self.responses_updated} updated, "
            f"{self.responses_unchanged} unchanged; {self.pairs_added} pairs added; "
            f"{self.images_stored} images stored"
        )
        if self.images_missing:
            text += f"; {self.images_missing} image references missing (text only)"
        return text


@dataclass
class _Prepared:
    plan: ItemPlan
    row: dict[str, Any]
    responses: list[dict[str, Any]]


def import_items(
    session: Session,
    plans: Iterable[ItemPlan],
    *,
    dataset_name: str,
    source: str,
    images_root: Path,
    allow_missing_images: bool = False,
    update_changed: bool = False,
    on_progress: Callable[[int], None] | None = None,
    actor_id: int | None = None,
    data_root: Path | None = None,
    problems: Problems | None = None,
) -> ImportSummary:
    """Validate all ``plans``, then write them into dataset ``dataset_name`` (created if new).

    Images are copied into the store under ``data_root`` (default: the data folder of the
    session's database, :func:`data.storage.engine_data_dir`). Problems go to ``problems``
    (give the collector the plans' reader uses, so one report lists the file's problems and
    the database's) and are raised as :class:`~data.importers.errors.InvalidFile`. No input, no
    dataset: an empty input is refused.

    Plans are checked and written a batch at a time, so memory stays bounded by a batch, not
    the file (a million responses); the writes sit in a savepoint of the caller's transaction
    that is rolled back when any problem turns up, so a refused import leaves no row behind,
    and no image is stored before every plan has passed.
    """
    problems = problems if problems is not None else Problems()
    images = ImageChecker(images_root)
    state = _Progress(update_changed)
    with session.begin_nested():
        for batch in _batches(plans, _BATCH_ROWS):
            prepared = _prepare(batch, images, on_progress, problems, state)
            if prepared and state.dataset is None and state.name_error is None:
                try:
                    state.dataset, state.created = _dataset(session, dataset_name, prepared, source)
                except InvalidRecord as error:
                    state.name_error = error
            if prepared and state.name_error is None:
                _write_batch(session, state, prepared, problems)
        problems.check()
        if state.dataset is None and state.name_error is None:
            raise InvalidRecord(source, None, None, "holds no items: nothing to import")
        if images.missing and not allow_missing_images:
            first_plan, first_field = next(iter(images.missing.values()))
            raise MissingImages(
                first_plan.source, first_plan.location, first_field, images.missing_references,
                len(images.missing), str(images_root), next(iter(images.missing)),
            )  # fmt: skip
        if state.name_error is not None:
            raise state.name_error
        dataset = state.dataset
        assert dataset.id is not None
        if state.created and len(state.benchmarks) > 1:
            dataset.benchmark = "generic"
            session.add(dataset)
        pairs_added = _insert_pairs(session, dataset.id, state.with_pairs)
        for image in images.accepted.values():
            store_image(image, data_root or engine_data_dir(session.get_bind()))
    summary = ImportSummary(
        dataset=dataset_name,
        items_added=state.items_added,
        items_updated=state.items_updated,
        items_unchanged=state.items_unchanged,
        responses_added=state.responses_added,
        responses_updated=state.responses_updated,
        responses_unchanged=state.responses_unchanged,
        pairs_added=pairs_added,
        images_stored=len(images.accepted),
        images_missing=images.missing_references,
    )
    record_event(
        session, actor_id=actor_id, action="dataset.import", entity="dataset",
        entity_id=dataset.id, detail={"source": source, **asdict(summary)},
    )  # fmt: skip
    return summary


@dataclass
class _Progress:
    """What the batches of one import have seen and written so far."""

    update_changed: bool
    dataset: Dataset | None = None
    created: bool = False
    name_error: InvalidRecord | None = None
    benchmarks: set[str] = field(default_factory=set)
    existing_items: dict[str, tuple[int, str]] | None = None
    item_lines: dict[str, int | str] = field(default_factory=dict)
    response_lines: dict[str, int | str] = field(default_factory=dict)
    with_pairs: list[tuple[ItemPlan, dict[str, int]]] = field(default_factory=list)
    items_added: int = 0
    items_updated: int = 0
    items_unchanged: int = 0
    responses_added: int = 0
    responses_updated: int = 0
    responses_unchanged: int = 0


def _batches(plans: Iterable[ItemPlan], rows: int) -> Iterator[list[ItemPlan]]:
    """Consecutive plans holding about ``rows`` items and responses together."""
    batch: list[ItemPlan] = []
    size = 0
    for plan in plans:
        batch.append(plan)
        size += 1 + len(plan.responses)
        if size >= rows:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _write_batch(
    session: Session, state: _Progress, prepared: list[_Prepared], problems: Problems
) -> None:
    """Classify one batch against the database and, while no problem is known, write it."""
    dataset = state.dataset
    assert dataset is not None and dataset.id is not None
    state.benchmarks.update(p.plan.benchmark for p in prepared)
    if state.existing_items is None:
        state.existing_items = _existing_items(session, dataset.id)
    new_items, changed_items, unchanged_items = _classify_items(
        state.existing_items, dataset, prepared, state.update_changed, problems
    )
    new_responses, changed_responses, unchanged_responses = _classify_responses(
        session, dataset, prepared, state.update_changed, problems
    )
    state.items_added += len(new_items)
    state.items_updated += len(changed_items)
    state.items_unchanged += unchanged_items
    state.responses_added += len(new_responses)
    state.responses_updated += len(changed_responses)
    state.responses_unchanged += unchanged_responses
    if problems:
        return  # the import is refused: checking goes on, writing stops
    connection = session.connection()
    if new_items:
        connection.execute(insert(_ITEMS), [{**p.row, "dataset_id": dataset.id} for p in new_items])
    for prepared_item, item_pk in changed_items:
        connection.execute(update(_ITEMS).where(_ITEMS.c.id == item_pk).values(**prepared_item.row))
    item_pks = _item_pks(session, dataset.id, [p.plan.item_id for p in prepared])
    if new_responses:
        _insert_responses(
            connection, [{**row, "item_pk": item_pks[item_id]} for item_id, row in new_responses]
        )
    for row, response_pk in changed_responses:
        connection.execute(update(_RESPONSES).where(_RESPONSES.c.id == response_pk).values(**row))
    state.with_pairs.extend((p.plan, item_pks) for p in prepared if p.plan.pairs)


def _insert_responses(connection: Connection, rows: list[dict[str, Any]]) -> None:
    """Bulk ``INSERT`` of response rows.

    On SQLite the rows go to the driver's ``executemany`` as tuples, the JSON columns serialised
    as SQLAlchemy's JSON type does (``json.dumps``): its per-row parameter processing was half
    the CPU time of inserting a million responses. Other databases take the Core ``INSERT``.
    """
    if connection.dialect.name != "sqlite":
        connection.execute(insert(_RESPONSES), rows)
        return
    columns = [column for column in _RESPONSES.columns if column.name != "id"]
    encode = [isinstance(column.type, JSON) for column in columns]
    statement = (
        f"INSERT INTO {_RESPONSES.name} ({', '.join(column.name for column in columns)}) "
        f"VALUES ({', '.join('?' for _ in columns)})"
    )
    connection.exec_driver_sql(
        statement,
        [
            tuple(
                json.dumps(row[column.name]) if as_json else row[column.name]
                for column, as_json in zip(columns, encode, strict=True)
            )
            for row in rows
        ],
    )


def _prepare(
    plans: Iterable[ItemPlan],
    images: ImageChecker,
    on_progress: Callable[[int], None] | None,
    problems: Problems,
    state: _Progress,
) -> list[_Prepared]:
    prepared: list[_Prepared] = []
    for plan in plans:
        try:
            prepared.append(_prepared(plan, images, state.item_lines, state.response_lines))
        except InvalidRecord as error:
            problems.add(error)
        if on_progress is not None:
            on_progress(1)
    return prepared


def _prepared(
    plan: ItemPlan,
    images: ImageChecker,
    item_lines: dict[str, int | str],
    response_lines: dict[str, int | str],
) -> _Prepared:
    """One plan as the rows to write, its images checked."""
    if plan.item_id in item_lines:
        raise plan.error(
            "item_id",
            f"duplicate item_id {plan.item_id!r} (also at {item_lines[plan.item_id]}): "
            "item ids are unique within a dataset",
        )
    item_lines[plan.item_id] = plan.location
    row = {
        "item_id": plan.item_id, "benchmark": plan.benchmark, "task": plan.task,
        "category": plan.category, "group": plan.group,
        "history": [
            {**turn, "content": images.stored_form(turn["content"], f"history[{i}].content",
                                                   plan)}
            for i, turn in enumerate(plan.history)
        ],
        "question": images.stored_form(plan.question, "question", plan),
        "reference": images.stored_form(plan.reference, "reference", plan),
        "meta": plan.meta,
    }  # fmt: skip
    row["content_sha256"] = _fingerprint(row)
    responses = []
    for index, response in enumerate(plan.responses):
        if response.response_id in response_lines:
            raise plan.error(
                f"responses[{index}].response_id",
                f"duplicate response_id {response.response_id!r} (also at "
                f"{response_lines[response.response_id]}): response ids are unique",
            )
        response_lines[response.response_id] = plan.location
        content = images.stored_form(response.content, f"responses[{index}].content", plan)
        response_row = {"response_id": response.response_id, "model": response.model,
                        "content": content, "meta": response.meta}  # fmt: skip
        response_row["content_sha256"] = _fingerprint({**response_row, "item": plan.item_id})
        responses.append(response_row)
    return _Prepared(plan, row, responses)


def _dataset(
    session: Session, name: str, prepared: list[_Prepared], source: str
) -> tuple[Dataset, bool]:
    """The dataset named ``name``, created (True) with the benchmark of ``prepared`` if new."""
    dataset = session.exec(select(Dataset).where(Dataset.name == name)).first()
    if dataset is not None:
        return dataset, False
    problem = id_problem(name)
    if problem is not None:  # the one id rule (schemas.ids)
        raise InvalidRecord(source, None, None, f"the dataset name {name!r} {problem}")
    benchmarks = {p.plan.benchmark for p in prepared}
    dataset = Dataset(
        name=name,
        benchmark=benchmarks.pop() if len(benchmarks) == 1 else "generic",
        source=source,
    )
    session.add(dataset)
    session.flush()
    return dataset, True


def _existing_items(session: Session, dataset_id: int) -> dict[str, tuple[int, str]]:
    """Item id → (primary key, content fingerprint) of the items the dataset already holds."""
    query = select(_ITEMS.c.item_id, _ITEMS.c.id, _ITEMS.c.content_sha256).where(
        _ITEMS.c.dataset_id == dataset_id
    )
    return {item_id: (pk, sha) for item_id, pk, sha in session.connection().execute(query)}


def _classify_items(
    existing: dict[str, tuple[int, str]],
    dataset: Dataset,
    prepared: list[_Prepared],
    update_changed: bool,
    problems: Problems,
) -> tuple[list[_Prepared], list[tuple[_Prepared, int]], int]:
    new, changed, unchanged = [], [], 0
    for item in prepared:
        if item.plan.item_id not in existing:
            new.append(item)
            continue
        pk, sha = existing[item.plan.item_id]
        if sha == item.row["content_sha256"]:
            unchanged += 1
        elif update_changed:
            changed.append((item, pk))
        else:
            problems.add(
                item.plan.error(
                    "item_id",
                    f"item {item.plan.item_id!r} is already in dataset {dataset.name!r} with "
                    "different content: import with --update to replace it, or give it a new "
                    "item_id",
                )
            )
    return new, changed, unchanged


def _classify_responses(
    session: Session,
    dataset: Dataset,
    prepared: list[_Prepared],
    update_changed: bool,
    problems: Problems,
) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[dict[str, Any], int]], int]:
    wanted = [(item, row) for item in prepared for row in item.responses]
    existing = dict(_existing_responses(session, [row["response_id"] for _, row in wanted]))
    new, changed, unchanged = [], [], 0
    for item, row in wanted:
        found = existing.get(row["response_id"])
        if found is None:
            new.append((item.plan.item_id, row))
            continue
        pk, sha, owner_dataset, owner_item = found
        if (owner_dataset, owner_item) != (dataset.id, item.plan.item_id):
            problems.add(
                item.plan.error(
                    "response_id",
                    f"response_id {row['response_id']!r} already belongs to item {owner_item!r} of "
                    "another dataset or item: response ids are unique across the database",
                )
            )
            continue
        if sha == row["content_sha256"]:
            unchanged += 1
        elif update_changed:
            changed.append((row, pk))
        else:
            problems.add(
                item.plan.error(
                    "response_id",
                    f"response {row['response_id']!r} is already stored with different content: "
                    "import with --update to replace it, or give it a new response_id",
                )
            )
    return new, changed, unchanged


def _existing_responses(
    session: Session, response_ids: list[str]
) -> Iterator[tuple[str, tuple[int, str, int, str]]]:
    query = select(
        _RESPONSES.c.response_id, _RESPONSES.c.id, _RESPONSES.c.content_sha256,
        _ITEMS.c.dataset_id, _ITEMS.c.item_id,
    ).join(_ITEMS, _ITEMS.c.id == _RESPONSES.c.item_pk)  # fmt: skip
    for start in range(0, len(response_ids), _LOOKUP_CHUNK):
        chunk = response_ids[start : start + _LOOKUP_CHUNK]
        for response_id, pk, sha, dataset_id, item_id in session.connection().execute(
            query.where(_RESPONSES.c.response_id.in_(chunk))
        ):
            yield response_id, (pk, sha, dataset_id, item_id)


def _item_pks(session: Session, dataset_id: int, item_ids: list[str]) -> dict[str, int]:
    query = select(_ITEMS.c.item_id, _ITEMS.c.id).where(_ITEMS.c.dataset_id == dataset_id)
    pks: dict[str, int] = {}
    for start in range(0, len(item_ids), _LOOKUP_CHUNK):
        chunk = item_ids[start : start + _LOOKUP_CHUNK]
        pks.update(session.connection().execute(query.where(_ITEMS.c.item_id.in_(chunk))).all())
    return pks


def _insert_pairs(
    session: Session, dataset_id: int, with_pairs: list[tuple[ItemPlan, dict[str, int]]]
) -> int:
    """Insert the pairs of the plans in ``with_pairs`` (each with its batch's item keys)."""
    if not with_pairs:
        return 0
    connection = session.connection()
    response_pks = dict(
        connection.execute(
            select(_RESPONSES.c.response_id, _RESPONSES.c.id)
            .join(_ITEMS, _ITEMS.c.id == _RESPONSES.c.item_pk)
            .where(_ITEMS.c.dataset_id == dataset_id)
        ).all()
    )
    existing = {
        (a, b)
        for a, b in connection.execute(
            select(_PAIRS.c.response_a_pk, _PAIRS.c.response_b_pk)
            .join(_ITEMS, _ITEMS.c.id == _PAIRS.c.item_pk)
            .where(_ITEMS.c.dataset_id == dataset_id)
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
            rows.append({"item_pk": item_pks[plan.item_id], "response_a_pk": key[0],
                         "response_b_pk": key[1], "source": "import"})  # fmt: skip
    if rows:
        connection.execute(insert(_PAIRS), rows)
    return len(rows)


def _fingerprint(row: dict[str, Any]) -> str:
    """SHA-256 of a stored record, ignoring where its images were read from (``source``)."""
    if any(isinstance(value, list) for value in row.values()):
        row = {key: _without_sources(value) for key, value in row.items()}
    text = _CANONICAL.encode(row)  # (a text response, the common case, has nothing to drop)
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
