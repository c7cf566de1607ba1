"""Tiny models built offline for the critic tests: a Llama-style causal LM and a LLaVA-style
vision-language model, each with a byte-level BPE tokenizer trained on the fly and a ChatML chat
template. Hidden size 32, 2 layers, vocabulary of a few hundred tokens: seconds on a CPU.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    CLIPImageProcessorPil,
    CLIPVisionConfig,
    LlamaConfig,
    LlamaForCausalLM,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    PreTrainedTokenizerFast,
)

from critic.prompts import TEMPLATES_DIR

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>"
    "{% else %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<pad>", "<|im_start|>", "<|im_end|>", "<image>"]
IMAGE_SIZE, PATCH_SIZE = 32, 8


def build_tokenizer(vocab_size: int = 400) -> PreTrainedTokenizerFast:
    """Byte-level BPE with single-digit tokens, trained on our own prompt templates."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    corpus = [path.read_text(encoding="utf-8") for path in sorted(TEMPLATES_DIR.glob("*.toml"))]
    corpus += ['{"Rating": 7, "Reason": "The answer is correct but thin."}', "[[A]] [[B]] [[C]]"]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="<pad>",
        eos_token="<|im_end|>",
        extra_special_tokens={"image_token": "<image>"},
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def _text_config(tokenizer: PreTrainedTokenizerFast) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
    )


def build_tiny_llama(folder: Path, seed: int = 0) -> Path:
    """Save a tiny Llama-style causal LM with its tokenizer to ``folder``."""
    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    model = LlamaForCausalLM(_text_config(tokenizer))
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_llava(folder: Path, seed: int = 0) -> Path:
    """Save a tiny LLaVA-style vision-language model with its processor to ``folder``."""
    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    vision = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=IMAGE_SIZE,
        patch_size=PATCH_SIZE,
        projection_dim=32,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=_text_config(tokenizer),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    model = LlavaForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=PATCH_SIZE,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # the CLS token of the CLIP vision tower
        chat_template=CHAT_TEMPLATE,
    )
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def write_tiny_gguf(path: Path, seed: int = 0, *, chat_template: bool = True) -> Path:
    """Write a tiny Llama GGUF file (float32 tensors, GPT-2 style BPE tokenizer, chat template
    unless ``chat_template`` is False, as in a base model's file)."""
    import json

    import gguf
    import numpy as np

    tokenizer = build_tokenizer()
    vocab = tokenizer.backend_tokenizer.get_vocab()
    tokens = [token for token, _ in sorted(vocab.items(), key=lambda pair: pair[1])]
    merges = json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    hidden, inter, layers, heads = 32, 64, 2, 2
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(256)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(inter)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([3 if token in SPECIAL_TOKENS else 1 for token in tokens])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.add_bos_token_id(tokenizer.pad_token_id)
    writer.add_add_bos_token(False)
    if chat_template:
        writer.add_chat_template(CHAT_TEMPLATE)
    rng = np.random.default_rng(seed)

    def weight(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.05).astype(np.float32))

    weight("token_embd.weight", len(tokens), hidden)
    for i in range(layers):
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            weight(f"blk.{i}.{name}.weight", hidden, hidden)
        weight(f"blk.{i}.ffn_gate.weight", inter, hidden)
        weight(f"blk.{i}.ffn_up.weight", inter, hidden)
        weight(f"blk.{i}.ffn_down.weight", hidden, inter)
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(hidden, np.float32))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(hidden, np.float32))
    writer.add_tensor("output_norm.weight", np.ones(hidden, np.float32))
    weight("output.weight", len(tokens), hidden)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
