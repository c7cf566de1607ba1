"""Write judgement records as JSON Lines, CSV or Parquet, atomically (temp file, then rename)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from schemas.csv_cells import neutralised
from schemas.records import JudgementRecord

ExportFormat = Literal["jsonl", "csv", "parquet"]
EXPORT_FORMATS: tuple[str, ...] = ("jsonl", "csv", "parquet")
COLUMNS: tuple[str, ...] = tuple(JudgementRecord.model_fields)


def write_judgement_records(
    records: Sequence[JudgementRecord], path: Path, export_format: str
) -> int:
    """Write ``records`` to ``path`` in ``export_format``; return how many were written.

    JSON Lines leave out empty fields. CSV and Parquet have one column per record field; in CSV
    ``pair``, ``shown`` and ``meta`` are JSON text, in Parquet ``meta`` is. A CSV text cell that
    a spreadsheet would run as a formula is written behind a ``'``
    (:func:`schemas.csv_cells.neutralised`), which the project's reader takes away.
    """
    if export_format not in EXPORT_FORMATS:
        raise ValueError(
            f"export format {export_format!r} is not one of: " + ", ".join(EXPORT_FORMATS)
        )
    if export_format == "jsonl":
        atomic_write(path, lambda temporary: _write_jsonl(records, temporary))
    else:
        atomic_write(path, lambda temporary: _write_table(records, temporary, export_format))
    return len(records)


def write_rows(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], path: Path, export_format: str
) -> int:
    """Write flat ``rows`` (JSON scalars only) with ``columns`` in ``export_format``, atomically.

    The same files as :func:`write_judgement_records`: JSON Lines keep every field, CSV has
    CRLF line ends and neutralised text cells (:func:`schemas.csv_cells.neutralised`).
    """
    if export_format not in EXPORT_FORMATS:
        raise ValueError(
            f"export format {export_format!r} is not one of: " + ", ".join(EXPORT_FORMATS)
        )
    atomic_write(path, lambda temporary: _write_rows(rows, columns, temporary, export_format))
    return len(rows)


def _new_file_mode() -> int:
    """The mode ``open`` gives a new file here: 0o666 less the process's umask, read from
    ``/proc/self/status`` where Linux shows it; elsewhere by setting it and setting it back."""
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii")
        umask = next(
            int(line.split()[1], 8) for line in status.splitlines() if line.startswith("Umask:")
        )
    except (OSError, StopIteration, ValueError, IndexError):
        umask = os.umask(0)
        os.umask(umask)
    return 0o666 & ~umask


_NEW_FILE_MODE = _new_file_mode()
"""Read once, at import (setting the umask to read it is not safe while threads run)."""


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Run ``write`` on a temporary file beside ``path``, then rename it into place: a reader
    never sees half a file, and a failure leaves ``path`` as it was. The file gets the mode any
    new file gets (``mkstemp``'s temporary is readable by its owner alone)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(handle)
    try:
        write(Path(temporary))
        os.chmod(temporary, _NEW_FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _write_rows(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], path: Path, export_format: str
) -> None:
    import pandas as pd

    if export_format == "jsonl":
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                line = {column: row[column] for column in columns}
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        return
    frame = pd.DataFrame(list(rows), columns=list(columns))
    if export_format == "csv":
        frame = frame.map(neutralised)
        frame.to_csv(path, index=False, lineterminator="\r\n")
    else:
        frame.to_parquet(path, index=False)


def _write_jsonl(records: Sequence[JudgementRecord], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            line = record.model_dump(mode="json", exclude_none=True)
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")


def _write_table(records: Sequence[JudgementRecord], path: Path, export_format: str) -> None:
    import pandas as pd

    rows = [_table_row(record.model_dump(mode="json"), export_format) for record in records]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    if export_format == "csv":
        # CRLF line ends (RFC 4180): pandas then quotes a cell holding a lone CR, which it
        # leaves bare with "\n" line ends, so that the cell would split the row on reading.
        frame.to_csv(path, index=False, lineterminator="\r\n")
    else:
        frame.to_parquet(path, index=False)


def _table_row(row: dict[str, Any], export_format: str) -> dict[str, Any]:
    text_columns = ("pair", "shown", "meta") if export_format == "csv" else ("meta",)
    for column in text_columns:
        if row[column] is not None:
            row[column] = json.dumps(row[column], ensure_ascii=False)
    if export_format == "csv":  # no cell runs as a spreadsheet formula
        row = {column: neutralised(value) for column, value in row.items()}
    return row
