"""The *peer consensus*: each response's agreement with the other answers to the same instruction,
read from the base model's hidden states.

Used by ``bench/judge_quality.py`` (the stacked judge ``head+no-lm+consensus``). Several models
answer each PandaLM instruction; a response that says what the others say may be the better one,
a signal that no judge of the pair alone can see.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from critic.modeling import LoadedModel, inference_dtype, load_base_model  # noqa: E402

MAX_INSTRUCTION_TOKENS = 600
MAX_RESPONSE_TOKENS = 400


def read_response(loaded: LoadedModel, instruction: str, response: str, layer: int) -> np.ndarray:
    """The mean hidden state over the response's tokens after decoder layer ``layer``, the
    response read after the instruction (chat template, the instruction as the user turn)."""
    tokenizer = loaded.tokenizer
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": instruction}], tokenize=False, add_generation_prompt=True
    )
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"][-MAX_INSTRUCTION_TOKENS:]
    answer_ids = tokenizer(response, add_special_tokens=False)["input_ids"][:MAX_RESPONSE_TOKENS]
    answer_ids = answer_ids or [tokenizer.eos_token_id]
    ids = torch.tensor([prompt_ids + answer_ids], device=loaded.model.device)
    with torch.no_grad():
        output = loaded.model.eval()(input_ids=ids, output_hidden_states=True)
    hidden = output.hidden_states[layer][0, len(prompt_ids) :].float().mean(0)
    return hidden.cpu().numpy()


def peer_consensus(items: dict[str, dict[str, np.ndarray]]) -> dict[str, float]:
    """Each response's mean cosine similarity to the other responses of its item.

    ``items``: item → response id → vector. With three or more responses the item's mean vector
    is taken off first, so that what every answer to the instruction shares (its topic) does not
    count as agreement; two responses are compared as they are (centred, they would always be
    opposite); a lone response scores 0.
    """
    consensus = {}
    for responses in items.values():
        ids = list(responses)
        vectors = np.stack([responses[rid] for rid in ids]).astype(np.float64)
        if len(ids) > 2:
            vectors = vectors - vectors.mean(0)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
        similarity = vectors @ vectors.T
        for n, rid in enumerate(ids):
            others = np.delete(similarity[n], n)
            consensus[rid] = float(others.mean()) if len(others) else 0.0
    return consensus


def item_readings(
    base_model: Path, items: list[dict[str, Any]], layer: int
) -> dict[str, dict[str, np.ndarray]]:
    """item id → response id → :func:`read_response` of every response of ``items`` (the
    converted PandaLM items: ``question`` and ``responses``), with the model in its inference
    precision."""
    loaded = load_base_model(base_model, dtype=inference_dtype())
    return {
        item["item_id"]: {
            str(response["response_id"]): read_response(
                loaded, item["question"], str(response["content"]), layer
            )
            for response in item["responses"]
        }
        for item in items
    }
