"""The flags of the disagreement-review settings of ``campaign create``
(``--disagreement-threshold``, ``--taxonomy``); the tags go out with ``export disagreement-tags``
(:mod:`annotate_app.cli.exports`), reviewers tag causes on the *Disagreements* page.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_FLAGS = (("threshold", "--disagreement-threshold"), ("taxonomy", "--taxonomy"))


@contextmanager
def review_flags() -> Iterator[None]:
    """A disagreement-review settings error gets the flag to change added to its message."""
    from data.services.disagreements import DisagreementError

    try:
        yield
    except DisagreementError as error:
        message = str(error)
        flags = [flag for word, flag in _FLAGS if word in message][:1]
        if not flags:
            raise
        raise DisagreementError(f"{message} ({flags[0]})") from None
