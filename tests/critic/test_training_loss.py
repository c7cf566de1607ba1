"""The critic trainer computes vocabulary logits only where the loss reads them, and its loss,
gradients and trained weights equal transformers' default causal-LM loss (text and vision)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from campaign_factory import write_short_template
from sqlalchemy.engine import Engine
from transformers import Trainer, TrainingArguments

from critic.collate import IGNORE_INDEX, CriticCollator
from critic.fine_tune import (
    AnswerLogitsTrainer,
    ConversationDataset,
    _with_lora,
    accepts_logits_to_keep,
)
from critic.modeling import load_base_model
from critic.prompts import load_template
from critic.sft import SftOptions, export_campaign_sft, read_sft
from critic.train_config import TrainConfig


def _dataset(
    engine: Engine, tmp_path: Path, base: Path, *, vision: bool
) -> tuple[object, ConversationDataset]:
    path = tmp_path / "sft.jsonl"
    template = load_template(write_short_template(tmp_path))
    export_campaign_sft(engine, "amb", path, SftOptions(vision=vision), template=template)
    loaded = load_base_model(base)
    return loaded, ConversationDataset(read_sft(path), loaded, max_length=2048)


def _arguments(tmp_path: Path, **changes: object) -> TrainingArguments:
    settings: dict = dict(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        report_to="none",
        remove_unused_columns=False,
        per_device_train_batch_size=3,
        learning_rate=1e-2,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
        data_seed=0,
    )
    settings.update(changes)
    return TrainingArguments(**settings)


def _loss_and_gradients(
    trainer: Trainer, batch: dict[str, torch.Tensor], count: torch.Tensor | None
) -> tuple[float, dict[str, torch.Tensor]]:
    trainer.model.zero_grad()
    loss = trainer.compute_loss(trainer.model, dict(batch), num_items_in_batch=count)
    loss.backward()
    gradients = {
        name: parameter.grad.clone()
        for name, parameter in trainer.model.named_parameters()
        if parameter.grad is not None
    }
    return float(loss.detach()), gradients


@pytest.mark.parametrize("model_name", ["tiny_llama", "tiny_llava"])
def test_the_loss_and_its_gradients_equal_the_default_causal_lm_loss(
    engine: Engine, campaigns: dict, tmp_path: Path, model_name: str, request: pytest.FixtureRequest
) -> None:
    vision = model_name == "tiny_llava"
    loaded, dataset = _dataset(engine, tmp_path, request.getfixturevalue(model_name), vision=vision)
    assert accepts_logits_to_keep(loaded.model)
    collator = CriticCollator(loaded.tokenizer.pad_token_id)
    batch = collator([dataset[index] for index in range(3)])
    lengths = batch["attention_mask"].sum(1)
    assert len(set(lengths.tolist())) > 1  # right padding: the answers sit at different positions
    if vision:
        assert "pixel_values" in batch
    args = _arguments(tmp_path)
    default = Trainer(model=loaded.model, args=args, data_collator=collator)
    answer_only = AnswerLogitsTrainer(model=loaded.model, args=args, data_collator=collator)
    labelled = (batch["labels"][:, 1:] != IGNORE_INDEX).sum()
    for count in (labelled, labelled * 2, None):  # the whole accumulated batch, or none given
        expected, expected_gradients = _loss_and_gradients(default, batch, count)
        loss, gradients = _loss_and_gradients(answer_only, batch, count)
        assert loss == pytest.approx(expected, rel=1e-5)
        assert gradients.keys() == expected_gradients.keys() and gradients
        for name, gradient in gradients.items():
            torch.testing.assert_close(gradient, expected_gradients[name], rtol=1e-4, atol=1e-6)
    _loss, outputs = answer_only.compute_loss(loaded.model, dict(batch), return_outputs=True)
    answer_positions = int((batch["labels"][:, 1:] != IGNORE_INDEX).any(0).sum())
    assert outputs.logits.shape[:2] == (3, answer_positions)
    assert answer_positions < batch["input_ids"].shape[1] // 2


def test_lora_training_with_gradient_accumulation_ends_with_the_default_trainers_weights(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    config = TrainConfig(data=tmp_path, base_model=tiny_llama, output_dir=tmp_path, lora=True)
    weights = {}
    for trainer_class in (Trainer, AnswerLogitsTrainer):
        loaded, dataset = _dataset(engine, tmp_path, tiny_llama, vision=False)
        torch.manual_seed(0)  # the same adapter initialisation for both
        model = _with_lora(loaded.model, config)
        assert accepts_logits_to_keep(model)
        args = _arguments(tmp_path, gradient_accumulation_steps=2, max_steps=3)
        trainer = trainer_class(
            model=model,
            args=args,
            data_collator=CriticCollator(loaded.tokenizer.pad_token_id),
            train_dataset=dataset,
        )
        trainer.train()
        weights[trainer_class] = {
            name: parameter.detach().clone()
            for name, parameter in model.named_parameters()
            if parameter.requires_grad
        }
    default, answer_only = weights[Trainer], weights[AnswerLogitsTrainer]
    assert default.keys() == answer_only.keys() and default
    torch.manual_seed(0)
    initial = dict(_with_lora(load_base_model(tiny_llama).model, config).named_parameters())
    assert any(not torch.allclose(default[name], initial[name]) for name in default)
    for name in default:
        torch.testing.assert_close(answer_only[name], default[name], rtol=1e-4, atol=1e-6)
