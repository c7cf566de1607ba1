"""What a head critic reads from its frozen base model (:mod:`critic.head`): per judge prompt,
one decoder layer's hidden states (after the model's final norm), either as the last prompt
token's and the mean over the prompt, or as the mean over each response's tokens, found from the
responses' character spans in the prompt. The model runs only up to the deepest layer asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from critic.collate import CriticCollator, EncodedConversation, render_prompt
from critic.modeling import LoadedModel
from schemas.option_text import OptionError, OptionText


class HeadSetupError(OptionError):
    """A head cannot be trained on this model or file, with what to do."""


def prompt_features(
    loaded: LoadedModel,
    conversations: list[list[dict[str, Any]]],
    batch_size: int = 8,
    layers: tuple[int, ...] = (0,),
    answer_spans: list[tuple[tuple[int, int], ...]] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[int, np.ndarray]:
    """Layer → (n, 2·hidden) features of judge prompts (system + user messages; module doc): the
    last token's and the mean hidden state, or with ``answer_spans`` (character spans of the
    responses in each prompt's user message) the mean hidden state over each of two responses.

    Layers are 1-based, 0 = the last. The model runs only up to the deepest layer asked for.
    ``progress`` is called after each batch with its prompts and their tokens (padding not
    counted).
    """
    if loaded.processor is not None:
        raise HeadSetupError(
            OptionText("{objective} head supports text-only causal models for now")
        )
    decoder = loaded.model.get_decoder().eval()
    blocks = decoder.layers
    wanted = sorted({layer or len(blocks) for layer in layers})
    if wanted[0] < 1 or wanted[-1] > len(blocks):
        raise HeadSetupError(f"head layers must be between 1 and {len(blocks)}, got {layers}")
    captured: dict[int, torch.Tensor] = {}
    hooks = [
        blocks[layer - 1].register_forward_hook(
            lambda _m, _i, out, layer=layer: captured.__setitem__(
                layer, out[0] if isinstance(out, tuple) else out
            )
        )
        for layer in wanted
    ]
    collator = CriticCollator(loaded.tokenizer.pad_token_id, padding_side="right")
    rendered = [render_prompt(loaded.tokenizer, messages) for messages in conversations]
    if answer_spans is None:
        encoded = [
            loaded.tokenizer(text, add_special_tokens=False)["input_ids"] for text in rendered
        ]
        sides: list[list[np.ndarray]] = []
    else:
        encoded, sides = _encode_sides(loaded, conversations, rendered, answer_spans)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))  # little padding
    result: dict[int, dict[int, np.ndarray]] = {layer: {} for layer in wanted}
    decoder.layers = blocks[: wanted[-1]]  # nothing above the deepest layer asked for runs
    try:
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            batch = collator([EncodedConversation(encoded[i], encoded[i]) for i in chunk])
            mask = batch["attention_mask"].to(decoder.device)
            with torch.no_grad():
                decoder(input_ids=batch["input_ids"].to(decoder.device), attention_mask=mask)
                for layer in wanted:
                    hidden = decoder.norm(captured[layer]).float()
                    if sides:
                        for row, index in enumerate(chunk):
                            result[layer][index] = np.concatenate(
                                [_mean_over(hidden[row], side) for side in sides[index]]
                            )
                        continue
                    last = hidden[torch.arange(len(chunk)), mask.sum(-1) - 1]
                    mean = (hidden * mask[..., None]).sum(1) / mask.sum(-1, keepdim=True)
                    for row, index in enumerate(chunk):
                        result[layer][index] = torch.cat([last[row], mean[row]]).cpu().numpy()
            if progress is not None:
                progress(len(chunk), sum(len(encoded[i]) for i in chunk))
    finally:
        decoder.layers = blocks
        for hook in hooks:
            hook.remove()
    features = {
        layer: np.stack([rows[i] for i in range(len(encoded))]) for layer, rows in result.items()
    }
    return {layer: features[layer or len(blocks)] for layer in layers}


def prompt_lengths(loaded: LoadedModel, conversations: list[list[dict[str, Any]]]) -> list[int]:
    """Tokens of each judge prompt as :func:`prompt_features` reads it (generation prompt
    included)."""
    return [
        len(
            loaded.tokenizer(render_prompt(loaded.tokenizer, messages), add_special_tokens=False)[
                "input_ids"
            ]
        )
        for messages in conversations
    ]


def _encode_sides(
    loaded: LoadedModel,
    conversations: list[list[dict[str, Any]]],
    rendered: list[str],
    answer_spans: list[tuple[tuple[int, int], ...]],
) -> tuple[list[list[int]], list[list[np.ndarray]]]:
    """Token ids of each rendered prompt and, per response span, the positions of its tokens."""
    if not getattr(loaded.tokenizer, "is_fast", False):
        raise HeadSetupError("a pairwise head needs a fast tokenizer (character offsets)")
    encoded, sides = [], []
    for messages, text, spans in zip(conversations, rendered, answer_spans, strict=True):
        user = messages[-1]["content"]
        if not isinstance(user, str):
            raise HeadSetupError("a pairwise head reads text-only prompts")
        base = text.rfind(user)
        if base < 0:
            raise HeadSetupError("the chat template changed the user message; cannot find it")
        tokens = loaded.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = np.array(tokens["offset_mapping"]).reshape(-1, 2)
        encoded.append(list(tokens["input_ids"]))
        sides.append(
            [
                np.flatnonzero((offsets[:, 0] < base + end) & (offsets[:, 1] > base + start))
                for start, end in spans
            ]
        )
    return encoded, sides


def _mean_over(hidden: torch.Tensor, positions: np.ndarray) -> np.ndarray:
    """Mean hidden state over some token positions (zeros for an empty response)."""
    if len(positions) == 0:
        return np.zeros(hidden.shape[-1], dtype=np.float32)
    return hidden[torch.as_tensor(positions)].mean(0).cpu().numpy()
