"""Loss on the assistant turn only, and the collator's exact tensors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer

from critic.collate import (
    IGNORE_INDEX,
    ConversationTooLong,
    CriticCollator,
    EncodedConversation,
    encode_conversation,
)

MESSAGES = [
    {"role": "system", "content": "Judge."},
    {"role": "user", "content": "Q: how many apples? A: 3 apples."},
    {"role": "assistant", "content": '{"Rating": 7, "Reason": "Right count."}'},
]


@pytest.fixture(scope="module")
def tokenizer(tiny_llama: Path):  # type: ignore[no-untyped-def]
    return AutoTokenizer.from_pretrained(tiny_llama)


def test_label_mask_covers_exactly_the_assistant_turn(tokenizer) -> None:  # type: ignore[no-untyped-def]
    encoded = encode_conversation(MESSAGES, [], tokenizer=tokenizer)
    prompt_ids = tokenizer(
        tokenizer.apply_chat_template(MESSAGES[:-1], tokenize=False, add_generation_prompt=True),
        add_special_tokens=False,
    )["input_ids"]
    n_prompt = len(prompt_ids)
    assert encoded.input_ids[:n_prompt] == prompt_ids
    assert encoded.labels[:n_prompt] == [IGNORE_INDEX] * n_prompt
    answer = encoded.labels[n_prompt:]
    assert IGNORE_INDEX not in answer and answer == encoded.input_ids[n_prompt:]
    # the supervised tokens are the answer plus the template's end-of-turn marker, nothing else
    assert tokenizer.decode(answer) == MESSAGES[-1]["content"] + "<|im_end|>\n"


def test_too_long_prompt_is_cut_on_the_left_keeping_the_answer(tokenizer) -> None:  # type: ignore[no-untyped-def]
    full = encode_conversation(MESSAGES, [], tokenizer=tokenizer)
    n_answer = sum(label != IGNORE_INDEX for label in full.labels)
    cut = encode_conversation(MESSAGES, [], tokenizer=tokenizer, max_length=n_answer + 5)
    assert cut.truncated and len(cut.input_ids) == n_answer + 5
    assert cut.input_ids == full.input_ids[-(n_answer + 5) :]
    with pytest.raises(ConversationTooLong, match="longer than max length .*; raise max length"):
        encode_conversation(MESSAGES, [], tokenizer=tokenizer, max_length=n_answer)


def test_vision_prompts_are_refused_by_a_text_only_model(tokenizer) -> None:  # type: ignore[no-untyped-def]
    messages = [
        MESSAGES[0],
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Q"}]},
        MESSAGES[2],
    ]
    with pytest.raises(ValueError, match="text-only prompts"):
        encode_conversation(messages, ["x.png"], tokenizer=tokenizer)


def test_collator_pads_right_for_training_and_left_for_generation() -> None:
    features = [
        EncodedConversation(
            [5, 6, 7], [IGNORE_INDEX, 6, 7], {"pixel_values": torch.ones(1, 3, 2, 2)}
        ),
        EncodedConversation([8], [8]),
    ]
    right = CriticCollator(pad_token_id=0)(features)
    assert right["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert right["labels"].tolist() == [[IGNORE_INDEX, 6, 7], [8, IGNORE_INDEX, IGNORE_INDEX]]
    assert right["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert right["pixel_values"].shape == (1, 3, 2, 2)
    collator = CriticCollator(pad_token_id=0, padding_side="left")
    left = collator(features)
    assert left["input_ids"].tolist() == [[5, 6, 7], [0, 0, 8]]
    assert left["attention_mask"].tolist() == [[1, 1, 1], [0, 0, 1]]
    assert collator.tokens_seen == 4
