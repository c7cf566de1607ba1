"""Schema migrations on SQLite and PostgreSQL: from empty, matching the models, newer refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from data.storage.engine import (
    HEAD_REVISION,
    DatabaseTooNew,
    current_revision,
    head_revision,
    make_engine,
    upgrade_database,
)


def test_migrations_build_every_table_from_an_empty_database(any_engine: Engine) -> None:
    assert current_revision(any_engine) == head_revision()
    tables = set(inspect(any_engine).get_table_names())
    assert set(SQLModel.metadata.tables) <= tables
    assert upgrade_database(any_engine) == head_revision()  # a second upgrade is a no-op


def test_head_revision_names_the_newest_migration() -> None:
    """``upgrade_database`` leaves a database at HEAD_REVISION alone without asking Alembic: a new
    migration must move the constant, or databases at the old head would never be upgraded."""
    assert head_revision() == HEAD_REVISION, "set data.storage.engine.HEAD_REVISION to the new head"


def test_an_up_to_date_database_is_opened_without_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ready.db'}"
    engine = make_engine(url)
    upgrade_database(engine)
    engine.dispose()
    code = (
        "import sys; from data.storage.engine import make_engine, upgrade_database; "
        f"print(upgrade_database(make_engine({url!r}))); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'alembic'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.stdout.split("\n")[:2] == [HEAD_REVISION, "[]"]


def test_migrations_match_the_models(any_engine: Engine) -> None:
    with any_engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        differences = compare_metadata(context, SQLModel.metadata)
    assert differences == []


def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'future.db'}"
    engine = make_engine(url)
    upgrade_database(engine)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
    with pytest.raises(DatabaseTooNew) as error:
        upgrade_database(engine)
    assert str(error.value) == (
        f"the database {url} is at schema revision 9999_future, which this CritiqueLab does "
        "not know: it was written by a newer version. Upgrade CritiqueLab (pip install -U "
        "critiquelab) to open it."
    )
    assert current_revision(engine) == "9999_future"
    engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_populated_first_release_database_upgrades_to_head(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A database written by the first release, with accounts that sessions and login tries
    point at, upgrades to the newest revision and keeps its rows (a migration that rebuilds a
    referenced table fails here on SQLite)."""
    from alembic import command

    from data.storage.engine import alembic_config

    url = (
        f"sqlite:///{tmp_path / 'old.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    engine = make_engine(url)
    command.upgrade(alembic_config(engine), "0001_initial")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO user_account (id, name, role, password_hash, active, synthetic, "
                "created_at) VALUES (1, 'alice', 'annotator', 'x', true, false, "
                "CURRENT_TIMESTAMP)"
            )
        )
        connection.execute(
            text(
                "INSERT INTO auth_session (token_hash, user_id, created_at, expires_at) "
                "VALUES ('t', 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
            )
        )
    assert upgrade_database(engine) == head_revision()
    with engine.connect() as connection:
        names = connection.execute(text("SELECT name FROM user_account")).scalars().all()
        sessions = connection.execute(text("SELECT count(*) FROM auth_session")).scalar_one()
    assert (names, sessions) == (["alice"], 1)
    engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_gold_units_migration_downgrades_and_upgrades_again(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """0006 (gold units, qualification) goes down to 0005 and back up, keeping campaigns, and
    its checks hold after the upgrade on both backends."""
    from alembic import command
    from sqlalchemy.exc import IntegrityError

    from data.storage.engine import alembic_config

    url = (
        f"sqlite:///{tmp_path / 'gold.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    engine = make_engine(url)
    upgrade_database(engine)
    from sqlmodel import Session

    from schemas.tables import Campaign, Dataset

    with Session(engine) as session:
        dataset = Dataset(name="d", benchmark="alignmmbench")
        session.add(dataset)
        session.flush()
        assert dataset.id is not None
        session.add(Campaign(name="c", dataset_id=dataset.id, protocol="pairwise", gold_rate=0.1))
        session.commit()
    config = alembic_config(engine)
    command.downgrade(config, "0005_disagreement_tags")
    tables = set(inspect(engine).get_table_names())
    assert not {"gold_answer", "annotator_standing"} & tables
    assert "gold_rate" not in {c["name"] for c in inspect(engine).get_columns("campaign")}
    assert upgrade_database(engine) == head_revision()
    with engine.connect() as connection:
        row = connection.execute(
            text("SELECT name, gold_rate, gold_feedback, qualification_gold FROM campaign")
        ).one()
    assert (row[0], row[1], bool(row[2]), row[3]) == ("c", 0, False, 0)
    for bad in ("gold_rate = 0.9", "qualification_gold = -1", "qualification_accuracy = 1.5"):
        with pytest.raises(IntegrityError), engine.begin() as connection:
            connection.execute(text(f"UPDATE campaign SET {bad}"))
    engine.dispose()
