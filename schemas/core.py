"""Typed access to what SQLModel leaves untyped: a table model's Core table, a stored row's id;
and a row id as a user types it (a URL's ``?unit=``), read or refused."""

from __future__ import annotations

import re
from typing import Protocol

from sqlalchemy import Table
from sqlalchemy.orm import class_mapper
from sqlmodel import SQLModel

MAX_ROW_ID = 2**63 - 1
"""The largest primary key either backend stores (a signed 64-bit integer)."""
_ASCII_DIGITS = re.compile(r"[0-9]{1,19}")


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


def parse_row_id(text: str | None) -> int | None:
    """The row id ``text`` names, or None when it names none: absent, not ASCII digits (``²`` is
    a digit to :meth:`str.isdigit` but not to :func:`int`), 0, or beyond :data:`MAX_ROW_ID`
    (a database cannot hold it; SQLite's driver raises OverflowError on it)."""
    if text is None or not _ASCII_DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if 0 < value <= MAX_ROW_ID else None
