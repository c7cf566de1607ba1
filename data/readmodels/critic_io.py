"""What the critic reads from and writes to the database.

* :func:`campaign_units` — every unit of a campaign with its item and response content, in the
  canonical order (a pair's ``response_a`` first);
* :func:`annotated_units` — the same units with their live human labels and live adjudication,
  for the SFT export;
* :func:`judged_keys` / :func:`store_judgements` — resumable judging through
  :func:`data.services.judgements.insert_judgements`;
* :func:`cached_outputs` / :func:`store_cached_output` — the remote judge's cache (``JudgeCache``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select as core_select
from sqlalchemy import union
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from data.readmodels.frames import item_content
from data.services.counted_answers import not_rejected
from data.services.judgements import insert_judgements
from data.storage.content import resolve_image
from data.storage.engine import engine_data_dir
from schemas.core import stored_id
from schemas.core_tables import ANNOTATIONS, JUDGE_CACHE, PAIRS, RESPONSES, UNITS, USERS
from schemas.ids import pair_unit_key, response_unit_key
from schemas.items import ItemContent, ResponseContent
from schemas.tables import (
    Adjudication,
    Item,
    JudgeCache,
    Judgement,
    utcnow,
)


@dataclass(frozen=True)
class CampaignUnit:
    """One unit to judge: a response (pointwise) or a pair in canonical order (pairwise)."""

    unit_id: int
    unit_key: str
    """``r:<response_id>`` or ``p:<a>|<b>``."""
    item: ItemContent
    responses: tuple[ResponseContent, ...]
    """One response (pointwise) or two, ``(response_a, response_b)`` (pairwise)."""
    pair_pk: int | None


@dataclass(frozen=True)
class HumanLabel:
    """One annotator's live judgement of a unit (preference in canonical order)."""

    annotator: str
    score: float | None
    preference: str | None
    shown_order: str | None
    rationale: str


@dataclass(frozen=True)
class AnnotatedUnit:
    """A unit with its live human labels and its live adjudicated label, if any."""

    unit: CampaignUnit
    labels: tuple[HumanLabel, ...]
    adjudicated: float | str | None


def campaign_units(session: Session, campaign_id: int) -> list[CampaignUnit]:
    """Every real unit of the campaign with its content, ordered by unit id (flagged ones too;
    gold units never: they are not judged, nor exported for training, nor in the reference).

    Items, pairs and responses are selected by the campaign's units in SQL, not by a list of
    ids: SQLite refuses a statement with more than 250,000 parameters (its limit here), which a
    campaign of that many units would need. Units, pairs and responses are read as columns, not
    ORM objects, which a million-unit campaign would hold in the session's identity map.
    """
    own = (UNITS.c.campaign_id == campaign_id) & UNITS.c.gold.is_(False)
    units = session.execute(
        core_select(UNITS.c.id, UNITS.c.item_pk, UNITS.c.response_pk, UNITS.c.pair_pk)
        .where(own)
        .order_by(UNITS.c.id)
    ).all()
    pair_ids = core_select(UNITS.c.pair_pk).where(own)
    pairs = {
        row.id: (row.response_a_pk, row.response_b_pk)
        for row in session.execute(
            core_select(PAIRS.c.id, PAIRS.c.response_a_pk, PAIRS.c.response_b_pk).where(
                PAIRS.c.id.in_(pair_ids)
            )
        )
    }
    response_ids = union(
        core_select(UNITS.c.response_pk).where(own),
        core_select(PAIRS.c.response_a_pk).where(PAIRS.c.id.in_(pair_ids)),
        core_select(PAIRS.c.response_b_pk).where(PAIRS.c.id.in_(pair_ids)),
    )
    responses = {
        row.id: ResponseContent(row.response_id, row.model, row.content, row.id)
        for row in session.execute(
            core_select(
                RESPONSES.c.id, RESPONSES.c.response_id, RESPONSES.c.model, RESPONSES.c.content
            ).where(RESPONSES.c.id.in_(response_ids))
        )
    }
    items = {
        stored_id(item): item_content(item)
        for item in session.exec(
            select(Item).where(col(Item.id).in_(core_select(UNITS.c.item_pk).where(own)))
        )
    }
    result = []
    for unit in units:
        chosen: tuple[ResponseContent, ...]
        if unit.pair_pk is not None:
            response_a, response_b = pairs[unit.pair_pk]
            chosen = (responses[response_a], responses[response_b])
            key = pair_unit_key(chosen[0].response_id, chosen[1].response_id)
        elif unit.response_pk is not None:
            chosen = (responses[unit.response_pk],)
            key = response_unit_key(chosen[0].response_id)
        else:
            raise ValueError(f"unit {unit.id} has neither a response nor a pair")
        result.append(CampaignUnit(unit.id, key, items[unit.item_pk], chosen, unit.pair_pk))
    return result


def annotated_units(session: Session, campaign_id: int) -> list[AnnotatedUnit]:
    """Units that have at least one live human annotation, with those labels (answers a reviewer
    rejected left out: :func:`data.services.counted_answers.not_rejected`).

    Labels are sorted by annotator name; the adjudicated label is the live adjudication's score
    (pointwise) or preference (pairwise), or None. The answers are read as columns, not ORM
    objects (a million-unit campaign has millions).
    """
    answers = ANNOTATIONS
    rows = session.execute(
        core_select(
            answers.c.unit_id,
            USERS.c.name,
            answers.c.score,
            answers.c.preference,
            answers.c.shown_order,
            answers.c.rationale,
        )
        .join(USERS, USERS.c.id == answers.c.annotator_id)
        .where(answers.c.campaign_id == campaign_id, answers.c.is_live.is_(True))
        .where(not_rejected(answers.c.assignment_id, campaign_id))
    ).all()
    labels: dict[int, list[HumanLabel]] = defaultdict(list)
    for unit_id, annotator, score, preference, shown_order, rationale in rows:
        labels[unit_id].append(HumanLabel(annotator, score, preference, shown_order, rationale))
    adjudications = session.exec(
        select(Adjudication).where(Adjudication.campaign_id == campaign_id, Adjudication.is_live)
    ).all()
    adjudicated = {
        row.unit_id: (row.score if row.score is not None else row.preference)
        for row in adjudications
    }
    return [
        AnnotatedUnit(
            unit=unit,
            labels=tuple(sorted(labels[unit.unit_id], key=lambda label: label.annotator)),
            adjudicated=adjudicated.get(unit.unit_id),
        )
        for unit in campaign_units(session, campaign_id)
        if labels.get(unit.unit_id)
    ]


def judged_keys(session: Session, judge: str, prompt_id: str) -> set[tuple[str, str, int]]:
    """``(unit_key, shown_order, sample)`` already judged by ``judge`` with ``prompt_id``."""
    rows = session.exec(
        select(Judgement.unit_key, Judgement.shown_order, Judgement.sample).where(
            Judgement.judge == judge, Judgement.prompt_id == prompt_id
        )
    ).all()
    return {(key, order, sample) for key, order, sample in rows}


def store_judgements(session: Session, rows: list[Judgement]) -> int:
    """Insert model judgements, skipping keys that exist; return how many were added."""
    return insert_judgements(session, rows)


def cached_outputs(
    session: Session, model: str, prompt_id: str, input_hashes: list[str]
) -> dict[str, JudgeCache]:
    """Cached remote answers for these input hashes, keyed by hash."""
    if not input_hashes:
        return {}
    rows = session.exec(
        select(JudgeCache).where(
            JudgeCache.model == model,
            JudgeCache.prompt_id == prompt_id,
            col(JudgeCache.input_sha256).in_(input_hashes),
        )
    ).all()
    return {row.input_sha256: row for row in rows}


def store_cached_output(
    session: Session, model: str, prompt_id: str, input_sha256: str, output: str, usage: dict
) -> None:
    """Remember a remote answer; a key that is already cached is left as it is."""
    values = {
        "model": model,
        "prompt_id": prompt_id,
        "input_sha256": input_sha256,
        "output": output,
        "usage": usage,
        "created_at": utcnow(),  # JudgeCache.created_at's default
    }
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(JUDGE_CACHE).values(values).on_conflict_do_nothing()
    session.connection().execute(statement)


def image_resolver(engine: Engine) -> Callable[[str], Path]:
    """Stored CONTENT image path → file in the data folder of ``engine``'s database (confined)."""
    root = engine_data_dir(engine)
    return lambda stored_path: resolve_image(stored_path, root)
