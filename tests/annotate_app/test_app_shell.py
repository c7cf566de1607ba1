"""The app shell under AppTest: login form, rate limit, home page per role, role enforcement."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select
from streamlit.testing.v1 import AppTest

import data.services.auth as auth_service
from annotate_app.auth import TOKEN_KEY, USER_KEY
from annotate_app.navigation import APP_DIR, PAGES, pages_for
from annotate_app.text import escape_markdown
from data.services.campaigns import CampaignSpec, create_campaign
from data.services.users import UserRecord, create_user, set_active
from data.storage.campaign_lookup import get_campaign
from data.storage.engine import session_scope
from schemas.tables import AuthSession, Dataset, Item, Response

APP = str(APP_DIR / "app.py")
PASSWORD = "correct horse battery"
TIMEOUT = 30


@pytest.fixture
def users(engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, UserRecord]:
    """An annotator, a reviewer and an admin; two campaigns (one closed, one named in Chinese)."""
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        people = {
            role: create_user(session, name, PASSWORD, role)
            for name, role in (("ann", "annotator"), ("rita", "reviewer"), ("root", "admin"))
        }
        dataset = Dataset(name="ds", benchmark="alignmmbench")
        session.add(dataset)
        session.flush()
        item = Item(dataset_id=dataset.id, item_id="q1", benchmark="alignmmbench",
                    question="图中有几只猫?", content_sha256="i1")  # fmt: skip
        session.add(item)
        session.flush()
        session.add(Response(response_id="q1/m", item_pk=item.id, model="m", content="两只",
                             content_sha256="r1"))  # fmt: skip
        session.flush()
        for name in ("中文评测_v1", "finished"):
            spec = CampaignSpec(name=name, dataset="ds", protocol="alignmmbench", overlap=2)
            create_campaign(session, spec)
        finished = get_campaign(session, "finished")
        finished.status = "closed"
        session.add(finished)
    return people


def _app(user: UserRecord | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if user is not None:
        at.session_state[USER_KEY] = user
    return at.run()


def _logged_in_by_token(engine: Engine, name: str) -> AppTest:
    """A session opened with a real token, as the browser's cookie would bring it."""
    result = auth_service.login(engine, name, PASSWORD)
    assert result.ok and result.token
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[TOKEN_KEY] = result.token
    return at.run()


def _shows_the_login_form(at: AppTest) -> bool:
    return [form.key for form in at.get("bidi_component")] == ["login_form"]


def _campaign_names(at: AppTest) -> list[str]:
    return list(at.table[0].value["Campaign"])


def test_logged_out_shows_only_the_login_form(users: dict[str, UserRecord]) -> None:
    at = _app()
    assert not at.exception
    assert _shows_the_login_form(at) and [t.value for t in at.title] == ["CritiqueLab"]
    # the password never reaches the Streamlit session: no text inputs, no buttons
    assert not at.text_input and not at.button and not at.table and not at.sidebar.button


def test_a_session_token_opens_the_home_page(users: dict[str, UserRecord], engine: Engine) -> None:
    at = _logged_in_by_token(engine, "ann")
    assert not at.exception and not at.error
    assert at.session_state[USER_KEY].name == "ann"
    assert at.title[0].value == "Home"
    assert at.sidebar.caption[0].value == "Logged in as ann (annotator)"


def test_logout_revokes_the_session(users: dict[str, UserRecord], engine: Engine) -> None:
    at = _logged_in_by_token(engine, "rita")
    at.sidebar.button[0].click().run()
    assert _shows_the_login_form(at)
    assert USER_KEY not in at.session_state and TOKEN_KEY not in at.session_state
    with session_scope(engine) as session:
        [stored] = session.exec(select(AuthSession)).all()
    assert stored.revoked_at is not None


def test_home_lists_the_campaigns_each_role_may_see(users: dict[str, UserRecord]) -> None:
    chinese = escape_markdown("中文评测_v1")
    assert _campaign_names(_app(users["annotator"])) == [chinese]
    assert sorted(_campaign_names(_app(users["reviewer"]))) == sorted(["finished", chinese])
    assert sorted(_campaign_names(_app(users["admin"]))) == sorted(["finished", chinese])


def test_a_disabled_account_is_logged_out_on_the_next_run(
    users: dict[str, UserRecord], engine: Engine
) -> None:
    at = _app(users["annotator"])
    assert at.table
    with session_scope(engine) as session:
        set_active(session, "ann", False, actor_id=None)
    at.run()
    assert _shows_the_login_form(at) and not at.table


def test_the_account_is_checked_once_per_run(
    users: dict[str, UserRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The router checks the account and the page takes that check: one query, not two."""
    checks: list[int] = []
    real = auth_service.active_user

    def counted(session, user_id):  # type: ignore[no-untyped-def]
        checks.append(user_id)
        return real(session, user_id)

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = users["annotator"]
    monkeypatch.setattr("annotate_app.auth.active_user", counted)
    at.run()
    assert at.table  # the home page ran its own require_role
    assert checks == [users["annotator"].id]


def test_the_menu_offers_only_the_pages_of_the_role() -> None:
    annotator_files = {spec.file for spec in pages_for("annotator")}
    admin_only = {spec.file for spec in PAGES if spec.roles == ("admin",)}
    assert "pages/home.py" in annotator_files and not annotator_files & admin_only
    assert {spec.file for spec in pages_for("admin")} == {spec.file for spec in PAGES}


def test_every_page_of_the_menu_exists() -> None:
    missing_files = [spec.file for spec in PAGES if not spec.path.is_file()]
    assert not missing_files, f"the menu names pages that do not exist: {missing_files}"


def test_require_role_stops_a_page_for_other_roles(users: dict[str, UserRecord]) -> None:
    def admin_page() -> None:
        import streamlit as st

        from annotate_app.auth import require_role

        require_role("admin")
        st.write("admin secrets")

    at = AppTest.from_function(admin_page, default_timeout=TIMEOUT)
    at.session_state[USER_KEY] = users["annotator"]
    at.run()
    assert at.error[0].value == (
        "This page is for admin accounts; you are logged in as ann (annotator)."
    )
    assert not at.markdown
    at.session_state[USER_KEY] = users["admin"]
    at.run()
    assert [m.value for m in at.markdown] == ["admin secrets"]


def _restricted_pages() -> list[str]:
    return [s.file for s in PAGES if "annotator" not in s.roles]


@pytest.mark.parametrize("page_file", _restricted_pages())
def test_an_annotator_cannot_open_staff_pages(users: dict[str, UserRecord], page_file: str) -> None:
    at = _app(users["annotator"])
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page(page_file)  # not in the annotator's menu: the router does not know it
    direct = AppTest.from_file(str(APP_DIR / page_file), default_timeout=TIMEOUT)
    direct.session_state[USER_KEY] = users["annotator"]
    direct.run()
    assert not direct.exception, direct.exception[0].value
    assert "you are logged in as ann (annotator)" in direct.error[0].value


def _required_roles(path: Path) -> tuple[str, ...] | None:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require_role":
            return tuple(arg.value for arg in node.args if isinstance(arg, ast.Constant))
    return None


@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.file)
def test_every_page_checks_the_roles_the_menu_gives_it(spec) -> None:  # type: ignore[no-untyped-def]
    assert _required_roles(spec.path) is not None, f"{spec.file} does not call require_role"
    assert set(_required_roles(spec.path) or ()) == set(spec.roles)
