"""The benchmarks' vocabularies: AlignMMBench's 13 tasks with their category, and MMIE's
categories. Protocols (scales, bands, labels) are :mod:`schemas.protocols`; what annotators and
judges are told per task or category is :mod:`schemas.guidance`.
"""

ALIGNMMBENCH_TASKS: dict[str, str] = {
    "Description": "Perception & Understanding",
    "Recognition": "Perception & Understanding",
    "Counting": "Perception & Understanding",
    "OCR": "Perception & Understanding",
    "Meme": "Perception & Understanding",
    "Knowledge": "Perception & Understanding",
    "Reasoning": "Reasoning & Analysis",
    "Chart": "Reasoning & Analysis",
    "Problem": "Reasoning & Analysis",
    "Comparison": "Reasoning & Analysis",
    "Writing": "Reasoning & Analysis",
    "Coherence": "Dialogue Context",
    "Incoherence": "Dialogue Context",
}
"""The 13 AlignMMBench tasks and their category (PROTOCOLS.md §1)."""

ALIGNMMBENCH_CATEGORIES: tuple[str, ...] = (
    "Perception & Understanding",
    "Reasoning & Analysis",
    "Dialogue Context",
)

MMIE_CATEGORIES: dict[str, str] = {
    "SA": "Situational analysis",
    "PBL": "Project-based learning",
    "MSR": "Multi-step reasoning",
}
"""MMIE categories, keyed by the item id prefix."""
