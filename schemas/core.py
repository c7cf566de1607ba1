"""Typed access to what SQLModel leaves untyped: a table model's Core table, a stored row's id."""

from __future__ import annotations

from typing import Protocol

from sqlalchemy import Table
from sqlalchemy.orm import class_mapper
from sqlmodel import SQLModel


class _Row(Protocol):
    @property
    def id(self) -> int | None: ...


def core_table(model: type[SQLModel]) -> Table:
    """The :class:`~sqlalchemy.Table` that ``model`` maps (the object at ``model.__table__``).

    SQLModel does not declare ``__table__`` to type checkers; the mapper's ``local_table`` is the
    same object, reached through SQLAlchemy's documented :func:`~sqlalchemy.orm.class_mapper`.
    """
    table = class_mapper(model).local_table
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not a table model")
    return table


def stored_id(row: _Row) -> int:
    """The primary key of a row read from (or flushed to) the database.

    Table models declare ``id: int | None`` because a new row has no id until it is flushed; a
    stored row always has one, and this says so to the type checker.
    """
    if row.id is None:
        raise ValueError(f"{type(row).__name__} row has no primary key: it was never flushed")
    return row.id
