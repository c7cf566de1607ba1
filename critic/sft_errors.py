"""The error of critic training data (:mod:`critic.sft`, :mod:`critic.sft_hf`), below both."""

from __future__ import annotations


class SftFileError(ValueError):
    """A training file line that cannot be used (file, line, field and the fix), or a place
    where training data cannot be written."""
