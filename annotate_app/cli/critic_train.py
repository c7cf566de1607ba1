"""``critiquelab critic train``: fine-tune a critic (generative, full or LoRA) or train a head.

A thin layer over :mod:`critic.training`: the options are the fields of
:class:`~critic.train_config.TrainConfig`, derived from them (:mod:`.config_options`: name, type,
default and help), so an option cannot restate a default differently; one call trains, and the
summary names the saved critic and its agreement on the eval split; the loss log goes to stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from annotate_app.cli.config_options import config_command
from annotate_app.cli.context import state
from critic.train_config import TrainConfig

if TYPE_CHECKING:
    from calibration.result import CalibrationResult

_FLAGS = {"output_dir": ("-o", "--output"), "evaluate": ("--eval/--no-eval",)}
"""The options whose flag is not their field's name."""


def _train(ctx: typer.Context, config: TrainConfig) -> None:
    from critic.training import train_critic

    cli = state(ctx)
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


train = config_command(
    TrainConfig,
    _train,
    doc="Fine-tune a critic; multi-GPU: accelerate launch $(which critiquelab) critic train ...",
    flags=_FLAGS,
    option_settings={"data": {"exists": True, "dir_okay": False}},
)


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
