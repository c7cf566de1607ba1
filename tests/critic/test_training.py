"""Fine-tuning tiny models by path: loss falls, checkpoints reload and resume, LoRA adapters save,
load and merge, a vision-language model trains on an image, and every critic ships with its
calibration report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from campaign_factory import write_short_template
from safetensors.torch import load_file
from sqlalchemy.engine import Engine

from critic.modeling import load_base_model, load_critic
from critic.prompts import load_template
from critic.sft import SftOptions, export_campaign_sft
from critic.train_config import TrainConfig
from critic.train_result import TrainingSetupError
from critic.training import train_critic


def _export(engine: Engine, tmp_path: Path, *, vision: bool = False) -> Path:
    path = tmp_path / "sft.jsonl"
    template = load_template(write_short_template(tmp_path))
    options = SftOptions(eval_fraction=0.34, vision=vision)
    export_campaign_sft(engine, "amb", path, options, template=template)
    return path


def _config(data: Path, base: Path, out: Path, **changes: object) -> TrainConfig:
    settings: dict = dict(
        batch_size=4,
        logging_steps=1,
        save_steps=4,
        eval_max_new_tokens=12,
        learning_rate=5e-3,
        max_steps=8,
    )
    settings.update(changes)
    return TrainConfig(data=data, base_model=base, output_dir=out, **settings)


def _logits(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(input_ids=ids).logits


def test_full_finetune_lowers_the_loss_and_reloads(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    data = _export(engine, tmp_path)
    result = train_critic(_config(data, tiny_llama, tmp_path / "run"))
    losses = [loss for _step, loss in result.losses]
    assert result.steps == 8 and len(losses) == 8
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.5, losses
    assert result.train_tokens > 0 and result.truncated == 0
    assert sorted(p.name for p in (tmp_path / "run").glob("checkpoint-*")) == [
        "checkpoint-4",
        "checkpoint-8",
    ]
    reloaded = load_critic(result.final_dir)
    base = load_base_model(tiny_llama)
    ids = torch.tensor([[5, 6, 7, 8]])
    assert not torch.allclose(_logits(reloaded.model, ids), _logits(base.model, ids))
    midway = load_critic(tmp_path / "run" / "checkpoint-4")  # checkpoints load like critics
    assert not torch.allclose(_logits(midway.model, ids), _logits(reloaded.model, ids))
    info = json.loads((result.final_dir / "critic.json").read_text())
    assert info["protocol"] == "alignmmbench" and info["prompt_id"] == "short-amb-text@3"
    assert info["adapter"] is False and info["global_step"] == 8
    report = json.loads(result.calibration_file.read_text())
    assert report["protocol"] == "alignmmbench"
    critic = report["judges"]["critic"]
    assert "coverage" in critic and sum(result.eval.statuses.values()) == result.eval.n_units == 4


def test_resume_continues_from_the_newest_checkpoint(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    data = _export(engine, tmp_path)
    out = tmp_path / "run"
    train_critic(_config(data, tiny_llama, out, max_steps=4, evaluate=False))
    with pytest.raises(TrainingSetupError, match="already holds checkpoints .*; pass resume"):
        train_critic(_config(data, tiny_llama, out, max_steps=6, evaluate=False))
    resumed = train_critic(_config(data, tiny_llama, out, max_steps=6, evaluate=False, resume=True))
    assert resumed.steps == 6
    assert [step for step, _loss in resumed.losses if step <= 4][:1] == [1]  # history carried over
    assert (out / "checkpoint-6").is_dir()
    with pytest.raises(TrainingSetupError, match="no checkpoint"):
        train_critic(_config(data, tiny_llama, tmp_path / "fresh", resume=True))


def test_lora_adapter_saves_loads_and_merges(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    data = _export(engine, tmp_path)
    adapter = train_critic(
        _config(
            data,
            tiny_llama,
            tmp_path / "lora",
            lora=True,
            lora_r=4,
            learning_rate=2e-2,
            max_steps=3,
            evaluate=False,
        )
    )
    assert (adapter.final_dir / "adapter_config.json").exists()
    assert not (adapter.final_dir / "model.safetensors").exists()
    weights = load_file(adapter.final_dir / "adapter_model.safetensors")
    assert weights and all("lora_" in name for name in weights)
    loaded = load_critic(adapter.final_dir)
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    with_adapter = _logits(loaded.model, ids)
    base = _logits(load_base_model(tiny_llama).model, ids)
    assert not torch.allclose(with_adapter, base, atol=1e-6)
    merged = loaded.model.merge_and_unload()
    assert torch.allclose(_logits(merged, ids), with_adapter, atol=1e-5)
    # the same run with --merge saves full weights equal to adapter + base
    full = train_critic(
        _config(
            data,
            tiny_llama,
            tmp_path / "merged",
            lora=True,
            lora_r=4,
            learning_rate=2e-2,
            max_steps=3,
            evaluate=False,
            merge=True,
        )
    )
    assert not (full.final_dir / "adapter_config.json").exists()
    assert torch.allclose(_logits(load_critic(full.final_dir).model, ids), with_adapter, atol=1e-5)


def test_a_lora_critics_head_reads_a_contiguous_input_and_gives_the_same_logits(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    """A frozen head fed the strided last position makes torch.matmul copy its weight per row
    (critic.modeling.contiguous_head_input); the loaded critic's head gets a contiguous copy."""
    data = _export(engine, tmp_path)
    config = _config(data, tiny_llama, tmp_path / "lora", lora=True, max_steps=1, evaluate=False)
    loaded = load_critic(train_critic(config).final_dir)
    head = loaded.model.get_output_embeddings()
    assert not any(parameter.requires_grad for parameter in head.parameters())
    contiguous: list[bool] = []
    head.register_forward_hook(
        lambda _module, args, _out: contiguous.append(args[0].is_contiguous())
    )
    ids = torch.tensor([[5, 6, 7, 8, 9], [9, 8, 7, 6, 5]])
    with torch.no_grad():
        last = loaded.model(input_ids=ids, logits_to_keep=1).logits
        every = loaded.model(input_ids=ids).logits
    assert contiguous == [True, True]
    torch.testing.assert_close(last[:, -1], every[:, -1])


def test_the_evaluation_after_lora_training_hands_the_head_a_contiguous_input(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    data = _export(engine, tmp_path)
    vocabulary = load_base_model(tiny_llama).model.get_output_embeddings().out_features
    seen: list[tuple[bool, bool]] = []  # (in training mode, input contiguous) of each head call

    def record(module: torch.nn.Module, args: tuple, _out: object) -> None:
        if isinstance(module, torch.nn.Linear) and module.out_features == vocabulary:
            seen.append((module.training, args[0].is_contiguous()))

    hook = torch.nn.modules.module.register_module_forward_hook(record)
    try:
        train_critic(_config(data, tiny_llama, tmp_path / "lora", lora=True, max_steps=1))
    finally:
        hook.remove()
    evaluation = [contiguous for training, contiguous in seen if not training]
    assert evaluation and all(evaluation)


def test_bf16_on_a_cpu_is_mixed_precision_over_float32_weights(
    engine: Engine,
    campaigns: dict,
    tiny_llama: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a CPU, ``bf16`` follows the CPU's bf16 instructions: where they are missing, the run is
    exactly the float32 run; where they are present, the same seeded run computes in bf16
    (other weights, close to the float32 ones) and still saves float32 weights."""
    if torch.cuda.is_available():
        pytest.skip("CUDA present: bf16 follows the GPU there, not the CPU flags")
    data = _export(engine, tmp_path)

    def trained(name: str, *, bf16: bool, cpu_bf16: bool) -> tuple[dict, dict]:
        monkeypatch.setattr("critic.fine_tune.cpu_has_bf16", lambda: cpu_bf16)
        config = _config(data, tiny_llama, tmp_path / name, bf16=bf16, max_steps=3, evaluate=False)
        final = train_critic(config).final_dir
        info = json.loads((final / "critic.json").read_text())
        return load_file(final / "model.safetensors"), info

    float32, info32 = trained("float32", bf16=False, cpu_bf16=True)
    no_flags, info_no_flags = trained("no-flags", bf16=True, cpu_bf16=False)
    mixed, info_mixed = trained("bf16", bf16=True, cpu_bf16=True)
    assert info32["bf16"] is False and info_no_flags["bf16"] is False and info_mixed["bf16"] is True
    assert float32.keys() == no_flags.keys() == mixed.keys()
    assert all(torch.equal(float32[name], no_flags[name]) for name in float32)
    assert all(tensor.dtype == torch.float32 for tensor in mixed.values())
    moved = [name for name in float32 if not torch.equal(float32[name], mixed[name])]
    assert moved
    assert all(torch.allclose(float32[name], mixed[name], atol=0.05) for name in float32)


def test_vision_language_model_trains_on_images(
    engine: Engine, campaigns: dict, tiny_llava: Path, tmp_path: Path
) -> None:
    data = _export(engine, tmp_path, vision=True)
    records = [json.loads(line) for line in data.read_text().splitlines()]
    with_images = [r for r in records if r["images"]]
    assert with_images and all(Path(p).is_file() for r in with_images for p in r["images"])
    assert {"type": "image"} in with_images[0]["messages"][1]["content"]
    result = train_critic(_config(data, tiny_llava, tmp_path / "vlm", max_steps=6, batch_size=6))
    losses = [loss for _step, loss in result.losses]
    assert losses[-1] < losses[0] - 0.3, losses
    reloaded = load_critic(result.final_dir)
    assert reloaded.kind == "vision" and reloaded.processor is not None
    assert json.loads(result.calibration_file.read_text())["judges"]["critic"]


def test_training_refuses_what_does_not_fit(
    engine: Engine, campaigns: dict, tiny_llama: Path, tmp_path: Path
) -> None:
    data = _export(engine, tmp_path)
    refused = "^merge only applies to LoRA training: add lora or drop merge$"
    with pytest.raises(TrainingSetupError, match=refused):
        train_critic(_config(data, tiny_llama, tmp_path / "x", merge=True))
    with pytest.raises(ValueError, match="not a model folder"):
        train_critic(_config(data, tmp_path / "nowhere", tmp_path / "y"))
