"""Importers: dataset files (FORMATS.md §1, AlignMMBench, MMIE) and judgement files (§3).

Every importer validates the whole input first and writes nothing when any record is bad; the
error (:class:`InvalidRecord`) names the file, line, field and the fix. Re-importing the same file
changes nothing.
"""

from data.importers.alignmmbench import import_alignmmbench
from data.importers.datasets import ImportSummary
from data.importers.errors import InvalidRecord, MissingImages
from data.importers.jsonl import import_jsonl
from data.importers.judgement_files import read_judgement_records
from data.importers.judgements import JudgementImportSummary, import_judgements
from data.importers.mmie import import_mmie

__all__ = [
    "ImportSummary",
    "InvalidRecord",
    "JudgementImportSummary",
    "MissingImages",
    "import_alignmmbench",
    "import_judgements",
    "import_jsonl",
    "import_mmie",
    "read_judgement_records",
]
