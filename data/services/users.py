"""User accounts: create, re-role, disable, reset passwords, end sessions. Passwords are
argon2-hashed.

A password reset and a disabled account end the account's open login sessions here, in the
function that makes the change, so every caller (the *Users* page through
:mod:`data.services.admin`, ``critiquelab users reset-password``) gets the same effect.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func
from sqlmodel import Session, col, select

from data.storage.audit import record_event
from schemas.core import stored_id
from schemas.tables import ROLES, AuthSession, User, utcnow

_hasher = PasswordHasher()
USER_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MIN_PASSWORD_LENGTH = 8


class UserError(ValueError):
    """A user name, role or password that cannot be accepted, with what to do instead."""


@dataclass(frozen=True)
class UserRecord:
    """What the rest of the app needs to know about a user (never the hash)."""

    id: int
    name: str
    role: str
    active: bool
    synthetic: bool


@dataclass(frozen=True)
class PasswordReset:
    """A reset password: the account, and how many of its login sessions it ended."""

    user: UserRecord
    sessions_ended: int


def to_record(user: User) -> UserRecord:
    assert user.id is not None
    return UserRecord(user.id, user.name, user.role, user.active, user.synthetic)


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def password_matches(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise UserError(f"role {role!r} is not one of: " + ", ".join(ROLES))


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise UserError(f"the password must have at least {MIN_PASSWORD_LENGTH} characters")


def create_user(
    session: Session,
    name: str,
    password: str,
    role: str,
    *,
    actor_id: int | None = None,
    synthetic: bool = False,
) -> UserRecord:
    """Add an account; the name must be new, the password at least 8 characters."""
    if not USER_NAME_PATTERN.match(name):
        raise UserError(
            f"user name {name!r} must be 1–64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    _check_role(role)
    _check_password(password)
    if session.exec(select(User).where(User.name == name)).first() is not None:
        raise UserError(f"user {name!r} already exists: choose another name")
    twin = case_twins(session, [name]).get(name)
    if twin is not None:
        raise UserError(
            f"user {name!r} differs from the account {twin!r} only in case, which reads as the "
            "same person: choose another name"
        )
    user = User(name=name, password_hash=hash_password(password), role=role, synthetic=synthetic)
    session.add(user)
    session.flush()
    record_event(
        session,
        actor_id=actor_id,
        action="user.create",
        entity="user_account",
        entity_id=stored_id(user),
        detail={"name": name, "role": role},
    )
    return to_record(user)


def case_twins(session: Session, names: Iterable[str]) -> dict[str, str]:
    """For each of ``names`` that differs only in case from an existing account's name (and is
    not that name), that account's name: such names are refused, as the database refuses them
    (a unique index on ``lower(name)``)."""
    wanted = {name.lower(): name for name in names}
    if not wanted:
        return {}
    found = session.exec(select(User.name).where(func.lower(User.name).in_(sorted(wanted)))).all()
    twins = {}
    for existing in found:
        name = wanted[existing.lower()]
        if existing != name:
            twins[name] = existing
    return twins


def _check_can_log_in(user: User) -> None:
    """Refuse to enable or give a password to an external account: it never logs in."""
    if user.external:
        raise UserError(
            f"{user.name!r} is an external account (its labels were imported): it can never "
            "log in, so it is not enabled and gets no password; add a login account under "
            "another name"
        )


def get_user(session: Session, name: str) -> User | None:
    return session.exec(select(User).where(User.name == name)).first()


def require_user(session: Session, name: str) -> User:
    user = get_user(session, name)
    if user is None:
        other = session.exec(select(User.name).where(func.lower(User.name) == name.lower())).first()
        if other is not None:  # names are unique whatever their case: adding it would be refused
            raise UserError(f"no user called {name!r}; did you mean {other!r}? (names match case)")
        raise UserError(f"no user called {name!r}: add it with `critiquelab users add {name}`")
    return user


def list_users(session: Session) -> list[UserRecord]:
    return [to_record(user) for user in session.exec(select(User).order_by(User.name))]


def set_role(session: Session, name: str, role: str, *, actor_id: int | None) -> UserRecord:
    _check_role(role)
    user = require_user(session, name)
    before = user.role
    user.role = role
    session.add(user)
    record_event(
        session,
        actor_id=actor_id,
        action="user.role",
        entity="user_account",
        entity_id=stored_id(user),
        detail={"before": before, "after": role},
    )
    return to_record(user)


def set_active(session: Session, name: str, active: bool, *, actor_id: int | None) -> UserRecord:
    """Enable or disable ``name``; disabling ends its open login sessions."""
    user = require_user(session, name)
    if active:
        _check_can_log_in(user)
    before = user.active
    user.active = active
    session.add(user)
    if not active:
        revoke_sessions(session, stored_id(user))
    record_event(
        session,
        actor_id=actor_id,
        action="user.enable" if active else "user.disable",
        entity="user_account",
        entity_id=stored_id(user),
        detail={"before": before, "after": active},
    )
    return to_record(user)


def reset_password(
    session: Session, name: str, password: str, *, actor_id: int | None
) -> PasswordReset:
    """Set a new password for ``name`` and end its open login sessions; failed logins before now
    no longer lock the name (:mod:`data.services.auth`). One ``user.password_reset`` audit event
    (never the password)."""
    _check_password(password)
    user = require_user(session, name)
    _check_can_log_in(user)
    user.password_hash = hash_password(password)
    user.password_changed_at = utcnow()
    session.add(user)
    ended = revoke_sessions(session, stored_id(user))
    record_event(
        session,
        actor_id=actor_id,
        action="user.password_reset",
        entity="user_account",
        entity_id=stored_id(user),
        detail={"sessions_ended": ended},
    )
    return PasswordReset(to_record(user), ended)


def revoke_sessions(session: Session, user_id: int, *, now: datetime | None = None) -> int:
    """End every open login session of the user; how many were open."""
    live = session.exec(
        select(AuthSession).where(
            AuthSession.user_id == user_id, col(AuthSession.revoked_at).is_(None)
        )
    ).all()
    for auth_session in live:
        auth_session.revoked_at = now or utcnow()
        session.add(auth_session)
    return len(live)
