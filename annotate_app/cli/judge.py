"""``critiquelab judge run``: a remote OpenAI-compatible model judges a campaign.

A thin layer over :mod:`critic.remote`: the options become :class:`~critic.remote.RemoteOptions`,
one call judges, and a summary is printed (JSON with ``--json``); progress goes to stderr.
"""

from __future__ import annotations

from pathlib import Path

import typer

from annotate_app.cli.context import bounded, state
from annotate_app.cli.judging_options import (
    BOTH_ORDERS,
    JUDGE_NAME,
    LANGUAGE,
    TEMPLATE,
    judging_line,
    template_file,
)
from schemas.bounds import CONCURRENCY, MAX_RETRIES, MAX_TOKENS

judge_app = typer.Typer(help="Judge campaigns with a remote OpenAI-compatible model.")


def register(app: typer.Typer) -> None:
    """Add the ``judge`` command group to ``app``."""
    app.add_typer(judge_app, name="judge")


@judge_app.command("run")
def judge_run(
    ctx: typer.Context,
    base_url: str = typer.Option(..., "--base-url", help="e.g. https://api.openai.com/v1"),
    model: str = typer.Option(..., "--model", help="Model name the endpoint serves."),
    campaign: str = typer.Option(..., "--campaign", help="Campaign to judge."),
    judge_name: str = JUDGE_NAME,
    api_key_env: str = typer.Option(
        "OPENAI_API_KEY", "--api-key-env", help="Environment variable that holds the API key."
    ),
    concurrency: int = typer.Option(
        4, "--concurrency", help="Requests in flight at most.", **bounded(CONCURRENCY)
    ),
    max_retries: int = typer.Option(
        5, "--max-retries", help="Retries on 429 / 5xx / timeouts.", **bounded(MAX_RETRIES)
    ),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds per request."),
    max_tokens: int = typer.Option(
        512, "--max-tokens", help="Longest answer.", **bounded(MAX_TOKENS)
    ),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature."),
    both_orders: bool = BOTH_ORDERS,
    vision: bool = typer.Option(True, "--vision/--text-only", help="Send the images."),
    language: str = LANGUAGE,
    template: Path = TEMPLATE,
) -> None:
    """Judge a campaign with any OpenAI-compatible chat endpoint (cached, resumable)."""
    from critic.remote import RemoteOptions, judge_campaign_remote

    cli = state(ctx)
    options = RemoteOptions(
        base_url=base_url,
        model=model,
        judge_name=judge_name,
        api_key_env=api_key_env,
        concurrency=concurrency,
        max_retries=max_retries,
        timeout=timeout,
        max_tokens=max_tokens,
        temperature=temperature,
        both_orders=both_orders,
        vision=vision,
        language=language,
        template=template_file(template),
    )
    with cli.progress(f"judging {campaign}") as advance:
        summary = judge_campaign_remote(cli.engine(), campaign, options, progress=advance)
    for failure in summary.failed:
        cli.info(f"failed: {failure}")
    cli.emit(
        summary,
        text=judging_line(summary) + f"; {summary.cached} from cache, {summary.requests} requests, "
        f"{len(summary.failed)} failed (re-run to retry them)",
    )
    if summary.failed:
        raise typer.Exit(1)
