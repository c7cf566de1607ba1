"""Skip, or fail where CI requires the real thing (``CRITIQUELAB_REQUIRE_E2E=1``)."""

from __future__ import annotations

import os

import pytest

REQUIRE_E2E = os.environ.get("CRITIQUELAB_REQUIRE_E2E") == "1"


def missing(reason: str) -> None:
    """Skip the test for ``reason``; under ``CRITIQUELAB_REQUIRE_E2E=1`` fail it instead, so that a
    missing browser or database server never passes silently in CI."""
    if REQUIRE_E2E:
        pytest.fail(f"{reason} (CRITIQUELAB_REQUIRE_E2E=1, so this is a failure, not a skip)")
    pytest.skip(reason)
