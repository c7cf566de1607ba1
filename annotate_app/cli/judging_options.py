"""What the judging commands share (``critic score``, ``judge run``, ``export sft``): the prompt
and judge-name options, checking a choice, reading a template, and the one-line run summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

if TYPE_CHECKING:
    from critic.prompts import PromptTemplate

T = TypeVar("T")


def _judge_name(value: str) -> str:
    """The one id rule (schemas.ids): a judge name is exported as an id."""
    from schemas.ids import id_problem

    problem = id_problem(value)
    if problem is not None:
        raise typer.BadParameter(f"the judge name {value!r} {problem}")
    return value


LANGUAGE = typer.Option("en", "--language", help="Built-in prompt language: en | zh.")
TEMPLATE = typer.Option(
    None, "--template", exists=True, dir_okay=False, help="Your own prompt template (TOML)."
)
BOTH_ORDERS = typer.Option(
    False, "--both-orders", help="Pairwise: judge each pair in both shown orders."
)
JUDGE_NAME = typer.Option(
    ..., "--judge-name", help="Name stored with the judgements.", callback=_judge_name
)


def choice(value: str, allowed: Mapping[str, T], option: str) -> T:
    """``allowed[value]``, or a usage error on ``option`` naming the allowed values."""
    if value not in allowed:
        raise typer.BadParameter(
            f"{value!r} is not one of: {', '.join(allowed)}", param_hint=option
        )
    return allowed[value]


def template_file(path: Path | None) -> PromptTemplate | None:
    """The template of ``--template``, or None for the built-in one."""
    if path is None:
        return None
    from critic.prompts import load_template

    return load_template(path)


def judging_line(summary: Any) -> str:
    statuses = ", ".join(f"{count} {status}" for status, count in sorted(summary.statuses.items()))
    derived = "".join(
        f"; {name}: {count}" for name, count in sorted(getattr(summary, "derived", {}).items())
    )
    too_long = getattr(summary, "too_long", 0)
    return (
        f"{summary.judge} [{summary.prompt_id}]: stored {summary.stored} judgements"
        f" ({statuses or 'none new'}); {summary.already_judged} already judged{derived}"
        + (f"; {too_long} left out, prompt over --max-prompt-tokens" if too_long else "")
    )
