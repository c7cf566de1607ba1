"""What local and remote judges share: which calls to make, and the judgement row of an answer.

A *job* is one call to a judge: a unit, the order its responses are shown in (pairwise: ``AB``
canonical, ``BA`` swapped, both when asked), a sample number, and the rendered prompt. Jobs whose
``(unit_key, shown_order, sample)`` the same judge already answered with the same template are
left out, so an interrupted run picks up where it stopped.

:func:`run_jobs` is the loop both share (prepare → ask → parse → store): units the judge does not
see are stored as ``skipped``, the rest go to the judge's ``ask`` chunk by chunk, and each
chunk's judgements are stored in one transaction, so an interrupted run keeps every finished
chunk and nothing half-written. ``critic score`` asks a local model in batches, ``judge run`` an
endpoint with concurrent requests; each adds only its own extras (probability read-outs, cache).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from critic.judge_prompt import JudgePrompt, build_prompt
from critic.parsing import parse_judgement
from critic.prompts import PromptTemplate
from data.readmodels.critic_io import CampaignUnit, store_judgements
from data.storage.engine import session_scope
from schemas.protocols import Protocol, to_canonical
from schemas.tables import Judgement


@dataclass(frozen=True)
class JudgeJob:
    """One judge call: a unit shown in one order, one sample, its prompt."""

    unit: CampaignUnit
    shown_order: str
    """``AB`` (canonical order shown) or ``BA`` (swapped); pointwise units are ``AB``."""
    sample: int
    prompt: JudgePrompt


def plan_jobs(
    units: list[CampaignUnit],
    protocol: Protocol,
    template: PromptTemplate,
    *,
    vision: bool,
    resolve_image: Callable[[str], Path],
    both_orders: bool = False,
    samples: int = 1,
    show_reference: bool = True,
    done: Collection[tuple[str, str, int]] = (),
) -> list[JudgeJob]:
    """Every call still to make for ``units`` (those in ``done`` are skipped)."""
    orders = ("AB", "BA") if both_orders and not protocol.is_pointwise else ("AB",)
    jobs = []
    for unit in units:
        for order in orders:
            wanted = [s for s in range(samples) if (unit.unit_key, order, s) not in done]
            if not wanted:
                continue
            shown = unit.responses if order == "AB" else unit.responses[::-1]
            prompt = build_prompt(
                template,
                protocol,
                unit.item,
                shown,
                vision=vision,
                resolve_image=resolve_image,
                show_reference=show_reference,
            )
            jobs += [JudgeJob(unit, order, sample, prompt) for sample in wanted]
    return jobs


def judgement_row(
    job: JudgeJob,
    *,
    judge: str,
    protocol: Protocol,
    raw_output: str,
    expected_score: float | None = None,
    usage: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> Judgement:
    """The stored judgement for ``raw_output``: parsed value (pairwise mapped back to the canonical
    order), rationale, parse status, raw text, template id and input hash."""
    parsed = parse_judgement(raw_output, protocol)
    preference = None
    if not protocol.is_pointwise and parsed.value is not None:
        preference = to_canonical(str(parsed.value), swapped=job.shown_order == "BA")
    return _row(
        job,
        judge=judge,
        protocol=protocol,
        score=float(parsed.value) if protocol.is_pointwise and parsed.value is not None else None,
        preference=preference,
        expected_score=expected_score,
        rationale=parsed.rationale,
        raw_output=raw_output,
        parse_status=parsed.status,
        usage=usage or {},
        meta={**job.prompt.meta, **(meta or {})},
    )


def skipped_row(job: JudgeJob, *, judge: str, protocol: Protocol) -> Judgement:
    """A unit the judge does not see (MMIE: too many images), stored as ``skipped``."""
    return _row(
        job,
        judge=judge,
        protocol=protocol,
        score=None,
        preference=None,
        expected_score=None,
        rationale="",
        raw_output="",
        parse_status="skipped",
        usage={},
        meta={**job.prompt.meta, "skipped": job.prompt.skipped},
    )


def _row(job: JudgeJob, *, judge: str, protocol: Protocol, **values: Any) -> Judgement:
    unit = job.unit
    return Judgement(
        judge=judge,
        protocol=protocol.name,
        unit_key=unit.unit_key,
        response_pk=unit.responses[0].response_pk if unit.pair_pk is None else None,
        pair_pk=unit.pair_pk,
        shown_order=job.shown_order,
        sample=job.sample,
        prompt_id=job.prompt.prompt_id,
        input_sha256=job.prompt.input_sha256,
        **values,
    )


@dataclass
class Answered:
    """What a judge's ``ask`` made of one chunk of jobs."""

    rows: list[Judgement]
    """The judge's parsed judgements (jobs that failed for good are left out)."""
    derived: list[Judgement] = field(default_factory=list)
    """Judgements of other judge names read off the same calls (``<judge>-probs``)."""
    write: Callable[[Session], None] | None = None
    """Also written in the chunk's transaction, before the rows (the remote cache)."""


@dataclass
class RunTally:
    """What :func:`run_jobs` stored."""

    stored: int = 0
    """The judge's judgements added (skipped units included)."""
    statuses: Counter[str] = field(default_factory=Counter)
    """Parse status → count over the judge's judgements stored."""
    derived: Counter[str] = field(default_factory=Counter)
    """Other judge name → judgements added."""


def run_jobs(
    engine: Engine,
    jobs: list[JudgeJob],
    ask: Callable[[list[JudgeJob]], Answered],
    *,
    judge: str,
    protocol: Protocol,
    chunk_size: int,
    progress: Callable[[int], None] = lambda _n: None,
) -> RunTally:
    """Store ``jobs`` judged: skipped ones at once, the rest through ``ask`` in chunks of
    ``chunk_size`` (in the order given), one transaction per chunk (module docstring)."""
    tally = RunTally()
    skipped = [
        skipped_row(job, judge=judge, protocol=protocol) for job in jobs if job.prompt.skipped
    ]
    _store(engine, Answered(skipped), tally)
    progress(len(skipped))
    runnable = [job for job in jobs if not job.prompt.skipped]
    for start in range(0, len(runnable), chunk_size):
        chunk = runnable[start : start + chunk_size]
        _store(engine, ask(chunk), tally)
        progress(len(chunk))
    return tally


def _store(engine: Engine, answered: Answered, tally: RunTally) -> None:
    if not (answered.rows or answered.derived or answered.write):
        return
    with session_scope(engine) as session:
        if answered.write is not None:
            answered.write(session)
        tally.stored += store_judgements(session, answered.rows)
        for name in dict.fromkeys(row.judge for row in answered.derived):
            rows = [row for row in answered.derived if row.judge == name]
            tally.derived[name] += store_judgements(session, rows)
    tally.statuses.update(row.parse_status for row in answered.rows)
