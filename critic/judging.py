"""What local and remote judges share: which calls to make, and the judgement row of an answer.

A *job* is one call to a judge: a unit, the order its responses are shown in (pairwise: ``AB``
canonical, ``BA`` swapped, both when asked), a sample number, and the rendered prompt. Jobs whose
``(unit_key, shown_order, sample)`` the same judge already answered with the same template are
left out, so an interrupted run picks up where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from critic.parsing import parse_judgement
from critic.prompts import JudgePrompt, PromptTemplate, build_prompt
from data.critic_io import CampaignUnit
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
        score=parsed.value if protocol.is_pointwise else None,  # type: ignore[arg-type]
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
