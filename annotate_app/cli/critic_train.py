"""``critiquelab critic train``: fine-tune a critic (generative, full or LoRA) or train a head.

A thin layer over :mod:`critic.training`: the options are the fields of
:class:`~critic.train_config.TrainConfig`, derived from them (:mod:`.config_options`: name, type,
default and help), so an option cannot restate a default differently; one call trains, and the
summary names the saved critic and its agreement on the eval split; the loss log goes to stderr.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import typer

from annotate_app.cli.config_options import config_command
from annotate_app.cli.context import cli_flag, state
from critic.train_config import TrainConfig

if TYPE_CHECKING:
    from calibration.result import CalibrationResult

_FLAGS = {"output_dir": ("-o", "--output"), "evaluate": ("--eval/--no-eval",)}
"""The options whose flag is not their field's name."""


def _train(ctx: typer.Context, config: TrainConfig) -> None:
    from critic.training import train_critic

    cli = state(ctx)
    result = train_critic(config, on_log=lambda log: cli.info(_log_line(log)))
    for note in result.notes:
        cli.info("note: " + note.render(cli_flag))
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
            "too_long": result.too_long,
            "notes": [note.render(cli_flag) for note in result.notes],
            "calibration_file": result.calibration_file,
            "eval": {"units": result.eval.n_units, "statuses": result.eval.statuses, **figures}
            if result.eval
            else None,
        },
        text=f"trained {result.steps} steps in {result.seconds:.0f}s "
        f"({result.tokens_per_second:.0f} tokens/s); critic saved to {result.final_dir}"
        + (
            f"; {result.too_long} records left out, prompt over {config.max_prompt_tokens} tokens"
            if result.too_long
            else ""
        )
        + (f"; eval agreement {_format(figures)} in {result.calibration_file}" if figures else ""),
    )


train = config_command(
    TrainConfig,
    _train,
    doc="Fine-tune a critic; multi-GPU: accelerate launch $(which critiquelab) critic train ...",
    flags=_FLAGS,
    option_settings={"data": {"exists": True}},
)


def _log_line(log: dict[str, Any]) -> str:
    if log.get("stage") == "features":  # a head's pass over the prompts (critic.head)
        return (
            f"train: features of {log['rows']} prompts, {log['tokens']:,} tokens, "
            f"{log['rows_per_s']:.3g} rows/s, {log['tokens_per_s']:,.0f} tokens/s, "
            f"{_duration(log['seconds_left'])} left"
        )
    parts = [
        f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}"
        for key, value in log.items()
    ]
    return "train: " + ", ".join(parts)


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "unknown time"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


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
