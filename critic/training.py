"""``critiquelab critic train``: a critic trained on human judgements, by one of two objectives.

``objective="generate"`` (:mod:`critic.fine_tune`): transformers' :class:`~transformers.Trainer`
does the loop (optimiser, schedule, checkpoints, resume, bf16, gradient checkpointing, multi-GPU
/ multi-node) over the data of :mod:`critic.collate` (loss on the assistant turn only), on the
model in full or as a LoRA adapter (``peft``); afterwards the final weights go to
``<output>/final`` with ``critic.json``, and the eval split is judged by the new critic with its
agreement figures in ``<output>/final/calibration.json`` (METRICS.md), so every critic ships with
them. ``objective="head"`` (:mod:`critic.head`): a classifier head on the frozen base model.

The same entry point runs on one process or many: ``accelerate launch $(which critiquelab)
critic train ...`` or ``torchrun --nproc-per-node 8 $(which critiquelab) critic train ...``;
Trainer reads the distributed environment, and only the main process saves and evaluates.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from critic.fine_tune import fine_tune
from critic.head import train_head
from critic.train_config import TrainConfig
from critic.train_result import TrainResult


def train_critic(
    config: TrainConfig, on_log: Callable[[dict[str, Any]], None] | None = None
) -> TrainResult:
    """Train a critic from ``config.base_model`` on ``config.data`` by ``config.objective``; see
    the module docstring.

    ``on_log`` receives Trainer's log entries as they come (the CLI prints them on stderr).
    """
    with warnings.catch_warnings():
        # peft still calls the renamed is_gradient_checkpointing of transformers 5
        warnings.filterwarnings(
            "ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning
        )
        if config.objective == "head":
            return train_head(config, on_log)
        return fine_tune(config, on_log)
