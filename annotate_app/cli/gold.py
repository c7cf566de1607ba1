"""``critiquelab gold``: known answers (gold units), a campaign's gold and qualification
settings, per-annotator gold accuracy, and annotators' standing (hold, release, retire).

The library modules are imported inside the commands, so that ``critiquelab --help`` does not
load them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from annotate_app.cli.context import bounded, state
from schemas.bounds import QUALIFY_UNITS

gold_app = typer.Typer(
    help="Gold units (known answers) and qualification: import, settings, accuracy, standing."
)

_CAMPAIGN = typer.Option(..., "--campaign", "-c", help="Campaign name.")


@gold_app.command("import")
def import_command(
    ctx: typer.Context,
    path: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="JSON Lines: one gold answer per line."
    ),
    campaign: str = _CAMPAIGN,
) -> None:
    """Attach known answers to units of a campaign (FORMATS.md, gold file); all or nothing.

    Each line: {"unit": KEY, "score": S} or {"unit": KEY, "preference": "A"|"B"|"tie"}, with an
    optional "explanation"; KEY as `critiquelab campaign status C --units` lists it. A unit
    already served to an annotator cannot become gold.
    """
    from data.services.gold import import_gold
    from data.storage.engine import session_scope

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        done = import_gold(session, path, campaign)
    cli.emit(
        done,
        text=f"campaign {done.campaign!r}: {done.added} gold answers added, {done.replaced} "
        f"replaced; {done.gold_units} gold units in all",
    )


GOLD_RATE = typer.Option(
    None,
    "--gold-rate",
    min=0.0,
    max=0.5,
    help="Share of units served that are gold after qualification: 0 (none) or 0.01–0.5.",
)
GOLD_FEEDBACK = typer.Option(
    None,
    "--gold-feedback/--no-gold-feedback",
    help="After a gold unit, show the expected answer and its explanation (training).",
    show_default=False,
)
QUALIFY = typer.Option(
    None,
    "--qualify",
    help="N: gold units an annotator answers before any real unit (0 = no qualification), 0–1,000.",
    **bounded(QUALIFY_UNITS),
)
QUALIFY_ACCURACY = typer.Option(
    None,
    "--qualify-accuracy",
    min=0.0,
    max=1.0,
    help="T: the share of the N answers that must be right (0–1).",
)
"""The gold settings' options, shared by ``gold set`` and ``campaign create`` (same bounds)."""


def apply_gold_options(
    session: Any,
    campaign: str | int,
    rate: float | None,
    feedback: bool | None,
    qualify: int | None,
    accuracy: float | None,
) -> dict[str, dict[str, Any]]:
    """The one library call behind the gold options: :func:`data.services.gold.set_gold_settings`
    (None = keep; audited; bounded, against the campaign's gold units)."""
    from data.services.gold import set_gold_settings

    return set_gold_settings(
        session,
        campaign,
        gold_rate=rate,
        gold_feedback=feedback,
        qualification_gold=qualify,
        qualification_accuracy=accuracy,
    )


@gold_app.command("set")
def set_command(
    ctx: typer.Context,
    campaign: str = typer.Argument(..., help="Campaign name."),
    rate: float = GOLD_RATE,
    feedback: bool = GOLD_FEEDBACK,
    qualify: int = QUALIFY,
    accuracy: float = QUALIFY_ACCURACY,
) -> None:
    """Change a campaign's gold settings; those not given are kept. Audited."""
    from data.services.gold import gold_settings
    from data.storage.campaign_lookup import get_campaign
    from data.storage.engine import session_scope

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        changes = apply_gold_options(session, campaign, rate, feedback, qualify, accuracy)
        now = gold_settings(get_campaign(session, campaign))
    said = ", ".join(f"{name} {c['before']} → {c['after']}" for name, c in changes.items())
    cli.emit(
        {"campaign": campaign, "changes": changes, "settings": now},
        text=f"campaign {campaign!r}: " + (said or "nothing changed"),
    )


@gold_app.command("accuracy")
def accuracy_command(ctx: typer.Context, campaign: str = _CAMPAIGN) -> None:
    """Per annotator: gold units answered, exact and within-one-step accuracy with 95% Wilson
    intervals (pairwise: agreement, both columns alike), and their standing."""
    from data.services.gold import gold_accuracy
    from data.storage.engine import session_scope

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        rows = gold_accuracy(session, campaign)
    lines = ["annotator\tanswered\texact [95% CI]\twithin one step [95% CI]\tstanding"]
    lines += [
        f"{r.annotator}\t{r.answered}\t{r.exact_text}\t{r.within_one_text}\t{r.standing}"
        for r in rows
    ]
    if not rows:
        lines.append("(no gold answer yet)")
    cli.emit(rows, text="\n".join(lines))


def _standing_command(action: str) -> None:
    def command(
        ctx: typer.Context,
        annotator: str = typer.Argument(..., help="The annotator's login name."),
        campaign: str = _CAMPAIGN,
        reason: str = typer.Option(
            None, "--reason", help="Why, in words the annotator is shown (at most 500 characters)."
        ),
        by: str = typer.Option(
            None,
            "--by",
            help="The admin account to record as the decider (default: none, the command line).",
        ),
    ) -> None:
        from data.services.gold import admin_id, change_standing
        from data.storage.engine import session_scope

        cli = state(ctx)
        with session_scope(cli.engine()) as session:
            after = change_standing(
                session, campaign, annotator, action, actor_id=admin_id(session, by), reason=reason
            )
        given = (reason or "").strip() or None
        cli.emit(
            {"campaign": campaign, "annotator": annotator, "standing": after, "reason": given},
            text=f"{annotator} is {after} in campaign {campaign!r}"
            + (f": {given}" if given else ""),
        )

    command.__doc__ = {
        "hold": "Hold an annotator: they are served nothing in the campaign until released.",
        "release": "Release a held (or retired) annotator: they are served real units again.",
        "retire": "Retire an annotator from the campaign: served nothing; answers are kept.",
    }[action]
    gold_app.command(action)(command)


for _action in ("hold", "release", "retire"):
    _standing_command(_action)


@gold_app.command("standings")
def standings_command(
    ctx: typer.Context,
    campaign: str = _CAMPAIGN,
    held: bool = typer.Option(False, "--held", help="Only annotators held now."),
) -> None:
    """Annotators' decided standings in the campaign (qualified, held, released, retired)."""
    from data.services.gold import standings
    from data.storage.engine import session_scope

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        rows = standings(session, campaign, statuses=("held",) if held else None)
    lines = ["annotator\tstanding\tqualification accuracy\tdecided at\twho and why"]
    lines += [
        f"{r.annotator}\t{r.status}\t"
        f"{'–' if r.accuracy is None else format(r.accuracy, '.0%')}\t"
        f"{r.decided_at:%Y-%m-%d %H:%M}\t{r.why}"
        for r in rows
    ]
    cli.emit(rows, text="\n".join(lines))


def register(app: typer.Typer) -> None:
    app.add_typer(gold_app, name="gold")
