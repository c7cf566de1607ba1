"""``critiquelab demo``: build the bundled sample project if absent, print the logins, serve."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from annotate_app.cli.context import bounded, state
from annotate_app.cli.serve import exit_after_serving, serve_app
from schemas.bounds import PORT

if TYPE_CHECKING:
    from data.sample import SampleSummary


def describe(summary: SampleSummary) -> str:
    """What the sample project holds and how to log in, for the terminal."""
    status = "built the sample project" if summary.created else "the sample project is ready"
    return (
        f"{status}: {summary.items} items, {summary.responses} responses, {summary.pairs} pairs; "
        f"{len(summary.campaigns)} campaigns ({', '.join(summary.campaigns)}); "
        f"{summary.annotations} synthetic annotations, {summary.judgements} synthetic judge "
        f"outputs ({summary.unparsed_judgements} unparsed), {summary.disagreement_tags} "
        f"disagreement tags; {summary.gold_units} gold units in the open campaigns "
        "(demo-alignmmbench-open asks for a qualification step first).\n"
        "Demo logins (synthetic accounts, for this demo only):\n" + summary.login_details()
    )


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        ctx: typer.Context,
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
        port: int = typer.Option(
            8501, "--port", help="Port to listen on, 1–65,535.", **bounded(PORT)
        ),
        no_serve: bool = typer.Option(
            False, "--no-serve", help="Only build the sample project; do not start the app."
        ),
    ) -> None:
        """Build the sample project (synthetic data, demo accounts) if absent, print the logins,
        and serve the app."""
        from annotate_app.disagreement_review import disagreement_entries
        from data.sample import build_sample_project

        cli = state(ctx)
        summary = build_sample_project(cli.engine(), disagreements=disagreement_entries)
        cli.emit(summary, text=describe(summary))
        if not no_serve:
            cli.close()
            exit_after_serving(serve_app(cli.db_url, host=host, port=port))
