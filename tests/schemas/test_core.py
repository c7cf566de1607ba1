"""core_table: the typed way to the Core table of a table model; parse_row_id: a typed row id."""

import pytest
from sqlmodel import SQLModel

import schemas.tables as tables
from schemas.core import MAX_ROW_ID, core_table, parse_row_id, stored_id


def _table_models() -> list[type[SQLModel]]:
    return [
        model
        for model in vars(tables).values()
        if isinstance(model, type) and issubclass(model, SQLModel) and "__table__" in vars(model)
    ]


@pytest.mark.parametrize("model", _table_models(), ids=lambda model: model.__name__)
def test_core_table_is_the_models_table(model: type[SQLModel]) -> None:
    assert core_table(model) is model.__table__  # type: ignore[attr-defined]


def test_every_table_model_is_checked() -> None:
    assert len(_table_models()) == len(SQLModel.metadata.tables)


def test_stored_id_of_a_flushed_row_and_of_a_new_one() -> None:
    user = tables.User(name="ada", role="annotator", password_hash="x")
    with pytest.raises(ValueError, match="User row has no primary key: it was never flushed"):
        stored_id(user)
    user.id = 7
    assert stored_id(user) == 7


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("0042", 42),
        (str(MAX_ROW_ID), MAX_ROW_ID),
        (str(MAX_ROW_ID + 1), None),
        ("99999999999999999999", None),
        ("²", None),
        ("٤٢", None),  # Arabic-Indic digits: int() reads them, a URL id is ASCII
        ("0", None),
        ("-1", None),
        (" 4", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_row_id_reads_ascii_ids_a_database_can_hold(
    text: str | None, expected: int | None
) -> None:
    assert parse_row_id(text) == expected
