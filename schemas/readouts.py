"""The names of a judge's read-outs: extra verdicts a scoring run stores as judges of their own.

``critic score --preference-probs`` stores ``<judge>-probs`` (the argmax of p(A), p(B), p(tie)
read after the verdict prefix, one per shown order) and, with ``--both-orders``,
``<judge>-debiased`` (the mean of the two shown orders' probabilities, one per pair). They are
read out of ``<judge>``'s own calls and pay for nothing of their own, so the cost audit charges
them the calls they come from (:mod:`calibration.cost`). One place for the naming: the critic
writes these names, the data layer and calibration read them.
"""

from __future__ import annotations

PROBS_SUFFIX = "-probs"
DEBIASED_SUFFIX = "-debiased"
READOUT_SUFFIXES: tuple[str, ...] = (PROBS_SUFFIX, DEBIASED_SUFFIX)


def readout_source(judge: str) -> str | None:
    """The judge whose calls ``judge`` is read out of (``critic-v1`` for ``critic-v1-probs``
    or ``critic-v1-debiased``); None for a name without a read-out suffix."""
    for suffix in READOUT_SUFFIXES:
        if judge.endswith(suffix) and len(judge) > len(suffix):
            return judge[: -len(suffix)]
    return None
