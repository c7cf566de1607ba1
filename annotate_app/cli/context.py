"""What every command needs from the global options: the database, progress bars, output mode.

The root callback in :mod:`annotate_app.cli.main` stores a :class:`CliState` in ``ctx.obj``; a
command takes ``ctx: typer.Context`` and calls :func:`state` to reach it::

    @app.command()
    def status(ctx: typer.Context, name: str) -> None:
        cli = state(ctx)
        with session_scope(cli.engine()) as session:
            ...
        cli.emit(result, text="done")

The engine is created on first use and the schema upgraded then (a database written by a newer
CritiqueLab is refused), so commands that need no database (``calibrate --judgments``) never
open one.

This module is imported by every command, including ``--help``: it imports no database, table or
data-frame library at module level (``tests/annotate_app/cli/test_cli_start.py``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import typer

from schemas.bounds import Bound

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

ProgressCallback = Callable[[int], None]
"""Called with the number of records just processed."""


@dataclass
class CliState:
    """The global options (``--db``, ``--debug``, ``--quiet``, ``--json``) and the lazy engine."""

    db_url: str
    debug: bool = False
    quiet: bool = False
    json_output: bool = False
    _engine: Engine | None = field(default=None, repr=False)

    def engine(self) -> Engine:
        """The database engine, schema upgraded to the newest revision on first use."""
        if self._engine is None:
            from data.storage.engine import make_engine, upgrade_database

            engine = make_engine(self.db_url)
            upgrade_database(engine)
            self._engine = engine
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    @property
    def shows_progress(self) -> bool:
        return not (self.quiet or self.json_output) and sys.stderr.isatty()

    @contextmanager
    def progress(self, description: str, total: int | None = None) -> Iterator[ProgressCallback]:
        """A progress bar on stderr when it is a terminal (never with --quiet or --json)."""
        if not self.shows_progress:
            yield lambda _advance: None
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task(description, total=total)
            yield lambda advance: bar.advance(task, advance)

    def emit(self, result: Any, text: str) -> None:
        """Print ``result`` as JSON with --json, else ``text`` (nothing with --quiet)."""
        if self.json_output:
            typer.echo(json.dumps(to_jsonable(result), ensure_ascii=False, indent=2))
        elif not self.quiet and text:
            typer.echo(text)

    def info(self, text: str) -> None:
        """A remark on stderr (kept out of --json output and silenced by --quiet)."""
        if not (self.quiet or self.json_output):
            typer.echo(text, err=True)


def state(ctx: typer.Context) -> CliState:
    """The :class:`CliState` of the running command."""
    obj = ctx.find_root().obj
    if not isinstance(obj, CliState):
        raise RuntimeError(
            "the critiquelab root callback did not run: use annotate_app.cli.main.app"
        )
    return obj


def to_jsonable(value: Any) -> Any:
    """Dataclasses, pydantic models, dicts and lists as plain JSON values; NaN becomes null."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_jsonable(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


_FLAGS = {
    "consensus": "--reference",  # --consensus is its older name
    "models": "--model",
    "output_dir": "-o",
    "pairs_per_item": "--pairs K",
    "routing_share": "--stratified-share",
}
"""Options whose flag is not their parameter name with dashes."""


def cli_flag(option: str) -> str:
    """How the command line names a library option in an error: its flag (``eval_fraction`` →
    ``--eval-fraction``)."""
    return _FLAGS.get(option, "--" + option.replace("_", "-"))


class OptionOutOfRange(ValueError):
    """A whole-number option outside its :class:`schemas.bounds.Bound` (bad input, exit 2)."""


def bounded(bound: Bound) -> dict[str, Any]:
    """``typer.Option`` / ``typer.Argument`` settings that refuse a value outside ``bound`` while
    the command line is read, before any work starts: exit 2 with the flag, the value and the
    allowed range (``--seed is 10…0; give a whole number from 0 to 4,294,967,295 (…)``)."""

    def check(param: typer.CallbackParam, value: int | None) -> int | None:
        problem = None if value is None else bound.problem(value)
        if problem is None:
            return value
        long_flags = [opt for opt in param.opts if opt.startswith("--")]
        name = long_flags[0] if long_flags else (param.name or bound.option).upper()
        raise OptionOutOfRange(problem.render(lambda _option: name))

    return {"callback": check}
