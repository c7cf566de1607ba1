"""``critiquelab annotations import``: human labels made elsewhere, as a finished campaign."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from annotate_app.cli.context import state
from annotate_app.cli.imports import PROTOCOL_OPTION, SCALE_OPTION

if TYPE_CHECKING:  # the reader is imported by the command that runs, to keep --help fast
    from data.io.importers.errors import Problems
    from data.io.importers.reader import JudgementLine

annotations_app = typer.Typer(
    help="Human labels (FORMATS.md §3, judge_kind human): import them as a finished campaign."
)


@annotations_app.command("import")
def annotations_import(
    ctx: typer.Context,
    file: Path = typer.Argument(
        ...,
        exists=True,
        dir_okay=False,
        help="Human labels as .jsonl, .csv or .parquet, or a Label Studio JSON export.",
    ),
    campaign: str = typer.Option(..., "--campaign", help="Name of the campaign to create."),
    dataset: str = typer.Option(
        None, "--dataset", help="The dataset the units must belong to (default: theirs)."
    ),
    protocol: str = PROTOCOL_OPTION,
    scale: str = SCALE_OPTION,
    source_format: str = typer.Option(
        "judgements",
        "--from",
        help="judgements (FORMATS.md §3) | label-studio (a Label Studio JSON export).",
    ),
    images_root: Path = typer.Option(
        None,
        "--images-root",
        exists=True,
        file_okay=False,
        help="label-studio: folder the tasks' image paths are relative to (default: the file's).",
    ),
    preference_name: str = typer.Option(
        "preference", "--preference-name", help="label-studio: from_name of the A/B/tie choices."
    ),
    score_name: str = typer.Option(
        "score", "--score-name", help="label-studio: from_name of the rating or number."
    ),
    rationale_name: str = typer.Option(
        "rationale", "--rationale-name", help="label-studio: from_name of the rationale textarea."
    ),
) -> None:
    """Import labels made elsewhere as a closed campaign with one external account per annotator."""
    from functools import partial

    from data.io.importers.annotations import import_annotations
    from data.io.importers.label_studio import LabelStudioFields, read_label_studio
    from data.io.importers.reader import iter_judgements
    from data.io.importers.sources import progress_total
    from data.storage.engine import session_scope
    from schemas.protocols import parse_scale

    if source_format not in ("judgements", "label-studio"):
        raise typer.BadParameter(
            f"{source_format!r}: use judgements or label-studio", param_hint="--from"
        )
    if images_root is not None and source_format != "label-studio":
        raise typer.BadParameter(
            "only a Label Studio export names images: give --from label-studio",
            param_hint="--images-root",
        )
    fields = LabelStudioFields(preference_name, score_name, rationale_name)
    cli = state(ctx)
    progress = cli.progress(
        f"checking {file.name}",
        total=None if source_format == "label-studio" else progress_total(file),
    )
    with progress as advance, session_scope(cli.engine()) as session:
        # one line at a time: the labels are kept, not the parsed lines (300k labels peaked at
        # 764 MB with every line held, 405 MB without)
        read: Callable[[Path, Problems], Iterable[JudgementLine]] = iter_judgements
        if source_format == "label-studio":
            read = partial(
                read_label_studio,
                fields=fields,
                images_root=images_root,
                protocol=protocol,
                session=session,
            )
        summary = import_annotations(
            session,
            file,
            campaign=campaign,
            dataset=dataset,
            protocol=protocol,
            scale=parse_scale(scale) if scale else None,
            on_progress=advance,
            read=read,
        )
    cli.emit(summary, text=summary.describe())


def register(app: typer.Typer) -> None:
    app.add_typer(annotations_app, name="annotations")
