"""core_table: the typed way to the Core table of a table model."""

import pytest
from sqlmodel import SQLModel

import schemas.tables as tables
from schemas.core import core_table, stored_id


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
