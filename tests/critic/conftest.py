"""Fixtures of the critic tests: tiny models built offline, a small annotated campaign."""

from __future__ import annotations

from pathlib import Path

import pytest
from campaign_factory import build_annotated_campaigns
from sqlalchemy.engine import Engine


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama-style causal LM folder (never modified by tests: train into tmp_path)."""
    # Imported here, not at collection: tiny_models imports torch and transformers (4.6 s).
    from tiny_models import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny LLaVA-style vision-language model folder."""
    from tiny_models import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava"))


@pytest.fixture
def campaigns(engine: Engine) -> dict[str, str]:
    """The annotated pointwise (``amb``) and pairwise (``pairs``) campaigns in ``engine``."""
    return build_annotated_campaigns(engine)
