"""The ``critiquelab`` command: global options, error → exit status, every command family.

Each family lives in its own module and adds itself with ``register(app)``.

Errors: the project's own input errors (``ValueError`` subclasses defined in its packages, or a
plain ``ValueError`` raised by its code) are bad input, exit 2, one line on stderr per problem (a
file reader names up to 50 bad lines), with the options a message names given as this command's
flags (:func:`cli_flag`); anything else, including a ``ValueError`` from inside
numpy or pandas, exits 1 with one line. The traceback only with ``--debug``.

Start-up: importing this module (all it takes for ``--help``) loads typer and the command
modules, never pandas, scipy, torch, alembic or the database layer; each command imports the
library it calls when it runs (``tests/annotate_app/cli/test_cli_start.py``,
``bench/cli_start.py``).
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

# a name of its own: ``from __future__ import annotations`` binds ``annotations`` in this module
from annotate_app.cli import annotations as annotation_commands
from annotate_app.cli import (
    answers,
    calibrate,
    campaigns,
    critic,
    demo,
    exports,
    gold,
    imports,
    serve,
    users,
)
from annotate_app.cli.context import CliState, cli_flag
from data.storage.urls import default_db_url
from schemas.option_text import OptionError

EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1
CRITIC_EXTRA_MODULES = frozenset(
    {"torch", "transformers", "tokenizers", "peft", "accelerate", "gguf"}
)
"""Top-level modules that only the ``critic`` extra installs."""


class _ErrorMappingGroup(TyperGroup):
    """Turns exceptions raised by commands into one line on stderr and an exit status."""

    # typer.Context subclasses the click Context that typer vendors privately (typer._click) and
    # that TyperGroup.invoke declares; typer exports no public name for that base class.
    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except typer.TyperException as error:  # usage errors: bad option, missing file...
            usage = getattr(error, "ctx", None)
            hint = f"; see {usage.command_path} --help" if usage is not None else ""
            message = _one_line_text(error.format_message()).rstrip(".")
            typer.echo(f"error: {message}{hint}", err=True)
            raise typer.Exit(getattr(error, "exit_code", EXIT_BAD_INPUT)) from None
        except KeyboardInterrupt:
            typer.echo("error: interrupted; the running transaction was rolled back", err=True)
            raise typer.Exit(EXIT_FAILURE) from None
        except ModuleNotFoundError as error:
            root = (error.name or "").partition(".")[0]
            if root not in CRITIC_EXTRA_MODULES:
                raise
            typer.echo(f"error: {missing_critic_extra(root)}", err=True)
            raise typer.Exit(EXIT_FAILURE) from None
        except Exception as error:
            cli = ctx.obj if isinstance(ctx.obj, CliState) else None
            if cli is not None and cli.debug:
                raise
            if _is_bad_input(error):
                text = error.render(cli_flag) if isinstance(error, OptionError) else str(error)
                for line in text.splitlines() or [""]:  # a reader names every bad line
                    if line.strip():
                        typer.echo(f"error: {_one_line_text(line)}", err=True)
                raise typer.Exit(EXIT_BAD_INPUT) from None
            typer.echo(f"error: {_one_line(error)}", err=True)
            raise typer.Exit(EXIT_FAILURE) from None
        finally:
            if isinstance(ctx.obj, CliState):
                ctx.obj.close()


def missing_critic_extra(module: str) -> str:
    """The one line that tells how to install what a critic command is missing."""
    return (
        f"this command needs {module}, which comes with the critic extra: "
        "pip install torch==2.13.0 -e '.[critic]' in a clone (or pip install "
        "'critiquelab[critic]'); torch is named so that pip takes the CPU wheel"
    )


_PROJECT_PACKAGES = ("schemas", "data", "calibration", "critic", "annotate_app")


def _is_bad_input(error: Exception) -> bool:
    """The project's own input errors: a ``ValueError`` whose class the project defines
    (``InvalidRecord``, ``CalibrationInputError``...) or that the project's code raised itself.
    A ``ValueError`` raised inside numpy, pandas or pydantic is a failure (exit 1), not bad
    input."""
    if not isinstance(error, ValueError):
        return False
    if type(error).__module__.split(".")[0] in _PROJECT_PACKAGES:
        return True
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    raised_in = frame.tb_frame.f_globals.get("__name__", "") if frame is not None else ""
    return type(error) is ValueError and raised_in.split(".")[0] in _PROJECT_PACKAGES


def _one_line_text(text: str) -> str:
    return " ".join(text.split())


def _one_line(error: Exception) -> str:
    text = _one_line_text(str(error))
    if not text or not isinstance(error, ValueError | RuntimeError | OSError):
        text = f"{type(error).__name__}: {text}" if text else type(error).__name__
        text += " (run with --debug for the traceback)"
    return text


app = typer.Typer(
    name="critiquelab",
    cls=_ErrorMappingGroup,
    help="CritiqueLab: human annotation and judge calibration of multimodal model outputs.",
    no_args_is_help=True,
    # click's plain help and usage errors: rendering them with rich (typer's default) imports
    # rich.markdown and friends and doubled the time of every --help (bench/cli_start.py)
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        import importlib.metadata

        typer.echo(f"critiquelab {importlib.metadata.version('critiquelab')}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    db: str = typer.Option(
        None,
        "--db",
        help="Database URL (default: $CRITIQUELAB_DB, else sqlite:///critiquelab.db).",
        show_default=False,
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars or messages."),
    json_output: bool = typer.Option(False, "--json", help="Print results as JSON on stdout."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """CritiqueLab: human annotation and judge calibration of multimodal model outputs."""
    ctx.obj = CliState(
        db_url=db or default_db_url(), debug=debug, quiet=quiet, json_output=json_output
    )


export_app = exports.register(app)
imports.register(app)
annotation_commands.register(app)
users.register(app)
campaigns.register(app)
demo.register(app)
serve.register(app)
calibrate.register(app)
critic.register(app)
critic.register_export(export_app)
gold.register(app)
answers.register(app)


def run() -> None:
    """Console-script entry point."""
    app()
