"""The bundled sample project (``critiquelab demo``): synthetic data to explore CritiqueLab.

:func:`build_sample_project` writes AlignMMBench- and MMIE-style demo items with images drawn by
Pillow and answers from four fictional models, imports them with the real importer, creates demo
accounts, a finished campaign per protocol with synthetic annotations and judge outputs, and an
open campaign per protocol to annotate, with gold units (a qualification step on
``demo-alignmmbench-open``). Everything it makes is marked synthetic. Given
calibration's reference (``critiquelab demo`` passes it), it also tags a few disagreements of
each judge on one finished campaign (:mod:`data.sample.tags`).
"""

from data.sample.build import (
    ALIGNMMBENCH_DATASET,
    CAMPAIGNS,
    DEMO_ACCOUNTS,
    MMIE_DATASET,
    DemoAccount,
    SampleSummary,
    build_sample_project,
)

__all__ = [
    "ALIGNMMBENCH_DATASET",
    "CAMPAIGNS",
    "DEMO_ACCOUNTS",
    "MMIE_DATASET",
    "DemoAccount",
    "SampleSummary",
    "build_sample_project",
]
