"""The login and logout endpoints (annotate_app/session_routes.py) over HTTP: the server sets an
HttpOnly, SameSite=Strict session cookie, refuses other origins, and counts tries per client."""

from __future__ import annotations

from collections.abc import Iterator
from http.cookies import SimpleCookie

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select
from starlette.applications import Starlette
from starlette.testclient import TestClient

from annotate_app.session_routes import (
    COOKIE_NAME,
    LOGIN_PATH,
    LOGOUT_PATH,
    MAX_BODY_BYTES,
    session_routes,
)
from data.services.auth import MAX_FAILED_ATTEMPTS, user_for_token
from data.services.users import create_user
from data.storage.engine import session_scope
from schemas.tables import LoginAttempt

PASSWORD = "correct horse battery"
ORIGIN = {"Origin": "http://testserver"}


@pytest.fixture
def client(engine: Engine, db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        create_user(session, "ann", PASSWORD, "annotator")
    with TestClient(Starlette(routes=session_routes())) as test_client:
        yield test_client


def _set_cookie(response) -> SimpleCookie:  # type: ignore[no-untyped-def]
    cookie: SimpleCookie = SimpleCookie()
    cookie.load(response.headers["set-cookie"])
    return cookie


def test_login_sets_an_httponly_strict_cookie_holding_a_live_token(
    client: TestClient, engine: Engine
) -> None:
    response = client.post(LOGIN_PATH, json={"name": "ann", "password": PASSWORD}, headers=ORIGIN)
    assert response.status_code == 200
    assert response.json() == {"ok": True, "message": "Logged in as ann."}
    morsel = _set_cookie(response)[COOKIE_NAME]
    assert morsel["httponly"] is True and morsel["samesite"].lower() == "strict"
    assert morsel["path"] == "/" and morsel["max-age"] == "43200" and not morsel["secure"]
    with session_scope(engine) as session:
        user = user_for_token(session, morsel.value)
        [attempt] = session.exec(select(LoginAttempt)).all()
    assert user is not None and user.name == "ann"
    assert attempt.ok and attempt.client == "testclient"  # the per-client limit sees the client


def test_the_cookie_is_secure_over_https(engine: Engine, db_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    with session_scope(engine) as session:
        create_user(session, "ann", PASSWORD, "annotator")
    app = Starlette(routes=session_routes())
    with TestClient(app, base_url="https://testserver") as secure_client:
        response = secure_client.post(LOGIN_PATH, json={"name": "ann", "password": PASSWORD},
                                      headers={"Origin": "https://testserver"})  # fmt: skip
    assert _set_cookie(response)[COOKIE_NAME]["secure"] is True


def test_a_wrong_password_and_a_locked_name_set_no_cookie(client: TestClient) -> None:
    for _ in range(MAX_FAILED_ATTEMPTS):
        wrong = client.post(LOGIN_PATH, json={"name": "ann", "password": "nope"}, headers=ORIGIN)
        assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
        assert wrong.json() == {"ok": False, "message": "Wrong user name or password."}
    locked = client.post(LOGIN_PATH, json={"name": "ann", "password": PASSWORD}, headers=ORIGIN)
    assert locked.status_code == 429 and "set-cookie" not in locked.headers
    assert "Too many failed logins" in locked.json()["message"]


@pytest.mark.parametrize(
    "headers",
    [
        {},  # no Origin: not a page of the app
        {"Origin": "http://evil.example"},
        {"Origin": "http://testserver", "Sec-Fetch-Site": "cross-site"},
    ],
    ids=["no-origin", "other-origin", "cross-site-fetch"],
)
def test_other_origins_can_neither_log_in_nor_out(
    client: TestClient, engine: Engine, headers: dict[str, str]
) -> None:
    response = client.post(LOGIN_PATH, json={"name": "ann", "password": PASSWORD}, headers=headers)
    assert response.status_code == 403 and "set-cookie" not in response.headers
    assert client.post(LOGOUT_PATH, headers=headers).status_code == 403
    with session_scope(engine) as session:
        assert session.exec(select(LoginAttempt)).all() == []  # not even counted


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"name=ann&password=correct+horse+battery", "application/x-www-form-urlencoded"),
        (b'["ann", "correct horse battery"]', "application/json"),
        (b'{"name": "ann", "password": 7}', "application/json"),
        (b'{"name": "ann", "password": "' + b"x" * MAX_BODY_BYTES + b'"}', "application/json"),
        (b"\xff\xfe", "application/json"),
    ],
    ids=["html-form", "json-list", "number-password", "oversized", "not-utf8"],
)
def test_only_a_small_json_object_is_accepted(
    client: TestClient, body: bytes, content_type: str
) -> None:
    response = client.post(
        LOGIN_PATH, content=body, headers={**ORIGIN, "Content-Type": content_type}
    )
    assert response.status_code == 400 and "set-cookie" not in response.headers


def test_logout_revokes_the_session_and_clears_the_cookie(
    client: TestClient, engine: Engine
) -> None:
    login = client.post(LOGIN_PATH, json={"name": "ann", "password": PASSWORD}, headers=ORIGIN)
    token = _set_cookie(login)[COOKIE_NAME].value
    response = client.post(LOGOUT_PATH, headers=ORIGIN)  # the client sends the cookie back
    assert response.status_code == 200
    cleared = _set_cookie(response)[COOKIE_NAME]
    assert cleared.value == "" and cleared["max-age"] == "0" and cleared["httponly"] is True
    with session_scope(engine) as session:
        assert user_for_token(session, token) is None


def test_host_names_are_matched_without_port_and_case() -> None:
    from annotate_app.host_guard import host_allowed, host_name

    assert [host_name(h) for h in ("LocalHost:8501", "[::1]:8501", "::1", "a.b")] == [
        "localhost", "::1", "::1", "a.b"
    ]  # fmt: skip
    served = ("localhost", "127.0.0.1", "*.example.org")
    assert host_allowed("127.0.0.1:8501", served) and host_allowed("x.Example.org", served)
    assert not host_allowed("example.org.attacker.net", served)
    assert not host_allowed("attacker.net", served) and not host_allowed(None, served)
    assert not host_allowed("", served) and host_allowed("anything", ("*",))


def test_the_login_refuses_a_host_it_does_not_serve(
    engine: Engine, db_url: str, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from annotate_app.host_guard import HostGuard

    monkeypatch.setenv("CRITIQUELAB_DB", db_url)
    guarded = HostGuard(Starlette(routes=session_routes()), allowed=("testserver",))
    with TestClient(guarded, base_url="http://rebound.example") as client:
        answer = client.post(
            LOGIN_PATH, json={"name": "ann", "password": "x" * 12},
            headers={"Origin": "http://rebound.example"},
        )  # fmt: skip
    assert answer.status_code == 400 and "does not answer to that host name" in answer.text
    assert "set-cookie" not in answer.headers
