"""Logging in: password check, rate limit, disabled accounts, session tokens, logout."""

from __future__ import annotations

import hashlib
import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select

import data.services.auth
import data.storage.engine
from data.services.auth import (
    MAX_CLIENT_FAILURES,
    MAX_FAILED_ATTEMPTS,
    RATE_LIMIT_WINDOW,
    SESSION_LIFETIME,
    login,
    logout,
    user_for_token,
)
from data.services.users import create_user, reset_password, set_active
from data.storage.audit import list_events
from data.storage.engine import session_scope
from schemas.tables import AuthSession, LoginAttempt, utcnow

PASSWORD = "correct horse battery"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def ann(any_engine: Engine) -> Engine:
    with session_scope(any_engine) as session:
        create_user(session, "ann", PASSWORD, "annotator")
    return any_engine


def _login(  # type: ignore[no-untyped-def]
    engine: Engine, password: str, at: datetime, name: str = "ann", client: str | None = None
):
    return login(engine, name, password, client=client, now=at)


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
    # the refused try is recorded as a failure, so the lock now runs from the second failure
    with session_scope(ann) as session:
        assert [a.ok for a in session.exec(select(LoginAttempt))] == [False] * 6
    # at T0 + 15.5 min, the failures at 1, 2, 3, 4 min and the refused try at 5 min count
    still_locked = _login(ann, PASSWORD, T0 + RATE_LIMIT_WINDOW + timedelta(seconds=30))
    assert still_locked.outcome == "rate_limited"
    # 15 minutes after the refused try at 5 min, only the one at 15.5 min is left
    assert _login(ann, PASSWORD, T0 + timedelta(minutes=5) + RATE_LIMIT_WINDOW).ok


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
        # revoked, not only refused while disabled: enabling the account does not revive it
        assert session.exec(select(AuthSession)).one().revoked_at is not None


def test_a_password_reset_ends_every_open_session_and_counts_them(ann: Engine) -> None:
    """The one reset that the Users page (``change_password``) and ``users reset-password``
    both call: every open session ends, an already ended one is not counted again."""
    tokens = [_login(ann, PASSWORD, T0 + timedelta(seconds=i)).token for i in range(3)]
    assert all(tokens)
    with session_scope(ann) as session:
        assert logout(session, str(tokens[0]), now=T0 + timedelta(minutes=1))
    with session_scope(ann) as session:
        reset = reset_password(session, "ann", "a brand new password", actor_id=None)
    assert reset.user.name == "ann" and reset.sessions_ended == 2
    with session_scope(ann) as session:
        for token in tokens:
            assert user_for_token(session, str(token), now=T0 + timedelta(minutes=2)) is None
        revoked = [row.revoked_at for row in session.exec(select(AuthSession))]
        event = list_events(session, action_prefix="user.password_reset")[0]
    assert all(moment is not None for moment in revoked)
    assert event.detail == {"sessions_ended": 2}
    assert _login(ann, "a brand new password", utcnow() + timedelta(seconds=1)).ok


# --- the lockout policy (data/services/auth.py, docs/RELIABILITY.md) -----------------------------

HOME_PC, ATTACKER, NEW_PC = "10.0.0.5", "203.0.113.66", "10.0.0.9"


def test_tries_made_while_locked_keep_the_lock(ann: Engine) -> None:
    for minute in range(MAX_FAILED_ATTEMPTS):
        _login(ann, "wrong password", T0 + timedelta(minutes=minute), client=ATTACKER)
    # a try every 30 s for the next 55 minutes: each is refused (even the right password),
    # and counted, so the lock lasts as long as the tries do (under the old rule, refused
    # tries did not count and the lock ended 15 minutes after the first failure)
    for second in range(300, 3600, 30):
        result = _login(ann, PASSWORD, T0 + timedelta(seconds=second), client=ATTACKER)
        assert result.outcome == "rate_limited", second
    assert _login(ann, PASSWORD, T0 + timedelta(minutes=60), client=NEW_PC).outcome == (
        "rate_limited"
    )
    # 15 quiet minutes after the last counted try the name is free again
    assert _login(ann, PASSWORD, T0 + timedelta(minutes=60) + RATE_LIMIT_WINDOW).ok


def test_an_attacker_cannot_lock_a_user_out_of_a_familiar_address(ann: Engine) -> None:
    assert _login(ann, PASSWORD, T0, client=HOME_PC).ok
    for second in range(0, 600, 20):  # 30 tries from elsewhere: the name is locked there
        _login(ann, "guess", T0 + timedelta(minutes=1, seconds=second), client=ATTACKER)
    later = T0 + timedelta(minutes=12)
    assert _login(ann, PASSWORD, later, client=ATTACKER).outcome == "rate_limited"
    assert _login(ann, PASSWORD, later, client=NEW_PC).outcome == "rate_limited"
    assert _login(ann, PASSWORD, later, client=HOME_PC).ok


def test_a_familiar_address_is_locked_by_its_own_failures(ann: Engine) -> None:
    assert _login(ann, PASSWORD, T0, client=HOME_PC).ok
    for minute in range(1, 1 + MAX_FAILED_ATTEMPTS):
        _login(ann, "wrong password", T0 + timedelta(minutes=minute), client=HOME_PC)
    locked = _login(ann, PASSWORD, T0 + timedelta(minutes=7), client=HOME_PC)
    assert locked.outcome == "rate_limited" and "from this address" in locked.message


def test_one_client_is_refused_for_every_name_after_many_failures(ann: Engine) -> None:
    with session_scope(ann) as session:
        for n in range(5):
            create_user(session, f"user{n}", PASSWORD, "annotator")
    names = [f"user{n}" for n in range(5)]
    for i in range(MAX_CLIENT_FAILURES):  # 4 per name: no name is locked by itself
        _login(ann, "wrong password", T0 + timedelta(seconds=i), name=names[i % 5], client=ATTACKER)
    refused = _login(ann, PASSWORD, T0 + timedelta(minutes=1), client=ATTACKER)
    assert refused.outcome == "rate_limited" and "from this address" in refused.message
    assert _login(ann, PASSWORD, T0 + timedelta(minutes=1), client=NEW_PC).ok


def test_overlong_names_count_against_the_client(ann: Engine) -> None:
    for i in range(MAX_CLIENT_FAILURES):
        result = _login(ann, "x", T0 + timedelta(seconds=i), name="n" * 65, client=ATTACKER)
        assert result.outcome in ("wrong_credentials", "rate_limited")
    assert _login(ann, PASSWORD, T0 + timedelta(minutes=1), client=ATTACKER).outcome == (
        "rate_limited"
    )


def test_a_password_reset_ends_the_lock(ann: Engine) -> None:
    start = utcnow() - timedelta(minutes=6)  # the reset below stamps the real clock
    for minute in range(MAX_FAILED_ATTEMPTS):
        _login(ann, "wrong password", start + timedelta(minutes=minute), client=ATTACKER)
    assert _login(ann, PASSWORD, start + timedelta(minutes=5)).outcome == "rate_limited"
    with session_scope(ann) as session:
        reset_password(session, "ann", "a brand new password", actor_id=None)
    assert _login(ann, "a brand new password", utcnow() + timedelta(seconds=1)).ok


def test_the_password_hash_runs_outside_any_transaction(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the hash runs, another session of the process can write (on SQLite the sessions
    of a process take turns, so a login that hashed inside its session would block it)."""
    with session_scope(engine) as session:
        create_user(session, "ann", PASSWORD, "annotator")
    real = data.services.auth.password_matches
    writes: list[str] = []
    failures: list[BaseException] = []
    # a write that had to wait for the login's turn would end in DatabaseBusy after this
    monkeypatch.setattr(data.storage.engine, "SQLITE_BUSY_TIMEOUT_MS", 300)

    def hash_while_another_writes(password_hash: str, password: str) -> bool:
        def write() -> None:
            name = f"other{len(writes)}"
            try:
                with session_scope(engine) as session:
                    create_user(session, name, PASSWORD, "annotator")
            except BaseException as error:  # noqa: BLE001 - the test reports it
                failures.append(error)
            else:
                writes.append(name)

        writer = threading.Thread(target=write)
        writer.start()
        writer.join()
        assert not failures, f"another session could not write during the hash: {failures}"
        return real(password_hash, password)

    monkeypatch.setattr(data.services.auth, "password_matches", hash_while_another_writes)
    assert login(engine, "ann", PASSWORD, client=HOME_PC).ok
    assert login(engine, "ann", "wrong password", client=HOME_PC).outcome == "wrong_credentials"
    assert writes == ["other0", "other1"]


def test_failed_logins_are_in_the_audit_trail_without_the_password(ann: Engine) -> None:
    from data.storage.audit import list_events

    assert _login(ann, PASSWORD, T0).ok  # a success is a login attempt, not an audit event
    _login(ann, "wrong password 1", T0, client="10.0.0.7")
    _login(ann, "wrong password 2", T0, name="nobody")
    with session_scope(ann) as session:
        set_active(session, "ann", False, actor_id=None)
    assert _login(ann, PASSWORD, T0).outcome == "disabled"
    with session_scope(ann) as session:
        events = list_events(session, action_prefix="login.")
    assert [(e.action, e.entity_id, e.detail["why"], e.actor_id) for e in reversed(events)] == [
        ("login.failed", "ann", "wrong name or password", None),
        ("login.failed", "nobody", "wrong name or password", None),
        ("login.failed", "ann", "the account is disabled", None),
    ]
    assert events[-1].detail["client"] == "10.0.0.7"
    assert not any("password 1" in str(e.detail) or PASSWORD in str(e.detail) for e in events)


def test_a_login_refused_by_the_limit_is_audited(ann: Engine) -> None:
    from data.storage.audit import list_events

    for minute in range(MAX_FAILED_ATTEMPTS + 1):
        _login(ann, "wrong password", T0 + timedelta(minutes=minute))
    with session_scope(ann) as session:
        whys = [e.detail["why"] for e in list_events(session, action_prefix="login.")]
    assert whys == ["refused: too many failed logins"] + ["wrong name or password"] * 5
