"""``critiquelab users``: add accounts, reset passwords (hashed with argon2, never echoed).

Every command family imports the library it calls inside the command, so that ``--help`` and the
other families never load it (``tests/annotate_app/cli/test_cli_start.py``).
"""

from __future__ import annotations

import sys

import typer

from annotate_app.cli.context import state

users_app = typer.Typer(help="User accounts: add annotators, reviewers and admins.")


@users_app.command("add")
def add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Login name (letters, digits, '_', '.', '-')."),
    role: str = typer.Option(..., "--role", help="annotator | reviewer | admin."),
) -> None:
    """Add a user; the password is read from stdin when piped, else prompted (twice)."""
    from data.services.users import create_user
    from data.storage.engine import session_scope
    from schemas.tables import ROLES

    if role not in ROLES:
        raise typer.BadParameter(
            f"{role!r} is not one of: " + ", ".join(ROLES), param_hint="--role"
        )
    password = _read_password()
    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        user = create_user(session, name, password, role)
    cli.emit(user, text=f"added {user.role} {user.name!r} (id {user.id})")


@users_app.command("reset-password")
def reset_password_(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Login name of the account."),
) -> None:
    """Set a new password (read as for `users add`); ends the account's sessions and its login
    lock. The way back in for an admin locked out from an unfamiliar address."""
    from data.services.users import reset_password
    from data.storage.engine import session_scope

    password = _read_password()
    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        reset = reset_password(session, name, password, actor_id=None)
    cli.emit(
        reset.user,
        text=f"reset the password of {reset.user.name!r}; {reset.sessions_ended} open session(s) "
        "ended",
    )


@users_app.command("list")
def list_(ctx: typer.Context) -> None:
    """List the user accounts with their roles."""
    from data.services.users import list_users
    from data.storage.engine import session_scope

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        users = list_users(session)
    lines = [f"{u.name}\t{u.role}\t{'active' if u.active else 'disabled'}" for u in users]
    cli.emit(users, text="\n".join(lines) or "no users yet")


def _read_password() -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    return typer.prompt("Password", hide_input=True, confirmation_prompt=True)


def register(app: typer.Typer) -> None:
    app.add_typer(users_app, name="users")
