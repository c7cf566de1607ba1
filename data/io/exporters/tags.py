"""Disagreement tags out to files: one row per live tag (FORMATS.md "Disagreement tags")."""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path

from sqlmodel import Session

from data.io.exporters.files import write_rows
from data.services.disagreements import campaign_tags
from schemas.disagreements import TagRecord

TAG_COLUMNS: tuple[str, ...] = tuple(field.name for field in fields(TagRecord))


def export_disagreement_tags(
    session: Session, campaign: str, path: Path, export_format: str, *, all_tags: bool = False
) -> int:
    """Write the campaign's live tags (every tag, retired ones too, with ``all_tags``) to
    ``path``; ``created_at`` is ISO 8601 UTC. Return how many were written."""
    records = campaign_tags(session, campaign, live_only=not all_tags)
    rows = [{**asdict(r), "created_at": r.created_at.isoformat()} for r in records]
    return write_rows(rows, TAG_COLUMNS, path, export_format)
