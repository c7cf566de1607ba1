"""Page scripts read as source: nothing drawn by accident, each titled as its menu entry.

Streamlit's "magic" draws every bare expression statement of a page script (at module level, in
``with``/``if``/``for``/``try`` blocks and in functions) except docstrings: a string meant as a
note lands on the page above its title (issue 25 A5, seen on Campaigns). A page's ``st.title``
is the menu entry's title, so that a user finds the page they clicked (it was "People" under
"Users", "Campaigns" under "Home").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from annotate_app.navigation import APP_DIR, PAGES, PageSpec

SCRIPTS = [APP_DIR / "app.py", *(spec.path for spec in PAGES)]
_BODIES = ("body", "orelse", "finalbody")
_DOCSTRING_OWNERS = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def bare_strings(source: str) -> list[int]:
    """Line numbers of string (or f-string) statements Streamlit would draw: every string
    expression statement that is not the first statement of a module, function or class."""
    lines = []
    for owner in ast.walk(ast.parse(source)):
        for field in (*_BODIES, "handlers", "cases"):
            statements = getattr(owner, field, None)
            if not isinstance(statements, list):
                continue
            for position, statement in enumerate(statements):
                if not (
                    isinstance(statement, ast.Expr)
                    and isinstance(statement.value, ast.Constant | ast.JoinedStr)
                    and (
                        isinstance(statement.value, ast.JoinedStr)
                        or isinstance(statement.value.value, str)
                    )
                ):
                    continue
                docstring = field == "body" and position == 0
                if docstring and isinstance(owner, _DOCSTRING_OWNERS):
                    continue
                lines.append(statement.lineno)
    return sorted(lines)


def test_the_check_finds_a_note_written_as_a_string() -> None:
    source = (
        '"""Page docstring."""\n'
        "import streamlit as st\n"
        "WORKER_URL = 'x'\n"
        '"""The database as the worker opens it."""\n'  # line 4: drawn above the title
        "def f():\n"
        '    """A function docstring: not drawn."""\n'
        "    f'drawn {1}'\n"  # line 7
        "with st.container():\n"
        "    'drawn too'\n"  # line 9
        "class C:\n"
        '    """A class docstring."""\n'
    )
    assert bare_strings(source) == [4, 7, 9]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.relative_to(APP_DIR).as_posix())
def test_no_page_draws_a_bare_string(script: Path) -> None:
    found = bare_strings(script.read_text(encoding="utf-8"))
    assert found == [], f"{script.name}: bare strings Streamlit would draw at lines {found}"


def _titles(path: Path) -> list[str]:
    return [
        node.args[0].value
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "title"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ]


@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.file)
def test_each_page_is_titled_as_its_menu_entry(spec: PageSpec) -> None:
    assert _titles(spec.path) == [spec.title]
