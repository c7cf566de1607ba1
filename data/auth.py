"""Logging in and out: password check with a rate limit, session tokens, revocation.

A successful login creates an :class:`~schemas.tables.AuthSession` and hands back a random token
(32 bytes, URL-safe). The browser keeps the token; the database keeps only its SHA-256, so a
leaked database copy cannot be replayed as a login. Every password check is recorded as a
:class:`~schemas.tables.LoginAttempt`. After :data:`MAX_FAILED_ATTEMPTS` failures for one name
within :data:`RATE_LIMIT_WINDOW` (counted since the last success), further tries are refused
without looking at the password until the oldest of those failures leaves the window.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from sqlalchemy import func
from sqlmodel import Session, col, select

from data.users import UserRecord, hash_password, password_matches, to_record
from schemas.tables import AuthSession, LoginAttempt, User, utcnow

MAX_FAILED_ATTEMPTS = 5
RATE_LIMIT_WINDOW = timedelta(minutes=15)
SESSION_LIFETIME = timedelta(hours=12)
TOKEN_BYTES = 32
MAX_NAME_LENGTH = 64
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


def token_hash(token: str) -> str:
    """The SHA-256 (hex) under which a session token is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _as_utc(moment: datetime) -> datetime:
    # SQLite hands stored times back without a zone; everything is stored in UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _recent_failures(session: Session, name: str, now: datetime) -> list[datetime]:
    """Failed tries for ``name`` inside the window and after the last success, oldest first."""
    since = now - RATE_LIMIT_WINDOW
    last_success = session.exec(
        select(func.max(LoginAttempt.at)).where(
            LoginAttempt.user_name == name, col(LoginAttempt.ok).is_(True)
        )
    ).one()
    if last_success is not None:
        since = max(since, _as_utc(last_success))
    rows = session.exec(
        select(LoginAttempt.at)
        .where(
            LoginAttempt.user_name == name,
            col(LoginAttempt.ok).is_(False),
            LoginAttempt.at > since,
            LoginAttempt.at <= now,
        )
        .order_by(col(LoginAttempt.at))
    )
    return [_as_utc(at) for at in rows]


def _rate_limited(failures: list[datetime], now: datetime) -> AuthResult | None:
    if len(failures) < MAX_FAILED_ATTEMPTS:
        return None
    unlock_at = failures[-MAX_FAILED_ATTEMPTS] + RATE_LIMIT_WINDOW
    minutes = max(1, math.ceil((unlock_at - now).total_seconds() / 60))
    return AuthResult(
        "rate_limited",
        f"Too many failed logins for this name ({MAX_FAILED_ATTEMPTS} within "
        f"{int(RATE_LIMIT_WINDOW.total_seconds() // 60)} minutes). Try again in {minutes} "
        "minute(s), or ask an admin to reset your password.",
    )


def login(session: Session, name: str, password: str, *, now: datetime | None = None) -> AuthResult:
    """Check ``name`` and ``password``; on success open a session and return its token.

    A wrong name and a wrong password give the same answer. A disabled account is refused even
    with the right password. A rate-limited name is refused without checking the password, and
    that refusal is not counted as another failure.
    """
    now = now or utcnow()
    if len(name) > MAX_NAME_LENGTH:  # no account has such a name; nothing worth recording
        password_matches(_DUMMY_HASH, password)
        return AuthResult("wrong_credentials", WRONG_CREDENTIALS)
    limited = _rate_limited(_recent_failures(session, name, now), now)
    if limited is not None:
        return limited
    user = session.exec(select(User).where(User.name == name)).first()
    if user is not None and user.external:  # imported annotators have no login
        user = None
    matches = password_matches(user.password_hash if user else _DUMMY_HASH, password)
    session.add(LoginAttempt(user_name=name, ok=bool(user and matches), at=now))
    if user is None or not matches:
        return AuthResult("wrong_credentials", WRONG_CREDENTIALS)
    if not user.active:
        return AuthResult("disabled", "This account is disabled: ask an admin to enable it.")
    token = secrets.token_urlsafe(TOKEN_BYTES)
    expires_at = now + SESSION_LIFETIME
    assert user.id is not None
    session.add(
        AuthSession(token_hash=token_hash(token), user_id=user.id, created_at=now,
                    expires_at=expires_at)
    )  # fmt: skip
    session.flush()
    return AuthResult("ok", f"Logged in as {user.name}.", to_record(user), token, expires_at)


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
