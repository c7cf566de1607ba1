"""Logging in and out: password check with rate limits, session tokens, revocation.

A successful login creates an :class:`~schemas.tables.AuthSession` and hands back a random token
(32 bytes, URL-safe). The browser keeps the token; the database keeps only its SHA-256, so a
leaked database copy cannot be replayed as a login.

Every try is recorded as a :class:`~schemas.tables.LoginAttempt` with the client's address, and
the limits below are counted from those rows (in the database, so they hold across app
processes). All counts are over the last :data:`RATE_LIMIT_WINDOW`:

* **Per client.** A client with :data:`MAX_CLIENT_FAILURES` failed tries (any names) is refused
  for every name it is not *familiar* with. This limit takes the brunt of guessing.
* **Per name.** A name with :data:`MAX_FAILED_ATTEMPTS` failed tries (counted since its last
  successful login and its last password reset) is locked for unfamiliar clients.
* **Familiar clients.** A client from which the name logged in successfully within
  :data:`FAMILIAR_CLIENT_WINDOW` is exempt from both limits above: an attacker elsewhere cannot
  lock a user (an admin included) out of their usual machine. Its own failures on the name still
  lock it after :data:`MAX_FAILED_ATTEMPTS`.
* **Refused tries count.** A refused try is recorded as a failure without looking at the
  password, so a client that keeps trying stays refused until it stops for a whole window.
* **A password reset ends the lock**: failures before it no longer count for the name.

The password hash (~100 ms of argon2 by design) runs outside any database transaction, so
login tries never hold SQLite's write lock while hashing. The try is recorded (as a failure)
before the hash runs, so that concurrent tries count against the limits at once; a correct
password turns it into a success.

Sources: OWASP Authentication Cheat Sheet (account lockout, "Protect against automated
attacks"); Microsoft Entra *Smart Lockout* for exempting familiar locations.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from data.services.users import UserRecord, hash_password, password_matches, to_record
from data.storage.audit import record_event
from data.storage.engine import session_scope
from schemas.tables import AuthSession, LoginAttempt, User, utcnow

MAX_FAILED_ATTEMPTS = 5
MAX_CLIENT_FAILURES = 20
RATE_LIMIT_WINDOW = timedelta(minutes=15)
FAMILIAR_CLIENT_WINDOW = timedelta(days=30)
SESSION_LIFETIME = timedelta(hours=12)
TOKEN_BYTES = 32
MAX_NAME_LENGTH = 64
MAX_CLIENT_LENGTH = 64
WRONG_CREDENTIALS = "Wrong user name or password."

# Checked when the name is unknown, so that a wrong name costs as long as a wrong password.
_DUMMY_HASH = hash_password("not-a-real-password")

LoginOutcome = Literal["ok", "wrong_credentials", "rate_limited", "disabled"]


@dataclass(frozen=True)
class AuthResult:
    """The outcome of one login try.

    ``user`` and ``token`` are set only when ``outcome == "ok"``; ``message`` is a sentence to
    show the person at the login form.
    """

    outcome: LoginOutcome
    message: str
    user: UserRecord | None = None
    token: str | None = None
    expires_at: datetime | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


@dataclass(frozen=True)
class _Account:
    """What the password check needs, read before the hash runs."""

    id: int
    password_hash: str


def token_hash(token: str) -> str:
    """The SHA-256 (hex) under which a session token is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _as_utc(moment: datetime) -> datetime:
    # SQLite hands stored times back without a zone; everything is stored in UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _failures(session: Session, since: datetime, now: datetime, **where: str) -> list[datetime]:
    """Failed tries matching ``where`` (``user_name``, ``client``) in ``(since, now]``, oldest
    first."""
    query = select(LoginAttempt.at).where(
        col(LoginAttempt.ok).is_(False), LoginAttempt.at > since, LoginAttempt.at <= now
    )
    for column, value in where.items():
        query = query.where(getattr(LoginAttempt, column) == value)
    return [_as_utc(at) for at in session.exec(query.order_by(col(LoginAttempt.at)))]


def _name_window_start(session: Session, name: str, user: User | None, now: datetime) -> datetime:
    """Failures for ``name`` count from here: the window, its last success, its last reset."""
    since = now - RATE_LIMIT_WINDOW
    last_success = session.exec(
        select(func.max(LoginAttempt.at)).where(
            LoginAttempt.user_name == name, col(LoginAttempt.ok).is_(True)
        )
    ).one()
    for moment in (last_success, user.password_changed_at if user else None):
        if moment is not None:
            since = max(since, _as_utc(moment))
    return since


def _familiar(session: Session, name: str, client: str | None, now: datetime) -> bool:
    """Whether ``name`` logged in successfully from ``client`` within the familiar window."""
    if client is None:
        return False
    return (
        session.exec(
            select(LoginAttempt.id).where(
                LoginAttempt.user_name == name,
                LoginAttempt.client == client,
                col(LoginAttempt.ok).is_(True),
                LoginAttempt.at > now - FAMILIAR_CLIENT_WINDOW,
            )
        ).first()
        is not None
    )


def _refusal(failures: list[datetime], limit: int, now: datetime, whom: str) -> AuthResult | None:
    """The refusal when ``failures`` reach ``limit``; it says when the oldest counted leaves the
    window (more tries meanwhile push that later)."""
    if len(failures) < limit:
        return None
    unlock_at = failures[-limit] + RATE_LIMIT_WINDOW
    minutes = max(1, math.ceil((unlock_at - now).total_seconds() / 60))
    window = int(RATE_LIMIT_WINDOW.total_seconds() // 60)
    return AuthResult(
        "rate_limited",
        f"Too many failed logins {whom} ({limit} within {window} minutes). Try again in "
        f"{minutes} minute(s) without retrying meanwhile, or ask an admin to reset your password.",
    )


def _limit(session: Session, name: str, client: str | None, now: datetime) -> AuthResult | None:
    """The refusal that applies to this try, if any (see the module docstring)."""
    user = session.exec(select(User).where(User.name == name)).first()
    since_name = _name_window_start(session, name, user, now)
    if _familiar(session, name, client, now):
        assert client is not None
        own = _failures(session, since_name, now, user_name=name, client=client)
        return _refusal(own, MAX_FAILED_ATTEMPTS, now, "for this name from this address")
    if client is not None:
        by_client = _failures(session, now - RATE_LIMIT_WINDOW, now, client=client)
        refused = _refusal(by_client, MAX_CLIENT_FAILURES, now, "from this address")
        if refused is not None:
            return refused
    by_name = _failures(session, since_name, now, user_name=name)
    return _refusal(by_name, MAX_FAILED_ATTEMPTS, now, "for this name")


def _start_try(
    engine: Engine, name: str, client: str | None, now: datetime
) -> tuple[int, _Account | None] | AuthResult:
    """Check the limits and record the try as a failure; the attempt's id and the account to
    check the password against, or the refusal."""
    with session_scope(engine) as session:
        refused = _limit(session, name, client, now)
        attempt = LoginAttempt(user_name=name, ok=False, at=now, client=client)
        session.add(attempt)
        if refused is not None:
            _audit_failure(session, name, client, now, "refused: too many failed logins")
            return refused
        user = session.exec(select(User).where(User.name == name)).first()
        session.flush()
        assert attempt.id is not None
        if user is None or user.external:  # imported annotators have no login
            return attempt.id, None
        assert user.id is not None
        return attempt.id, _Account(user.id, user.password_hash)


def _finish_login(engine: Engine, attempt_id: int, account: _Account, now: datetime) -> AuthResult:
    """Mark the try a success and open a session, unless the account changed meanwhile."""
    with session_scope(engine) as session:
        user = session.get(User, account.id)
        if user is None or user.password_hash != account.password_hash:
            return AuthResult("wrong_credentials", WRONG_CREDENTIALS)  # reset while hashing
        attempt = session.get(LoginAttempt, attempt_id)
        assert attempt is not None
        attempt.ok = True
        session.add(attempt)
        if not user.active:
            _audit_failure(session, user.name, attempt.client, now, "the account is disabled")
            return AuthResult("disabled", "This account is disabled: ask an admin to enable it.")
        token = secrets.token_urlsafe(TOKEN_BYTES)
        expires_at = now + SESSION_LIFETIME
        session.add(
            AuthSession(
                token_hash=token_hash(token),
                user_id=account.id,
                created_at=now,
                expires_at=expires_at,
            )
        )
        return AuthResult("ok", f"Logged in as {user.name}.", to_record(user), token, expires_at)


def login(
    engine: Engine,
    name: str,
    password: str,
    *,
    client: str | None = None,
    now: datetime | None = None,
) -> AuthResult:
    """Check ``name`` and ``password`` from ``client``; on success open a session and return its
    token.

    ``client`` is the address the try came from (None for tries that did not come over HTTP: no
    per-client limit, never familiar). A wrong name and a wrong password give the same answer.
    A disabled account is refused even with the right password. A try refused by a limit is
    recorded without checking the password. Runs in two short transactions; the password hash
    runs between them, outside any.
    """
    now = now or utcnow()
    client = client[:MAX_CLIENT_LENGTH] if client else None
    if len(name) > MAX_NAME_LENGTH:  # no account has such a name
        if client is None:
            password_matches(_DUMMY_HASH, password)
            return AuthResult("wrong_credentials", WRONG_CREDENTIALS)
        name = ""  # recorded under a name no account can have, so the client's limit counts it
    started = _start_try(engine, name, client, now)
    if isinstance(started, AuthResult):
        return started
    attempt_id, account = started
    matches = password_matches(account.password_hash if account else _DUMMY_HASH, password)
    if account is None or not matches:
        with session_scope(engine) as session:
            _audit_failure(session, name, client, now, "wrong name or password")
        return AuthResult("wrong_credentials", WRONG_CREDENTIALS)
    return _finish_login(engine, attempt_id, account, now)


def _audit_failure(
    session: Session, name: str, client: str | None, now: datetime, why: str
) -> None:
    """A ``login.failed`` audit event: the name typed (the entity), the client, why; never the
    password."""
    event = record_event(
        session,
        actor_id=None,
        action="login.failed",
        entity="login",
        entity_id=name,
        detail={"client": client, "why": why},
    )
    event.at = now


def user_for_token(
    session: Session, token: str, *, now: datetime | None = None
) -> UserRecord | None:
    """The user of a live session token: not revoked, not expired, account still active."""
    if not token:
        return None
    now = now or utcnow()
    user = session.exec(
        select(User)
        .join(AuthSession, col(AuthSession.user_id) == col(User.id))
        .where(
            AuthSession.token_hash == token_hash(token),
            col(AuthSession.revoked_at).is_(None),
            AuthSession.expires_at > now,
            col(User.active).is_(True),
            col(User.external).is_(False),
        )
    ).first()
    return to_record(user) if user is not None else None


def active_user(session: Session, user_id: int) -> UserRecord | None:
    """The user with ``user_id`` if the account exists and is active."""
    user = session.get(User, user_id)
    return to_record(user) if user is not None and user.active else None


def logout(session: Session, token: str, *, now: datetime | None = None) -> bool:
    """Revoke the session of ``token``; False when it was unknown or already revoked."""
    auth_session = session.exec(
        select(AuthSession).where(
            AuthSession.token_hash == token_hash(token), col(AuthSession.revoked_at).is_(None)
        )
    ).first()
    if auth_session is None:
        return False
    auth_session.revoked_at = now or utcnow()
    session.add(auth_session)
    return True
