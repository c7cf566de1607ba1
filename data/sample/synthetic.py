"""The synthetic population of the sample project: evaluated models, annotators and judges, and
how each of them turns a latent true quality into an answer, a score, a preference or a raw
judge output.

Everything is seeded per entity (``random.Random`` seeded with a string naming the entity), so a
value does not depend on the order in which things are generated, and two builds are identical.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass

SAMPLE_SEED = 2026


def rng_for(*parts: object) -> random.Random:
    """A generator seeded by the sample seed and ``parts`` (stable across runs and machines)."""
    return random.Random(":".join(str(part) for part in (SAMPLE_SEED, *parts)))


@dataclass(frozen=True)
class ModelProfile:
    """A fictional evaluated model: how often it answers at each tier, how robust it is."""

    name: str
    tier_weights: tuple[float, ...]
    """Probability of each tier, best first (same order as the protocol's tier table)."""
    robustness: float
    """Chance that a prompt variant gets the same tier as the seed; else one tier up or down."""


@dataclass(frozen=True)
class AnnotatorProfile:
    """A synthetic annotator: perceives the latent quality with a bias and noise."""

    name: str
    bias: float
    noise: float
    tie_margin: float
    """Pairwise: a perceived difference smaller than this (in 1–10 points) is a tie."""
    seconds: float
    """Median active seconds per unit."""
    careless: bool = False
    """Answers in 1–3 s, with random scores or preferences and stock rationales."""
    position_bias: float = 0.0
    """Pairwise: chance of choosing the response shown first whatever their quality."""


@dataclass(frozen=True)
class JudgeProfile:
    """A synthetic model judge: a noisy, biased, sometimes unparseable reading of quality."""

    name: str
    bias: float
    noise: float
    shrink: float
    """Pull towards the middle of the scale (0 = none): critics that hedge."""
    unparsed: float
    """Share of outputs that do not parse."""
    out_of_scale: float
    """Share of outputs with a score off the scale."""
    position_bias: float
    """Pairwise: chance of choosing the response shown first whatever their quality."""
    tie_margin: float
    seconds_per_token: float = 0.02
    """Synthetic latency per output token (the judge audit's time per 1,000 units)."""


MODELS: tuple[ModelProfile, ...] = (
    ModelProfile("synthetic-kestrel-vl", (0.62, 0.25, 0.09, 0.03, 0.01, 0.0), robustness=0.9),
    ModelProfile("synthetic-heron-vl", (0.30, 0.32, 0.20, 0.10, 0.06, 0.02), robustness=0.75),
    ModelProfile("synthetic-magpie-vl", (0.15, 0.22, 0.25, 0.20, 0.12, 0.06), robustness=0.6),
    ModelProfile("synthetic-dodo-vl", (0.04, 0.10, 0.20, 0.26, 0.22, 0.18), robustness=0.45),
)
"""Four fictional models: strong, good, middling, weak (names carry "synthetic")."""

ANNOTATORS: tuple[AnnotatorProfile, ...] = (
    AnnotatorProfile("demo-alice", bias=0.0, noise=0.7, tie_margin=0.8, seconds=48.0),
    AnnotatorProfile("demo-bob", bias=0.5, noise=0.9, tie_margin=1.2, seconds=31.0),
    AnnotatorProfile("demo-carol", bias=-0.4, noise=1.1, tie_margin=0.6, seconds=66.0),
)
"""The honest annotators: every unit of a finished campaign has one answer from each."""

SECOND_LOOK: tuple[AnnotatorProfile, ...] = (
    AnnotatorProfile("demo-dave", bias=0.0, noise=0.0, tie_margin=0.0, seconds=2.0, careless=True),
    AnnotatorProfile(
        "demo-erin", bias=0.2, noise=0.8, tie_margin=0.8, seconds=40.0, position_bias=0.6
    ),
)
"""A careless annotator and a position-biased one, who share a fourth answer per unit of the
finished campaigns (dave on even units, erin on odd ones), so that the low-effort flags and the
Annotators table have something true to show."""

DEMO_ANNOTATORS: tuple[AnnotatorProfile, ...] = ANNOTATORS + SECOND_LOOK

STOCK_RATIONALES: tuple[str, ...] = (
    "Rated it, no notes here.",
    "Scored it, that is all.",
    "Done with this one, ok.",
    "Checked, nothing to add.",
    "Seen it, score is given.",
)
"""What the careless annotator writes: generic, just over the campaigns' 20-character minimum (a
stock phrase by length), and saying nothing of the answer's quality (their score is random:
praise would contradict it)."""

JUDGES: tuple[JudgeProfile, ...] = (
    JudgeProfile(
        "synthetic-gpt4-like",
        bias=0.35,
        noise=1.0,
        shrink=0.1,
        unparsed=0.03,
        out_of_scale=0.0,
        position_bias=0.06,
        tie_margin=0.7,
    ),
    JudgeProfile(
        "synthetic-critic-v0",
        bias=0.8,
        noise=1.5,
        shrink=0.35,
        unparsed=0.08,
        out_of_scale=0.02,
        position_bias=0.3,
        tie_margin=0.4,
        seconds_per_token=0.008,
    ),
)
"""Two fictional judges: one close to the humans, one noisier with a position bias."""


def pick_tier(rng: random.Random, tiers: list[str], weights: tuple[float, ...]) -> str:
    return rng.choices(tiers, weights=weights[: len(tiers)], k=1)[0]


def variant_tier(rng: random.Random, tiers: list[str], seed_tier: str, robustness: float) -> str:
    """The tier of one prompt variant: the seed's tier, or a neighbour when not robust."""
    if rng.random() < robustness:
        return seed_tier
    index = tiers.index(seed_tier) + rng.choice((-1, 1))
    return tiers[min(max(index, 0), len(tiers) - 1)]


def latent_quality(rng: random.Random, centre: float, low: float, high: float) -> float:
    """The true quality of one response: its tier's centre with a little spread, on the scale."""
    return min(max(centre + rng.gauss(0.0, 0.035 * (high - low)), low), high)


def perceived_score(
    rng: random.Random,
    truth: float,
    bias: float,
    noise: float,
    low: float,
    high: float,
    shrink: float = 0.0,
) -> int:
    """An integer score on ``[low, high]``: the truth seen with bias and noise (in 1–10 points,
    scaled to the protocol's range), optionally pulled towards the middle."""
    scale = (high - low) / 9.0
    middle = (low + high) / 2.0
    value = truth + shrink * (middle - truth) + (bias + rng.gauss(0.0, noise)) * scale
    return int(min(max(math.floor(value + 0.5), low), high))


def perceived_preference(
    rng: random.Random,
    quality_a: float,
    quality_b: float,
    noise: float,
    margin: float,
    scale: float,
) -> str:
    """A, B or tie from the difference of two latent qualities seen with noise."""
    difference = (quality_a - quality_b) / scale + rng.gauss(0.0, noise)
    if abs(difference) < margin:
        return "tie"
    return "A" if difference > 0 else "B"


def judge_usage(
    rng: random.Random,
    judge: JudgeProfile,
    raw_output: str,
    responses: int,
) -> tuple[dict[str, int], float]:
    """Token usage (OpenAI's keys, as ``judge run`` stores them) and latency in seconds of one
    synthetic judge call: a prompt of about 380 tokens plus 260 per response shown, an answer of
    one token per 3.5 characters, and a time that grows with the answer."""
    prompt = int(380 + 260 * responses + rng.gauss(0.0, 40.0))
    completion = max(1, round(len(raw_output) / 3.5))
    seconds = 0.4 + judge.seconds_per_token * completion * rng.lognormvariate(0.0, 0.25)
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return usage, round(seconds, 3)


def careless_seconds(rng: random.Random) -> float:
    """The careless annotator's time on a unit: 1–3 s, to one decimal."""
    return round(rng.uniform(1.0, 3.0), 1)


def active_seconds(rng: random.Random, median: float) -> float:
    """Active time on a unit: log-normal around the annotator's median, to one decimal."""
    return round(median * math.exp(rng.gauss(0.0, 0.45)), 1)


def pointwise_raw_output(
    rng: random.Random,
    judge: JudgeProfile,
    protocol: str,
    score: int | None,
    reason: str,
    status: str,
    language: str,
) -> str:
    """The raw text a judge would have produced for this verdict, in the protocol's format.

    ``status`` is ``ok``, ``unparsed`` (no score can be read) or ``out_of_scale``.
    """
    if status == "unparsed":
        return rng.choice(
            (
                f'{{"Reason": "{reason[:40]}',
                "The response has some merit but I would need more context to rate it.",
                "I cannot determine a rating for this response.",
            )
        )
    if protocol == "mmie":
        return f"{reason}\n\n### Score\n{score}"
    if judge.name.endswith("critic-v0") and rng.random() < 0.4:
        label = "评分" if language == "zh" else "Rating"
        colon = "：" if language == "zh" else ": "
        return f"{label}{colon}{score}\n{reason}"
    return json.dumps({"Rating": score, "Reason": reason}, ensure_ascii=False)


def pairwise_raw_output(
    rng: random.Random, judge: JudgeProfile, shown_verdict: str | None, reason: str
) -> str:
    """The raw text of a pairwise verdict about the shown order (``None`` = unparseable)."""
    if shown_verdict is None:
        return rng.choice(
            (
                "Both responses have strengths and weaknesses; it depends on what the user values.",
                "I am unable to compare these responses without more information.",
            )
        )
    if judge.name.endswith("critic-v0") and rng.random() < 0.5:
        sentence = {
            "A": "Response A is better.",
            "B": "Response B is better.",
            "tie": "Two responses are equally good.",
        }[shown_verdict]
        return f"{sentence} {reason}"
    token = {"A": "[[A]]", "B": "[[B]]", "tie": "[[C]]"}[shown_verdict]
    return f"{reason}\n\nFinal verdict: {token}"
