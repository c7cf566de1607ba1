"""``critiquelab critic score``: a local critic judges a campaign's units into the database.

Resumable: units already judged by the same judge name with the same template (``prompt_id``)
are skipped.

Pairwise read-outs beside the written verdict (``--preference-probs``, and ``--both-orders`` for a
position-debiased verdict) are :mod:`critic.probabilities`. A head critic (``critic train
--objective head``) gives probabilities without generating; its own judgements are their argmax.

Judgements are written batch by batch, each batch in its own transaction, so an
interrupted run keeps every finished batch and nothing half-written.

Each judgement of a generating critic stores ``usage.prompt_tokens`` (the prompt's tokens) and
``usage.completion_tokens`` (tokens generated, up to the end-of-sequence token), and
``meta.latency``: its generation batch's wall time divided by the batch size (batched generation
has no per-prompt time), plus its share (wall time / prompts) of the chunk's extra forward
passes for ``--expected-score`` / ``--preference-probs``. A head critic stores the prompt's tokens,
no completion tokens, and the chunk's feature-and-head time divided by its prompts. The
``-probs`` / ``-debiased`` read-outs record neither: the cost audit charges them the calls of the
judge they are read out of (:mod:`schemas.readouts`, :mod:`calibration.cost`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine

from critic.judging import Answered, JudgeJob, judgement_row, plan_jobs, run_jobs
from critic.local import (
    GenerationOptions,
    encode_prompt,
    expected_scores,
    generate_measured,
    verdict_probabilities,
)
from critic.modeling import LoadedModel
from critic.probabilities import canonical_probs, debiased_rows, verdict_text
from critic.prompts import (
    SHOWN_VERDICTS,
    PromptTemplate,
    builtin_template,
    format_target,
    score_prefix,
    verdict_prefix,
)
from critic.sft import read_sft
from data.readmodels.critic_io import (
    campaign_units,
    image_resolver,
    judged_keys,
    store_judgements,
)
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from data.storage.engine import read_scope, session_scope
from schemas.bounds import BATCH_SIZE, LIMIT, MAX_NEW_TOKENS, SAMPLES, first_problem
from schemas.core import stored_id
from schemas.option_text import OptionError, OptionText
from schemas.protocols import Protocol
from schemas.readouts import DEBIASED_SUFFIX, PROBS_SUFFIX
from schemas.tables import Judgement

COMMIT_EVERY_BATCHES = 4
"""Batches of generation per database transaction."""


@dataclass(frozen=True)
class ScoreOptions:
    """How a campaign is scored by a local critic."""

    judge_name: str
    template: PromptTemplate | None = None
    """None: the built-in template of the campaign's protocol in ``language``."""
    language: str = "en"
    vision: bool | None = None
    """Show images; None = when the critic is a vision-language model."""
    both_orders: bool = False
    """Pairwise: judge every pair as shown in both orders (position-consistency metric)."""
    samples: int = 1
    """Answers per unit (sampling only; greedy decoding gives one)."""
    expected_score: bool = False
    """Also store Σ p(s)·s over the scale's score tokens (discrete pointwise scales)."""
    limit: int | None = None
    """Judge at most this many units not yet judged (in unit order); a later run continues."""
    preference_probs: bool = False
    """Pairwise: also read p(A), p(B), p(tie) after the verdict prefix (one forward pass), stored
    in ``meta.probs`` (canonical order) and as the judge ``<judge_name>-probs``."""
    unit_keys: frozenset[str] | None = None
    """Judge only these units (e.g. one split of an SFT file); None judges every unit."""
    max_prompt_tokens: int | None = None
    """Leave out (not stored, counted in :attr:`ScoreSummary.too_long`) every call whose prompt is
    longer than this many tokens; a later run with a higher limit judges them. None: no limit."""
    generation: GenerationOptions = field(default_factory=GenerationOptions)


@dataclass(frozen=True)
class ScoreSummary:
    """What a scoring run did."""

    judge: str
    prompt_id: str
    units: int
    already_judged: int
    """Calls skipped because the same judge and template answered them before."""
    stored: int
    statuses: dict[str, int]
    """Parse status → count, over the judgements stored by this run."""
    seconds: float
    trained_prompt_id: str | None = None
    """The template the critic was trained with (from critic.json), when known."""
    derived: dict[str, int] = field(default_factory=dict)
    """``<judge>-probs`` / ``<judge>-debiased`` → judgements stored by this run."""
    too_long: int = 0
    """Calls left out because their prompt is longer than ``max_prompt_tokens`` (not stored)."""


def check_score_options(engine: Engine, campaign: str, options: ScoreOptions) -> None:
    """Refuse what is wrong with ``options`` for ``campaign`` without the critic: the
    whole-number bounds (:mod:`schemas.bounds`), the campaign itself, the prompt language and
    the read-outs its protocol allows. A front end calls it before loading the model, which
    takes minutes on a CPU; :func:`score_campaign` calls it too."""
    problem = first_problem(
        (SAMPLES, options.samples),
        (BATCH_SIZE, options.generation.batch_size),
        (MAX_NEW_TOKENS, options.generation.max_new_tokens),
        *([(LIMIT, options.limit)] if options.limit is not None else []),
    )
    if problem is not None:
        raise OptionError(problem)
    if options.samples > 1 and not options.generation.do_sample:
        raise OptionError(
            OptionText("{samples} above 1 needs sampling: add {sample} (greedy gives one answer)")
        )
    temperature = options.generation.temperature
    if options.generation.do_sample and not (math.isfinite(temperature) and temperature > 0):
        raise OptionError(
            OptionText("{temperature} is {value}; give a number above 0", value=temperature)
        )
    if options.max_prompt_tokens is not None and options.max_prompt_tokens < 1:
        raise OptionError(
            OptionText("{max_prompt_tokens} is {value}; give a positive number of tokens",
                       value=options.max_prompt_tokens)
        )  # fmt: skip
    with read_scope(engine) as session:
        protocol = campaign_protocol(get_campaign(session, campaign))
    if options.template is None:
        builtin_template(protocol.name, options.language)  # an unknown language is refused
    if options.expected_score and not (protocol.is_pointwise and protocol.is_discrete):
        raise OptionError(
            OptionText("{expected_score} needs a pointwise protocol with a discrete scale")
        )
    if options.preference_probs and protocol.is_pointwise:
        raise OptionError(
            OptionText("{preference_probs} needs a pairwise campaign; scores: {expected_score}")
        )


def score_campaign(
    engine: Engine,
    campaign: str,
    critic: LoadedModel,
    options: ScoreOptions,
    progress: Callable[[int], None] = lambda _n: None,
) -> ScoreSummary:
    """Judge every unit of ``campaign`` not yet judged by ``options.judge_name``."""
    started = time.perf_counter()
    check_score_options(engine, campaign, options)
    vision = critic.kind == "vision" if options.vision is None else options.vision
    if vision and critic.kind != "vision":
        raise OptionError(
            OptionText("{vision} needs a vision-language critic; this one is text-only")
        )
    with read_scope(engine) as session:
        found = get_campaign(session, campaign)
        protocol, show_reference = campaign_protocol(found), found.show_reference
        template = options.template or builtin_template(protocol.name, options.language)
        prompt_id = template.prompt_id(vision=vision)
        units = campaign_units(session, stored_id(found))
        done = judged_keys(session, options.judge_name, prompt_id)
    if options.unit_keys is not None:
        units = [unit for unit in units if unit.unit_key in options.unit_keys]
    jobs = plan_jobs(
        units,
        protocol,
        template,
        vision=vision,
        resolve_image=image_resolver(engine),
        both_orders=options.both_orders,
        samples=options.samples,
        show_reference=show_reference,
        done=done,
    )
    planned = len(units) * (2 if options.both_orders and not protocol.is_pointwise else 1)
    already_judged = planned * options.samples - len(jobs)
    too_long = 0
    if options.max_prompt_tokens is not None:
        fits = [_fits(critic, job, options.max_prompt_tokens) for job in jobs]
        too_long = fits.count(False)
        jobs = [job for job, fit in zip(jobs, fits, strict=True) if fit]
    if options.limit is not None:
        keep = set(list(dict.fromkeys(job.unit.unit_key for job in jobs))[: options.limit])
        jobs = [job for job in jobs if job.unit.unit_key in keep]
    tally = run_jobs(
        engine,
        sorted(jobs, key=_prompt_size),
        lambda chunk: _judge_chunk(critic, chunk, template, protocol, options),
        judge=options.judge_name,
        protocol=protocol,
        chunk_size=options.generation.batch_size * COMMIT_EVERY_BATCHES,
        progress=progress,
    )
    gives_probs = options.preference_probs or critic.head is not None
    if options.both_orders and gives_probs and not protocol.is_pointwise:
        name = options.judge_name + DEBIASED_SUFFIX
        with session_scope(engine) as session:
            rows = debiased_rows(session, options.judge_name, name, prompt_id, protocol)
            tally.derived[name] += store_judgements(session, rows)
    return ScoreSummary(
        judge=options.judge_name,
        prompt_id=prompt_id,
        units=len(units),
        already_judged=already_judged,
        stored=tally.stored,
        statuses=dict(tally.statuses),
        seconds=time.perf_counter() - started,
        trained_prompt_id=critic.info.get("prompt_id"),
        derived={name: count for name, count in tally.derived.items() if count},
        too_long=too_long,
    )


def _judge_chunk(
    critic: LoadedModel,
    chunk: list[JudgeJob],
    template: PromptTemplate,
    protocol: Protocol,
    options: ScoreOptions,
) -> Answered:
    """The chunk's judgements of ``options.judge_name``; those of ``<judge>-probs`` derived."""
    prompts = [job.prompt for job in chunk]
    if critic.head is not None:
        return Answered(_head_rows(critic, chunk, template, protocol, options))
    generation = GenerationOptions(
        max_new_tokens=options.generation.max_new_tokens,
        do_sample=options.generation.do_sample,
        temperature=options.generation.temperature,
        num_samples=1,
        batch_size=options.generation.batch_size,
    )
    generations = generate_measured(critic, prompts, generation)
    extra_started = time.perf_counter()
    expected: list[float | None] = [None] * len(chunk)
    if options.expected_score:
        expected = list(
            expected_scores(
                critic,
                prompts,
                answer_prefix=score_prefix(template),
                scale_points=protocol.scale_points(),
                batch_size=options.generation.batch_size,
            )
        )
    probs: list[dict[str, float] | None] = [None] * len(chunk)
    if options.preference_probs:
        shown = verdict_probabilities(
            critic,
            prompts,
            answer_prefix=verdict_prefix(template),
            verdicts=SHOWN_VERDICTS,
            batch_size=options.generation.batch_size,
        )
        probs = [canonical_probs(p, job.shown_order) for p, job in zip(shown, chunk, strict=True)]
    extra = (time.perf_counter() - extra_started) / len(chunk)
    rows = [
        judgement_row(
            job,
            judge=options.judge_name,
            protocol=protocol,
            raw_output=made.texts[0],
            expected_score=value,
            usage={
                "prompt_tokens": made.prompt_tokens,
                "completion_tokens": made.completion_tokens,
            },
            meta={"latency": made.latency + extra, **({"probs": p} if p else {})},
        )
        for job, made, value, p in zip(chunk, generations, expected, probs, strict=True)
    ]
    derived = [
        judgement_row(
            job,
            judge=options.judge_name + PROBS_SUFFIX,
            protocol=protocol,
            raw_output=verdict_text(p, job.shown_order),
            meta={"probs": p},
        )
        for job, p in zip(chunk, probs, strict=True)
        if p
    ]
    return Answered(rows, derived)


def _head_rows(
    critic: LoadedModel,
    chunk: list[JudgeJob],
    template: PromptTemplate,
    protocol: Protocol,
    options: ScoreOptions,
) -> list[Judgement]:
    """A head critic: class probabilities of each prompt; the verdict (or score) is the argmax,
    written in the template's answer format so that it parses like a generated one."""
    from critic.collate import render_prompt
    from critic.head_features import prompt_features

    head = critic.head
    assert head is not None  # _judge_chunk calls this for a head critic only
    started = time.perf_counter()
    features = prompt_features(
        critic,
        [job.prompt.messages for job in chunk],
        options.generation.batch_size,
        layers=(head.layer,),
        answer_spans=(
            [job.prompt.answer_spans for job in chunk] if head.kind == "pair-difference" else None
        ),
    )[head.layer]
    probabilities = head.probabilities(features)
    latency = (time.perf_counter() - started) / len(chunk)
    rows = []
    for job, row in zip(chunk, probabilities, strict=True):
        # the tokens prompt_features reads; a head generates none
        text = render_prompt(critic.tokenizer, job.prompt.messages)
        prompt_tokens = len(critic.tokenizer(text, add_special_tokens=False)["input_ids"])
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 0}
        shown = dict(zip(head.classes, map(float, row), strict=True))
        if protocol.is_pointwise:
            best = max(shown, key=shown.__getitem__)
            expected = sum(float(value) * p for value, p in shown.items())
            raw = format_target(template, protocol, float(best), "")
            rows.append(
                judgement_row(
                    job,
                    judge=options.judge_name,
                    protocol=protocol,
                    raw_output=raw,
                    expected_score=expected,
                    usage=usage,
                    meta={"probs": shown, "latency": latency},
                )
            )
        else:
            canonical = canonical_probs(shown, job.shown_order)
            rows.append(
                judgement_row(
                    job,
                    judge=options.judge_name,
                    protocol=protocol,
                    raw_output=verdict_text(canonical, job.shown_order),
                    usage=usage,
                    meta={"probs": canonical, "latency": latency},
                )
            )
    return rows


def split_unit_keys(path: Path, split: str) -> frozenset[str]:
    """Unit keys of the records of ``split`` (``train`` / ``eval``) in an SFT file (§4)."""
    if split not in ("train", "eval"):
        raise ValueError(f"split {split!r} is not train or eval")
    keys = frozenset(
        str(record.meta["unit_key"])
        for record in read_sft(path)
        if record.split == split and record.meta.get("unit_key")
    )
    if not keys:
        raise ValueError(f"{path} has no {split} records with meta.unit_key")
    return keys


def _fits(critic: LoadedModel, job: JudgeJob, max_tokens: int) -> bool:
    """Whether the job's prompt, as the critic reads it, has at most ``max_tokens`` tokens (a
    unit the judge does not see is stored as skipped all the same)."""
    if job.prompt.skipped:
        return True
    return len(encode_prompt(critic, job.prompt).input_ids) <= max_tokens


def _prompt_size(job: JudgeJob) -> int:
    """Sort key: similar lengths share a batch (little padding); skipped jobs keep plan order."""
    if job.prompt.skipped:
        return 0
    return sum(len(str(message["content"])) for message in job.prompt.messages)
