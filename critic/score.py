"""``critiquelab critic score``: a local critic judges a campaign's units into the database.

Resumable: units already judged by the same judge name with the same template (``prompt_id``)
are skipped. Judgements are written batch by batch, each batch in its own transaction, so an
interrupted run keeps every finished batch and nothing half-written.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from critic.judging import JudgeJob, judgement_row, plan_jobs, skipped_row
from critic.local import GenerationOptions, expected_scores, generate
from critic.modeling import LoadedModel
from critic.prompts import PromptTemplate, builtin_template, score_prefix
from data.critic_io import (
    campaign_info,
    campaign_units,
    image_resolver,
    judged_keys,
    store_judgements,
)
from data.storage import session_scope
from schemas.protocols import Protocol
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


def score_campaign(
    engine: Engine,
    campaign: str,
    critic: LoadedModel,
    options: ScoreOptions,
    progress: Callable[[int], None] = lambda _n: None,
) -> ScoreSummary:
    """Judge every unit of ``campaign`` not yet judged by ``options.judge_name``."""
    started = time.perf_counter()
    if options.samples > 1 and not options.generation.do_sample:
        raise ValueError("--samples above 1 needs sampling: add --sample (greedy gives one answer)")
    vision = critic.kind == "vision" if options.vision is None else options.vision
    if vision and critic.kind != "vision":
        raise ValueError("--vision needs a vision-language critic; this one is text-only")
    with session_scope(engine) as session:
        info = campaign_info(session, campaign)
        template = options.template or builtin_template(info.protocol.name, options.language)
        prompt_id = template.prompt_id(vision=vision)
        units = campaign_units(session, info.id)
        done = judged_keys(session, options.judge_name, prompt_id)
    protocol = info.protocol
    if options.expected_score and not (protocol.is_pointwise and protocol.is_discrete):
        raise ValueError("--expected-score needs a pointwise protocol with a discrete scale")
    jobs = plan_jobs(
        units,
        protocol,
        template,
        vision=vision,
        resolve_image=image_resolver(engine),
        both_orders=options.both_orders,
        samples=options.samples,
        show_reference=info.show_reference,
        done=done,
    )
    planned = len(units) * (2 if options.both_orders and not protocol.is_pointwise else 1)
    already_judged = planned * options.samples - len(jobs)
    if options.limit is not None:
        keep = set(list(dict.fromkeys(job.unit.unit_key for job in jobs))[: options.limit])
        jobs = [job for job in jobs if job.unit.unit_key in keep]
    statuses: Counter[str] = Counter()
    skipped = [
        skipped_row(job, judge=options.judge_name, protocol=protocol)
        for job in jobs
        if job.prompt.skipped
    ]
    runnable = sorted((job for job in jobs if not job.prompt.skipped), key=_prompt_size)
    stored = _store(engine, skipped, statuses)
    progress(len(skipped))
    chunk_size = options.generation.batch_size * COMMIT_EVERY_BATCHES
    for start in range(0, len(runnable), chunk_size):
        chunk = runnable[start : start + chunk_size]
        rows = _judge_chunk(critic, chunk, template, protocol, options)
        stored += _store(engine, rows, statuses)
        progress(len(chunk))
    return ScoreSummary(
        judge=options.judge_name,
        prompt_id=prompt_id,
        units=len(units),
        already_judged=already_judged,
        stored=stored,
        statuses=dict(statuses),
        seconds=time.perf_counter() - started,
        trained_prompt_id=critic.info.get("prompt_id"),
    )


def _judge_chunk(
    critic: LoadedModel,
    chunk: list[JudgeJob],
    template: PromptTemplate,
    protocol: Protocol,
    options: ScoreOptions,
) -> list[Judgement]:
    prompts = [job.prompt for job in chunk]
    generation = GenerationOptions(
        max_new_tokens=options.generation.max_new_tokens,
        do_sample=options.generation.do_sample,
        temperature=options.generation.temperature,
        num_samples=1,
        batch_size=options.generation.batch_size,
    )
    outputs = [answers[0] for answers in generate(critic, prompts, generation)]
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
    return [
        judgement_row(
            job,
            judge=options.judge_name,
            protocol=protocol,
            raw_output=output,
            expected_score=value,
        )
        for job, output, value in zip(chunk, outputs, expected, strict=True)
    ]


def _store(engine: Engine, rows: list[Judgement], statuses: Counter[str]) -> int:
    if not rows:
        return 0
    with session_scope(engine) as session:
        added = store_judgements(session, rows)
    statuses.update(row.parse_status for row in rows)
    return added


def _prompt_size(job: JudgeJob) -> int:
    return sum(len(str(message["content"])) for message in job.prompt.messages)
