"""Files in and out: :mod:`data.io.importers` (dataset, judgement and annotation files, and
browser uploads handed to the same importers) and :mod:`data.io.exporters` (annotation, judgement,
dataset and Label Studio files, and the campaign page's downloads)."""
