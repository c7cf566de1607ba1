"""Library errors name options in the library's words; the CLI renders the same text with its
flags. And no message of the library packages names a command-line flag itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from annotate_app.cli.context import cli_flag
from data.io.importers.errors import InvalidFile, InvalidRecord
from schemas.option_text import OptionError, OptionText

ROOT = Path(__file__).resolve().parents[2]
LIBRARY_PACKAGES = ("schemas", "data", "calibration", "critic")
FLAG = re.compile(r"(?:^|[\s(\[/`'\"])--[a-z][a-z-]+")


def test_an_option_text_reads_in_library_words_and_renders_with_flags() -> None:
    text = OptionText("{eval_fraction} is {value}; give a number in [0, 1)", value=1.5)
    assert str(text) == "eval fraction is 1.5; give a number in [0, 1)"
    assert text.render(cli_flag) == "--eval-fraction is 1.5; give a number in [0, 1)"
    assert text.options == ("eval_fraction",)


def test_values_are_inserted_as_text_and_nested_texts_use_the_same_names() -> None:
    hint = OptionText("keep images inside it or give {images_root}")
    text = OptionText(
        "`{field}` path {path} leads outside {root}: {hint}",
        field="image",
        path="{odd}/../{name}.png",
        root=Path("/data"),
        hint=hint,
    )
    assert str(text) == (
        "`image` path {odd}/../{name}.png leads outside /data: keep images inside it or give "
        "images root"
    )
    assert text.render(cli_flag).endswith("keep images inside it or give --images-root")


def test_flags_that_differ_from_the_parameter_name() -> None:
    assert cli_flag("output_dir") == "-o"
    assert cli_flag("models") == "--model"  # repeatable: one --model per model
    assert cli_flag("pairs_per_item") == "--pairs K"
    assert cli_flag("allow_missing_images") == "--allow-missing-images"


def test_a_template_field_must_be_a_plain_name() -> None:
    with pytest.raises(TypeError, match="plain names"):
        OptionText("{values[0]} is wrong")


def test_an_option_error_renders_its_text_and_keeps_a_plain_message() -> None:
    error = OptionError(OptionText("{merge} only applies to LoRA training: add {lora}"))
    assert str(error) == "merge only applies to LoRA training: add lora"
    assert error.render(cli_flag) == "--merge only applies to LoRA training: add --lora"
    plain = OptionError("the campaign name is empty: give it a name")
    assert plain.render(cli_flag) == str(plain) == "the campaign name is empty: give it a name"


def test_every_problem_of_a_file_is_rendered_with_flags() -> None:
    changed = OptionText("response 'r1' changed: import with {update} to replace it")
    problems = [
        InvalidRecord("data.jsonl", 2, "response_id", changed),
        InvalidRecord("data.jsonl", 5, "model", "`model` is None, but an answer needs a model"),
    ]
    error = InvalidFile(problems)
    assert str(error).splitlines() == [
        "data.jsonl:2: response 'r1' changed: import with update to replace it",
        "data.jsonl:5: `model` is None, but an answer needs a model",
    ]
    assert error.render(cli_flag).splitlines() == [
        "data.jsonl:2: response 'r1' changed: import with --update to replace it",
        "data.jsonl:5: `model` is None, but an answer needs a model",
    ]


def _strings_that_are_not_docstrings(tree: ast.AST) -> list[ast.Constant]:
    documentation = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in documentation
    ]


def test_no_library_message_names_a_command_line_flag() -> None:
    """The pages show these messages too; the CLI adds its flags (:func:`cli_flag`)."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for package in LIBRARY_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        for node in _strings_that_are_not_docstrings(ast.parse(path.read_text("utf-8")))
        if FLAG.search(node.value)
    ]
    assert found == []


def test_the_scan_finds_a_flag_where_there_is_one() -> None:
    tree = ast.parse(
        'def f():\n    """Run `critiquelab x --json`."""\n'
        '    raise ValueError("pass --images-root")\n'
    )
    assert [
        node.value for node in _strings_that_are_not_docstrings(tree) if FLAG.search(node.value)
    ] == ["pass --images-root"]


def test_every_option_a_library_message_names_is_a_flag_of_the_command_line() -> None:
    """An option named in a library message must render as a flag some command has."""
    from annotate_app.cli.reference import reference_text

    # every flag as --help shows it, from the command tree (critic train's flags are built from
    # TrainConfig's fields, so they are not in the CLI's source as strings)
    flags = set(re.findall(r"(?<![\w-])(?:--[a-z0-9][a-z0-9-]*|-[a-zA-Z])\b", reference_text()))
    named = set()
    for package in LIBRARY_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "OptionText"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    values = {keyword.arg: None for keyword in node.keywords if keyword.arg}
                    named.update(OptionText(node.args[0].value, **values).options)
    assert {"eval_fraction", "images_root", "update", "output_dir"} <= named  # the scan works
    missing = {
        option: cli_flag(option) for option in named if cli_flag(option).split()[0] not in flags
    }
    assert missing == {}
