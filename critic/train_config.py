"""What shapes a training run (:class:`TrainConfig`): ``critiquelab critic train``'s options, stored
in the trained critic's ``critic.json``. Read by both objectives (:mod:`critic.fine_tune`,
:mod:`critic.head`) and by :func:`critic.training.train_critic`, which picks between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class TrainConfig:
    """Everything that shapes a training run; stored in ``critic.json``."""

    data: Path
    """SFT file (``critiquelab export sft``); records with ``meta.split == "eval"`` are held out."""
    base_model: Path
    """Local folder of the base model (causal LM or vision-language model)."""
    output_dir: Path
    """Checkpoints go to ``checkpoint-N``, the trained critic to ``final``."""
    lora: bool = False
    """Train a LoRA adapter (peft) instead of every weight."""
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target: str = "all-linear"
    """peft ``target_modules``: ``all-linear`` or a comma-separated list of module names."""
    lora_last_layers: int | None = None
    """Adapt only the last N transformer layers (peft ``layers_to_transform``): the backward pass
    then stops there, several times faster on a CPU. None adapts every layer."""
    merge: bool = False
    """LoRA: save the adapter merged into full weights (a standalone critic)."""
    epochs: float = 1.0
    max_steps: int = -1
    """Stop after this many optimiser steps (-1: run ``epochs``)."""
    batch_size: int = 4
    grad_accum: int = 1
    learning_rate: float | None = None
    """Default 2e-4 with LoRA, 2e-5 for full fine-tuning."""
    warmup_steps: int = 0
    max_length: int = 2048
    seed: int = 0
    save_steps: int = 200
    save_total_limit: int = 2
    logging_steps: int = 10
    bf16: bool = True
    """bf16 mixed precision where the device supports it: a CUDA device with bf16, or a CPU with
    bf16 instructions (:func:`critic.modeling.cpu_has_bf16`; weights stay float32 there)."""
    answer_logits_only: bool = True
    """Compute the vocabulary logits only at the positions the loss reads
    (:class:`critic.fine_tune.AnswerLogitsTrainer`: the same loss and gradients, much less work
    for a large vocabulary). False: transformers' default causal-LM loss over every position."""
    gradient_checkpointing: bool = True
    """On CUDA only: trade compute for memory."""
    resume: bool = False
    """Continue from the newest checkpoint in ``output_dir``."""
    evaluate: bool = True
    """Judge the eval split at the end and write ``calibration.json``."""
    eval_max_new_tokens: int = 256
    eval_batch_size: int = 8
    eval_limit: int | None = None
    """Judge at most this many eval units (the first ones in file order); None judges all."""
    objective: Literal["generate", "head"] = "generate"
    """``generate``: fine-tune the model to write the verdict and its reasons (the default).
    ``head``: keep the base model frozen and fit a classifier head on its prompt features
    (:mod:`critic.head`); no generation, no LoRA, no Trainer."""
    head_folds: int = 5
    """``head``: folds of the cross-validation (grouped by item) that chooses the L2 strength."""
    head_layers: tuple[int, ...] = (0,)
    """``head``: decoder layers (1-based, 0 = last) the cross-validation chooses among."""
    head_targets: Literal["consensus", "annotators"] = "consensus"
    """``head``: fit the consensus label, or (pairwise) the share of the annotators who gave each
    verdict (:func:`critic.head.record_distribution`)."""
