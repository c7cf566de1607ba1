"""Exporters: human annotations and model judgements as FORMATS.md §3 records (JSONL/CSV/Parquet),
and datasets as §1 files with their images.

Whatever is written here, :func:`data.io.importers.read_judgement_records` reads back as the same
records, and ``judgments import`` loads exported model judgements unchanged. The campaign page's
downloads (:mod:`data.io.exporters.downloads`) are the same files handed to the browser as bytes.
"""

from data.io.exporters.datasets import DatasetExport, export_dataset
from data.io.exporters.files import write_judgement_records
from data.io.exporters.records import annotation_records, model_judgement_records

__all__ = [
    "DatasetExport",
    "annotation_records",
    "export_dataset",
    "model_judgement_records",
    "write_judgement_records",
]
