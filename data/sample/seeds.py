"""What a sample item is made of, before any randomness: seed questions with their variants,
reference, the key fact, and one written answer per quality tier.

The text lives in data files beside this module, read by :func:`alignmmbench_seeds` and
:func:`mmie_seeds`: ``seeds_perception.toml`` and ``seeds_reasoning.toml`` (AlignMMBench-style),
``seeds_mmie.toml`` (MMIE-style), and ``drawings.toml``, the pictures they name.

A *tier* is how good an answer is, in the words of the protocol's rubric bands; the synthetic
models of :mod:`data.sample.synthetic` pick tiers, and the tier decides both the answer text and
the latent "true" score that synthetic annotators and judges perceive with noise.
"""

from __future__ import annotations

import inspect
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from data.sample import images

Language = Literal["en", "zh"]

ALIGNMMBENCH_TIERS: dict[str, float] = {
    "excellent": 9.3,  # complete and correct
    "thin": 7.6,  # correct but too thin
    "partial": 6.1,  # part of the request met
    "flawed": 4.6,  # more than half of the facts wrong
    "wrong": 3.1,  # on topic, entirely wrong
    "off_topic": 1.4,  # ignores the question
}
"""AlignMMBench tiers and the latent score (1–10) at their centre, best first."""

MMIE_TIERS: dict[str, float] = {
    "excellent": 5.5,  # every step, text and pictures
    "good": 4.4,  # every step, terse text
    "fair": 3.1,  # half of the steps
    "poor": 1.7,  # text without usable pictures, or a wrong final answer
    "fail": 0.5,  # one unrelated sentence, no pictures
}
"""MMIE tiers and the latent score (0–6) at their centre, best first."""

TASK_CODES: dict[str, str] = {
    "Description": "0000",
    "Reasoning": "0001",
    "Recognition": "0002",
    "Counting": "0003",
    "Chart": "0004",
    "Comparison": "0005",
    "Writing": "0006",
    "Problem": "0007",
    "Meme": "0008",
    "Knowledge": "0009",
    "OCR": "0010",
    "Coherence": "0011",
    "Incoherence": "0011",
}
"""The first four digits of an AlignMMBench ``question_id`` per task (as in the benchmark's
metadata, where both dialogue tasks share ``0011``)."""

Drawing = Callable[[], Image.Image]


@dataclass(frozen=True)
class Seed:
    """One AlignMMBench seed question: its rewrites share the image, reference and answers."""

    task: str
    number: int
    """Seed number within the task code (unique per code)."""
    language: Language
    image: Drawing
    variants: tuple[str, ...]
    """The seed question and its rewrites; variant ``v`` becomes ``question_id`` ``...-v``."""
    reference: str
    fact: str
    """The key fact as a clause ("there are 7 red circles"), quoted in rationales."""
    answers: Mapping[str, str]
    """Answer text per tier, for every tier except ``off_topic`` (shared per language)."""
    history: tuple[tuple[str, str], ...] = ()
    """Earlier (user, assistant) turns for the dialogue tasks."""

    @property
    def group(self) -> str:
        return f"{TASK_CODES[self.task]}{self.number:04d}"


@dataclass(frozen=True)
class MmieStep:
    """One step of an ideal interleaved answer: text, then a picture (see
    :func:`data.sample.images.step_panel`)."""

    text: str
    short: str
    """The same step said tersely (the ``good`` and ``poor`` tiers)."""
    caption: str
    kind: str
    amount: int
    color: str

    def drawing(self, *, blank: bool = False) -> Drawing:
        """The step's picture, or the empty frame with the same caption that a weak model draws."""
        if blank:
            return partial(images.step_panel, self.caption, "blank", 0, "grey")
        return partial(images.step_panel, self.caption, self.kind, self.amount, self.color)


@dataclass(frozen=True)
class MmieSeed:
    """One MMIE-style item: an interleaved question and the steps of an ideal answer."""

    item_id: str
    """Prefixed with the category: ``SA-``, ``PBL-`` or ``MSR-``."""
    field: str
    question_before: str
    image: Drawing
    question_after: str
    steps: tuple[MmieStep, ...]
    fact: str
    ground_truth: str | None = None
    """MSR only: the final answer, which becomes the reference."""
    wrong_final: str | None = None
    """MSR only: the wrong final answer of the ``poor`` tier."""
    # A plain default, no ``dataclasses.field(...)``: the ``field`` attribute above hides that name.
    off_topic: str = "I like this picture. It reminds me of many things."

    @property
    def category(self) -> str:
        return self.item_id.split("-", 1)[0]


SEED_DIR = Path(__file__).resolve().parent
ALIGNMMBENCH_FILES = ("seeds_perception.toml", "seeds_reasoning.toml")
MMIE_FILE = "seeds_mmie.toml"
DRAWINGS_FILE = "drawings.toml"
_DRAW: dict[str, Callable[..., Image.Image]] = {
    function.__name__: function
    for function in (
        images.bar_chart,
        images.clock_face,
        images.counting_scene,
        images.line_chart,
        images.meme_panels,
        images.park_scene,
        images.pie_chart,
        images.right_triangle,
        images.shapes_row,
        images.text_card,
    )
}
"""What a drawing's ``draw`` may name: the scene functions of :mod:`data.sample.images`."""


class SeedFileError(ValueError):
    """A bundled seed file does not describe seeds: names the file, the entry and what is wrong."""


def _tuples(value: Any) -> Any:
    """TOML arrays as tuples, at every depth (a seed's turns, a drawing's rows of cells)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _argument(function: Callable[..., Any], parameter: str, value: Any) -> Any:
    """A drawing's argument as its function takes it: an array as a tuple where the parameter's
    annotation asks for a tuple, else as a list; the arrays inside it (rows) as tuples. The image
    store names a picture by this call (:func:`data.sample.dataset.SampleRecords.image`)."""
    if not isinstance(value, list):
        return value
    annotation = str(inspect.signature(function).parameters[parameter].annotation)
    rows = [_tuples(v) for v in value]
    return tuple(rows) if annotation.startswith("tuple") else rows


def _read(name: str) -> dict[str, Any]:
    with (SEED_DIR / name).open("rb") as handle:
        return tomllib.load(handle)


@cache
def drawings() -> dict[str, Drawing]:
    """Drawing name → the picture it draws (``drawings.toml``)."""
    found: dict[str, Drawing] = {}
    for name, spec in _read(DRAWINGS_FILE).items():
        function = _DRAW.get(spec.get("draw", ""))
        if function is None or set(spec) - {"draw", "args", "options"}:
            raise SeedFileError(
                f"{DRAWINGS_FILE}: [{name}]: draw must be one of {sorted(_DRAW)}, with only args "
                "and options beside it"
            )
        positional = list(inspect.signature(function).parameters)
        args = [
            _argument(function, positional[n], value)
            for n, value in enumerate(spec.get("args", []))
        ]
        options = {
            key: _argument(function, key, value) for key, value in spec.get("options", {}).items()
        }
        found[name] = partial(function, *args, **options)
    return found


def _image(file: str, entry: str, name: Any) -> Drawing:
    drawing = drawings().get(name)
    if drawing is None:
        raise SeedFileError(f"{file}: {entry}: image {name!r} is not a drawing of {DRAWINGS_FILE}")
    return drawing


@cache
def alignmmbench_seeds() -> tuple[Seed, ...]:
    """The AlignMMBench-style seeds, Perception & Understanding first, in file order."""
    seeds = []
    for file in ALIGNMMBENCH_FILES:
        for n, table in enumerate(_read(file).get("seed", []), start=1):
            entry = f"seed {n}"
            try:
                fields = {key: _tuples(value) for key, value in table.items()}
                fields["image"] = _image(file, entry, table.get("image"))
                seeds.append(Seed(**fields))
            except TypeError as error:
                raise SeedFileError(f"{file}: {entry}: {error}") from None
    return tuple(seeds)


@cache
def mmie_seeds() -> tuple[MmieSeed, ...]:
    """The MMIE-style items in file order, each with its steps."""
    seeds = []
    for n, table in enumerate(_read(MMIE_FILE).get("item", []), start=1):
        entry = f"item {n}"
        try:
            fields = dict(table)
            fields["image"] = _image(MMIE_FILE, entry, table.get("image"))
            fields["steps"] = tuple(MmieStep(**step) for step in table.get("step", []))
            fields.pop("step", None)
            seeds.append(MmieSeed(**fields))
        except TypeError as error:
            raise SeedFileError(f"{MMIE_FILE}: {entry}: {error}") from None
    return tuple(seeds)
