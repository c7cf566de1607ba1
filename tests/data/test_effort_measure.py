"""How often the low-effort flags fire on honest synthetic annotators, and how often they catch
careless ones (issue 24 §4; figures in METRICS.md "Low-effort flags").

The population is generated here, seeded: 300 units shaped like real ones (a question of
60–600 characters, one or two responses of 100–3,000 characters, up to four images), 20 honest
annotators answering every unit and 50 careless ones answering 30 units each.

* honest: a reading speed drawn per annotator from 180–400 words per minute (6 characters a
  word), each answer's reading time log-normal around it (σ 0.35), plus 2–4 s per image and a
  decision of about 8 s (log-normal, σ 0.5); rationales from 12 templates filled with the unit's
  own details (an object, a count, a colour, a place, a flaw), and a short "Correct." or the like
  on 8% of answers;
* careless: 1–3 s per unit, a stock phrase on 70% of answers and one of three longer generic
  sentences on the rest (scores are random and play no part in these flags).

Run ``python tests/data/test_effort_measure.py`` to print the figures.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace

from data.services.effort import EffortAnswer, EffortReport, assess

UNITS = 300
HONEST = 20
CARELESS = 50
CARELESS_ANSWERS = 30
SEED = 24

_OBJECTS = (
    "apples", "circles", "dogs", "road signs", "bottles", "chairs", "birds", "receipts",
    "columns", "windows", "coins", "bicycles", "labels", "trees", "cups", "lines of text",
)  # fmt: skip
_COLOURS = ("red", "blue", "green", "yellow", "black", "white", "orange", "purple")
_PLACES = (
    "on the left", "in the top corner", "behind the table", "near the door", "in the chart's "
    "second bar", "under the title", "at the bottom", "beside the window",
)  # fmt: skip
_FLAWS = (
    "miscounts them", "names the wrong colour", "ignores the second question",
    "invents a detail that is not in the picture", "stops before the final step",
    "confuses left and right", "copies the question back", "gets the units wrong",
)  # fmt: skip
_TEMPLATES = (
    "Correct: there are {n} {colour} {obj} {place}, exactly as the picture shows.",
    "It {flaw}; the image has {n} {colour} {obj} {place}.",
    "Mostly right about the {obj}, but it {flaw}, so I took two points off.",
    "The {colour} {obj} {place} are described well; nothing important is missing.",
    "Wrong count: I see {n} {obj} {place}, and the answer {flaw}.",
    "Good structure, but it {flaw} when describing the {colour} {obj}.",
    "Accurate on the {n} {obj}; the remark about the {colour} ones {place} is off.",
    "Half right. The {obj} {place} are there, but it {flaw}.",
    "Answers the question directly ({n} {colour} {obj}) and explains how it counted.",
    "Too vague: it never says how many {obj} there are ({n}) or that they are {colour}.",
    "First response {flaw}; the second gets the {n} {colour} {obj} {place} right.",
    "Both mention the {obj} {place}; only one notices they are {colour}, and it {flaw}.",
)
_HONEST_SHORT = ("Correct.", "Fine.", "Good answer.", "Wrong.", "Incomplete.")
_STOCK = ("Looks good.", "ok", "fine", "Good answer.", "correct", "A is better", "not bad")
_GENERIC = (
    "The response answers the question and seems fine overall to me.",
    "This answer is acceptable and covers the main points of the question.",
    "Overall the response is reasonable and I have no major complaints about it.",
)


@dataclass(frozen=True)
class _Unit:
    unit_id: int
    chars: int
    images: int
    responses: tuple[str, ...]
    details: dict[str, str]


def _units(rng: random.Random) -> list[_Unit]:
    units = []
    for index in range(UNITS):
        pairwise = index % 2 == 1
        question = int(min(600, max(60, rng.lognormvariate(math.log(180), 0.6))))
        lengths = [
            int(min(3000, max(100, rng.lognormvariate(math.log(600), 0.7))))
            for _ in range(2 if pairwise else 1)
        ]
        responses = tuple(
            f"response {index}.{k} " + "x" * length for k, length in enumerate(lengths)
        )
        details = {
            "n": str(rng.randint(2, 19)),
            "obj": rng.choice(_OBJECTS),
            "colour": rng.choice(_COLOURS),
            "place": rng.choice(_PLACES),
            "flaw": rng.choice(_FLAWS),
        }
        images = 1 + rng.choice((0, 0, 0, 1, 3))
        units.append(_Unit(index, question + sum(lengths), images, responses, details))
    return units


def _answer(unit: _Unit, annotator: str, seconds: float, rationale: str) -> EffortAnswer:
    return EffortAnswer(
        annotation_id=0,  # numbered in measure()
        unit_id=unit.unit_id,
        unit_key=f"u{unit.unit_id}",
        annotator=annotator,
        seconds=round(seconds, 1),
        rationale=rationale,
        shown_chars=unit.chars,
        images=unit.images,
        response_texts=unit.responses,
    )


def honest_answers(rng: random.Random, units: list[_Unit], name: str) -> list[EffortAnswer]:
    words_per_minute = rng.uniform(180, 400)
    chars_per_second = words_per_minute * 6 / 60
    answers = []
    for unit in units:
        reading = unit.chars / chars_per_second * rng.lognormvariate(0.0, 0.35)
        looking = sum(rng.uniform(2, 4) for _ in range(unit.images))
        deciding = rng.lognormvariate(math.log(8), 0.5)
        if rng.random() < 0.08:
            rationale = rng.choice(_HONEST_SHORT)
        else:
            rationale = rng.choice(_TEMPLATES).format(**unit.details)
        answers.append(_answer(unit, name, reading + looking + deciding, rationale))
    return answers


def careless_answers(
    rng: random.Random, units: list[_Unit], name: str, seconds: tuple[float, float] = (1, 3)
) -> list[EffortAnswer]:
    answers = []
    for unit in rng.sample(units, CARELESS_ANSWERS):
        rationale = rng.choice(_STOCK) if rng.random() < 0.7 else rng.choice(_GENERIC)
        answers.append(_answer(unit, name, rng.uniform(*seconds), rationale))
    return answers


@dataclass(frozen=True)
class Measurement:
    honest_answers: int
    honest_flagged: int
    """honest answers with at least one answer flag"""
    honest_by_reason: dict[str, int]
    honest_annotators_flagged: int
    """honest annotators with a per-annotator flag"""
    careless: int
    careless_flagged: int
    """careless annotators with a per-annotator flag"""
    careless_answers_flagged: float


def measure(careless_seconds: tuple[float, float] = (1, 3)) -> Measurement:
    rng = random.Random(SEED)
    units = _units(rng)
    honest = [a for i in range(HONEST) for a in honest_answers(rng, units, f"honest-{i:02d}")]
    careless = [
        a
        for i in range(CARELESS)
        for a in careless_answers(rng, units, f"careless-{i:02d}", careless_seconds)
    ]
    everyone = [replace(a, annotation_id=i) for i, a in enumerate(honest + careless)]
    honest, careless = everyone[: len(honest)], everyone[len(honest) :]
    report: EffortReport = assess(everyone)
    honest_flags = [f for f in report.flags if f.annotator.startswith("honest")]
    careless_flags = [f for f in report.flags if f.annotator.startswith("careless")]
    by_reason: dict[str, int] = {}
    for flag in honest_flags:
        by_reason[flag.reason] = by_reason.get(flag.reason, 0) + 1
    rows = {row.annotator: row for row in report.annotators}
    return Measurement(
        honest_answers=len(honest),
        honest_flagged=len({f.annotation_id for f in honest_flags}),
        honest_by_reason=by_reason,
        honest_annotators_flagged=sum(
            bool(row.flags) for name, row in rows.items() if name.startswith("honest")
        ),
        careless=CARELESS,
        careless_flagged=sum(
            bool(row.flags) for name, row in rows.items() if name.startswith("careless")
        ),
        careless_answers_flagged=len({f.annotation_id for f in careless_flags})
        / (CARELESS * CARELESS_ANSWERS),
    )


def test_honest_annotators_are_rarely_flagged_and_careless_ones_are_caught():
    found = measure()
    assert found.honest_answers == HONEST * UNITS
    assert found.honest_flagged / found.honest_answers <= 0.05
    assert found.honest_annotators_flagged == 0
    assert found.careless_flagged / found.careless >= 0.90


def test_careless_annotators_who_take_a_few_seconds_more_are_caught_by_their_rationales():
    found = measure(careless_seconds=(4, 10))
    assert found.careless_flagged / found.careless >= 0.90


if __name__ == "__main__":
    for seconds in ((1, 3), (4, 10)):
        print(seconds, measure(seconds))
