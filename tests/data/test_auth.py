"""Logging in: password check, rate limit, disabled accounts, session tokens, logout."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from argon2 import PasswordHasher
from sqlalchemy.engine import Engine
from sqlmodel import select

import data.users
from data.auth import (
    MAX_FAILED_ATTEMPTS,
    RATE_LIMIT_WINDOW,
    SESSION_LIFETIME,
    login,
    logout,
    user_for_token,
)
from data.storage import session_scope
from data.users import create_user, set_active
from schemas.tables import AuthSession, LoginAttempt

PASSWORD = "correct horse battery"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def cheap_password_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real argon2 with the smallest cost, so that the many logins here stay fast."""
    monkeypatch.setattr(data.users, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024))


@pytest.fixture
def ann(any_engine: Engine) -> Engine:
    with session_scope(any_engine) as session:
        create_user(session, "ann", PASSWORD, "annotator")
    return any_engine


def _login(engine: Engine, password: str, at: datetime, name: str = "ann"):  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        return login(session, name, password, now=at)


def test_login_opens_a_session_stored_only_as_a_hash(ann: Engine) -> None:
    result = _login(ann, PASSWORD, T0)
    assert result.ok and result.user is not None and result.user.name == "ann"
    assert result.token is not None and len(result.token) >= 43  # 32 random bytes, base64url
    with session_scope(ann) as session:
        stored = session.exec(select(AuthSession)).one()
        attempts = session.exec(select(LoginAttempt)).all()
    assert stored.token_hash == hashlib.sha256(result.token.encode()).hexdigest()
    assert result.token not in stored.token_hash
    assert stored.expires_at.replace(tzinfo=UTC) == T0 + SESSION_LIFETIME
    assert [(a.user_name, a.ok) for a in attempts] == [("ann", True)]


def test_wrong_password_and_unknown_name_get_the_same_answer(ann: Engine) -> None:
    wrong_password = _login(ann, "not the password", T0)
    unknown_name = _login(ann, PASSWORD, T0, name="nobody")
    assert wrong_password.outcome == unknown_name.outcome == "wrong_credentials"
    assert wrong_password.message == unknown_name.message == "Wrong user name or password."
    assert wrong_password.token is None and wrong_password.user is None


def test_an_overlong_name_is_refused_like_a_wrong_one(ann: Engine) -> None:
    assert _login(ann, PASSWORD, T0, name="a" * 65).outcome == "wrong_credentials"
    with session_scope(ann) as session:
        assert session.exec(select(LoginAttempt)).all() == []


def test_five_failures_lock_the_name_until_the_oldest_leaves_the_window(ann: Engine) -> None:
    for minute in range(MAX_FAILED_ATTEMPTS):
        assert _login(ann, "wrong password", T0 + timedelta(minutes=minute)).outcome == (
            "wrong_credentials"
        )
    locked = _login(ann, PASSWORD, T0 + timedelta(minutes=5))
    assert locked.outcome == "rate_limited" and locked.token is None
    # the first failure (T0) leaves the 15-minute window at T0+15 min: 10 minutes from now
    assert "Try again in 10 minute(s)" in locked.message
    # refused tries are not counted, and the password was not even checked
    with session_scope(ann) as session:
        assert len(session.exec(select(LoginAttempt)).all()) == MAX_FAILED_ATTEMPTS
    still_locked = _login(ann, PASSWORD, T0 + RATE_LIMIT_WINDOW - timedelta(seconds=1))
    assert still_locked.outcome == "rate_limited"
    assert _login(ann, PASSWORD, T0 + RATE_LIMIT_WINDOW + timedelta(seconds=1)).ok


def test_the_lock_is_per_name(ann: Engine) -> None:
    with session_scope(ann) as session:
        create_user(session, "bob", PASSWORD, "annotator")
    for minute in range(MAX_FAILED_ATTEMPTS):
        _login(ann, "wrong password", T0 + timedelta(minutes=minute))
    assert _login(ann, PASSWORD, T0 + timedelta(minutes=6)).outcome == "rate_limited"
    assert _login(ann, PASSWORD, T0 + timedelta(minutes=6), name="bob").ok


def test_a_success_resets_the_failure_count(ann: Engine) -> None:
    for minute in range(MAX_FAILED_ATTEMPTS - 1):
        _login(ann, "wrong password", T0 + timedelta(minutes=minute))
    assert _login(ann, PASSWORD, T0 + timedelta(minutes=4)).ok
    for minute in range(5, 5 + MAX_FAILED_ATTEMPTS - 1):
        _login(ann, "wrong password", T0 + timedelta(minutes=minute))
    assert _login(ann, PASSWORD, T0 + timedelta(minutes=10)).ok


def test_disabled_account_is_refused_even_with_the_right_password(ann: Engine) -> None:
    with session_scope(ann) as session:
        set_active(session, "ann", False, actor_id=None)
    result = _login(ann, PASSWORD, T0)
    assert result.outcome == "disabled" and result.token is None
    assert result.message == "This account is disabled: ask an admin to enable it."
    assert _login(ann, "wrong password", T0).outcome == "wrong_credentials"


def test_token_finds_the_user_until_it_expires(ann: Engine) -> None:
    token = _login(ann, PASSWORD, T0).token
    assert token is not None
    with session_scope(ann) as session:
        inside = user_for_token(session, token, now=T0 + SESSION_LIFETIME - timedelta(seconds=1))
        after = user_for_token(session, token, now=T0 + SESSION_LIFETIME)
        forged = user_for_token(session, token + "x", now=T0)
    assert inside is not None and inside.name == "ann"
    assert after is None and forged is None


def test_logout_revokes_the_token(ann: Engine) -> None:
    token = _login(ann, PASSWORD, T0).token
    other = _login(ann, PASSWORD, T0).token
    assert token is not None and other is not None and token != other
    with session_scope(ann) as session:
        assert logout(session, token, now=T0 + timedelta(minutes=1))
    with session_scope(ann) as session:
        assert user_for_token(session, token, now=T0 + timedelta(minutes=2)) is None
        assert not logout(session, token)
        # another login of the same user (another browser) is not affected
        still = user_for_token(session, other, now=T0 + timedelta(minutes=2))
    assert still is not None and still.name == "ann"


def test_disabling_an_account_ends_its_sessions(ann: Engine) -> None:
    token = _login(ann, PASSWORD, T0).token
    assert token is not None
    with session_scope(ann) as session:
        set_active(session, "ann", False, actor_id=None)
    with session_scope(ann) as session:
        assert user_for_token(session, token, now=T0 + timedelta(minutes=1)) is None
