"""The package map in ``data/queue/__init__.py`` names every module of the package, and only
modules that exist: a module added, moved or renamed without updating the map fails here."""

from __future__ import annotations

import re
from pathlib import Path

import data.queue


def test_the_queue_package_map_names_exactly_its_modules() -> None:
    folder = Path(data.queue.__file__).parent
    modules = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    named = set(re.findall(r":mod:`~data\.queue\.(\w+)`", data.queue.__doc__ or ""))
    assert named == modules, (
        f"missing from the map: {sorted(modules - named)}; named but absent: "
        f"{sorted(named - modules)}"
    )
