"""The units of an ``annotations import`` file, found in the database: each label's response or
stored pair, all in one dataset.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlmodel import Session, col

from data.io.importers.annotation_labels import AnnotationImportError, Label
from data.io.importers.errors import InvalidRecord, Problems
from data.services.campaigns import dataset_pairs
from schemas.core import stored_id
from schemas.ids import pair_unit_key, response_unit_key
from schemas.tables import Dataset, Item, Response

_CHUNK = 500


@dataclass(frozen=True)
class ImportedUnit:
    """A unit of the file, found in the database."""

    unit_key: str
    item_pk: int
    response_pk: int | None
    pair_pk: int | None
    dataset_id: int
    dataset_name: str


def resolve_units(
    session: Session, labels: list[Label], dataset: str | None, problems: Problems
) -> dict[tuple[str, ...], ImportedUnit]:
    """The stored response or pair of every unit; a unit outside the dataset is a problem.

    ``dataset``: the dataset the units must belong to; None: the one dataset they belong to.
    """
    wanted = sorted({rid for label in labels for rid in label.unit})
    responses = _responses(session, wanted)
    named_dataset = select(col(Dataset.id)).where(col(Dataset.name) == dataset)
    if dataset is not None and session.execute(named_dataset).first() is None:
        raise AnnotationImportError(
            f"no dataset called {dataset!r}: import the dataset with its responses first"
        )
    pairs = {
        key: stored_id(pair)
        for dataset_id in sorted({found[2] for found in responses.values()})
        for key, pair in dataset_pairs(session, dataset_id).items()
    }
    units: dict[tuple[str, ...], ImportedUnit] = {}
    for label in labels:
        if label.unit in units:
            continue
        try:
            units[label.unit] = _unit(label, responses, pairs, dataset)
        except InvalidRecord as error:
            problems.add(error)
    first: Label | None = None
    for label in labels:  # the first line whose unit is in another dataset than line 1's
        if label.unit not in units:
            continue
        first = first or label
        name, first_name = units[label.unit].dataset_name, units[first.unit].dataset_name
        if name != first_name:
            field = "pair" if len(label.unit) == 2 else "response_id"
            raise label.error(
                field,
                f"this unit belongs to dataset {name!r}, the one of line {first.location} to "
                f"{first_name!r}: a campaign annotates one dataset; split the file by dataset",
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
        select(
            col(Response.response_id),
            col(Response.id),
            col(Response.item_pk),
            col(Dataset.id),
            col(Dataset.name),
        )
        .join(Item, col(Item.id) == col(Response.item_pk))
        .join(Dataset, col(Dataset.id) == col(Item.dataset_id))
    )
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        for rid, pk, item_pk, dataset_id, name in session.execute(
            query.where(col(Response.response_id).in_(chunk))
        ):
            found[rid] = (pk, item_pk, dataset_id, name)
    return found
