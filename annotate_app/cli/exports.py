"""``critiquelab export annotations|judgments|disagreement-tags|dataset|label-studio``."""

from __future__ import annotations

from pathlib import Path

import typer

from annotate_app.cli.context import CliState, state

export_app = typer.Typer(help="Export annotations and judgements to files.")

_FORMAT = typer.Option(
    None, "--format", help="jsonl | csv | parquet (default: from the output file's extension)."
)
_OUTPUT = typer.Option(..., "-o", "--output", dir_okay=False, help="The file to write.")


@export_app.command("annotations")
def export_annotations(  # not ``annotations``: the name the __future__ import binds
    ctx: typer.Context,
    campaign: str = typer.Option(..., "--campaign", help="Campaign name."),
    export_format: str = _FORMAT,
    output: Path = _OUTPUT,
    all_revisions: bool = typer.Option(
        False, "--all-revisions", help="Every revision, not only the live annotation."
    ),
) -> None:
    """Human judgements of a campaign (FORMATS.md §3, with annotator, seconds, revision)."""
    from data.io.exporters import annotation_records, write_judgement_records
    from data.storage.engine import read_scope

    cli = state(ctx)
    with read_scope(cli.engine()) as session:
        records = annotation_records(session, campaign, all_revisions=all_revisions)
    export_format = export_format or _format_of(output)
    written = write_judgement_records(records, output, export_format)
    audit_export(cli, "annotations", campaign, export_format, written)
    cli.emit({"written": written, "output": str(output)}, text=f"wrote {written} to {output}")


@export_app.command("judgments")
def judgments(
    ctx: typer.Context,
    judges: list[str] = typer.Option(None, "--judge", help="Only this judge (repeatable)."),
    campaign: str = typer.Option(None, "--campaign", help="Only judgements of its units."),
    export_format: str = _FORMAT,
    output: Path = _OUTPUT,
) -> None:
    """Model judgements (FORMATS.md §3); `judgments import` reads the file back unchanged."""
    from data.io.exporters import model_judgement_records, write_judgement_records
    from data.storage.engine import read_scope

    cli = state(ctx)
    with read_scope(cli.engine()) as session:
        records = model_judgement_records(session, judges=judges or (), campaign_name=campaign)
    export_format = export_format or _format_of(output)
    written = write_judgement_records(records, output, export_format)
    source = campaign or "every campaign"
    audit_export(cli, "judgments", source, export_format, written)
    cli.emit({"written": written, "output": str(output)}, text=f"wrote {written} to {output}")


@export_app.command("disagreement-tags")
def disagreement_tags(
    ctx: typer.Context,
    campaign: str = typer.Option(..., "--campaign", help="Campaign name."),
    export_format: str = _FORMAT,
    output: Path = _OUTPUT,
    all_tags: bool = typer.Option(
        False, "--all", help="Every tag, retired ones too, not only each unit's live tag."
    ),
) -> None:
    """Reviewers' causes of judge–human disagreements (FORMATS.md "Disagreement tags")."""
    from data.io.exporters.tags import export_disagreement_tags
    from data.storage.engine import read_scope

    cli = state(ctx)
    export_format = export_format or _format_of(output)
    with read_scope(cli.engine()) as session:
        written = export_disagreement_tags(
            session, campaign, output, export_format, all_tags=all_tags
        )
    audit_export(cli, "disagreement-tags", campaign, export_format, written)
    cli.emit({"written": written, "output": str(output)}, text=f"wrote {written} to {output}")


@export_app.command("dataset")
def dataset(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Dataset name."),
    output: Path = _OUTPUT,
) -> None:
    """A dataset as a §1 JSONL file with its images copied beside it (re-importable)."""
    from data.io.exporters import export_dataset
    from data.storage.engine import read_scope

    cli = state(ctx)
    with read_scope(cli.engine()) as session:
        result = export_dataset(session, name, output)
    audit_export(cli, "dataset", name, "jsonl", result.items)
    cli.emit(
        result,
        text=f"wrote {result.items} items, {result.responses} responses and "
        f"{result.images} images to {output}",
    )


@export_app.command("label-studio")
def label_studio(
    ctx: typer.Context,
    campaign: str = typer.Option(..., "--campaign", help="Campaign name."),
    output: Path = _OUTPUT,
    with_annotations: bool = typer.Option(
        False, "--annotations", help="Also each unit's live, not rejected annotations."
    ),
    images: str = typer.Option(
        "paths",
        "--images",
        help="paths (copied beside the output) | data (inlined as data: URLs).",
    ),
    image_prefix: str = typer.Option(
        "",
        "--image-prefix",
        help="Put before each image path, e.g. /data/local-files/?d= for local-files storage.",
    ),
) -> None:
    """A campaign's units as Label Studio tasks (FORMATS.md §7), for the labelling
    configs in docs/label-studio/."""
    from data.io.exporters.label_studio import export_label_studio
    from data.storage.engine import read_scope

    if images not in ("paths", "data"):
        raise typer.BadParameter(f"{images!r}: use paths or data", param_hint="--images")
    cli = state(ctx)
    with read_scope(cli.engine()) as session:
        result = export_label_studio(
            session,
            campaign,
            output,
            with_annotations=with_annotations,
            images="data" if images == "data" else "paths",
            image_prefix=image_prefix,
        )
    audit_export(cli, "label-studio", campaign, "json", result.tasks)
    cli.emit(
        result,
        text=f"wrote {result.tasks} tasks, {result.annotations} annotations and "
        f"{result.images} images to {output}",
    )


def audit_export(cli: CliState, kind: str, source: str, export_format: str, rows: int) -> None:
    """The export's event in the audit trail (by the command line: no actor).

    An export only reads, so it works while another program holds the database's write lock;
    then the event cannot be written. The file is made and correct, so the command still
    succeeds, and says on stderr (even with --quiet) that the trail lacks this export."""
    from data.services.admin_audit import record_export
    from data.storage.engine import DatabaseBusy

    try:
        record_export(
            cli.engine(), None, kind, source=source, export_format=export_format, rows=rows
        )
    except DatabaseBusy as busy:
        typer.echo(
            f"warning: the export was written but not recorded in the audit trail: {busy}",
            err=True,
        )


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("jsonl", "csv", "parquet"):
        return suffix
    raise typer.BadParameter(
        f"cannot tell the format from {path.name!r}: give --format jsonl|csv|parquet",
        param_hint="--format",
    )


def register(app: typer.Typer) -> typer.Typer:
    """Add ``export`` to ``app`` and return it, so other families can add formats to it."""
    app.add_typer(export_app, name="export")
    return export_app
