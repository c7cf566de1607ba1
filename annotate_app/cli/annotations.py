"""``critiquelab annotations import``: human labels made elsewhere, as a finished campaign."""

from __future__ import annotations

from pathlib import Path

import typer

from annotate_app.cli.context import state
from annotate_app.cli.imports import PROTOCOL_OPTION, SCALE_OPTION

annotations_app = typer.Typer(
    help="Human labels (FORMATS.md §3, judge_kind human): import them as a finished campaign."
)


@annotations_app.command("import")
def annotations_import(
    ctx: typer.Context,
    file: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="Human labels as .jsonl, .csv or .parquet."
    ),
    campaign: str = typer.Option(..., "--campaign", help="Name of the campaign to create."),
    dataset: str = typer.Option(
        None, "--dataset", help="The dataset the units must belong to (default: theirs)."
    ),
    protocol: str = PROTOCOL_OPTION,
    scale: str = SCALE_OPTION,
) -> None:
    """Import labels made elsewhere as a closed campaign with one external account per annotator."""
    from data.io.importers.annotations import import_annotations
    from data.io.importers.sources import progress_total
    from data.storage.engine import session_scope
    from schemas.protocols import parse_scale

    cli = state(ctx)
    progress = cli.progress(f"checking {file.name}", total=progress_total(file))
    with progress as advance, session_scope(cli.engine()) as session:
        summary = import_annotations(
            session,
            file,
            campaign=campaign,
            dataset=dataset,
            protocol=protocol,
            scale=parse_scale(scale) if scale else None,
            on_progress=advance,
        )
    cli.emit(summary, text=summary.describe())


def register(app: typer.Typer) -> None:
    app.add_typer(annotations_app, name="annotations")
