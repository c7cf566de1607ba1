"""Importers: dataset files (FORMATS.md §1, AlignMMBench, MMIE) and judgement files (§3).

Every file is read by :mod:`data.io.importers.reader` (JSON Lines, CSV or Parquet; the same rules
for ``import``, ``judgments import``, ``calibrate --judgments/--dataset`` and the Data page).
Every importer validates the whole input first and writes nothing when any record is bad; the
error (:class:`InvalidFile`, one :class:`InvalidRecord` per bad line, at most 50) names the file,
line, field and the fix. Re-importing the same file changes nothing. A file uploaded in the
browser is unpacked safely and handed to these same importers (:mod:`data.io.importers.uploads`).
"""

from data.io.importers.alignmmbench import import_alignmmbench
from data.io.importers.datasets import ImportSummary
from data.io.importers.errors import InvalidFile, InvalidRecord, MissingImages, Problems
from data.io.importers.jsonl import import_jsonl
from data.io.importers.judgements import JudgementImportSummary, import_judgements
from data.io.importers.mmie import import_mmie
from data.io.importers.reader import (
    JudgementLine,
    dataset_metadata,
    read_dataset,
    read_judgement_files,
    read_judgement_records,
    read_judgements,
)

__all__ = [
    "ImportSummary",
    "InvalidFile",
    "InvalidRecord",
    "JudgementImportSummary",
    "JudgementLine",
    "MissingImages",
    "Problems",
    "dataset_metadata",
    "import_alignmmbench",
    "import_judgements",
    "import_jsonl",
    "import_mmie",
    "read_dataset",
    "read_judgement_files",
    "read_judgement_records",
    "read_judgements",
]
