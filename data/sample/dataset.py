"""The sample datasets as import records (FORMATS.md §1) with the latent quality of every synthetic
response, and their files (JSONL plus PNG images) for the importer."""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from data.sample import images
from data.sample.seeds import (
    ALIGNMMBENCH_TIERS,
    MMIE_TIERS,
    Drawing,
    Language,
    MmieSeed,
    Seed,
    alignmmbench_seeds,
    mmie_seeds,
)
from data.sample.synthetic import (
    MODELS,
    latent_quality,
    pick_tier,
    rng_for,
    variant_tier,
)
from schemas.benchmarks import ALIGNMMBENCH_TASKS

ALIGNMMBENCH_FILE = "demo-alignmmbench.jsonl"
MMIE_FILE = "demo-mmie.jsonl"
PAIRS_PER_ITEM = 2

OFF_TOPIC: dict[Language, tuple[str, ...]] = {
    "en": (
        "This is an interesting picture. Images like this are shared widely online and can mean "
        "different things to different people.",
        "I'm sorry, I can't help with that request.",
    ),
    "zh": ("这是一张很有意思的图片，不同的人可能会有不同的理解。", "抱歉，我无法回答这个问题。"),
}


@dataclass(frozen=True)
class ResponseTruth:
    """What the generator knows about a synthetic response and no annotator sees."""

    response_id: str
    item_id: str
    model: str
    protocol: str
    """alignmmbench | mmie: whose scale ``quality`` is on."""
    tier: str
    quality: float
    """Latent true quality on the protocol's scale."""
    language: Language
    fact: str


@dataclass
class SampleRecords:
    """The sample datasets as FORMATS.md §1 records, before anything is written."""

    alignmmbench: list[dict[str, Any]] = field(default_factory=list)
    mmie: list[dict[str, Any]] = field(default_factory=list)
    truths: dict[str, ResponseTruth] = field(default_factory=dict)
    """Latent truth per response id."""
    drawings: dict[str, Drawing] = field(default_factory=dict)
    """The picture behind each image path the records name (``images/<key hash>.png``)."""

    def image(self, drawing: Drawing) -> str:
        """The relative path under which ``drawing`` will be written."""
        key = hashlib.sha256(_drawing_key(drawing).encode("utf-8")).hexdigest()[:24]
        path = f"images/{key}.png"
        self.drawings.setdefault(path, drawing)
        return path


def _drawing_key(drawing: Drawing) -> str:
    """Drawings are ``functools.partial`` calls of :mod:`data.sample.images`: the same call is the
    same picture."""
    if not isinstance(drawing, partial):
        raise TypeError(f"sample drawings are functools.partial calls, not {drawing!r}")
    return repr((drawing.func.__name__, drawing.args, sorted(drawing.keywords.items())))


def sample_records() -> SampleRecords:
    """Generate every sample item, response and pair with the latent truth of each response."""
    records = SampleRecords()
    records.alignmmbench = [
        _alignmmbench_record(seed, variant, records)
        for seed in alignmmbench_seeds()
        for variant in range(len(seed.variants))
    ]
    records.mmie = [_mmie_record(seed, records) for seed in mmie_seeds()]
    return records


def write_sample_files(records: SampleRecords, folder: Path) -> tuple[Path, Path]:
    """Write the two dataset files and every image they name into ``folder``; return the files."""
    (folder / "images").mkdir(parents=True, exist_ok=True)
    for image_path, drawing in records.drawings.items():
        (folder / image_path).write_bytes(images.png_bytes(drawing()))
    files = folder / ALIGNMMBENCH_FILE, folder / MMIE_FILE
    for path, lines in zip(files, (records.alignmmbench, records.mmie), strict=True):
        text = "".join(
            json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in lines
        )
        path.write_text(text, encoding="utf-8")
    return files


def _alignmmbench_record(seed: Seed, variant: int, records: SampleRecords) -> dict[str, Any]:
    item_id = f"amb-{seed.group}-{variant}"
    tiers = list(ALIGNMMBENCH_TIERS)
    responses = []
    for model in MODELS:
        seed_tier = pick_tier(rng_for("tier", seed.group, model.name), tiers, model.tier_weights)
        rng = rng_for("variant", item_id, model.name)
        tier = variant_tier(rng, tiers, seed_tier, model.robustness)
        text = rng.choice(OFF_TOPIC[seed.language]) if tier == "off_topic" else seed.answers[tier]
        response_id = f"{item_id}/{model.name}"
        quality = latent_quality(rng, ALIGNMMBENCH_TIERS[tier], 1.0, 10.0)
        records.truths[response_id] = ResponseTruth(
            response_id,
            item_id,
            model.name,
            "alignmmbench",
            tier,
            quality,
            seed.language,
            seed.fact,
        )
        responses.append(_response(response_id, model.name, text))
    history: list[dict[str, Any]] = []
    for user_turn, assistant_turn in seed.history:
        history += [
            {"role": "user", "content": user_turn},
            {"role": "assistant", "content": assistant_turn},
        ]
    return {
        "item_id": item_id,
        "benchmark": "alignmmbench",
        "task": seed.task,
        "category": ALIGNMMBENCH_TASKS[seed.task],
        "group": seed.group,
        "history": history,
        "question": [
            {"type": "image", "image": records.image(seed.image)},
            {"type": "text", "text": seed.variants[variant]},
        ],
        "reference": seed.reference,
        "meta": {
            "synthetic": True,
            "language": seed.language,
            "question_id": f"{seed.group}-{variant}",
        },
        "responses": responses,
        "pairs": _pairs(item_id, [r["response_id"] for r in responses]),
    }


def _pairs(item_id: str, response_ids: list[str]) -> list[list[str]]:
    """A seeded sample of pairs; each pair's canonical order is itself random."""
    rng = rng_for("pairs", item_id)
    combos = list(itertools.combinations(response_ids, 2))
    picked = sorted(rng.sample(range(len(combos)), PAIRS_PER_ITEM))
    return [list(combos[i]) if rng.random() < 0.5 else list(reversed(combos[i])) for i in picked]


def _response(response_id: str, model: str, content: Any) -> dict[str, Any]:
    return {
        "response_id": response_id,
        "model": model,
        "content": content,
        "meta": {"synthetic": True},
    }


def _mmie_record(seed: MmieSeed, records: SampleRecords) -> dict[str, Any]:
    tiers = list(MMIE_TIERS)
    responses = []
    for model in MODELS:
        rng = rng_for("mmie", seed.item_id, model.name)
        tier = pick_tier(rng, tiers, _mmie_weights(model.tier_weights))
        response_id = f"{seed.item_id}/{model.name}"
        quality = latent_quality(rng, MMIE_TIERS[tier], 0.0, 6.0)
        records.truths[response_id] = ResponseTruth(
            response_id, seed.item_id, model.name, "mmie", tier, quality, "en", seed.fact
        )
        responses.append(_response(response_id, model.name, _mmie_answer(seed, tier, records)))
    return {
        "item_id": seed.item_id,
        "benchmark": "mmie",
        "task": seed.field,
        "category": seed.category,
        "question": [
            {"type": "text", "text": seed.question_before},
            {"type": "image", "image": records.image(seed.image)},
            {"type": "text", "text": seed.question_after},
        ],
        "reference": seed.ground_truth,
        "meta": {"synthetic": True, "field": seed.field},
        "responses": responses,
    }


def _mmie_weights(weights: tuple[float, ...]) -> tuple[float, ...]:
    """Five MMIE tiers from the six AlignMMBench weights (the two worst merge into ``fail``)."""
    return (*weights[:4], weights[4] + weights[5])


def _mmie_answer(seed: MmieSeed, tier: str, records: SampleRecords) -> list[dict[str, Any]]:
    if tier == "fail":
        return [{"type": "text", "text": seed.off_topic}]
    steps = list(seed.steps)
    if tier == "fair":
        steps = steps[: (len(steps) + 1) // 2]
    segments: list[dict[str, Any]] = []
    for number, step in enumerate(steps, start=1):
        text = step.short if tier in ("good", "poor") else step.text
        segments.append({"type": "text", "text": f"Step {number}. {text}"})
        segments.append(
            {"type": "image", "image": records.image(step.drawing(blank=tier == "poor"))}
        )
    if tier == "fair":
        segments.append({"type": "text", "text": "The remaining steps follow the same way."})
    if seed.ground_truth is not None:
        final = seed.wrong_final if tier == "poor" else f"Answer: {seed.ground_truth}"
        segments.append({"type": "text", "text": str(final)})
    return segments
