"""The role guard every service that changes something calls first: the acting user's role is
checked on the server, read from the database on each call, whatever the page or command did.
"""

from __future__ import annotations

from sqlmodel import Session

from schemas.tables import ROLES, User


class PermissionDenied(PermissionError):
    """The acting user may not do this: unknown, disabled, or in the wrong role."""


def require_actor_role(session: Session, actor_id: int | None, *roles: str) -> User:
    """Return the acting user if they exist, are active and hold one of ``roles``.

    Raises :class:`PermissionDenied` otherwise. The role is read from the database on every
    call, so a role change or a disabled account takes effect at once.
    """
    unknown = [role for role in roles if role not in ROLES]
    if not roles or unknown:
        raise ValueError(f"roles {roles!r} must be a non-empty choice of: " + ", ".join(ROLES))
    allowed = " or ".join(roles)
    if actor_id is None:
        raise PermissionDenied(f"you must be logged in as {allowed} to do this")
    actor = session.get(User, actor_id)
    if actor is None or not actor.active:
        raise PermissionDenied(f"account #{actor_id} is unknown or disabled: log in again")
    if actor.role not in roles:
        raise PermissionDenied(
            f"{actor.name} is {actor.role}; only {allowed} may do this (ask an admin)"
        )
    return actor
