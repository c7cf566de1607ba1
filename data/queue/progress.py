"""Progress for the annotation page's header, read in one query when a unit is shown."""

from __future__ import annotations

from sqlalchemy import and_, bindparam, func
from sqlalchemy import select as core_select
from sqlmodel import Session

from data.queue.records import AssignmentNotFound, UnitProgress
from schemas.core_tables import ASSIGNMENTS, UNITS

_SHOWN = ASSIGNMENTS.alias("shown")
_SHOWN_UNIT = UNITS.alias("shown_unit")
_MINE = ASSIGNMENTS.alias("mine")
_SAME_ITEM = UNITS.alias("same_item")


_UNITS_TOTAL = (
    core_select(func.count())
    .select_from(UNITS)
    .where(UNITS.c.campaign_id == _SHOWN.c.campaign_id, ~UNITS.c.gold)
    .scalar_subquery()
)
"""The campaign's real units (gold units are not the campaign's work; the annotator's own count
below includes their gold answers, so that a gold submit moves it as any other does)."""
_MY_SUBMITTED = (
    core_select(func.count())
    .select_from(_MINE)
    .where(
        _MINE.c.campaign_id == _SHOWN.c.campaign_id,
        _MINE.c.annotator_id == _SHOWN.c.annotator_id,
        _MINE.c.status == "submitted",
    )
    .scalar_subquery()
)
_ITEM_UNITS = (
    core_select(func.count())
    .select_from(_SAME_ITEM)
    .where(
        _SAME_ITEM.c.campaign_id == _SHOWN.c.campaign_id,
        _SAME_ITEM.c.item_pk == _SHOWN_UNIT.c.item_pk,
    )
    .scalar_subquery()
)
_MINE_OF_ITEM = ASSIGNMENTS.alias("mine_of_item")
_ITEM_OF_MINE = UNITS.alias("item_of_mine")
_ITEM_POSITION = (
    core_select(func.count())
    .select_from(
        _ITEM_OF_MINE.join(
            _MINE_OF_ITEM,
            and_(
                _MINE_OF_ITEM.c.unit_id == _ITEM_OF_MINE.c.id,
                _MINE_OF_ITEM.c.annotator_id == _SHOWN.c.annotator_id,
            ),
        )
    )
    .where(
        _ITEM_OF_MINE.c.campaign_id == _SHOWN.c.campaign_id,
        _ITEM_OF_MINE.c.item_pk == _SHOWN_UNIT.c.item_pk,
        _MINE_OF_ITEM.c.id <= _SHOWN.c.id,  # assignment ids grow: the order they were given
    )
    .scalar_subquery()
)
_PROGRESS = (
    core_select(
        _UNITS_TOTAL.label("units_total"),
        _MY_SUBMITTED.label("my_submitted"),
        _ITEM_UNITS.label("item_units"),
        _ITEM_POSITION.label("item_position"),
    )
    .select_from(_SHOWN.join(_SHOWN_UNIT, _SHOWN_UNIT.c.id == _SHOWN.c.unit_id))
    .where(
        _SHOWN.c.id == bindparam("assignment_id"),
        _SHOWN.c.annotator_id == bindparam("annotator_id"),
    )
)


def unit_progress(session: Session, assignment_id: int, annotator_id: int) -> UnitProgress:
    """The campaign's units, the annotator's answers in it, and where the assignment's unit
    stands among its item's units (one query; the page reads it once per unit shown).

    Raises :class:`AssignmentNotFound` for another annotator's assignment.
    """
    row = (
        session.connection()
        .execute(_PROGRESS, {"assignment_id": assignment_id, "annotator_id": annotator_id})
        .one_or_none()
    )
    if row is None:
        raise AssignmentNotFound(f"you have no assignment with id {assignment_id}")
    return UnitProgress(
        units_total=int(row.units_total),
        my_submitted=int(row.my_submitted),
        item_units=int(row.item_units),
        item_position=int(row.item_position),
    )
