"""What a training run produces (:class:`TrainResult`), where it puts it (``<output>/final``, with
``calibration.json`` for the generative objective), and the error when its options do not fit
together: shared by both objectives (:mod:`critic.fine_tune`, :mod:`critic.head`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from critic.evaluation import EvalSummary
from critic.modeling import FINAL_FOLDER
from schemas.option_text import OptionError, OptionText

__all__ = ["CALIBRATION_FILE", "FINAL_FOLDER", "TrainResult", "TrainingSetupError"]
CALIBRATION_FILE = "calibration.json"
"""The eval split's calibration report, beside the trained critic's weights."""


class TrainingSetupError(OptionError):
    """Training options or folders that do not fit together, with what to do."""


@dataclass(frozen=True)
class TrainResult:
    """What a training run produced."""

    final_dir: Path
    steps: int
    losses: list[tuple[int, float]]
    """``(step, training loss)`` as logged."""
    train_tokens: int
    """Real (non-padding) tokens fed to the model."""
    seconds: float
    tokens_per_second: float
    truncated: int
    """Training conversations whose prompt was cut on the left to fit ``max_length``."""
    eval: EvalSummary | None = None
    calibration_file: Path | None = None
    too_long: int = 0
    """Training records left out because their prompt is longer than ``max_prompt_tokens``."""
    notes: tuple[OptionText, ...] = ()
    """What the user should know about the fit (a choice at the edge of its grid, targets that
    equal another's)."""
