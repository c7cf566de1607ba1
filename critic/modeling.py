"""Load base models and trained critics from local folders (never from a hub).

Two kinds: ``causal`` (``AutoModelForCausalLM`` + tokenizer) and ``vision``
(``AutoModelForImageTextToText`` + ``AutoProcessor``), told apart by the folder's config. A
trained critic folder holds either full weights or a LoRA adapter (``adapter_config.json``) on
top of its base model; :func:`load_critic` handles both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForImageTextToText,
    AutoProcessor,
    AutoTokenizer,
)

ModelKind = Literal["causal", "vision"]
CRITIC_INFO_FILE = "critic.json"
"""Written beside a trained critic's weights: base model, kind, protocol, template, training."""


class ModelFolderError(ValueError):
    """A model path that is not a usable local model folder."""


@dataclass
class LoadedModel:
    """A model ready to train or judge, with what it needs to read its input."""

    model: Any
    tokenizer: Any
    processor: Any | None
    kind: ModelKind
    path: Path
    info: dict[str, Any] = field(default_factory=dict)
    """``critic.json`` of a trained critic; empty for a base model."""

    @property
    def chat(self) -> Any:
        """The object whose chat template renders prompts (processor or tokenizer)."""
        return self.processor if self.processor is not None else self.tokenizer


def preferred_dtype() -> torch.dtype:
    """bf16 on a CUDA device that supports it, float32 otherwise."""
    if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def model_kind(path: Path | str) -> ModelKind:
    """``vision`` when the folder's config has a vision part, else ``causal``."""
    config = AutoConfig.from_pretrained(_folder(path), local_files_only=True)
    return "vision" if getattr(config, "vision_config", None) is not None else "causal"


def load_base_model(path: Path | str, *, dtype: torch.dtype | None = None) -> LoadedModel:
    """Load a base model (causal or vision-language) and its tokenizer/processor from a folder."""
    folder = _folder(path)
    kind = model_kind(folder)
    dtype = dtype or preferred_dtype()
    if kind == "vision":
        processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
        tokenizer = processor.tokenizer
        model = AutoModelForImageTextToText.from_pretrained(
            folder, dtype=dtype, local_files_only=True
        )
    else:
        processor = None
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, local_files_only=True)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.chat_template is None and (processor is None or processor.chat_template is None):
        raise ModelFolderError(
            f"{folder} has no chat template; add chat_template.jinja to the folder (the critic "
            "renders its prompts with the model's own template)"
        )
    return LoadedModel(model, tokenizer, processor, kind, folder)


def load_critic(path: Path | str) -> LoadedModel:
    """Load a trained critic: full weights, or a LoRA adapter on top of its base model.

    A plain base model folder works too (an untrained critic, e.g. for a baseline).
    """
    from peft import PeftModel

    folder = _folder(path)
    info_file = folder / CRITIC_INFO_FILE
    info = json.loads(info_file.read_text()) if info_file.exists() else {}
    adapter_config = folder / "adapter_config.json"
    if not adapter_config.exists():
        loaded = load_base_model(folder)
        loaded.info = info
        return loaded
    base = json.loads(adapter_config.read_text()).get("base_model_name_or_path")
    if not base or not Path(base).is_dir():
        raise ModelFolderError(
            f"{folder} is a LoRA adapter whose base model {base!r} is not a local folder; put the "
            "base model there, or train with --merge to save full weights"
        )
    loaded = load_base_model(base)
    loaded.model = PeftModel.from_pretrained(loaded.model, folder)
    loaded.path, loaded.info = folder, info
    return loaded


def _folder(path: Path | str) -> Path:
    folder = Path(path).expanduser().resolve()
    if not (folder / "config.json").exists() and not (folder / "adapter_config.json").exists():
        raise ModelFolderError(
            f"{folder} is not a model folder (no config.json). Give a local folder saved with "
            "save_pretrained; for SmolLM2 run critiquelab critic convert-gguf first. Nothing is "
            "downloaded from a hub."
        )
    return folder
