"""What shapes a training run (:class:`TrainConfig`): ``critiquelab critic train``'s options, stored
in the trained critic's ``critic.json``. Read by both objectives (:mod:`critic.fine_tune`,
:mod:`critic.head`) and by :func:`critic.training.train_critic`, which picks between them.

Each field carries its documentation as ``metadata["help"]``, the way transformers'
``TrainingArguments`` does: ``critiquelab critic train`` builds one option per field from its
name, type, default and help (:mod:`annotate_app.cli.config_options`), so the command line cannot
restate a default differently. Importing this module loads no torch, which keeps ``critiquelab
--help`` fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Literal

from schemas.bounds import BATCH_SIZE, LIMIT, MAX_NEW_TOKENS, MAX_PROMPT_TOKENS, SEED, Bound
from schemas.option_text import OptionError, OptionText


@dataclass(frozen=True)
class TrainConfig:
    """Everything that shapes a training run; stored in ``critic.json``. Each field's
    ``metadata["help"]`` says what it does; a whole-number field's ``metadata["bound"]`` is its
    range (:class:`TrainConfigError` out of it: a batch of 10^20 is a typo, not a request)."""

    data: Path = field(
        metadata={
            "help": "SFT file (JSON Lines) or datasets folder, as the SFT export writes them; "
            "records with meta.split == 'eval' are held out."
        }
    )
    base_model: Path = field(
        metadata={"help": "Local folder of the base model (causal LM or vision-language model)."}
    )
    output_dir: Path = field(
        metadata={"help": "Folder for checkpoints (checkpoint-N) and the trained critic (final)."}
    )
    lora: bool = field(
        default=False, metadata={"help": "Train a LoRA adapter (peft) instead of every weight."}
    )
    lora_r: int = field(
        default=16,
        metadata={"bound": Bound("lora_r", 1, 4_096, "the adapter's rank"), "help": "LoRA rank."},
    )
    lora_alpha: int = field(
        default=32,
        metadata={
            "bound": Bound("lora_alpha", 1, 65_536, "the adapter's scaling"),
            "help": "LoRA alpha (scaling of the adapter).",
        },
    )
    lora_dropout: float = field(default=0.05, metadata={"help": "LoRA dropout."})
    lora_target: str = field(
        default="all-linear",
        metadata={
            "help": "LoRA: peft target_modules, all-linear or a comma-separated list of module "
            "names."
        },
    )
    lora_last_layers: int | None = field(
        default=None,
        metadata={
            "bound": Bound("lora_last_layers", 1, 10_000, "layers"),
            "help": "LoRA on the last N transformer layers only (peft layers_to_transform): the "
            "backward pass stops there, several times faster on a CPU. Unset: every layer.",
        },
    )
    merge: bool = field(
        default=False,
        metadata={"help": "LoRA: save the adapter merged into full weights (a standalone critic)."},
    )
    epochs: float = field(default=1.0, metadata={"help": "Passes over the training split."})
    max_steps: int = field(
        default=-1,
        metadata={
            "bound": Bound("max_steps", -1, 1_000_000_000, "steps; -1 = run the epochs"),
            "help": "Stop after this many optimiser steps (-1: run epochs).",
        },
    )
    batch_size: int = field(
        default=4, metadata={"bound": BATCH_SIZE, "help": "Conversations per device and step."}
    )
    grad_accum: int = field(
        default=1,
        metadata={
            "bound": Bound("grad_accum", 1, 10_000, "steps accumulated"),
            "help": "Gradient accumulation steps.",
        },
    )
    learning_rate: float | None = field(
        default=None,
        metadata={"help": "Peak learning rate. Unset: 2e-4 with LoRA, 2e-5 for full fine-tuning."},
    )
    warmup_steps: int = field(
        default=0,
        metadata={
            "bound": Bound("warmup_steps", 0, 1_000_000_000, "steps"),
            "help": "Linear warm-up steps.",
        },
    )
    max_length: int = field(
        default=2048,
        metadata={
            "bound": Bound("max_length", 1, 10_000_000, "tokens per conversation"),
            "help": "Longest conversation in tokens; a longer prompt is cut on the left.",
        },
    )
    seed: int = field(
        default=0,
        metadata={"bound": SEED, "help": "Seed of the initialisation and the data order."},
    )
    save_steps: int = field(
        default=200,
        metadata={
            "bound": Bound("save_steps", 1, 1_000_000_000, "steps"),
            "help": "Save a checkpoint every N steps.",
        },
    )
    save_total_limit: int = field(
        default=2,
        metadata={
            "bound": Bound("save_total_limit", 1, 10_000, "checkpoints"),
            "help": "Checkpoints kept (the oldest are deleted).",
        },
    )
    logging_steps: int = field(
        default=10,
        metadata={
            "bound": Bound("logging_steps", 1, 1_000_000_000, "steps"),
            "help": "Log the loss every N steps.",
        },
    )
    bf16: bool = field(
        default=True,
        metadata={
            "help": "bf16 mixed precision where the device supports it: a CUDA device with bf16 or "
            "a CPU with bf16 instructions (weights stay float32 there)."
        },
    )
    answer_logits_only: bool = field(
        default=True,
        metadata={
            "help": "Compute the vocabulary logits only at the positions the loss reads (the same "
            "loss and gradients, much less work for a large vocabulary); off: transformers' "
            "default causal-LM loss over every position."
        },
    )
    gradient_checkpointing: bool = field(
        default=True, metadata={"help": "On CUDA only: trade compute for memory."}
    )
    resume: bool = field(
        default=False,
        metadata={"help": "Continue from the newest checkpoint in the output folder."},
    )
    evaluate: bool = field(
        default=True,
        metadata={"help": "Judge the eval split at the end and write calibration.json."},
    )
    eval_max_new_tokens: int = field(
        default=256,
        metadata={
            "bound": replace(MAX_NEW_TOKENS, option="eval_max_new_tokens"),
            "help": "Eval: longest answer in tokens.",
        },
    )
    eval_batch_size: int = field(
        default=8,
        metadata={
            "bound": replace(BATCH_SIZE, option="eval_batch_size"),
            "help": "Eval: conversations judged per batch.",
        },
    )
    eval_limit: int | None = field(
        default=None,
        metadata={
            "bound": replace(LIMIT, option="eval_limit"),
            "help": "Eval: judge at most N units (the first in file order). Unset: all.",
        },
    )
    objective: Literal["generate", "head"] = field(
        default="generate",
        metadata={
            "help": "generate: fine-tune the model to write the verdict and its reasons; head: "
            "keep the base model frozen and fit a classifier head on its prompt features "
            "(critic.head; no generation, no LoRA, no Trainer)."
        },
    )
    head_folds: int = field(
        default=5,
        metadata={
            "bound": Bound("head_folds", 2, 1_000, "folds"),
            "help": "head: folds of the cross-validation (grouped by item) that chooses the L2 "
            "strength.",
        },
    )
    head_layers: tuple[int, ...] = field(
        default=(0,),
        metadata={
            "bound": Bound("head_layers", 0, 10_000, "a layer, 1-based; 0 = the last"),
            "help": "head: decoder layers (1-based, 0 = last) the cross-validation chooses among.",
        },
    )
    head_targets: Literal["consensus", "annotators"] = field(
        default="consensus",
        metadata={
            "help": "head: fit the consensus label, or (pairwise) the share of the annotators who "
            "gave each verdict (critic.head.record_distribution)."
        },
    )
    head_l2: tuple[float, ...] = field(
        default=(1e-3, 1e-2, 1e-1, 1.0, 10.0),
        metadata={
            "help": "head: L2 strengths the cross-validation chooses among; a choice at either end "
            "is said in a note (the best may lie beyond it)."
        },
    )
    max_prompt_tokens: int | None = field(
        default=None,
        metadata={
            "bound": MAX_PROMPT_TOKENS,
            "help": "head: leave out training records whose prompt is longer than this many "
            "tokens, counted in the summary (too_long); the generative objective cuts a longer "
            "prompt to max-length instead. Unset: no limit.",
        },
    )

    def __post_init__(self) -> None:
        for spec in fields(self):
            bound: Bound | None = spec.metadata.get("bound")
            value = getattr(self, spec.name)
            values = value if isinstance(value, tuple) else (value,)
            for one in values:
                problem = None if bound is None or one is None else bound.problem(one)
                if problem is not None:
                    raise TrainConfigError(problem)
        for name, value, rule, allowed in (
            ("epochs", self.epochs, "a number above 0", lambda v: v > 0),
            ("learning_rate", self.learning_rate, "a number above 0", lambda v: v > 0),
            ("lora_dropout", self.lora_dropout, "a share from 0 to below 1", lambda v: v < 1),
        ):
            if value is None:  # unset: the documented default
                continue
            numeric = isinstance(value, float | int) and not isinstance(value, bool)
            if not numeric or not math.isfinite(value) or value < 0 or not allowed(value):
                raise TrainConfigError(
                    OptionText(f"{{{name}}} is {{value}}: give {rule}", value=repr(value))
                )


class TrainConfigError(OptionError):
    """A training setting out of its range (bad input)."""
