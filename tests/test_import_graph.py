"""The product's import graph has no circle and follows the layer order.

Every ``import`` statement of every product module is read with :mod:`ast` — at module level,
inside functions, under ``if TYPE_CHECKING:`` — because an import inside a function is an arrow
all the same: it only hides a circle from Python's start-up. An arrow goes to the module the
statement names (``from data.queue import leases`` to ``data.queue.leases``; ``from data.queue
import submit`` to the package ``data.queue`` itself), not to the packages Python also runs on
the way, so a package's ``__init__`` may re-export its own modules.

The layers (docs/ARCHITECTURE.md): schemas → data → calibration → critic → annotate_app, each
importing only the layers before it, and calibration importing schemas only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS = ("schemas", "data", "calibration", "critic", "annotate_app")
ALLOWED: dict[str, frozenset[str]] = {
    layer: frozenset(LAYERS[: index + 1]) for index, layer in enumerate(LAYERS)
}
ALLOWED["calibration"] = frozenset({"schemas", "calibration"})


@dataclass(frozen=True)
class Arrow:
    """One import statement from a product module to another."""

    source: str
    target: str
    line: int


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every product module by dotted name (a package by its own name, for ``__init__.py``)."""
    modules: dict[str, Path] = {}
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def arrows(modules: dict[str, Path]) -> list[Arrow]:
    """Each import between product modules, wherever in the file the statement stands."""
    found: dict[Arrow, None] = {}  # in reading order, each once
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve_from(module, is_package, node)
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    targets.append(submodule if submodule in modules else base)
            for target in targets:
                # ``import a.b.c`` names a.b.c; an unknown tail is an attribute of a module.
                while target and target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != module:
                    found[Arrow(module, target, node.lineno)] = None
    return list(found)


def cycles(edges: list[Arrow]) -> list[list[str]]:
    """One circle through each strongly connected group of modules (Tarjan's algorithm).

    Returns each circle as the list of modules along it, the first repeated at the end.
    """
    graph: dict[str, set[str]] = {}
    for arrow in edges:
        graph.setdefault(arrow.source, set()).add(arrow.target)
        graph.setdefault(arrow.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_circle_in(graph, group) for group in groups]


def _circle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """The shortest circle through the group's first module (breadth-first within the group)."""
    start = min(group)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for nxt in sorted(graph[node] & group):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if nxt not in parents:
                    parents[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no circle in the strongly connected group {sorted(group)}")


def layer_breaches(edges: list[Arrow], modules: dict[str, Path], root: Path = ROOT) -> list[str]:
    """Each import against the layer order, as ``file:line: source -> target``."""
    breaches = []
    for arrow in sorted(edges, key=lambda arrow: (arrow.source, arrow.line)):
        source_layer, target_layer = arrow.source.split(".")[0], arrow.target.split(".")[0]
        if target_layer not in ALLOWED[source_layer]:
            where = modules[arrow.source].relative_to(root).as_posix()
            breaches.append(
                f"{where}:{arrow.line}: {arrow.source} ({source_layer}) imports "
                f"{arrow.target} ({target_layer})"
            )
    return breaches


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, Path], list[Arrow]]:
    modules = module_files()
    return modules, arrows(modules)


def test_the_graph_covers_every_layer(graph: tuple[dict[str, Path], list[Arrow]]) -> None:
    modules, edges = graph
    assert {module.split(".")[0] for module in modules} == set(LAYERS)
    assert {arrow.source.split(".")[0] for arrow in edges} == set(LAYERS)


def test_no_import_circle(graph: tuple[dict[str, Path], list[Arrow]]) -> None:
    _, edges = graph
    found = cycles(edges)
    lines = []
    for circle in found:
        lines.append(" -> ".join(circle))
        lines += [
            f"    {a.source} imports {a.target}, line {a.line}" for a in _along(circle, edges)
        ]
    assert not found, f"{len(found)} import circle(s):\n" + "\n".join(lines)


def _along(circle: list[str], edges: list[Arrow]) -> list[Arrow]:
    """The import statements behind each step of a circle."""
    steps = set(zip(circle, circle[1:], strict=False))
    return [arrow for arrow in edges if (arrow.source, arrow.target) in steps]


def test_imports_follow_the_layer_order(graph: tuple[dict[str, Path], list[Arrow]]) -> None:
    modules, edges = graph
    breaches = layer_breaches(edges, modules)
    assert not breaches, (
        "imports against schemas → data → calibration → critic → annotate_app:\n"
        + ("\n".join(breaches))
    )


def _write(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return module_files(root)


def test_a_circle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    modules = _write(
        tmp_path,
        {
            "critic/__init__.py": "",
            "critic/training.py": "def train():\n    from critic.head import fit\n",
            "critic/head.py": "from .config import Config\n",
            "critic/config.py": "import critic.training\n",
            "critic/alone.py": "from critic import head\n",
        },
    )
    assert cycles(arrows(modules)) == [
        ["critic.config", "critic.training", "critic.head", "critic.config"]
    ]


def test_a_package_reexporting_its_modules_is_no_circle(tmp_path: Path) -> None:
    modules = _write(
        tmp_path,
        {
            "data/__init__.py": "",
            "data/queue/__init__.py": "from data.queue.answers import submit\n",
            "data/queue/answers.py": "from data.queue.common import protocol\n",
            "data/queue/common.py": "def protocol(): ...\n",
        },
    )
    assert cycles(arrows(modules)) == []


def test_a_layer_breach_names_file_and_line(tmp_path: Path) -> None:
    modules = _write(
        tmp_path,
        {
            "schemas/__init__.py": "",
            "data/__init__.py": "",
            "calibration/__init__.py": "",
            "calibration/metric.py": "import schemas\n\n\ndef f():\n    from data import x\n",
            "data/x.py": "from calibration.metric import f\n",
        },
    )
    breaches = layer_breaches(arrows(modules), modules, tmp_path)
    assert breaches == [
        "calibration/metric.py:5: calibration.metric (calibration) imports data.x (data)",
        "data/x.py:1: data.x (data) imports calibration.metric (calibration)",
    ]
