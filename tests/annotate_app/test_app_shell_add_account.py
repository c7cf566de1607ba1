"""Users → Add an account under AppTest: a refused submit keeps what was typed (never the
password); an accepted one empties the form."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine
from streamlit.testing.v1 import AppTest

from annotate_app.auth import USER_KEY
from annotate_app.navigation import APP_DIR
from annotate_app.text import escape_markdown
from data.services.users import UserRecord, create_user, get_user
from data.storage.engine import session_scope

TIMEOUT = 60


@pytest.fixture
def admin(engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch) -> UserRecord:
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        return create_user(session, "root", "root password", "admin")


def _users_page(admin: UserRecord) -> AppTest:
    at = AppTest.from_file(str(APP_DIR / "pages" / "admin_users.py"), default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = admin
    return at.run()


def _submit(at: AppTest) -> AppTest:
    [add] = [b for b in at.button if b.label == "Add account"]
    return add.click().run()


def test_a_refused_account_keeps_the_form_and_the_retry_succeeds(
    admin: UserRecord, engine: Engine
) -> None:
    at = _users_page(admin)
    at.text_input(key="new_name").input("dora")
    at.selectbox(key="new_role").select("reviewer")
    at.text_input(key="new_pw").input("short")
    _submit(at)
    assert [e.value for e in at.error] == [
        escape_markdown("the password must have at least 8 characters")
    ]
    assert at.text_input(key="new_name").value == "dora"
    assert at.selectbox(key="new_role").value == "reviewer"
    assert at.text_input(key="new_pw").value == ""  # the password is never kept

    at.text_input(key="new_pw").input("a long enough password")
    _submit(at)
    assert not at.error
    assert [s.value for s in at.success] == [escape_markdown("Account dora added as reviewer.")]
    assert at.text_input(key="new_name").value == ""  # ready for the next account
    with session_scope(engine) as session:
        dora = get_user(session, "dora")
    assert dora is not None and dora.role == "reviewer"
