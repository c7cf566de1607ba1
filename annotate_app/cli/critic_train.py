"""``critiquelab critic train``: fine-tune a critic (generative, full or LoRA) or train a head.

A thin layer over :mod:`critic.training`: the options become a
:class:`~critic.train_config.TrainConfig`, one call trains, and the summary names the saved critic
and its agreement on the eval split; the loss log goes to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer

from annotate_app.cli.context import state
from annotate_app.cli.judging_options import choice

if TYPE_CHECKING:
    from calibration.result import CalibrationResult

_OBJECTIVES: dict[str, Literal["generate", "head"]] = {"generate": "generate", "head": "head"}
_HEAD_TARGETS: dict[str, Literal["consensus", "annotators"]] = {
    "consensus": "consensus",
    "annotators": "annotators",
}


def train(
    ctx: typer.Context,
    data: Path = typer.Option(..., "--data", exists=True, dir_okay=False, help="SFT file."),
    base_model: Path = typer.Option(..., "--base-model", help="Local model folder."),
    output_dir: Path = typer.Option(
        ..., "-o", "--output", help="Folder for checkpoints and the critic."
    ),
    lora: bool = typer.Option(False, "--lora", help="Train a LoRA adapter (peft)."),
    lora_r: int = typer.Option(16, "--lora-r", help="LoRA rank."),
    lora_alpha: int = typer.Option(32, "--lora-alpha", help="LoRA alpha."),
    lora_dropout: float = typer.Option(0.05, "--lora-dropout", help="LoRA dropout."),
    lora_target: str = typer.Option("all-linear", "--lora-target", help="Modules to adapt."),
    lora_last_layers: int = typer.Option(
        None, "--lora-last-layers", help="LoRA on the last N layers only (much faster on CPU)."
    ),
    merge: bool = typer.Option(False, "--merge", help="LoRA: save merged full weights."),
    epochs: float = typer.Option(1.0, "--epochs", help="Passes over the training split."),
    max_steps: int = typer.Option(-1, "--max-steps", help="Stop after N optimiser steps."),
    batch_size: int = typer.Option(4, "--batch-size", help="Conversations per device and step."),
    grad_accum: int = typer.Option(1, "--grad-accum", help="Gradient accumulation steps."),
    learning_rate: float = typer.Option(
        None, "--learning-rate", help="Default 2e-4 LoRA, 2e-5 full."
    ),
    warmup_steps: int = typer.Option(0, "--warmup-steps", help="Linear warm-up steps."),
    max_length: int = typer.Option(2048, "--max-length", help="Longest conversation in tokens."),
    seed: int = typer.Option(0, "--seed", help="Seed of initialisation and data order."),
    save_steps: int = typer.Option(200, "--save-steps", help="Checkpoint every N steps."),
    logging_steps: int = typer.Option(10, "--logging-steps", help="Log the loss every N steps."),
    bf16: bool = typer.Option(
        True, "--bf16/--no-bf16", help="bf16 mixed precision (CUDA, or a CPU with bf16)."
    ),
    gradient_checkpointing: bool = typer.Option(
        True, "--gradient-checkpointing/--no-gradient-checkpointing", help="On CUDA only."
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue from the newest checkpoint."),
    evaluate: bool = typer.Option(
        True, "--eval/--no-eval", help="Judge the eval split at the end."
    ),
    eval_max_new_tokens: int = typer.Option(256, "--eval-max-new-tokens", help="Answer length."),
    eval_limit: int = typer.Option(None, "--eval-limit", help="Judge at most N eval units."),
    objective: str = typer.Option(
        "generate",
        "--objective",
        help="generate (write verdict + reasons) | head (classifier head on the frozen model).",
    ),
    head_folds: int = typer.Option(5, "--head-folds", help="head: grouped CV folds for L2."),
    head_layers: str = typer.Option(
        "0", "--head-layers", help="head: layers (1-based, 0 = last) CV chooses among, e.g. 8,16."
    ),
    head_targets: str = typer.Option(
        "consensus",
        "--head-targets",
        help="head: fit the consensus label | annotators (pairwise: each annotator's verdict, "
        "as shares of the unit's labels).",
    ),
) -> None:
    """Fine-tune a critic; multi-GPU: accelerate launch $(which critiquelab) critic train ..."""
    from critic.train_config import TrainConfig
    from critic.training import train_critic

    cli = state(ctx)
    config = TrainConfig(
        data=data,
        base_model=base_model,
        output_dir=output_dir,
        lora=lora,
        lora_r=lora_r,
        lora_alpha=lora_alpha,
        lora_dropout=lora_dropout,
        lora_target=lora_target,
        lora_last_layers=lora_last_layers,
        merge=merge,
        epochs=epochs,
        max_steps=max_steps,
        batch_size=batch_size,
        grad_accum=grad_accum,
        learning_rate=learning_rate,
        warmup_steps=warmup_steps,
        max_length=max_length,
        seed=seed,
        save_steps=save_steps,
        logging_steps=logging_steps,
        bf16=bf16,
        gradient_checkpointing=gradient_checkpointing,
        resume=resume,
        evaluate=evaluate,
        eval_max_new_tokens=eval_max_new_tokens,
        eval_limit=eval_limit,
        objective=choice(objective, _OBJECTIVES, "--objective"),
        head_folds=head_folds,
        head_layers=_layers(head_layers),
        head_targets=choice(head_targets, _HEAD_TARGETS, "--head-targets"),
    )
    result = train_critic(config, on_log=lambda log: cli.info(_log_line(log)))
    figures = _headline(result.eval.report) if result.eval else {}
    cli.emit(
        {
            "final_dir": result.final_dir,
            "steps": result.steps,
            "losses": result.losses,
            "train_tokens": result.train_tokens,
            "tokens_per_second": result.tokens_per_second,
            "seconds": result.seconds,
            "truncated": result.truncated,
            "calibration_file": result.calibration_file,
            "eval": {"units": result.eval.n_units, "statuses": result.eval.statuses, **figures}
            if result.eval
            else None,
        },
        text=f"trained {result.steps} steps in {result.seconds:.0f}s "
        f"({result.tokens_per_second:.0f} tokens/s); critic saved to {result.final_dir}"
        + (f"; eval agreement {_format(figures)} in {result.calibration_file}" if figures else ""),
    )


def _layers(text: str) -> tuple[int, ...]:
    try:
        layers = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a comma-separated list of layer numbers", param_hint="--head-layers"
        ) from None
    return layers


def _log_line(log: dict[str, Any]) -> str:
    parts = [
        f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}"
        for key, value in log.items()
    ]
    return "train: " + ", ".join(parts)


_HEADLINE = (
    "n",
    "coverage",
    "mae",
    "pearson",
    "spearman",
    "qwk",
    "strict_acc",
    "fuzzy_acc",
    "acc_with_tie",
    "acc_without_tie",
    "kappa",
)


def _headline(report: CalibrationResult) -> dict[str, Any]:
    judge = next(iter(report.judges.values()), None)
    if judge is None:
        return {}
    figures = {"n": judge.n, "coverage": judge.coverage, **judge.values}
    return {key: figures[key] for key in _HEADLINE if figures.get(key) is not None}


def _format(figures: dict[str, Any]) -> str:
    return ", ".join(
        f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items()
    )
