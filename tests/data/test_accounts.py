"""Account names equal up to case, and external (label-import) accounts, which never log in."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sqlalchemy.exc
from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

from annotate_app.cli.main import app
from data.io.importers.annotations import EXTERNAL_PASSWORD_HASH
from data.services.users import UserError, create_user, reset_password, set_active
from data.storage.engine import session_scope
from schemas.tables import User


def _external(engine: Engine, name: str = "ext-ann") -> None:
    with session_scope(engine) as session:
        session.add(
            User(name=name, password_hash=EXTERNAL_PASSWORD_HASH, role="annotator",
                 active=False, external=True)
        )  # fmt: skip


def test_an_external_account_is_neither_enabled_nor_given_a_password(engine: Engine) -> None:
    """Both reported success for an account that can still never log in."""
    _external(engine)
    refusal = re.escape("'ext-ann' is an external account (its labels were imported): it can never")
    with session_scope(engine) as session, pytest.raises(UserError, match=refusal):
        set_active(session, "ext-ann", True, actor_id=None)
    with session_scope(engine) as session, pytest.raises(UserError, match=refusal):
        reset_password(session, "ext-ann", "a long password 123", actor_id=None)
    with session_scope(engine) as session:
        user = session.exec(select(User).where(User.name == "ext-ann")).one()
        assert (user.active, user.password_hash) == (False, EXTERNAL_PASSWORD_HASH)
        set_active(session, "ext-ann", False, actor_id=None)  # disabling it is harmless


def test_the_cli_says_so_and_exits_2(engine: Engine, db_url: str) -> None:
    _external(engine)
    result = CliRunner().invoke(
        app, ["--db", db_url, "users", "reset-password", "ext-ann"], input="a long password 1\n"
    )
    assert result.exit_code == 2, result.output
    assert "external account" in result.stderr and "add a login account" in result.stderr


def test_names_equal_up_to_case_are_refused(engine: Engine) -> None:
    with session_scope(engine) as session:
        create_user(session, "demo-admin", "a long password 123", "admin")
    with (
        session_scope(engine) as session,
        pytest.raises(
            UserError, match="user 'Demo-Admin' differs from the account 'demo-admin' only in case"
        ),
    ):
        create_user(session, "Demo-Admin", "a long password 123", "admin")


def test_an_import_cannot_create_a_case_twin_of_a_login_account(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    """``Demo-Admin`` was created beside the login account ``demo-admin``."""
    with session_scope(engine) as session:
        create_user(session, "demo-admin", "a long password 123", "admin")
    items = [{"item_id": "q0", "benchmark": "generic", "question": "q",
              "responses": [{"response_id": "q0/a", "model": "m", "content": "a"}]}]  # fmt: skip
    labels = [{"judge": "annotator:Demo-Admin", "judge_kind": "human", "protocol": "score",
               "response_id": "q0/a", "score": 3, "rationale": "fine"}]  # fmt: skip
    (tmp_path / "d.jsonl").write_text(json.dumps(items[0]) + "\n")
    (tmp_path / "h.jsonl").write_text(json.dumps(labels[0]) + "\n")
    runner = CliRunner()
    imported = runner.invoke(app, ["--db", db_url, "import", "jsonl", str(tmp_path / "d.jsonl")])
    assert imported.exit_code == 0, imported.output
    command = ["annotations", "import", str(tmp_path / "h.jsonl"), "--campaign", "ext"]
    options = ["--protocol", "score", "--scale", "1:5"]
    result = runner.invoke(app, ["--db", db_url, *command, *options])
    assert result.exit_code == 2, result.output
    assert f"{tmp_path / 'h.jsonl'}:1:" in result.stderr
    assert "annotator 'Demo-Admin' differs from the account 'demo-admin' only in case" in (
        result.stderr
    )
    with session_scope(engine) as session:
        assert [u.name for u in session.exec(select(User))] == ["demo-admin"]


def test_the_database_refuses_case_twins_on_both_backends(any_engine: Engine) -> None:
    with session_scope(any_engine) as session:
        session.add(User(name="demo-admin", password_hash="x", role="admin"))
    with pytest.raises(sqlalchemy.exc.IntegrityError), session_scope(any_engine) as session:
        session.add(User(name="DEMO-admin", password_hash="x", role="admin"))
