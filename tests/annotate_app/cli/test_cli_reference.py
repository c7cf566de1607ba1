"""docs/spec/CLI.md's reference is generated from the command tree and kept current (issue 26): a
new command or flag without docs, or a changed help text or default, fails here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from annotate_app.cli import reference
from annotate_app.cli.main import app

CLI_MD = Path(__file__).resolve().parents[3] / "docs" / "spec" / "CLI.md"


def test_cli_md_holds_the_reference_generated_from_the_commands() -> None:
    documented = reference.current_reference(CLI_MD.read_text("utf-8"))
    assert documented is not None, f"{CLI_MD} lost its reference markers"
    assert documented == reference.reference_text(), (
        f"docs/spec/CLI.md's reference is out of date; from the repository root run: "
        f"{reference.REGENERATE}"
    )


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


def _sections(text: str) -> dict[str, str]:
    """Each command's section of the reference, by its title (``critiquelab export sft``)."""
    sections = {}
    for part in text.split("\n### `")[1:]:
        title, _, body = part.partition("`")
        sections[title] = body
    return sections


def test_every_command_argument_and_flag_has_its_section_and_help() -> None:
    sections = _sections(reference.reference_text())
    commands = _commands(typer.main.get_command(app))
    assert len(sections) == len(commands)
    for path, command in commands:
        section = sections[" ".join(("critiquelab", *path))]
        if command.help:
            assert " ".join(command.help.split()[:4]) in section
        for param in command.params:
            names = (
                [*param.opts, *param.secondary_opts] if param.param_type_name == "option" else []
            )
            for name in names:
                assert f"`{name}" in section or f" {name}" in section, (path, name)
            if param.help:
                first_words = " ".join(param.help.split()[:3]).replace("|", "\\|")
                assert first_words.replace("<", "\\<") in section, (path, param.name)


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        ("campaign create", "--protocol"),
        ("campaign create", "--rationale-min"),
        ("campaign create", "--lease-seconds"),
        ("campaign create", "--pairs"),
        ("campaign create", "--model"),
        ("campaign create", "--instructions"),
        ("calibrate", "--judge"),
        ("calibrate", "--consensus"),
        ("calibrate", "--no-majority"),
        ("calibrate", "--seed"),
        ("export sft", "--per-annotator"),
        ("export sft", "--consensus"),
        ("export sft", "--vision"),
        ("export sft", "--language"),
        ("export sft", "--template"),
        ("judgments import", "--protocol"),
        ("judgments import", "--scale"),
        ("judgments import", "--update"),
        ("demo", "--host"),
        ("demo", "--no-serve"),
        ("campaign status", "--units"),
        ("critic train", "--save-total-limit"),
    ],
)
def test_the_flags_once_missing_from_cli_md_are_in_it(command: str, flag: str) -> None:
    section = _sections(CLI_MD.read_text("utf-8"))[f"critiquelab {command}"]
    option_cells = re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)
    assert flag in {word.strip(",") for cell in option_cells for word in cell.split()}


def test_writing_replaces_the_reference_and_keeps_the_prose(tmp_path: Path) -> None:
    page = tmp_path / "CLI.md"
    page.write_text(f"# Intro\n\nprose\n\n{reference.BEGIN}\nstale\n{reference.END}\nafter\n")
    assert reference.main(["--write", str(page)]) == 0
    text = page.read_text("utf-8")
    assert text.startswith("# Intro\n\nprose\n\n") and text.endswith(f"{reference.END}\nafter\n")
    assert reference.current_reference(text) == reference.reference_text()
    with pytest.raises(ValueError, match="no lines"):
        reference.splice("# a page without markers\n", "x")


def test_the_hand_written_part_names_only_flags_that_exist() -> None:
    """The prose above the reference is not generated: a flag renamed or removed fails here."""
    prose, _, generated = CLI_MD.read_text("utf-8").partition(reference.BEGIN)
    flag = r"(?<![\w-])--[a-z][a-z0-9-]*"
    named = set(re.findall(flag, prose)) - {"--write"}  # python -m annotate_app.cli.reference
    assert named and named <= set(re.findall(flag, generated))
