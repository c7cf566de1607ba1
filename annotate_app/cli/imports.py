"""``critiquelab import jsonl|alignmmbench|mmie`` and ``critiquelab judgments import``.

Each command validates the whole file first; bad records exit 2 with one ``FILE:LINE: ...`` line
each on stderr (at most 50) and leave the database as it was. Only regular files are read (not a
pipe or a device), and an empty file is refused. Re-running an import changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import typer

from annotate_app.cli.context import state

import_app = typer.Typer(help="Import datasets (items with model responses) from files.")
judgments_app = typer.Typer(help="Model judgements (FORMATS.md §3): import them from files.")

_FILE = typer.Argument(..., exists=True, dir_okay=False, readable=True, help="The file to import.")
_IMAGES_ROOT = typer.Option(
    None,
    "--images-root",
    exists=True,
    file_okay=False,
    help="Folder the image paths are relative to (default: the file's folder).",
)
_ALLOW_MISSING = typer.Option(
    False, "--allow-missing-images", help="Import items whose image files are missing (text only)."
)
PROTOCOL_OPTION = typer.Option(
    None, "--protocol", help="Use this protocol for every line (alignmmbench|mmie|pairwise|score)."
)
SCALE_OPTION = typer.Option(
    None,
    "--scale",
    help="Scale of the score protocol (given with --protocol score or named by the lines): "
    "MIN:MAX[:STEP].",
)
_UPDATE = typer.Option(False, "--update", help="Replace records that changed since last import.")


@import_app.command("jsonl")
def jsonl(
    ctx: typer.Context,
    file: Path = typer.Argument(
        ...,
        exists=True,
        readable=True,
        help="The file to import, or a Hugging Face datasets folder (save_to_disk).",
    ),
    dataset: str = typer.Option(None, "--dataset", help="Dataset name (default: the file name)."),
    images_root: Path = _IMAGES_ROOT,
    allow_missing_images: bool = _ALLOW_MISSING,
    update: bool = _UPDATE,
) -> None:
    """Import a CritiqueLab dataset (.jsonl, .csv, .parquet or a Hugging Face datasets folder):
    items with responses and pairs (FORMATS.md §1); datasets/Parquet Image values are images."""
    from data.io.importers.jsonl import import_jsonl
    from data.io.importers.sources import progress_total
    from data.storage.engine import session_scope

    cli = state(ctx)
    progress = cli.progress(f"checking {file.name}", total=progress_total(file))
    with progress as advance, session_scope(cli.engine()) as session:
        summary = import_jsonl(
            session,
            file,
            dataset=dataset,
            images_root=images_root,
            allow_missing_images=allow_missing_images,
            update=update,
            on_progress=advance,
        )
    cli.emit(summary, text=summary.describe())


@import_app.command("alignmmbench")
def alignmmbench(
    ctx: typer.Context,
    metadata: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="The benchmark's metadata JSONL."
    ),
    responses: list[Path] = typer.Option(
        None,
        "--responses",
        exists=True,
        dir_okay=False,
        help='Model answers {"question_id", "predict"} per line; pair each with a --model.',
    ),
    models: list[str] = typer.Option(
        None, "--model", help="Model name of the --responses file at the same position."
    ),
    dataset: str = typer.Option("alignmmbench", "--dataset", help="Dataset name."),
    images_root: Path = _IMAGES_ROOT,
    allow_missing_images: bool = _ALLOW_MISSING,
    update: bool = _UPDATE,
) -> None:
    """Import AlignMMBench items (13 tasks, prompt-variant groups) and model responses."""
    from data.io.importers.alignmmbench import import_alignmmbench
    from data.io.importers.sources import count_lines
    from data.storage.engine import session_scope

    responses, models = responses or [], models or []
    if len(responses) != len(models):
        raise typer.BadParameter(
            f"{len(responses)} --responses file(s) but {len(models)} --model name(s): give one "
            "--model for each --responses file",
            param_hint="--model",
        )
    cli = state(ctx)
    progress = cli.progress(f"checking {metadata.name}", total=count_lines(metadata))
    with progress as advance, session_scope(cli.engine()) as session:
        summary = import_alignmmbench(
            session,
            metadata,
            responses=list(zip(responses, models, strict=True)),
            dataset=dataset,
            images_root=images_root,
            allow_missing_images=allow_missing_images,
            update=update,
            on_progress=advance,
        )
    cli.emit(summary, text=summary.describe())


@import_app.command("mmie")
def mmie(
    ctx: typer.Context,
    file: Path = _FILE,
    dataset: str = typer.Option("mmie", "--dataset", help="Dataset name."),
    images_root: Path = _IMAGES_ROOT,
    allow_missing_images: bool = _ALLOW_MISSING,
    update: bool = _UPDATE,
) -> None:
    """Import an MMIE file: interleaved questions, model answers, ground truth."""
    from data.io.importers.mmie import import_mmie
    from data.storage.engine import session_scope

    cli = state(ctx)
    with cli.progress(f"checking {file.name}") as advance, session_scope(cli.engine()) as session:
        summary = import_mmie(
            session,
            file,
            dataset=dataset,
            images_root=images_root,
            allow_missing_images=allow_missing_images,
            update=update,
            on_progress=advance,
        )
    cli.emit(summary, text=summary.describe())


@judgments_app.command("import")
def judgments_import(
    ctx: typer.Context,
    file: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="Judgements as .jsonl, .csv or .parquet."
    ),
    protocol: str = PROTOCOL_OPTION,
    scale: str = SCALE_OPTION,
    update: bool = _UPDATE,
) -> None:
    """Import model judgements (GPT-4 outputs produced elsewhere, a critic's scores...)."""
    from data.io.importers.judgements import import_judgements
    from data.io.importers.sources import progress_total
    from data.storage.engine import session_scope
    from schemas.protocols import parse_scale

    cli = state(ctx)
    progress = cli.progress(f"checking {file.name}", total=progress_total(file))
    with progress as advance, session_scope(cli.engine()) as session:
        summary = import_judgements(
            session,
            file,
            protocol=protocol,
            scale=parse_scale(scale) if scale else None,
            update_changed=update,
            on_progress=advance,
        )
    cli.emit(summary, text=summary.describe())


def register(app: typer.Typer) -> None:
    app.add_typer(import_app, name="import")
    app.add_typer(judgments_app, name="judgments")
