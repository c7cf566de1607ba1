"""Typed errors of the calibration library (bad input is a ``ValueError``: exit code 2)."""

from __future__ import annotations

from schemas.option_text import OptionError


class CalibrationInputError(OptionError):
    """Input that calibration cannot use: a bad file line, an unknown option, no data at all.

    The message names where the problem is (file:line, field) and what to do about it; an
    :class:`~schemas.option_text.OptionText` names the options to change.
    """
