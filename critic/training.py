"""``critiquelab critic train``: supervised fine-tuning of a critic on human judgements.

transformers' :class:`~transformers.Trainer` does the loop (optimiser, schedule, checkpoints,
resume, bf16, gradient checkpointing, multi-GPU / multi-node); this module supplies the data
(:mod:`critic.collate`: loss on the assistant turn only), the model (full or LoRA via ``peft``) and
what happens after training: the final weights in ``<output>/final`` with ``critic.json``, and
the eval split judged by the new critic with its agreement figures in
``<output>/final/calibration.json`` (METRICS.md), so every critic ships with them.

The same entry point runs on one process or many: ``accelerate launch $(which critiquelab)
critic train ...`` or ``torchrun --nproc-per-node 8 $(which critiquelab) critic train ...``;
Trainer reads the distributed environment, and only the main process saves and evaluates.
"""

from __future__ import annotations

import inspect
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import (
    PrinterCallback,
    Trainer,
    TrainerCallback,
    TrainerControl,
    TrainerState,
    TrainingArguments,
    set_seed,
)

from critic.collate import IGNORE_INDEX, CriticCollator, EncodedConversation, encode_conversation
from critic.evaluation import EvalSummary, evaluate_records
from critic.modeling import (
    CRITIC_INFO_FILE,
    FINAL_FOLDER,
    LoadedModel,
    cpu_has_bf16,
    load_base_model,
)
from critic.sft import SftRecord, read_sft
from schemas.option_text import OptionError, OptionText

CALIBRATION_FILE = "calibration.json"


class TrainingSetupError(OptionError):
    """Training options or folders that do not fit together, with what to do."""


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
    (:class:`AnswerLogitsTrainer`: the same loss and gradients, much less work for a large
    vocabulary). False: transformers' default causal-LM loss over every position."""
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
    head_l2: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
    """``head``: the L2 strengths the cross-validation chooses among."""
    max_prompt_tokens: int | None = None
    """``head``: leave out training records whose prompt is longer than this many tokens (counted
    in :attr:`TrainResult.too_long`); None keeps every record. The generative objective cuts
    long prompts to ``max_length`` instead."""


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


class ConversationDataset(Dataset):
    """Training records encoded on first access (images are opened only when needed)."""

    def __init__(self, records: list[SftRecord], loaded: LoadedModel, max_length: int) -> None:
        self.records, self.loaded, self.max_length = records, loaded, max_length
        self.truncated: set[int] = set()

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> EncodedConversation:
        record = self.records[index]
        encoded = encode_conversation(
            record.messages,
            record.images,
            tokenizer=self.loaded.tokenizer,
            processor=self.loaded.processor,
            max_length=self.max_length,
        )
        if encoded.truncated:
            self.truncated.add(index)
        return encoded


class _LogForwarder(TrainerCallback):
    """Hands every Trainer log entry (loss, learning rate...) with its step to a function."""

    def __init__(self, on_log: Callable[[dict[str, Any]], None]) -> None:
        self.forward_to = on_log

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        if logs and state.is_world_process_zero:
            self.forward_to({"step": state.global_step, **logs})


def train_critic(
    config: TrainConfig, on_log: Callable[[dict[str, Any]], None] | None = None
) -> TrainResult:
    """Fine-tune ``config.base_model`` on ``config.data``; see the module docstring.

    ``on_log`` receives Trainer's log entries as they come (the CLI prints them on stderr); a
    head reports its progress there too (:func:`critic.head.train_head`).
    """
    with warnings.catch_warnings():
        # peft still calls the renamed is_gradient_checkpointing of transformers 5
        warnings.filterwarnings(
            "ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning
        )
        if config.objective == "head":
            from critic.head import train_head

            return train_head(config, on_log)
        return _train(config, on_log)


class AnswerLogitsTrainer(Trainer):
    """A Trainer that computes the language-model head only where the loss reads it.

    The loss of a critic covers the assistant turn only (:mod:`critic.collate`), yet a causal LM
    computes vocabulary logits at every position. This trainer asks the model, through its
    documented ``logits_to_keep`` argument, for the logits at the positions that predict a
    labelled token of any row of the batch, and takes the same cross-entropy there: summed and
    divided by ``num_items_in_batch`` (the labelled tokens of the whole accumulated batch), as
    transformers' causal-LM loss does, so the loss and its gradients equal the default's
    (tests/critic/test_training_loss.py). With a 262,144-token vocabulary (Gemma 3) the head over
    every prompt token costs more than the decoder; bench/train_precision.py measures it.
    """

    def compute_loss(
        self,
        model: torch.nn.Module,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, Any]:
        targets = inputs["labels"][:, 1:]
        # logits at position t predict token t + 1
        positions = (targets != IGNORE_INDEX).any(dim=0).nonzero().squeeze(-1)
        model_inputs = {key: value for key, value in inputs.items() if key != "labels"}
        outputs = model(**model_inputs, logits_to_keep=positions)
        logits = outputs.logits.float()
        kept = targets[:, positions]
        loss = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]),
            kept.reshape(-1),
            ignore_index=IGNORE_INDEX,
            reduction="sum",
        )
        # the Trainer scales a batch mean for gradient accumulation, not a global one
        self.loss_is_scaled_for_ga = num_items_in_batch is not None
        if num_items_in_batch is None:
            loss = loss / max(int((kept != IGNORE_INDEX).sum()), 1)
        else:
            loss = loss / num_items_in_batch
            if self.args.average_tokens_across_devices:
                # the count is summed over processes, whose gradients are then averaged
                loss = loss * self.accelerator.num_processes
        return (loss, outputs) if return_outputs else loss


def accepts_logits_to_keep(model: torch.nn.Module) -> bool:
    """Whether the model's forward (under a peft wrapper, its base model's) takes
    ``logits_to_keep``; models that do not are trained by the plain Trainer."""
    unwrap = getattr(model, "get_base_model", None)
    base = unwrap() if callable(unwrap) else model
    return "logits_to_keep" in inspect.signature(base.forward).parameters


def _train(config: TrainConfig, on_log: Callable[[dict[str, Any]], None] | None) -> TrainResult:
    records = read_sft(config.data)
    train_records = [record for record in records if record.split == "train"]
    eval_records = [record for record in records if record.split == "eval"]
    if not train_records:
        raise TrainingSetupError(f"{config.data} has no records with meta.split == 'train'")
    _check_output_dir(config)
    if config.max_prompt_tokens is not None:
        raise TrainingSetupError(
            OptionText(
                "{max_prompt_tokens} applies to {objective} head; the generative objective cuts a "
                "longer prompt on the left to {max_length}"
            )
        )
    set_seed(config.seed)
    on_cuda = torch.cuda.is_available()
    use_bf16 = config.bf16 and (torch.cuda.is_bf16_supported() if on_cuda else cpu_has_bf16())
    # on a CPU the Trainer's bf16 is autocast over float32 weights: 1.8× the float32 throughput
    # of SmolLM2-135M here (bench/train_precision.py)
    loaded = load_base_model(
        config.base_model, dtype=torch.bfloat16 if use_bf16 and on_cuda else torch.float32
    )
    if config.lora:
        loaded.model = _with_lora(loaded.model, config)
    dataset = ConversationDataset(train_records, loaded, config.max_length)
    collator = CriticCollator(loaded.tokenizer.pad_token_id)
    answer_only = config.answer_logits_only and accepts_logits_to_keep(loaded.model)
    trainer_class = AnswerLogitsTrainer if answer_only else Trainer
    trainer = trainer_class(
        model=loaded.model,
        args=_training_arguments(config, use_bf16=use_bf16, on_cuda=on_cuda),
        data_collator=collator,
        train_dataset=dataset,
        processing_class=loaded.processor or loaded.tokenizer,
    )
    trainer.remove_callback(PrinterCallback)  # keep stdout for the command's own output
    if on_log is not None:
        trainer.add_callback(_LogForwarder(on_log))
    started = time.perf_counter()
    trainer.train(resume_from_checkpoint=True if config.resume else None)
    seconds = time.perf_counter() - started
    losses = [
        (int(log["step"]), float(log["loss"])) for log in trainer.state.log_history if "loss" in log
    ]
    final_dir = config.output_dir / FINAL_FOLDER
    if not config.merge:
        trainer.save_model(str(final_dir))  # every process takes part (sharded weights)
    summary = calibration_file = None
    if trainer.is_world_process_zero():
        loaded.model = _finish(trainer, loaded, config, final_dir, records[0].meta, use_bf16)
        if config.evaluate and eval_records:
            summary = evaluate_records(
                loaded,
                eval_records,
                max_new_tokens=config.eval_max_new_tokens,
                batch_size=config.eval_batch_size,
                limit=config.eval_limit,
            )
            calibration_file = final_dir / CALIBRATION_FILE
            calibration_file.write_text(summary.report.to_json(), "utf-8")
    return TrainResult(
        final_dir=final_dir,
        steps=trainer.state.global_step,
        losses=losses,
        train_tokens=collator.tokens_seen,
        seconds=seconds,
        tokens_per_second=collator.tokens_seen / seconds if seconds > 0 else float("nan"),
        truncated=len(dataset.truncated),
        eval=summary,
        calibration_file=calibration_file,
    )


def _check_output_dir(config: TrainConfig) -> None:
    checkpoints = sorted(
        config.output_dir.glob("checkpoint-*") if config.output_dir.exists() else [],
        key=lambda path: int(path.name.rsplit("-", 1)[-1]) if path.name[11:].isdigit() else -1,
    )
    if config.resume and not checkpoints:
        raise TrainingSetupError(
            OptionText(
                "{resume}: there is no checkpoint in {folder} to resume from; drop {resume}",
                folder=config.output_dir,
            )
        )
    if checkpoints and not config.resume:
        raise TrainingSetupError(
            OptionText(
                "{folder} already holds checkpoints ({checkpoint}); pass {resume} to continue "
                "that run, or choose another {output_dir}",
                folder=config.output_dir,
                checkpoint=checkpoints[-1].name,
            )
        )
    if config.merge and not config.lora:
        raise TrainingSetupError(
            OptionText("{merge} only applies to LoRA training: add {lora} or drop {merge}")
        )


def _with_lora(model: Any, config: TrainConfig) -> Any:
    from peft import LoraConfig, get_peft_model

    target: str | list[str] = (
        config.lora_target if config.lora_target == "all-linear" else config.lora_target.split(",")
    )
    if config.lora_last_layers is not None:
        target = _last_layer_modules(model, config)
    lora = LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=target,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)


def _last_layer_modules(model: Any, config: TrainConfig) -> list[str]:
    """Full names of the linear modules (or of ``lora_target``) in the last N decoder layers."""
    layers = model.get_decoder().layers
    count = config.lora_last_layers
    if count is None or not 1 <= count <= len(layers):
        raise TrainingSetupError(
            OptionText(
                "{lora_last_layers} must be between 1 and {count}, the model's layers",
                count=len(layers),
            )
        )
    chosen = {id(module) for layer in layers[-count:] for module in layer.modules()}
    wanted = None if config.lora_target == "all-linear" else set(config.lora_target.split(","))
    return [
        name
        for name, module in model.named_modules()
        if id(module) in chosen
        and isinstance(module, torch.nn.Linear)
        and (wanted is None or name.rsplit(".", 1)[-1] in wanted)
    ]


def _training_arguments(config: TrainConfig, *, use_bf16: bool, on_cuda: bool) -> TrainingArguments:
    learning_rate = config.learning_rate or (2e-4 if config.lora else 2e-5)
    checkpointing = config.gradient_checkpointing and on_cuda
    return TrainingArguments(
        output_dir=str(config.output_dir),
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.grad_accum,
        learning_rate=learning_rate,
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        warmup_steps=config.warmup_steps,
        logging_steps=config.logging_steps,
        logging_first_step=True,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=config.save_total_limit,
        seed=config.seed,
        data_seed=config.seed,
        bf16=use_bf16,
        use_cpu=use_bf16 and not on_cuda,  # the Trainer's bf16 on a CPU needs it said
        activation_checkpointing=checkpointing,
        activation_checkpointing_kwargs={"use_reentrant": False} if checkpointing else None,
        report_to="none",
        remove_unused_columns=False,
        dataloader_pin_memory=on_cuda,
        disable_tqdm=True,
    )


def _finish(
    trainer: Trainer,
    loaded: LoadedModel,
    config: TrainConfig,
    final_dir: Path,
    meta: dict,
    used_bf16: bool,
) -> Any:
    """Save the merged weights (``--merge``) and ``critic.json``; return the model to evaluate.

    Without ``--merge`` the weights (adapter or full) and the tokenizer/processor were saved by
    ``trainer.save_model``.
    """
    # Any: with --merge this is the peft model of _with_lora, whose merge_and_unload (reached
    # through peft's __getattr__) the type Trainer declares for its model does not have.
    model: Any = trainer.model
    if config.merge:
        model = model.merge_and_unload()
        model.save_pretrained(final_dir)
        (loaded.processor or loaded.tokenizer).save_pretrained(final_dir)
    info = {
        "base_model": str(Path(config.base_model).resolve()),
        "kind": loaded.kind,
        "protocol": meta.get("protocol"),
        "prompt_id": meta.get("prompt_id"),
        "scale": meta.get("scale"),
        "adapter": config.lora and not config.merge,
        "bf16": used_bf16,
        "train_config": {
            key: str(value) if isinstance(value, Path) else value
            for key, value in asdict(config).items()
        },
        "global_step": trainer.state.global_step,
    }
    (final_dir / CRITIC_INFO_FILE).write_text(json.dumps(info, indent=2))
    return model
