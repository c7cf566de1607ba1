"""Careless annotators on real labels: are they found, and what do they do to the judges' numbers?

Two cases, vendored in ``tests/fixtures``: PandaLM's test set (999 pairs, three annotators per
pair; judges GPT-3.5 and PandaLM-7B; reference: majority, a tie without one) and HANNA (1,056
stories, three raters on six 1–5 criteria, each criterion its own campaign; judges: four LLMs ×
four prompts, a score below 0 is unparsed; reference: mean).

**The pool.** The real data has three annotators per unit; "10% of the annotators" needs more.
A campaign here is ``10·n`` units drawn at random (seeded) and a pool of 30 *virtual*
annotators: each real annotator's labels on those units, in a random order, are cut into 10
blocks of ``n`` labels, one block per virtual annotator (``n`` = labels per annotator, the
detection axis). Every unit still has its three real labels, from three virtual annotators
(one per real annotator), so the per-unit reference of the clean pool is the real one.

**Careless annotators.** 10%, 20% or 30% of the 30 (3, 6, 9, chosen at random) have their
labels replaced, on the same units, by: ``uniform`` (A / B / tie, or 1–5, uniformly at random),
``constant`` (always "A"; on scores one score drawn per annotator from 1–5, then always it),
``length`` (PandaLM only: the longer response, a tie when both have the same length; HANNA's
file has no story text). Share 0 (``none``) is the clean pool: the false flags of honest
annotators.

**Detection**, per annotator of the pool, from :func:`calibration.annotators.annotator_reliability`
with the product's defaults (B = 1000, the campaign's seed, answers in the annotator's order;
pairs: the responses' lengths, as a campaign's calibration reads them, for the ``length`` flag):
``flags`` (any flag), ``competence`` (its ``low_competence`` flag: Dawid–Skene less than 0.10
above chance; on scores, ordinal MACE's evidence of random answers ≥ 4 nats; the product's
constants). With gold: 5% of the campaign's units (at least one) carry a known answer, the
clean majority (scores: the clean median), graded as the queue grades gold (pairs: equal;
scores: within one point); ``gold`` flags an annotator with at least GOLD_MIN_ANSWERS gold
answers when the top of the Wilson 95% interval of their gold accuracy is below the median gold
accuracy of the others (at least two others with a gold answer), the ``low_agreement`` rule read
on gold; ``flags+gold`` is either.

**Dev and test halves.** ``--split test`` (the default, what docs/ANNOTATOR_QUALITY.md reports)
draws the units from one half of each data set, ``--split dev`` from the other (HANNA: by story
prompt; PandaLM: by pair); ``--split dev --sweep`` prints the table on which GOLD_MIN_ANSWERS
was chosen (and evidence alone; RANDOM_EVIDENCE in calibration/annotators.py is now chosen with
MAE_MARGIN by ``experiments/annotator_score_rules.py``). Precision and recall pool the seeds'
counts; their 95% intervals are percentile bootstraps over the seeds.

**Judges' error.** For each judge and headline metric (pairs: ``acc_with_tie``, unparsed counted
wrong; scores: ``qwk``, ``mae``, ``pearson`` on the 1–5 points), the metric against the
contaminated pool's reference minus the metric against the clean reference (the plain rule on
the real labels), in absolute value, under: ``plain`` (majority / mean), ``model``
(``--reference dawid-skene`` for pairs, ``mace`` for scores, as :func:`human_reference`),
``exclude`` (the plain rule without the annotators any flag raised, as ``--exclude-annotator``)
and ``exclude+gold`` (without those ``flags+gold`` raised). ``model_same_rule`` is the model
against the model fitted to the clean labels (its own clean value). ``oracle`` is the plain rule
without exactly the careless annotators, as if detection were perfect: what a rule that drops
annotators can hope for, its error being that of the honest labels lost. Mean over seeds (HANNA:
over the six criteria first), 95% bootstrap interval over the seeds, and each robust rule's
ratio to ``plain`` (paired over seeds).

    .venv/bin/python bench/annotator_quality.py --out annotator_quality.json   # 20 seeds
    .venv/bin/python bench/annotator_quality.py --tables annotator_quality.json  # markdown

``--case``, ``--seeds``, ``--labels``, ``--shares``, ``--careless`` narrow a run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import zlib
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration.annotators import (
    MIN_PEERS,  # noqa: E402
    annotator_reliability,  # noqa: E402
)
from calibration.pairwise import LABELS, PairwiseKernel  # noqa: E402
from calibration.pointwise import PointwiseKernel  # noqa: E402
from calibration.reference import (  # noqa: E402
    ConsensusRule,
    ModelRule,
    consensus,
    human_reference,
)
from calibration.scale import Scale  # noqa: E402
from schemas.intervals import wilson_interval  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
POOL_PER_ANNOTATOR = 10
"""Virtual annotators cut from each real annotator: a pool of 30."""
POOL = 3 * POOL_PER_ANNOTATOR
SHARES = (0.1, 0.2, 0.3)
LABELS_PER_ANNOTATOR = (10, 20, 30, 50)
CARELESS = ("uniform", "constant", "length")
GOLD_RATE = 0.05
GOLD_MIN_ANSWERS = 5
"""Gold answers an annotator needs before the gold rule may flag them: on the dev split
(``--sweep``), the smallest of 1–5 and 8 with at most 5% of honest annotators flagged by gold
at every n (one wrong answer of two put the Wilson top, 0.91, below a median of 1.0)."""
SWEEP_EVIDENCE = (1.0, 2.0, 3.0, 5.0)
SWEEP_GOLD = (1, 2, 3, 4, 5, 8)
SWEEP_LABELS = (20, 30, 50)
HANNA_CRITERIA = ("RE", "CH", "EM", "SU", "EG", "CX")
HANNA_LLMS = ("Beluga-13B", "Mistral-7B", "Llama-13B", "ChatGPT")
SCALE = Scale(1.0, 5.0, 1.0)
PANDALM_CODES = {0: 2.0, 1: 0.0, 2: 1.0}
"""PandaLM's labels 0 / 1 / 2 (tie / A / B) as calibration's codes 0 = A, 1 = B, 2 = tie."""
GPT_CODES = {"1": 0.0, "2": 1.0, "Tie": 2.0, "garbage": math.nan}
DETECTORS = ("flags", "competence", "gold", "flags+gold")
RULES = ("plain", "model", "exclude", "exclude+gold", "model_same_rule", "oracle")
ROBUST_RULES = ("model", "exclude", "exclude+gold", "model_same_rule", "oracle")
PRODUCT_RULES = ("model", "exclude", "exclude+gold", "model_same_rule")
"""The rules a user can choose; ``oracle`` (knowing who is careless) only bounds them."""
BOOTSTRAP_SEEDS = 2000


@dataclass(frozen=True)
class Campaign:
    """One campaign of real labels: 3 × units human labels and the judges' values per unit."""

    name: str
    dataset: str
    humans: np.ndarray
    judges: dict[str, np.ndarray]
    """Pairs: codes 0 = A, 1 = B, 2 = tie, NaN unparsed; scores: the score, NaN unparsed."""
    longer: np.ndarray | None
    """Pairs: the code of the longer response (tie when equally long)."""
    groups: np.ndarray
    """Per unit, what the dev / test split keeps together (HANNA: the story's prompt; PandaLM:
    the pair itself)."""

    @property
    def pairwise(self) -> bool:
        return self.longer is not None


def pandalm_campaign(folder: Path = FIXTURES / "pandalm") -> Campaign:
    items = json.loads((folder / "testset-v1.json").read_text())
    gpt = json.loads((folder / "gpt-3.5-turbo-testset-v1.json").read_text())
    panda = json.loads((folder / "pandalm-7b-testset-v1.json").read_text())
    humans = np.array(
        [[PANDALM_CODES[int(item[f"annotator{k}"])] for item in items] for k in (1, 2, 3)]
    )
    lengths = np.array([[len(str(item[f"response{k}"])) for k in (1, 2)] for item in items])
    longer = np.where(
        lengths[:, 0] > lengths[:, 1], 0.0, np.where(lengths[:, 0] < lengths[:, 1], 1.0, 2.0)
    )
    judges = {
        "gpt-3.5-turbo": np.array([GPT_CODES[g["gpt_result"]] for g in gpt]),
        "pandalm-7b": np.array([PANDALM_CODES[int(p["pandalm_result"])] for p in panda]),
    }
    return Campaign("pandalm", "pandalm", humans, judges, longer, np.arange(len(items)))


def hanna_campaigns(folder: Path = FIXTURES / "hanna") -> list[Campaign]:
    frame = pd.read_csv(folder / "hanna_human_and_llm_scores_long.csv")
    prompts = frame["prompt_idx"].to_numpy(dtype=np.int64)
    out = []
    for criterion in HANNA_CRITERIA:
        humans = frame[[f"Human {k} {criterion}" for k in (1, 2, 3)]].to_numpy(float).T
        judges = {}
        for llm in HANNA_LLMS:
            for prompt in (1, 2, 3, 4):
                values = frame[f"{llm} {criterion} {prompt}"].to_numpy(dtype=float)
                judges[f"{llm} p{prompt}"] = np.where(values < 0, np.nan, values)
        out.append(Campaign(f"hanna/{criterion}", "hanna", humans, judges, None, prompts))
    return out


def split(campaign: Campaign, part: str) -> Campaign:
    """The campaign's ``dev`` half (odd groups), ``test`` half (even groups) or ``all`` of it.

    The detection rules' constants were chosen on ``dev``; the reported tables are ``test``.
    """
    if part == "all":
        return campaign
    keep = np.flatnonzero(campaign.groups % 2 == (1 if part == "dev" else 0))
    return Campaign(
        campaign.name,
        campaign.dataset,
        campaign.humans[:, keep],
        {judge: values[keep] for judge, values in campaign.judges.items()},
        None if campaign.longer is None else campaign.longer[keep],
        campaign.groups[keep],
    )


@dataclass(frozen=True)
class Pool:
    """A campaign's units cut into a pool of virtual annotators (POOL × units, NaN = none)."""

    units: np.ndarray
    labels: np.ndarray
    order: np.ndarray
    origin: np.ndarray
    """The real annotator each virtual one was cut from."""
    gold: np.ndarray
    """Indices (into ``units``) of the gold units."""
    gold_answer: np.ndarray


def make_pool(campaign: Campaign, n: int, seed: int) -> Pool:
    """10·n units at random; each real annotator's labels on them cut into 10 blocks of n."""
    rng = np.random.default_rng([seed, n, zlib.crc32(campaign.name.encode())])
    m = min(POOL_PER_ANNOTATOR * n, campaign.humans.shape[1])  # PandaLM's dev half: 499 < 500
    units = np.sort(rng.choice(campaign.humans.shape[1], m, replace=False))
    real = campaign.humans[:, units]
    labels = np.full((POOL, m), np.nan)
    order = np.full((POOL, m), np.nan)
    for r in range(3):
        perm = rng.permutation(m)
        for block, mine in enumerate(np.array_split(perm, POOL_PER_ANNOTATOR)):
            labels[r * POOL_PER_ANNOTATOR + block, mine] = real[r, mine]
            order[r * POOL_PER_ANNOTATOR + block, mine] = np.arange(mine.size)
    gold = np.sort(rng.choice(m, max(1, round(GOLD_RATE * m)), replace=False))
    if campaign.pairwise:
        answer = consensus(real[:, gold], "majority", pairwise=True)
    else:
        answer = np.median(real[:, gold], axis=0)
    origin = np.repeat(np.arange(3), POOL_PER_ANNOTATOR)
    return Pool(units, labels, order, origin, gold, answer)


def contaminate(
    campaign: Campaign, pool: Pool, kind: str, share: float, seed: int, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The pool's labels with ``round(share · 30)`` annotators made careless; and who. A share
    of 0 is the clean pool (its labels as they are, whatever ``kind``)."""
    if share == 0:
        return pool.labels, np.zeros(POOL, dtype=bool)
    rng = np.random.default_rng(
        [seed, n, zlib.crc32(campaign.name.encode()), CARELESS.index(kind), round(share * 100)]
    )
    careless = np.zeros(POOL, dtype=bool)
    careless[rng.choice(POOL, round(share * POOL), replace=False)] = True
    labels = pool.labels.copy()
    for v in np.flatnonzero(careless):
        mine = np.flatnonzero(~np.isnan(labels[v]))
        if kind == "uniform":
            labels[v, mine] = rng.integers(0, 3, mine.size) if campaign.pairwise else (
                rng.integers(1, 6, mine.size)
            )  # fmt: skip
        elif kind == "constant":
            labels[v, mine] = 0.0 if campaign.pairwise else float(rng.integers(1, 6))
        elif kind == "length" and campaign.longer is not None:
            labels[v, mine] = campaign.longer[pool.units[mine]]
        else:
            raise ValueError(f"careless kind {kind!r} does not apply to {campaign.name}")
    return labels, careless


def longer_of(campaign: Campaign, pool: Pool) -> np.ndarray | None:
    """Pairs: per unit of the pool, the code of the longer response (NaN when both are as
    long), as the product gives the Annotators table (``longer``); None for scores."""
    if campaign.longer is None:
        return None
    code = campaign.longer[pool.units]
    return np.where(code == 2.0, np.nan, code)


def gold_flags(
    labels: np.ndarray, pool: Pool, pairwise: bool, min_answers: int | None = None
) -> np.ndarray:
    """Per annotator with at least ``min_answers`` gold answers (default GOLD_MIN_ANSWERS):
    the top of the Wilson interval of their gold accuracy is below the median of the others'
    (at least MIN_PEERS others with a gold answer)."""
    least = GOLD_MIN_ANSWERS if min_answers is None else min_answers
    answers = labels[:, pool.gold]
    given = ~np.isnan(answers)
    gap = np.abs(answers - pool.gold_answer[None, :])
    right = (gap == 0) if pairwise else (gap <= SCALE.discrete_step)
    n = given.sum(axis=1)
    k = (right & given).sum(axis=1)
    accuracy = np.where(n > 0, k / np.maximum(n, 1), np.nan)
    flagged = np.zeros(labels.shape[0], dtype=bool)
    for v in range(labels.shape[0]):
        others = np.delete(accuracy, v)
        others = others[np.isfinite(others)]
        if n[v] < max(least, 1) or others.size < MIN_PEERS:
            continue
        flagged[v] = wilson_interval(int(k[v]), int(n[v]))[1] < float(np.median(others))
    return flagged


def judge_metrics(campaign: Campaign, units: np.ndarray, reference: np.ndarray) -> dict:
    """Judge → metric → value against ``reference`` (per unit of ``units``)."""
    out: dict[str, dict[str, float]] = {}
    for judge, values in campaign.judges.items():
        mine = values[units]
        if campaign.pairwise:
            verdicts = np.array([None if np.isnan(v) else LABELS[int(v)] for v in mine], object)
            truth = np.array([None if np.isnan(r) else LABELS[int(r)] for r in reference], object)
            kernel = PairwiseKernel(
                np.arange(units.size), verdicts, np.full(units.size, "AB"), truth, "wrong"
            )
            value = kernel.evaluate(np.ones((1, units.size)))["acc_with_tie"][0]
            out[judge] = {"acc_with_tie": float(value)}
        else:
            point = PointwiseKernel(mine, reference, SCALE)
            values_ = point.evaluate(np.ones((1, units.size)), ("qwk", "mae", "pearson"))
            out[judge] = {k: float(v[0]) for k, v in values_.items()}
    return out


def references(
    campaign: Campaign, labels: np.ndarray, excluded: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """Plain rule, latent-class model, and the plain rule without each set in ``excluded``."""
    pairwise = campaign.pairwise
    plain_rule: ConsensusRule = "majority" if pairwise else "mean"
    model_rule: ModelRule = "dawid-skene" if pairwise else "mace"
    out = [
        consensus(labels, plain_rule, pairwise=pairwise),
        human_reference(labels, model_rule, pairwise=pairwise, scale=SCALE).values,
    ]
    for drop in excluded:
        kept = labels[~drop] if (~drop).any() else np.full((1, labels.shape[1]), np.nan)
        out.append(consensus(kept, plain_rule, pairwise=pairwise))
    return out


def run_one(task: tuple[Campaign, int, int, Sequence[tuple[str, float]], int]) -> list[dict]:
    """Every contamination of one campaign's pool (labels per annotator ``n``, ``seed``)."""
    campaign, n, seed, conditions, bootstrap = task
    pool = make_pool(campaign, n, seed)
    clean = judge_metrics(
        campaign, pool.units, references(campaign, campaign.humans[:, pool.units], [])[0]
    )
    clean_model = judge_metrics(
        campaign, pool.units, references(campaign, campaign.humans[:, pool.units], [])[1]
    )
    rows = []
    for kind, share in conditions:
        labels, careless = contaminate(campaign, pool, kind, share, seed, n)
        table = annotator_reliability(
            labels,
            [f"v{v:02d}" for v in range(POOL)],
            scale=None if campaign.pairwise else SCALE,
            order=pool.order,
            longer=longer_of(campaign, pool),
            bootstrap=bootstrap,
            seed=seed,
        )
        flagged = np.array([bool(row.flags) for row in table.rows])
        competence = np.array(
            [any(f.kind == "low_competence" for f in row.flags) for row in table.rows]
        )
        gold = gold_flags(labels, pool, campaign.pairwise)
        detected = {
            "flags": flagged,
            "competence": competence,
            "gold": gold,
            "flags+gold": flagged | gold,
        }
        base = {"case": campaign.dataset, "campaign": campaign.name, "careless": kind,
                "share": share, "n": n, "seed": seed}  # fmt: skip
        for detector, hit in detected.items():
            rows.append({**base, "table": "detection", "detector": detector,
                         "tp": int((hit & careless).sum()), "fp": int((hit & ~careless).sum()),
                         "fn": int((~hit & careless).sum()),
                         "honest": int((~careless).sum())})  # fmt: skip
        plain, model, exclude, exclude_gold, oracle = references(
            campaign, labels, [flagged, flagged | gold, careless]
        )
        measured = {
            "plain": judge_metrics(campaign, pool.units, plain),
            "model": judge_metrics(campaign, pool.units, model),
            "exclude": judge_metrics(campaign, pool.units, exclude),
            "exclude+gold": judge_metrics(campaign, pool.units, exclude_gold),
            "oracle": judge_metrics(campaign, pool.units, oracle),
        }
        for judge, metrics in clean.items():
            for metric, value in metrics.items():
                errors = {rule: abs(measured[rule][judge][metric] - value) for rule in measured}
                errors["model_same_rule"] = abs(
                    measured["model"][judge][metric] - clean_model[judge][metric]
                )
                for rule, error in errors.items():
                    rows.append({**base, "table": "error", "judge": judge, "metric": metric,
                                 "rule": rule, "error": error})  # fmt: skip
    return rows


def sweep_one(task: tuple[Campaign, int, int, Sequence[tuple[str, float]], int]) -> list[dict]:
    """The dev split's candidates for the two chosen constants, on one campaign's pool: each
    annotator's random-answer evidence (scores; RANDOM_EVIDENCE) and gold flags under each
    minimum number of gold answers (GOLD_MIN_ANSWERS)."""
    campaign, n, seed, conditions, _ = task
    pool = make_pool(campaign, n, seed)
    rows = []
    for kind, share in conditions:
        labels, careless = contaminate(campaign, pool, kind, share, seed, n)
        base = {"case": campaign.dataset, "careless": kind, "n": n}
        if not campaign.pairwise:
            table = annotator_reliability(
                labels, [f"v{v:02d}" for v in range(POOL)], scale=SCALE, bootstrap=0
            )
            evidence = np.array([row.random_evidence for row in table.rows])
            for least in SWEEP_EVIDENCE:
                rows.append({**base, "rule": f"evidence >= {least:g} nats",
                             **_counts(evidence >= least, careless)})  # fmt: skip
        for least in SWEEP_GOLD:
            hit = gold_flags(labels, pool, campaign.pairwise, least)
            rows.append({**base, "rule": f"gold, >= {least} answers", **_counts(hit, careless)})
    return rows


def _counts(hit: np.ndarray, careless: np.ndarray) -> dict[str, int]:
    return {"fp": int((hit & ~careless).sum()), "honest": int((~careless).sum()),
            "tp": int((hit & careless).sum()), "careless_n": int(careless.sum())}  # fmt: skip


def sweep_table(rows: list[dict]) -> str:
    """Markdown: per rule, case and n, the honest annotators flagged (all conditions pooled) and
    the careless ones found, per kind."""
    frame = pd.DataFrame(rows)
    lines = [
        "| rule | case | n | honest flagged | careless found (by kind) |",
        "|---|---|---|---|---|",
    ]
    for (rule, case, n), group in frame.groupby(["rule", "case", "n"], sort=True):
        honest = group["fp"].sum() / group["honest"].sum()
        found = group[group["careless"] != "none"].groupby("careless")[["tp", "careless_n"]].sum()
        kinds = ", ".join(f"{k} {r.tp / r.careless_n:.2f}" for k, r in found.iterrows())
        lines.append(f"| {rule} | {case} | {n} | {honest:.3f} | {kinds} |")
    return "\n".join(lines)


def conditions_for(
    campaign: Campaign, kinds: Iterable[str], shares: Iterable[float]
) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = [("none", 0.0)]
    for kind in kinds:
        if kind == "length" and not campaign.pairwise:
            continue
        out += [(kind, share) for share in shares]
    return out


def _interval(values: np.ndarray, rng: np.random.Generator) -> list[float]:
    """Percentile 95% interval of a statistic's values over bootstrap resamples (NaN dropped)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return [math.nan, math.nan]
    return [float(x) for x in np.percentile(finite, [2.5, 97.5])]


def _resamples(n_seeds: int, rng: np.random.Generator) -> np.ndarray:
    """Seed weights: row 0 all ones (the estimate), then BOOTSTRAP_SEEDS resamples."""
    draws = rng.integers(0, n_seeds, (BOOTSTRAP_SEEDS, n_seeds))
    counts = np.stack([np.bincount(row, minlength=n_seeds) for row in draws])
    return np.vstack([np.ones(n_seeds), counts]).astype(np.float64)


def _detection(found: pd.DataFrame, level: str, rng: np.random.Generator) -> list[dict]:
    """Precision, recall and honest annotators' flag rate per condition, pooled over seeds."""
    detection: list[dict] = []
    keys = [level, "careless", "share", "n", "detector"]
    for key, group in found.groupby(keys, sort=True):
        per_seed = group.groupby("seed")[["tp", "fp", "fn", "honest"]].sum()
        weights = _resamples(len(per_seed), rng)
        tp, fp, fn, honest = (weights @ per_seed[c].to_numpy(float) for c in per_seed.columns)
        with np.errstate(invalid="ignore", divide="ignore"):
            precision, recall, false_rate = tp / (tp + fp), tp / (tp + fn), fp / honest
        entry = dict(zip(keys, key, strict=True))
        entry.update(
            seeds=len(per_seed),
            tp=int(tp[0]),
            fp=int(fp[0]),
            fn=int(fn[0]),
            precision=_number(precision[0]),
            precision_ci95=_interval(precision[1:], rng),
            recall=_number(recall[0]),
            recall_ci95=_interval(recall[1:], rng),
            honest_flag_rate=_number(false_rate[0]),
            honest_flag_rate_ci95=_interval(false_rate[1:], rng),
        )
        detection.append(entry)
    return detection


def summarise(rows: list[dict]) -> dict[str, Any]:
    """Detection and judges' error per condition, with 95% intervals over seeds."""
    frame = pd.DataFrame(rows)
    rng = np.random.default_rng(0)
    found = frame[frame["table"] == "detection"]
    detection = _detection(found, "case", rng)
    by_campaign = _detection(found[found["case"] != found["campaign"]], "campaign", rng)
    errors: list[dict] = []
    err = frame[frame["table"] == "error"]
    # HANNA: the six criteria's errors averaged per seed first (one number per judge and seed)
    per_seed = err.groupby(["case", "careless", "share", "n", "judge", "metric", "rule", "seed"])[
        "error"
    ].mean()
    all_judges = per_seed.groupby(
        level=["case", "careless", "share", "n", "metric", "rule", "seed"]
    ).mean()
    all_judges = pd.concat({"all judges": all_judges}, names=["judge"]).reorder_levels(
        ["case", "careless", "share", "n", "judge", "metric", "rule", "seed"]
    )
    table = pd.concat([per_seed, all_judges]).unstack("rule")
    for key, group in table.groupby(level=["case", "careless", "share", "n", "judge", "metric"]):
        weights = _resamples(len(group), rng)
        means = {rule: weights @ group[rule].to_numpy(float) / len(group) for rule in RULES}
        entry = dict(zip(["case", "careless", "share", "n", "judge", "metric"], key, strict=True))
        entry["seeds"] = len(group)
        for rule in RULES:
            entry[rule] = _number(means[rule][0])
            entry[f"{rule}_ci95"] = _interval(means[rule][1:], rng)
        for rule in ROBUST_RULES:
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = means[rule] / means["plain"]
            entry[f"{rule}_over_plain"] = _number(ratio[0])
            entry[f"{rule}_over_plain_ci95"] = _interval(ratio[1:], rng)
        errors.append(entry)
    return {"detection": detection, "detection_by_campaign": by_campaign, "judges_error": errors}


def targets(summary: dict[str, Any]) -> dict[str, Any]:
    """Issue 24's targets: recall ≥ 0.9 at precision ≥ 0.9 from 30 labels per annotator (the
    flags, and flags + gold); at 20% careless, robust / plain error ≤ 0.5 (all judges pooled)."""
    detection = []
    for row in summary["detection"]:
        if row["n"] >= 30 and row["share"] > 0 and row["detector"] in ("flags", "flags+gold"):
            met = (row["precision"] or 0) >= 0.9 and (row["recall"] or 0) >= 0.9
            detection.append({k: row[k] for k in ("case", "careless", "share", "n", "detector")}
                             | {"precision": row["precision"], "recall": row["recall"],
                                "met": met})  # fmt: skip
    judges = []
    for row in summary["judges_error"]:
        if row["share"] == 0.2 and row["judge"] == "all judges":
            for rule in PRODUCT_RULES:
                ratio = row[f"{rule}_over_plain"]
                judges.append({k: row[k] for k in ("case", "careless", "n", "metric")}
                              | {"rule": rule, "ratio": ratio,
                                 "ci95": row[f"{rule}_over_plain_ci95"],
                                 "met": ratio is not None and ratio <= 0.5})  # fmt: skip
    return {
        "detection_met": sum(r["met"] for r in detection),
        "detection_of": len(detection),
        "judges_met": sum(r["met"] for r in judges),
        "judges_of": len(judges),
        "detection": detection,
        "judges": judges,
    }


def sweep_parser(
    doc: str, *, seeds: int, labels: Sequence[int] = (30,), bootstrap: int = 200
) -> argparse.ArgumentParser:
    """The options of a dev-half sweep (``experiments/``), with its own defaults: seeds from
    FIRST_SEED, labels per annotator, shares of careless annotators (0 = the clean pool),
    bootstrap resamples, and a file for the rows."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=seeds)
    parser.add_argument("--labels", type=int, nargs="+", default=list(labels))
    parser.add_argument("--shares", type=float, nargs="+", default=[0.0, *SHARES])
    parser.add_argument("--bootstrap", type=int, default=bootstrap)
    parser.add_argument("--out", type=Path)
    return parser


def finish_sweep(rows: list[dict], out: Path | None, started: float, load_before: Any) -> None:
    """The end of a dev-half sweep (``experiments/``: ``annotator_flag_kinds``,
    ``annotator_position_rules``, ``annotator_score_rules``): its time and the load average on
    stderr, its rows to ``out``."""
    print(
        f"{time.perf_counter() - started:.0f} s; load average {load_before} before, "
        f"{os.getloadavg()} after",
        file=sys.stderr,
    )
    if out:
        out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def rounded(value: Any) -> Any:
    """Floats rounded to 4 decimals, in nested lists and dicts (the JSON's size)."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def _number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=("all", "pandalm", "hanna"), default="all")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--labels", type=int, nargs="+", default=list(LABELS_PER_ANNOTATOR),
                        help="labels per annotator (n): a campaign has 10·n units")  # fmt: skip
    parser.add_argument("--shares", type=float, nargs="+", default=list(SHARES))
    parser.add_argument("--careless", nargs="+", choices=CARELESS, default=list(CARELESS))
    parser.add_argument("--criteria", nargs="+", choices=HANNA_CRITERIA,
                        default=list(HANNA_CRITERIA))  # fmt: skip
    parser.add_argument("--bootstrap", type=int, default=1000,
                        help="the Annotators table bootstrap (product default)")  # fmt: skip
    parser.add_argument("--split", choices=("test", "dev", "all"), default="test",
                        help="half of the units: dev (rules chosen), test (reported)")  # fmt: skip
    parser.add_argument("--sweep", action="store_true",
                        help="print the dev split's table that chose GOLD_MIN_ANSWERS, "
                        "with random-answer evidence alone (use with --split dev)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--tables", type=Path, help="print the markdown tables of a JSON run")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = _arguments(argv)
    if args.tables:
        report = json.loads(args.tables.read_text())
        print(markdown(report))
        return report
    load_before = os.getloadavg()
    started = time.perf_counter()
    campaigns: list[Campaign] = []
    if args.case in ("all", "pandalm"):
        campaigns.append(pandalm_campaign())
    if args.case in ("all", "hanna"):
        campaigns += [c for c in hanna_campaigns() if c.name.split("/")[1] in args.criteria]
    campaigns = [split(c, args.split) for c in campaigns]
    tasks = [
        (c, n, seed, conditions_for(c, args.careless, args.shares), args.bootstrap)
        for c in campaigns
        for n in args.labels
        for seed in range(args.seeds)
    ]
    rows: list[dict] = []
    work = sweep_one if args.sweep else run_one
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as workers:
            for part in workers.map(work, tasks, chunksize=4):
                rows += part
    else:
        for task in tasks:
            rows += work(task)
    if args.sweep:
        print(sweep_table(rows))
        print(f"\n{time.perf_counter() - started:.0f} s; load average {load_before} before, "
              f"{os.getloadavg()} after")  # fmt: skip
        return {"sweep": rows}
    summary = summarise(rows)
    report = {
        "command": " ".join([os.path.relpath(sys.executable), *sys.argv]),
        "settings": {
            "split": args.split,
            "seeds": args.seeds,
            "labels_per_annotator": args.labels,
            "shares": args.shares,
            "careless": args.careless,
            "criteria": args.criteria,
            "pool": POOL,
            "units_per_campaign": "10 x labels per annotator",
            "gold_rate": GOLD_RATE,
            "annotator_bootstrap": args.bootstrap,
            "seed_bootstrap": BOOTSTRAP_SEEDS,
            "jobs": args.jobs,
        },
        "wall_s": round(time.perf_counter() - started, 1),
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
        "targets": targets(summary),
        **summary,
    }
    text = json.dumps(rounded(report), indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return report


def _fmt(value: float | None, interval: Sequence[float | None] | None = None) -> str:
    if value is None:
        return "n/a"
    low, high = interval if interval is not None else (None, None)
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return f"{value:.2f}"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]"


def markdown(report: dict[str, Any]) -> str:
    """The tables of docs/ANNOTATOR_QUALITY.md from a run's JSON."""
    detection = {
        (r["case"], r["careless"], r["share"], r["n"], r["detector"]): r
        for r in report["detection"]
    }
    head = (
        "| case | careless | share | n | flags P | flags R | competence P | competence R "
        "| flags+gold P | flags+gold R |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = ["### Detection at 20% careless, every n (P / R: precision / recall)", "", head]
    lines += _detection_rows(detection, lambda share, n: share == 0.2)
    lines += ["", "### Detection at 10% and 30% careless, n = 30 and 50", "", head]
    lines += _detection_rows(detection, lambda share, n: share in (0.1, 0.3) and n >= 30)
    lines += [
        "",
        "### Honest annotators flagged in the clean pool (share of the 30)",
        "",
        "| case | n | flags | competence | gold | flags+gold |",
        "|---|---|---|---|---|---|",
    ]
    for case, kind, share, n, detector in sorted(detection):
        if share == 0 and detector == "flags":
            cells = [
                _fmt(
                    detection[(case, kind, share, n, d)]["honest_flag_rate"],
                    detection[(case, kind, share, n, d)]["honest_flag_rate_ci95"],
                )
                for d in DETECTORS
            ]
            lines.append(f"| {case} | {n} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "### Judges' metric error at 20% careless, all judges pooled (n = 10, 30, 50)",
        "",
        "| case | careless | n | metric | plain | model/plain | model (own clean)/plain "
        "| exclude/plain | exclude+gold/plain | oracle/plain |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += _error_rows(
        report,
        lambda row: row["judge"] == "all judges" and row["share"] == 0.2 and row["n"] != 20,
    )
    lines += [
        "",
        "### Each judge, 20% careless, n = 30",
        "",
        "| case | careless | share | judge | metric | plain | model/plain "
        "| model (own clean)/plain | exclude/plain | exclude+gold/plain | oracle/plain |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += _error_rows(
        report,
        lambda row: (
            row["case"] == "pandalm"
            and row["n"] == 30
            and row["share"] == 0.2
            and row["judge"] != "all judges"
        ),
        judge=True,
    )
    lines += [
        "",
        "### The clean pool (share 0, n = 10 and 50): each rule against the clean plain reference",
        "",
        "| case | n | metric | plain | model | model (own clean) | exclude | exclude+gold |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report["judges_error"]:
        if row["share"] == 0 and row["judge"] == "all judges" and row["n"] in (10, 50):
            cells = [_fmt(row[rule], row[f"{rule}_ci95"]) for rule in RULES[:2]]
            cells.append(_fmt(row["model_same_rule"], row["model_same_rule_ci95"]))
            cells += [_fmt(row[rule], row[f"{rule}_ci95"]) for rule in RULES[2:4]]
            lines.append(
                f"| {row['case']} | {row['n']} | {row['metric']} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def _detection_rows(detection: dict, keep: Any) -> list[str]:
    lines = []
    for case, kind, share, n, detector in sorted(detection):
        if detector != "flags" or share == 0 or not keep(share, n):
            continue
        cells = []
        for name in ("flags", "competence", "flags+gold"):
            row = detection[(case, kind, share, n, name)]
            cells += [
                _fmt(row["precision"], row["precision_ci95"]),
                _fmt(row["recall"], row["recall_ci95"]),
            ]
        lines.append(f"| {case} | {kind} | {share:.0%} | {n} | " + " | ".join(cells) + " |")
    return lines


def _error_rows(report: dict[str, Any], keep: Any, judge: bool = False) -> list[str]:
    lines = []
    for row in report["judges_error"]:
        if row["share"] == 0 or not keep(row):
            continue
        first = (
            f"| {row['case']} | {row['careless']} | {row['share']:.0%} | {row['judge']} "
            if judge
            else f"| {row['case']} | {row['careless']} | {row['n']} "
        )
        cells = [_fmt(row["plain"], row["plain_ci95"])]
        cells += [
            _fmt(row[f"{rule}_over_plain"], row[f"{rule}_over_plain_ci95"])
            for rule in ("model", "model_same_rule", "exclude", "exclude+gold", "oracle")
        ]
        lines.append(first + f"| {row['metric']} | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    main()
