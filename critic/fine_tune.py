"""The generative objective of ``critic train``: supervised fine-tuning of the whole model or a
LoRA adapter with transformers' Trainer, so that the critic writes its verdict and reasons.

:func:`critic.training.train_critic` runs it for ``objective="generate"`` (the module docstring
there says what a run produces); :mod:`critic.head` is the other objective.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

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
from critic.evaluation import evaluate_records
from critic.modeling import CRITIC_INFO_FILE, LoadedModel, cpu_has_bf16, load_base_model
from critic.sft import SftRecord, read_sft
from critic.train_config import TrainConfig
from critic.train_result import (
    CALIBRATION_FILE,
    FINAL_FOLDER,
    TrainingSetupError,
    TrainResult,
)
from schemas.option_text import OptionText


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


def fine_tune(
    config: TrainConfig, on_log: Callable[[dict[str, Any]], None] | None = None
) -> TrainResult:
    """Fine-tune ``config.base_model`` on the train split of ``config.data`` with Trainer, save
    the critic to ``<output>/final`` and judge the eval split there (``config.evaluate``)."""
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
    learning_rate = config.learning_rate
    if learning_rate is None:  # unset: the documented default (TrainConfig.learning_rate)
        learning_rate = 2e-4 if config.lora else 2e-5
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
