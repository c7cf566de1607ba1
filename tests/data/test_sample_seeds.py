"""The sample's seed files (``data/sample/*.toml``): every picture they name is drawn, every
drawing is used, and a file that names a missing picture or an unknown field is refused with
the file and entry named."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from data.sample import seeds
from data.sample.seeds import SeedFileError, alignmmbench_seeds, drawings, mmie_seeds


def _clear() -> None:
    for loader in (drawings, alignmmbench_seeds, mmie_seeds):
        loader.cache_clear()


@pytest.fixture
def seed_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the seed files that the loaders read instead of the bundled ones."""
    for name in (*seeds.ALIGNMMBENCH_FILES, seeds.MMIE_FILE, seeds.DRAWINGS_FILE):
        shutil.copy(seeds.SEED_DIR / name, tmp_path / name)
    monkeypatch.setattr(seeds, "SEED_DIR", tmp_path)
    _clear()
    yield tmp_path
    _clear()


def test_every_drawing_is_named_by_a_seed_and_draws_a_picture() -> None:
    used = {seed.image for seed in alignmmbench_seeds()} | {seed.image for seed in mmie_seeds()}
    for name, drawing in drawings().items():
        assert drawing in used, f"{name} is drawn by no seed"
        assert drawing().size[0] > 0
    groups = [seed.group for seed in alignmmbench_seeds()]
    assert len(set(groups)) == len(groups), "two seeds share a question_id group"
    assert all(seed.steps for seed in mmie_seeds())


def test_a_seed_naming_a_missing_drawing_is_refused_with_its_file_and_entry(
    seed_copy: Path,
) -> None:
    file = seed_copy / "seeds_reasoning.toml"
    text = file.read_text(encoding="utf-8")
    file.write_text(text.replace('image = "tank"', 'image = "tankk"', 1), encoding="utf-8")
    with pytest.raises(SeedFileError, match=r"seeds_reasoning\.toml: seed 2: image 'tankk'"):
        alignmmbench_seeds()


def test_an_unknown_field_or_drawing_function_is_refused(seed_copy: Path) -> None:
    file = seed_copy / "seeds_mmie.toml"
    file.write_text(
        file.read_text(encoding="utf-8").replace("field = ", "feild = ", 1), encoding="utf-8"
    )
    with pytest.raises(SeedFileError, match=r"seeds_mmie\.toml: item 1: .*feild"):
        mmie_seeds()
    drawing_file = seed_copy / "drawings.toml"
    drawing_file.write_text('[park]\ndraw = "open"\n', encoding="utf-8")
    _clear()
    with pytest.raises(SeedFileError, match=r"drawings\.toml: \[park\]: draw must be one of"):
        drawings()
