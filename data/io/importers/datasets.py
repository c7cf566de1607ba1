"""Write validated items into a dataset: check everything, insert in bulk, all or nothing.

The import runs inside a savepoint of the caller's transaction, a batch of plans at a time:
each batch's plans are checked (records, images: Pillow, confinement, size) and their ids
compared with the database, then its items and responses are inserted with bulk ``INSERT``s
(``dataset_rows.py``) while no problem is known. Any problem raises
:class:`~data.io.importers.errors.InvalidRecord` at the end and the savepoint takes every batch
back; the accepted images are copied into the content-addressed store and the pairs inserted
only when every plan passed. Records already present with the same content are skipped, so
re-importing a file changes nothing; a changed record is refused unless ``update=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import insert, update
from sqlmodel import Session, select

from data.io.importers.dataset_rows import (
    existing_items,
    existing_responses,
    fingerprint,
    insert_pairs,
    insert_responses,
    item_pks,
)
from data.io.importers.errors import InvalidRecord, MissingImages, Problems
from data.io.importers.images import ImageChecker
from data.io.importers.records import ItemPlan
from data.storage.audit import record_event
from data.storage.content import store_image
from data.storage.engine import engine_data_dir
from schemas.core import stored_id
from schemas.core_tables import ITEMS, RESPONSES
from schemas.ids import id_problem
from schemas.option_text import OptionText
from schemas.tables import Dataset

_BATCH_ROWS = 20_000  # items + responses checked and written at once


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
    session's database, :func:`data.storage.engine.engine_data_dir`). Problems go to ``problems``
    (give the collector the plans' reader uses, so one report lists the file's problems and
    the database's) and are raised as :class:`~data.io.importers.errors.InvalidFile`. No input, no
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
                first_plan.source,
                first_plan.location,
                first_field,
                images.missing_references,
                len(images.missing),
                str(images_root),
                next(iter(images.missing)),
            )
        if state.name_error is not None:
            raise state.name_error
        dataset = state.dataset
        assert dataset is not None  # an import without items or with a name error raised above
        if state.created and len(state.benchmarks) > 1:
            dataset.benchmark = "generic"
            session.add(dataset)
        pairs_added = insert_pairs(session, stored_id(dataset), state.with_pairs)
        for image in images.accepted.values():
            store_image(image, data_root or engine_data_dir(session.get_bind().engine))
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
        session,
        actor_id=actor_id,
        action="dataset.import",
        entity="dataset",
        entity_id=stored_id(dataset),
        detail={"source": source, **asdict(summary)},
    )
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
        state.existing_items = existing_items(session, dataset.id)
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
        connection.execute(insert(ITEMS), [{**p.row, "dataset_id": dataset.id} for p in new_items])
    for prepared_item, item_pk in changed_items:
        connection.execute(update(ITEMS).where(ITEMS.c.id == item_pk).values(**prepared_item.row))
    pks = item_pks(session, dataset.id, [p.plan.item_id for p in prepared])
    if new_responses:
        insert_responses(
            connection, [{**row, "item_pk": pks[item_id]} for item_id, row in new_responses]
        )
    for row, response_pk in changed_responses:
        connection.execute(update(RESPONSES).where(RESPONSES.c.id == response_pk).values(**row))
    state.with_pairs.extend((p.plan, pks) for p in prepared if p.plan.pairs)


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
        "item_id": plan.item_id,
        "benchmark": plan.benchmark,
        "task": plan.task,
        "category": plan.category,
        "group": plan.group,
        "history": [
            {**turn, "content": images.stored_form(turn["content"], f"history[{i}].content", plan)}
            for i, turn in enumerate(plan.history)
        ],
        "question": images.stored_form(plan.question, "question", plan),
        "reference": images.stored_form(plan.reference, "reference", plan),
        "meta": plan.meta,
    }
    row["content_sha256"] = fingerprint(row)
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
        response_row = {
            "response_id": response.response_id,
            "model": response.model,
            "content": content,
            "meta": response.meta,
        }
        response_row["content_sha256"] = fingerprint({**response_row, "item": plan.item_id})
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
                    OptionText(
                        "item {item_id!r} is already in dataset {dataset!r} with different "
                        "content: import with {update} to replace it, or give it a new item_id",
                        item_id=item.plan.item_id,
                        dataset=dataset.name,
                    ),
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
    existing = dict(existing_responses(session, [row["response_id"] for _, row in wanted]))
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
                    OptionText(
                        "response {response_id!r} is already stored with different content: "
                        "import with {update} to replace it, or give it a new response_id",
                        response_id=row["response_id"],
                    ),
                )
            )
    return new, changed, unchanged
