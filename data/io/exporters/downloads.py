"""Downloads of the campaign page: the human annotations as bytes, written by DATA's exporters.

The same functions as ``critiquelab export annotations`` produce the file (one
:class:`~schemas.records.JudgementRecord` per live annotation, JSONL / CSV / Parquet); this
module only hands the bytes to the browser instead of leaving a file on the server.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from sqlmodel import Session

from data.io.exporters.files import EXPORT_FORMATS, write_judgement_records
from data.io.exporters.records import annotation_records

MEDIA_TYPES: dict[str, str] = {
    "jsonl": "application/jsonl",
    "csv": "text/csv",
    "parquet": "application/vnd.apache.parquet",
}


def annotations_export(
    session: Session, campaign_name: str, export_format: str, *, all_revisions: bool = False
) -> bytes:
    """The campaign's human judgements as a file in ``export_format`` (jsonl, csv, parquet)."""
    if export_format not in EXPORT_FORMATS:
        raise ValueError(
            f"export format {export_format!r} is not one of: " + ", ".join(EXPORT_FORMATS)
        )
    records = annotation_records(session, campaign_name, all_revisions=all_revisions)
    with tempfile.TemporaryDirectory(prefix="critiquelab-export-") as folder:
        path = Path(folder) / f"annotations.{export_format}"
        write_judgement_records(records, path, export_format)
        return path.read_bytes()
