"""``critic convert-gguf``: a GGUF file written by the test becomes an ordinary local folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tiny_models import CHAT_TEMPLATE, build_tokenizer, write_tiny_gguf
from transformers import AutoModelForCausalLM
from typer.testing import CliRunner

from annotate_app.cli.main import app
from critic.gguf import GgufConversionError, convert_gguf
from critic.modeling import ModelFolderError, load_critic

runner = CliRunner()


def test_converted_folder_reproduces_the_gguf_model(tmp_path: Path) -> None:
    gguf_file = write_tiny_gguf(tmp_path / "tiny.gguf")
    result = convert_gguf(gguf_file, tmp_path / "hf")
    assert result.architecture == "LlamaForCausalLM" and result.has_chat_template
    assert (tmp_path / "hf" / "model.safetensors").exists()
    from_gguf = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file="tiny.gguf")
    converted = load_critic(tmp_path / "hf")  # the path every critic command takes
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    with torch.no_grad():
        assert torch.allclose(converted.model(ids).logits, from_gguf(ids).logits, atol=1e-6)
    text = 'Rating: 10, "Reason"'
    assert converted.tokenizer(text)["input_ids"] == build_tokenizer()(text)["input_ids"]
    assert converted.tokenizer.chat_template == CHAT_TEMPLATE
    with pytest.raises(GgufConversionError, match="is not empty"):
        convert_gguf(gguf_file, tmp_path / "hf")
    with pytest.raises(GgufConversionError, match="is not a file"):
        convert_gguf(tmp_path / "missing.gguf", tmp_path / "other")


def test_convert_gguf_command(tmp_path: Path) -> None:
    gguf_file = write_tiny_gguf(tmp_path / "tiny.gguf")
    result = runner.invoke(
        app, ["--json", "critic", "convert-gguf", str(gguf_file), "-o", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["parameters"] == sum(
        p.numel() for p in AutoModelForCausalLM.from_pretrained(tmp_path / "out").parameters()
    )


def test_a_file_without_a_chat_template_converts_and_says_what_to_add(tmp_path: Path) -> None:
    gguf_file = write_tiny_gguf(tmp_path / "base.gguf", chat_template=False)
    result = runner.invoke(app, ["critic", "convert-gguf", str(gguf_file), "-o", tmp_path / "out"])
    assert result.exit_code == 0, result.output
    assert "no chat template: add chat_template.jinja" in result.output
    with pytest.raises(ModelFolderError, match="has no chat template; add chat_template.jinja"):
        load_critic(tmp_path / "out")
    (tmp_path / "out" / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    assert load_critic(tmp_path / "out").tokenizer.chat_template == CHAT_TEMPLATE


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "is empty"), (b'{"not": "gguf"}\n', "does not start with the GGUF magic bytes")],
)
def test_a_file_that_is_not_gguf_is_bad_input(tmp_path: Path, content: bytes, message: str) -> None:
    """Refused with exit 2 before transformers reads it (it exited 1: 'cannot mmap an empty
    file'); nothing is written."""
    path = tmp_path / "weights.gguf"
    path.write_bytes(content)
    out = tmp_path / "out"
    result = runner.invoke(app, ["critic", "convert-gguf", str(path), "-o", str(out)])
    assert result.exit_code == 2 and message in result.output, result.output
    assert not out.exists()
