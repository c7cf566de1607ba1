"""``critic train``'s options are ``TrainConfig``'s fields (issue 26): every field is an option
with the field's default and help, nothing else is, and the values typed reach the config."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
import typer
from typer.testing import CliRunner

from annotate_app.cli.config_options import config_command
from annotate_app.cli.main import app
from critic.train_config import TrainConfig

runner = CliRunner()


def _train_command() -> Any:
    """The click command (typer's own copy of click, which it does not export)."""
    return typer.main.get_command(app).commands["critic"].commands["train"]  # type: ignore[attr-defined]


def _parsed_default(param: Any) -> Any:
    """The option's default as the command passes it on (a list option's text parsed back)."""
    if param.default is None or param.callback is None:
        return param.default
    return param.callback(typer.Context(_train_command()), param, param.default)


def test_every_train_config_field_is_an_option_with_the_fields_default_and_help() -> None:
    options = {param.name: param for param in _train_command().params if param.name != "help"}
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    assert set(options) == set(fields), "options and TrainConfig fields differ"
    for name, config_field in fields.items():
        option = options[name]
        assert option.param_type_name == "option", name
        assert option.help.startswith(config_field.metadata["help"]), name
        if (bound := config_field.metadata.get("bound")) is not None:
            assert option.help.endswith(f" Range: {bound.low:,} to {bound.high:,}."), name
        if config_field.default is dataclasses.MISSING:
            assert option.required, f"--{name} must be required: the field has no default"
        else:
            assert not option.required, name
            assert _parsed_default(option) == config_field.default, f"default of {name} drifted"


def test_flags_are_field_names_except_the_two_kept_from_before() -> None:
    flags = {param.name: param.opts for param in _train_command().params}
    assert flags["max_steps"] == ["--max-steps"]
    assert flags["output_dir"] == ["-o", "--output"]
    assert flags["evaluate"] == ["--eval"]
    secondary = {param.name: param.secondary_opts for param in _train_command().params}
    assert secondary["evaluate"] == ["--no-eval"] and secondary["lora"] == ["--no-lora"]


@dataclass(frozen=True)
class _Config:
    source: Path = field(metadata={"help": "Input file."})
    steps: int = field(default=3, metadata={"help": "Steps."})
    rate: float | None = field(default=None, metadata={"help": "Rate."})
    shuffle: bool = field(default=True, metadata={"help": "Shuffle."})
    mode: Literal["fast", "slow"] = field(default="fast", metadata={"help": "Mode."})
    layers: tuple[int, ...] = field(default=(0,), metadata={"help": "Layers."})


def _app(received: list[_Config]) -> typer.Typer:
    def run(ctx: typer.Context, config: _Config) -> None:
        received.append(config)

    test_app = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)
    test_app.command("go")(config_command(_Config, run, doc="Go."))
    test_app.command("other")(lambda: None)  # two commands: typer keeps "go" as a subcommand
    return test_app


def test_the_options_typed_reach_the_config_and_those_left_out_keep_its_defaults() -> None:
    received: list[_Config] = []
    test_app = _app(received)
    assert runner.invoke(test_app, ["go", "--source", "in.jsonl"]).exit_code == 0
    args = ["go", "--source", "a", "--steps", "7", "--rate", "0.5", "--no-shuffle"]
    result = runner.invoke(test_app, [*args, "--mode", "slow", "--layers", "8, 16"])
    assert result.exit_code == 0, result.output
    assert received == [
        _Config(source=Path("in.jsonl")),
        _Config(Path("a"), steps=7, rate=0.5, shuffle=False, mode="slow", layers=(8, 16)),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Missing option '--source'"),
        (["--source", "a", "--layers", "8,x"], "'8,x' is not a comma-separated list of int"),
        (["--source", "a", "--mode", "quick"], "'quick' is not one of 'fast', 'slow'"),
        (["--source", "a", "--steps", "many"], "--steps"),
    ],
)
def test_bad_values_are_usage_errors_naming_the_option(args: list[str], message: str) -> None:
    result = runner.invoke(_app([]), ["go", *args])
    assert result.exit_code == 2 and message in result.output


def test_a_field_without_help_is_refused_when_the_command_is_built() -> None:
    @dataclass
    class Undocumented:
        steps: int = 3

    with pytest.raises(TypeError, match=r"Undocumented.steps has no metadata\['help'\]"):
        config_command(Undocumented, lambda ctx, config: None, doc="x")
    with pytest.raises(TypeError, match="_Config has no field stpes"):
        config_command(_Config, lambda ctx, config: None, doc="x", flags={"stpes": ("-s",)})
