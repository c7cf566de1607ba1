"""Stored annotations and judgements as :class:`~schemas.records.JudgementRecord` objects."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter
from sqlmodel import Session, col, select

from data.io.importers.judgements import COLUMNS_IN_META
from data.readmodels.frames import campaign_judgements
from data.services.counted_answers import not_rejected
from data.storage.campaign_lookup import campaign_protocol, get_campaign
from schemas.core_tables import PAIRS, RESPONSES
from schemas.protocols import Preference, get_protocol
from schemas.records import JudgementRecord
from schemas.tables import Annotation, Judgement, Unit, User

_PREFERENCE = TypeAdapter(Preference | None)
"""Reads a stored preference (a ``str`` column; annotations' is kept to A, B or tie by a check
constraint) as the record's :data:`~schemas.protocols.Preference`, checked as the record would."""


def annotation_records(
    session: Session, campaign_name: str, *, all_revisions: bool = False
) -> list[JudgementRecord]:
    """The human judgements of a campaign: live annotations that a reviewer did not reject
    (every revision, rejected ones too, if asked), in the order they were made."""
    campaign = get_campaign(session, campaign_name)
    protocol = campaign_protocol(campaign)
    query = (
        select(Annotation, User.name, Unit.response_pk, Unit.pair_pk)
        .join(User, col(User.id) == col(Annotation.annotator_id))
        .join(Unit, col(Unit.id) == col(Annotation.unit_id))
        .where(Annotation.campaign_id == campaign.id, col(Unit.gold).is_(False))
        .order_by(col(Annotation.created_at), col(Annotation.id))
    )
    if not all_revisions:  # the answers that count: live, not rejected by a reviewer
        assert campaign.id is not None  # a stored campaign
        query = query.where(Annotation.is_live)
        query = query.where(not_rejected(col(Annotation.assignment_id), campaign.id))
    rows = list(session.exec(query))
    names = _unit_names(session, [(r[2], r[3]) for r in rows])
    records = []
    for annotation, annotator, response_pk, pair_pk in rows:
        unit = _unit_fields(names, response_pk, pair_pk, annotation.shown_order)
        records.append(
            JudgementRecord(
                judge=f"annotator:{annotator}",
                judge_kind="human",
                protocol=campaign.protocol,
                **unit,
                score=annotation.score,
                score_percent=_percent(protocol, annotation.score),
                preference=_PREFERENCE.validate_python(annotation.preference),
                rationale=annotation.rationale,
                annotator=annotator,
                seconds=annotation.seconds,
                revision=annotation.revision,
                campaign=campaign.name,
                created_at=_utc(annotation.created_at),
                meta={**annotation.meta, **({"synthetic": True} if annotation.synthetic else {})},
            )
        )
    return records


def model_judgement_records(
    session: Session, *, judges: Sequence[str] = (), campaign_name: str | None = None
) -> list[JudgementRecord]:
    """Model judgements (of ``judges`` if given; on the units of a campaign if given)."""
    query = select(Judgement)
    if campaign_name is not None:  # the judgements the campaign's calibration reads
        query = campaign_judgements(get_campaign(session, campaign_name), Judgement)
    scope = query
    if judges:
        query = query.where(col(Judgement.judge).in_(judges))
    judgements = list(session.execute(query.order_by(col(Judgement.id))).scalars())
    unknown = sorted(set(judges) - {judgement.judge for judgement in judgements})
    if unknown:  # a typo would write an empty file, silently
        everyone = scope.with_only_columns(col(Judgement.judge)).distinct()
        present = sorted(session.execute(everyone).scalars())
        raise ValueError(
            f"judge(s) {', '.join(unknown)} have no model judgements here; present: "
            + (", ".join(present) or "none")
        )
    names = _unit_names(session, [(j.response_pk, j.pair_pk) for j in judgements])
    records = []
    for judgement in judgements:
        protocol = _judgement_protocol(judgement.protocol)
        columns = {name: getattr(judgement, name) for name in COLUMNS_IN_META}
        kept = {name: value for name, value in columns.items() if value}
        records.append(
            JudgementRecord(
                judge=judgement.judge,
                judge_kind="model",
                protocol=judgement.protocol,
                **_unit_fields(
                    names, judgement.response_pk, judgement.pair_pk, judgement.shown_order
                ),
                score=judgement.score,
                score_percent=_percent(protocol, judgement.score),
                preference=judgement.preference,
                rationale=judgement.rationale,
                raw_output=judgement.raw_output or None,
                parse_status=judgement.parse_status,
                prompt_id=judgement.prompt_id or None,
                expected_score=judgement.expected_score,
                created_at=_utc(judgement.created_at),
                meta={**judgement.meta, **kept},
            )
        )
    return records


def _unit_names(
    session: Session, units: list[tuple[int | None, int | None]]
) -> dict[str, dict[int, Any]]:
    """Response ids of the responses and pairs named in ``units``."""
    response_pks = {r for r, _ in units if r is not None}
    pair_pks = {p for _, p in units if p is not None}
    pairs: dict[int, tuple[int, int]] = {}
    if pair_pks:
        for pk, a, b in session.connection().execute(
            select(PAIRS.c.id, PAIRS.c.response_a_pk, PAIRS.c.response_b_pk).where(
                PAIRS.c.id.in_(pair_pks)
            )
        ):
            pairs[pk] = (a, b)
            response_pks |= {a, b}
    responses: dict[int, str] = {}
    query = select(RESPONSES.c.id, RESPONSES.c.response_id)
    ordered = sorted(response_pks)
    for start in range(0, len(ordered), 500):
        chunk = ordered[start : start + 500]
        responses.update(session.connection().execute(query.where(RESPONSES.c.id.in_(chunk))).all())
    return {
        "responses": responses,
        "pairs": {pk: (responses[a], responses[b]) for pk, (a, b) in pairs.items()},
    }


def _unit_fields(
    names: dict[str, dict[int, Any]],
    response_pk: int | None,
    pair_pk: int | None,
    shown_order: str | None,
) -> dict[str, Any]:
    if response_pk is not None:
        return {"response_id": names["responses"][response_pk]}
    assert pair_pk is not None
    a, b = names["pairs"][pair_pk]
    return {"pair": (a, b), "shown": (b, a) if shown_order == "BA" else (a, b)}


def _judgement_protocol(name: str) -> Any:
    return get_protocol(name) if name in ("alignmmbench", "mmie", "pairwise") else None


def _utc(moment: datetime) -> datetime:
    """Stored times are UTC; SQLite gives them back without a zone, so say so."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _percent(protocol: Any, score: float | None) -> float | None:
    if protocol is None or score is None or not protocol.percent:
        return None
    return protocol.percent_of(score)
