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

from critic.classifier_head import HEAD_FILE, ClassifierHead, load_head
from data.io.importers.errors import InvalidRecord
from data.io.importers.sources import read_text
from schemas.option_text import OptionError, OptionText

ModelKind = Literal["causal", "vision"]
CRITIC_INFO_FILE = "critic.json"
"""Written beside a trained critic's weights: base model, kind, protocol, template, training."""
FINAL_FOLDER = "final"
"""Where ``critic train`` saves the trained critic inside its output folder."""


class ModelFolderError(OptionError):
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
    head: ClassifierHead | None = None
    """The classifier of a head critic (judges without generating)."""

    @property
    def chat(self) -> Any:
        """The object whose chat template renders prompts (processor or tokenizer)."""
        return self.processor if self.processor is not None else self.tokenizer


def preferred_dtype() -> torch.dtype:
    """bf16 on a CUDA device that supports it, float32 otherwise (training, and the default)."""
    if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def inference_dtype() -> torch.dtype:
    """What ``critic score`` judges in by default: :func:`preferred_dtype`, or bf16 on a CPU with
    bf16 instructions, where SmolLM2-135M judges about 4× faster than in float32 with the same
    verdicts (measured in docs/JUDGE_QUALITY.md)."""
    if not torch.cuda.is_available() and cpu_has_bf16():
        return torch.bfloat16
    return preferred_dtype()


def cpu_has_bf16() -> bool:
    """True when the CPU flags (Linux ``/proc/cpuinfo``) include ``avx512_bf16`` or ``amx_bf16``."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    lines = [line for line in text.splitlines() if line.startswith("flags")]
    flags = {word for line in lines for word in line.split()}
    return bool(flags & {"avx512_bf16", "amx_bf16"})


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
    contiguous_head_input(model)
    return LoadedModel(model, tokenizer, processor, kind, folder)


def load_critic(path: Path | str, *, dtype: torch.dtype | None = None) -> LoadedModel:
    """Load a trained critic: full weights, a LoRA adapter on top of its base model, or a
    preference/score head on top of its frozen base model (``critic train --objective head``).

    A plain base model folder works too (an untrained critic, e.g. for a baseline), and so does
    the output folder of ``critic train`` (its ``final`` folder is loaded). ``dtype``: None =
    :func:`preferred_dtype`.
    """
    from peft import PeftModel

    folder = _critic_folder(path)
    info_file = folder / CRITIC_INFO_FILE
    info = _small_json(info_file) if info_file.exists() else {}
    adapter_config = folder / "adapter_config.json"
    if info.get("objective") == "head":
        loaded = load_base_model(_base_folder(folder, info.get("base_model")), dtype=dtype)
        loaded.head, loaded.path, loaded.info = load_head(folder), folder, info
        return loaded
    if not adapter_config.exists():
        loaded = load_base_model(folder, dtype=dtype)
        loaded.info = info
        return loaded
    base = _small_json(adapter_config).get("base_model_name_or_path")
    loaded = load_base_model(_base_folder(folder, base), dtype=dtype)
    loaded.model = PeftModel.from_pretrained(loaded.model, folder)
    loaded.path, loaded.info = folder, info
    return loaded


def contiguous_head_input(model: torch.nn.Module) -> None:
    """Hand the language-model head a contiguous copy of its input (every model
    :func:`load_base_model` loads; the hook stays with the head under a peft adapter and after
    a merge).

    ``torch.matmul`` multiplies a strided 3-D input by a weight that needs no gradient by
    expanding the weight over the batch and copying it, once per row. The hidden states that
    transformers slices for ``logits_to_keep`` (generation keeps the last position) are such a
    view, and peft freezes a LoRA critic's weights: a batch of 8 took 6 s instead of 0.03 s on
    Gemma-3's 262,144 × 640 head in bf16 (JUDGE_QUALITY.md). The copy is one row per prompt;
    an input that is already contiguous is passed on as it is.
    """
    output_embeddings = getattr(model, "get_output_embeddings", None)
    head = output_embeddings() if callable(output_embeddings) else None
    if isinstance(head, torch.nn.Module):
        head.register_forward_pre_hook(lambda _module, args: (args[0].contiguous(), *args[1:]))


def _base_folder(folder: Path, base: str | None) -> Path:
    if not base or not Path(base).is_dir():
        raise ModelFolderError(
            OptionText(
                "{folder} is trained on top of the base model {base!r}, which is not a local "
                "folder; put the base model there (or train a LoRA critic with {merge} to save "
                "full weights)",
                folder=folder,
                base=base,
            )
        )
    return Path(base)


def _critic_folder(path: Path | str) -> Path:
    """``path``, or the ``final`` folder of a training output folder given instead."""
    folder = Path(path).expanduser().resolve()
    if not _is_model_folder(folder) and _is_model_folder(folder / FINAL_FOLDER):
        return folder / FINAL_FOLDER
    return _folder(folder)


def _is_model_folder(folder: Path) -> bool:
    markers = ("config.json", "adapter_config.json", HEAD_FILE)
    return any((folder / marker).exists() for marker in markers)


def _small_json(path: Path) -> dict[str, Any]:
    """A model folder's small JSON file (``critic.json``, ``adapter_config.json``): a regular
    file of at most a few MiB, as the one reader reads every file (Python's JSON: ``critic.json``
    may record a NaN cross-validation figure)."""
    value = json.loads(read_text(path))
    if not isinstance(value, dict):
        raise InvalidRecord(str(path), None, None, "not a JSON object: rewrite the model folder")
    return value


def _folder(path: Path | str) -> Path:
    folder = Path(path).expanduser().resolve()
    if not _is_model_folder(folder):
        raise ModelFolderError(
            f"{folder} is not a model folder (no config.json). Give a local folder saved with "
            "save_pretrained (a critic trained by critiquelab critic train is in the final "
            "folder of its output folder); for SmolLM2 run critiquelab critic convert-gguf "
            "first. Nothing is downloaded from a hub."
        )
    return folder
