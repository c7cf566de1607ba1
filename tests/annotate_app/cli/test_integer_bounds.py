"""Every whole-number option of the command line has a range (issue 25): a value out of it is
refused while the command line is read, exit 2, one line naming the flag, the value and the range;
before, ``--port 10**20`` ended in a traceback from the socket, ``--seed 10**20`` reached numpy,
and critic train took any batch size."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from annotate_app.cli.main import app
from critic.train_config import TrainConfig, TrainConfigError

runner = CliRunner()
HUGE = str(10**20)


def _whole_number_parameters() -> list[tuple[tuple[str, ...], str]]:
    """(command path, flag or argument placeholder) of every option or argument that takes a
    whole number (or a comma-separated list of them)."""
    found = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))
        for param in getattr(command, "params", []):
            field_type = param.type_descriptor.annotation
            # head_layers: TrainConfig's tuple[int, ...], read as comma-separated text
            whole = field_type is int or int in typing.get_args(field_type)
            if whole or param.name == "head_layers":
                found.append((path, param.opts[0]))

    walk(typer.main.get_command(app), ())
    return found


PARAMETERS = _whole_number_parameters()


def test_the_tree_has_the_whole_number_options_of_every_family() -> None:
    flags = {(" ".join(path), flag) for path, flag in PARAMETERS}
    for expected in [
        ("calibrate", "--seed"),
        ("campaign create", "--seed"),
        ("export sft", "--seed"),
        ("critic train", "--seed"),
        ("serve", "--port"),
        ("demo", "--port"),
        ("critic train", "--batch-size"),
        ("critic train", "--head-layers"),
        ("critic score", "--limit"),
        ("answers reject", "annotation_id"),
    ]:
        assert expected in flags


@pytest.mark.parametrize(
    ("path", "flag"), PARAMETERS, ids=[" ".join((*p, f)) for p, f in PARAMETERS]
)
@pytest.mark.parametrize("value", [HUGE, f"-{HUGE}"])
def test_every_whole_number_option_refuses_a_value_out_of_range(
    tmp_path: Path, path: tuple[str, ...], flag: str, value: str
) -> None:
    given = [flag, value] if flag.startswith("-") else ["--", value]
    result = runner.invoke(app, ["--db", f"sqlite:///{tmp_path / 'x.db'}", *path, *given])
    assert result.exit_code == 2, result.output
    named = flag if flag.startswith("-") else flag.upper()
    assert result.stderr.startswith(f"error: {named} is {value}; give a whole number from ")
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            ["calibrate", "--seed", HUGE],
            "--seed is 100000000000000000000; give a whole number from 0 to 4,294,967,295",
        ),
        (["serve", "--port", "65536"], "--port is 65536; give a whole number from 1 to 65,535"),
        (["demo", "--port", "0"], "--port is 0; give a whole number from 1 to 65,535"),
        (
            ["critic", "train", "--grad-accum", "0"],
            "--grad-accum is 0; give a whole number from 1 to 10,000",
        ),
        (
            ["critic", "train", "--max-steps", "-2"],
            "--max-steps is -2; give a whole number from -1 to 1,000,000,000",
        ),
        (
            ["critic", "train", "--head-layers", "1,0,-1"],
            "--head-layers is -1; give a whole number from 0 to 10,000",
        ),
    ],
)
def test_the_message_names_the_flag_and_the_allowed_range(command: list[str], message: str) -> None:
    result = runner.invoke(app, command)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {message}")


def test_values_at_the_edges_of_a_range_are_accepted(tmp_path: Path) -> None:
    """The upper edge passes the check: the command goes on to its next complaint (no data)."""
    result = runner.invoke(app, ["critic", "train", "--seed", str(2**32 - 1), "--max-steps", "-1"])
    assert result.exit_code == 2 and "--seed" not in result.stderr and "--data" in result.stderr


def test_train_config_refuses_a_setting_out_of_range_in_the_library_too() -> None:
    paths = TrainConfig(data=Path("d"), base_model=Path("b"), output_dir=Path("o"))
    with pytest.raises(TrainConfigError, match="batch size is 0; give a whole number from 1"):
        dataclasses.replace(paths, batch_size=0)
    with pytest.raises(TrainConfigError, match="head layers is 10001"):
        dataclasses.replace(paths, head_layers=(1, 10_001))
    assert dataclasses.replace(paths, seed=2**32 - 1, eval_limit=None).seed == 2**32 - 1


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--epochs", "-1", "--epochs is -1.0: give a number above 0"),
        ("--epochs", "nan", "--epochs is nan: give a number above 0"),
        ("--learning-rate", "0", "--learning-rate is 0.0: give a number above 0"),
        ("--lora-dropout", "1.5", "--lora-dropout is 1.5: give a share from 0 to below 1"),
    ],
)
def test_the_training_runs_other_numbers_are_refused_before_a_model_loads(
    tmp_path: Path, option: str, value: str, message: str
) -> None:
    """Epochs, learning rate and LoRA dropout had no range: -1 or nan reached the trainer, and a
    learning rate of 0 was silently replaced by the default."""
    data = tmp_path / "sft.jsonl"
    data.write_text("")
    paths = ["--data", str(data), "--base-model", str(tmp_path), "--output", str(tmp_path)]
    result = runner.invoke(app, ["critic", "train", *paths, option, value])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {message}")
