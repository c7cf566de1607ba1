"""A command whose options are the fields of a configuration dataclass.

The way transformers' ``HfArgumentParser`` builds flags from dataclass fields, one option per
field: its flag is the field's name with dashes (``--max-steps``), a ``bool`` is an on/off pair
(``--lora/--no-lora``), its type gives the parser (``Path``, ``int``, ``float``, ``str``, a
``Literal`` is a choice, ``X | None`` may be left out, ``tuple[int, ...]`` is a comma-separated
list), its default is the field's default (a field without one is a required option) and its help
is the field's ``metadata["help"]``; a field with a ``metadata["bound"]``
(:class:`schemas.bounds.Bound`) refuses a value out of range as the command line is read, and its
help ends with the range. A default therefore lives in the dataclass only, and a new
field is an option as soon as it exists (``tests/annotate_app/cli/test_config_options.py``).
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import typer

from annotate_app.cli.context import OptionOutOfRange, bounded
from schemas.bounds import Bound

C = TypeVar("C")


def config_command(
    config_type: type[C],
    run: Callable[[typer.Context, C], None],
    *,
    doc: str,
    flags: Mapping[str, tuple[str, ...]] | None = None,
    option_settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> Callable[..., None]:
    """A Typer command taking one option per field of ``config_type``, that calls
    ``run(ctx, config_type(**options))``.

    ``flags`` names the options whose flags are not the field's name (``{"output_dir": ("-o",
    "--output")}``); ``option_settings`` adds ``typer.Option`` settings to a field's option
    (``{"data": {"exists": True}}``). ``doc`` is the command's help."""
    flags, option_settings = flags or {}, option_settings or {}
    unknown = (set(flags) | set(option_settings)) - {f.name for f in _fields(config_type)}
    if unknown:
        raise TypeError(f"{config_type.__name__} has no field {', '.join(sorted(unknown))}")
    hints = typing.get_type_hints(config_type)
    parameters = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    ]
    for field in _fields(config_type):
        annotation, option = _option(
            config_type, field, hints[field.name], flags.get(field.name), option_settings
        )
        parameters.append(
            inspect.Parameter(
                field.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation
            )
        )

    def command(ctx: typer.Context, **options: Any) -> None:
        run(ctx, config_type(**options))

    # Typer reads a command's options from its signature and type hints
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    command.__doc__ = doc
    command.__name__ = run.__name__.lstrip("_")
    return command


def _option_flags(field_name: str, field_type: Any) -> tuple[str, ...]:
    """The flags a field gets when none are given: ``--max-steps``, ``--lora/--no-lora``."""
    flag = "--" + field_name.replace("_", "-")
    return (f"{flag}/--no-{flag[2:]}",) if field_type is bool else (flag,)


def _fields(config_type: type) -> tuple[dataclasses.Field[Any], ...]:
    if not dataclasses.is_dataclass(config_type):
        raise TypeError(f"{config_type.__name__} is not a dataclass")
    return dataclasses.fields(config_type)


def _option(
    config_type: type,
    field: dataclasses.Field[Any],
    field_type: Any,
    flags: tuple[str, ...] | None,
    option_settings: Mapping[str, Mapping[str, Any]],
) -> tuple[Any, Any]:
    """The annotation and ``typer.Option`` of one field."""
    where = f"{config_type.__name__}.{field.name}"
    help_text = field.metadata.get("help")
    if not help_text:
        raise TypeError(f"{where} has no metadata['help'], the help of its option")
    if field.default_factory is not dataclasses.MISSING:
        raise TypeError(f"{where}: a default_factory cannot be shown as an option's default")
    default = ... if field.default is dataclasses.MISSING else field.default
    bound: Bound | None = field.metadata.get("bound")
    if bound is not None:
        help_text = f"{help_text} Range: {bound.low:,} to {bound.high:,}."
    settings: dict[str, Any] = {"help": help_text, **option_settings.get(field.name, {})}
    annotation = field_type
    item_type = _tuple_item_type(field_type)
    if bound is not None and item_type is None:
        settings.update(bounded(bound))
    if item_type is not None:
        # a list on the command line is one comma-separated value, parsed back into the tuple
        annotation = str
        if default is not ...:
            default = ",".join(str(item) for item in default)
        settings["callback"] = _comma_list(item_type, bound)
        settings.setdefault("metavar", f"<{item_type.__name__},...>")
    names = flags or _option_flags(field.name, field_type)
    return annotation, typer.Option(default, *names, **settings)


def _tuple_item_type(field_type: Any) -> type | None:
    """``X`` for ``tuple[X, ...]``, else None."""
    if typing.get_origin(field_type) is not tuple:
        return None
    args = typing.get_args(field_type)
    if len(args) != 2 or args[1] is not Ellipsis or args[0] not in (int, float, str):
        raise TypeError(f"{field_type} is not an option type; use tuple[int | float | str, ...]")
    item: type = args[0]
    return item


def _comma_list(
    item_type: type, bound: Bound | None
) -> Callable[[typer.CallbackParam, str | None], tuple[Any, ...] | None]:
    def parse(param: typer.CallbackParam, text: str | None) -> tuple[Any, ...] | None:
        if text is None:
            return None
        try:
            items = tuple(item_type(part.strip()) for part in text.split(","))
        except ValueError:
            raise typer.BadParameter(
                f"{text!r} is not a comma-separated list of {item_type.__name__} values"
            ) from None
        problems = (bound.problem(item) for item in items) if bound is not None else ()
        for problem in problems:
            if problem is not None:
                raise OptionOutOfRange(problem.render(lambda _option: param.opts[0]))
        return items

    return parse
