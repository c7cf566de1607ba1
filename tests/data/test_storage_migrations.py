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


@pytest.mark.slow  # a process of its own: a fresh interpreter's modules are the point
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


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_review_decisions_migration_keeps_answers_and_the_slot_rules(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """0007 (review decisions, assignment status ``rejected``) upgrades a 0006 database whose
    assignments annotations refer to (SQLite rebuilds the assignment table), keeps every rule
    of the assignment table (slot in overlap, one live slot, one unit per annotator), goes down
    to 0006 turning rejected assignments into released ones, and up again."""
    from alembic import command
    from sqlalchemy.exc import IntegrityError

    from data.storage.engine import alembic_config

    url = (
        f"sqlite:///{tmp_path / 'review.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    engine = make_engine(url)
    config = alembic_config(engine)
    command.upgrade(config, "0006_gold_units")
    from sqlmodel import Session

    from schemas.tables import (
        Annotation,
        Assignment,
        Campaign,
        Dataset,
        Item,
        Response,
        Unit,
        User,
    )

    with Session(engine) as session:  # the 0006 tables: no model column is newer than 0006
        session.add(User(id=1, name="ann", password_hash="x", role="annotator"))
        session.add(Dataset(id=1, name="d", benchmark="generic"))
        session.flush()
        session.add(
            Item(
                id=1,
                dataset_id=1,
                item_id="i",
                benchmark="generic",
                question="q",
                content_sha256="x",
            )
        )
        session.flush()
        session.add(
            Response(id=1, response_id="r", item_pk=1, model="m", content="a", content_sha256="x")
        )
        session.add(Campaign(id=1, name="c", dataset_id=1, protocol="score", overlap=2))
        session.flush()
        session.add(Unit(id=1, campaign_id=1, item_pk=1, response_pk=1, slots_taken=1))
        session.flush()
        session.add(
            Assignment(
                id=1,
                campaign_id=1,
                unit_id=1,
                annotator_id=1,
                slot=0,
                overlap=2,
                status="submitted",
            )
        )
        session.flush()
        session.add(
            Annotation(
                id=1,
                campaign_id=1,
                unit_id=1,
                annotator_id=1,
                assignment_id=1,
                score=3,
                rationale="why",
            )
        )
        session.commit()
    assert upgrade_database(engine) == head_revision()
    with engine.begin() as connection:
        connection.execute(text("UPDATE assignment SET status = 'rejected'"))
        connection.execute(
            text(
                "INSERT INTO review_decision (campaign_id, annotation_id, decision, comment, "
                "decided_at) VALUES (1, 1, 'reject', 'no reason given', CURRENT_TIMESTAMP)"
            )
        )
    refused = (
        "UPDATE assignment SET status = 'lost'",
        "UPDATE assignment SET slot = 2",
        "INSERT INTO review_decision (campaign_id, annotation_id, decision, comment, decided_at) "
        "VALUES (1, 1, 'accept', '', CURRENT_TIMESTAMP)",  # a second live decision
        "INSERT INTO review_decision (campaign_id, annotation_id, decision, comment, decided_at, "
        "revoked_at) VALUES (1, 1, 'reject', '  ', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
        "INSERT INTO review_decision (campaign_id, annotation_id, decision, comment, decided_at, "
        "revoked_at) VALUES (1, 1, 'maybe', 'x', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
        "INSERT INTO assignment (campaign_id, unit_id, annotator_id, slot, overlap, status, "
        "shown_order, leased_at, expires_at) VALUES (1, 1, 1, 1, 2, 'leased', 'AB', "
        "CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",  # the unit twice to one annotator
    )
    for bad in refused:
        with pytest.raises(IntegrityError), engine.begin() as connection:
            connection.execute(text(bad))
    with engine.begin() as connection:  # one live slot: two live rows on slot 0 are refused
        connection.execute(
            text(
                "INSERT INTO user_account (id, name, role, password_hash, active, synthetic, "
                "created_at) VALUES (2, 'bob', 'annotator', 'x', true, false, CURRENT_TIMESTAMP)"
            )
        )
        connection.execute(
            text(
                "INSERT INTO assignment (id, campaign_id, unit_id, annotator_id, slot, overlap, "
                "status, shown_order, leased_at, expires_at) VALUES (3, 1, 1, 2, 0, 2, 'leased', "
                "'AB', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
            )
        )
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.execute(text("UPDATE assignment SET status = 'submitted' WHERE id = 1"))
    command.downgrade(config, "0006_gold_units")
    assert "review_decision" not in set(inspect(engine).get_table_names())
    with engine.connect() as connection:
        statuses = connection.execute(text("SELECT status FROM assignment ORDER BY id")).all()
        answers = connection.execute(text("SELECT count(*) FROM annotation")).scalar_one()
    assert ([s for (s,) in statuses], answers) == (["released", "leased"], 1)
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.execute(text("UPDATE assignment SET status = 'rejected'"))
    assert upgrade_database(engine) == head_revision()
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.execute(text("UPDATE assignment SET status = 'submitted' WHERE id = 1"))
    engine.dispose()


def test_account_names_folded_migration_stops_on_case_twins(tmp_path: Path) -> None:
    """0008 cannot index two names equal up to case: it names them and changes nothing."""
    from alembic import command

    from data.storage.engine import alembic_config

    engine = make_engine(f"sqlite:///{tmp_path / 'twins.db'}")
    command.upgrade(alembic_config(engine), "0007_review_decisions")
    with engine.begin() as connection:
        for id_, name in ((1, "demo-admin"), (2, "Demo-Admin")):
            connection.execute(
                text(
                    "INSERT INTO user_account (id, name, role, password_hash, active, synthetic, "
                    "external, created_at) VALUES (:id, :name, 'admin', 'x', true, false, false, "
                    "CURRENT_TIMESTAMP)"
                ),
                {"id": id_, "name": name},
            )
    with pytest.raises(RuntimeError, match="names differ only in case: demo-admin; rename"):
        upgrade_database(engine)
    with engine.connect() as connection:
        version = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    assert version == "0007_review_decisions"
    engine.dispose()


def test_campaign_imports_migration_rolls_back_an_unfinished_import(tmp_path: Path) -> None:
    """0010: a campaign an earlier version's import marked ``options.importing`` and never
    finished becomes an abandoned import, rolled back as the upgraded database opens; a finished
    imported campaign stays."""
    from alembic import command
    from sqlmodel import Session, select

    from data.storage.engine import alembic_config
    from schemas.tables import Campaign, CampaignImport, Dataset

    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    command.upgrade(alembic_config(engine), "0008_account_names_folded")
    with Session(engine) as session:
        dataset = Dataset(name="d", benchmark="generic")
        session.add(dataset)
        session.flush()
        for name, options in (("half", {"importing": True}), ("whole", {"imported": {}})):
            session.add(
                Campaign(
                    name=name,
                    dataset_id=dataset.id,
                    protocol="pairwise",
                    status="closed",
                    options=options,
                )  # fmt: skip
            )
        session.commit()
    upgrade_database(engine)
    with Session(engine) as session:
        assert [c.name for c in session.exec(select(Campaign))] == ["whole"]
        assert session.exec(select(CampaignImport)).all() == []
    engine.dispose()
