"""Turn chat records into token ids with the loss on the assistant turn only, and batch them.

:func:`encode_conversation` renders the prompt (system + user, with the generation prompt) and
the full conversation with the model's own chat template; the assistant part is the difference.
Prompt tokens get label ``-100`` (ignored by the loss), the answer tokens — including the
template's end-of-turn marker, so the critic learns to stop — keep their ids. The prompt is
tokenized exactly as it will be at judging time, so training and inference see the same ids.

Vision-language models go through their processor (which expands image placeholders into image
tokens and returns ``pixel_values``); text models through their tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from PIL import Image

from schemas.option_text import OptionError, OptionText

IGNORE_INDEX = -100
"""Label of tokens that carry no loss (prompt and padding), as transformers expects."""


class ConversationTooLong(OptionError):
    """A vision-language conversation longer than ``max_length`` (a cut would lose image tokens)."""


@dataclass(frozen=True)
class EncodedConversation:
    """Token ids, labels (``-100`` on the prompt) and, for vision models, image tensors."""

    input_ids: list[int]
    labels: list[int]
    image_inputs: dict[str, torch.Tensor] = field(default_factory=dict)
    truncated: bool = False
    """The prompt was cut on the left to fit ``max_length`` (text models only)."""


def render_prompt(chat: Any, messages: list[dict[str, Any]]) -> str:
    """The prompt text the model continues from: the messages plus the generation prompt."""
    return chat.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def encode_conversation(
    messages: list[dict[str, Any]],
    images: list[str],
    *,
    tokenizer: Any,
    processor: Any | None = None,
    max_length: int = 2048,
) -> EncodedConversation:
    """Encode one training conversation whose last message is the assistant's answer."""
    chat = processor if processor is not None else tokenizer
    if processor is None:
        _require_text_only(messages)
    prompt_text = render_prompt(chat, messages[:-1])
    full_text = chat.apply_chat_template(messages, tokenize=False)
    if not full_text.startswith(prompt_text):
        raise ValueError(
            "the chat template renders the conversation differently from its prompt, so the "
            "assistant turn cannot be located; use a model whose chat template appends turns"
        )
    answer_ids = tokenizer(full_text[len(prompt_text) :], add_special_tokens=False)["input_ids"]
    image_inputs: dict[str, torch.Tensor] = {}
    if processor is not None:
        pictures = [Image.open(path).convert("RGB") for path in images]
        encoded = processor(text=prompt_text, images=pictures or None, return_tensors="pt")
        prompt_ids = encoded["input_ids"][0].tolist()
        image_inputs = {
            key: value
            for key, value in encoded.items()
            if key not in ("input_ids", "attention_mask")
        }
    else:
        prompt_ids = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    truncated = False
    overflow = len(prompt_ids) + len(answer_ids) - max_length
    if overflow > 0:
        if processor is not None or overflow >= len(prompt_ids):
            raise ConversationTooLong(
                OptionText(
                    "conversation of {tokens} tokens is longer than {max_length} {value}; "
                    "raise {max_length}",
                    tokens=len(prompt_ids) + len(answer_ids),
                    value=max_length,
                )
            )
        prompt_ids, truncated = prompt_ids[overflow:], True
    return EncodedConversation(
        input_ids=prompt_ids + answer_ids,
        labels=[IGNORE_INDEX] * len(prompt_ids) + list(answer_ids),
        image_inputs=image_inputs,
        truncated=truncated,
    )


@dataclass
class CriticCollator:
    """Pads encoded conversations into a batch.

    ``input_ids`` are padded with ``pad_token_id``, ``labels`` with ``-100``, ``attention_mask``
    with 0, on the right (training) or the left (generation). Image tensors of the batch are
    concatenated along the first axis, the layout LLaVA-style models take. ``tokens_seen`` counts
    the real (non-pad) tokens of every batch built, for throughput figures.
    """

    pad_token_id: int
    padding_side: Literal["right", "left"] = "right"
    tokens_seen: int = 0

    def __call__(self, features: list[EncodedConversation]) -> dict[str, torch.Tensor]:
        width = max(len(feature.input_ids) for feature in features)
        ids, labels, mask = [], [], []
        for feature in features:
            pad = width - len(feature.input_ids)
            ids.append(self._pad(feature.input_ids, pad, self.pad_token_id))
            labels.append(self._pad(feature.labels, pad, IGNORE_INDEX))
            mask.append(self._pad([1] * len(feature.input_ids), pad, 0))
        batch = {
            "input_ids": torch.tensor(ids, dtype=torch.long),
            "attention_mask": torch.tensor(mask, dtype=torch.long),
            "labels": torch.tensor(labels, dtype=torch.long),
        }
        for key in {key for feature in features for key in feature.image_inputs}:
            batch[key] = torch.cat([f.image_inputs[key] for f in features if key in f.image_inputs])
        self.tokens_seen += int(batch["attention_mask"].sum())
        return batch

    def _pad(self, values: list[int], pad: int, filler: int) -> list[int]:
        padding = [filler] * pad
        return padding + list(values) if self.padding_side == "left" else list(values) + padding


def _require_text_only(messages: list[dict[str, Any]]) -> None:
    for message in messages:
        if not isinstance(message["content"], str):
            raise OptionError(
                OptionText(
                    "this training file has vision-language prompts (content segments), but the "
                    "base model is a text-only causal LM: export with text-only prompts (without "
                    "{vision}) or train a vision-language model"
                )
            )
