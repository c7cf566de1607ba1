"""``bench/peer_consensus.py``, read by ``bench/judge_quality.py``'s ``head+no-lm+consensus``:
what one forward pass reads of a response after its instruction (against the model's own hidden
states), and the peer consensus (against scikit-learn's cosine similarity)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bench.peer_consensus import item_readings, peer_consensus, read_response
from critic.modeling import inference_dtype, load_base_model


@pytest.mark.slow  # loads a model
def test_a_response_is_read_as_the_models_hidden_states_on_its_tokens(tiny_llama: Path) -> None:
    loaded = load_base_model(tiny_llama, dtype=torch.float32)
    tokenizer = loaded.tokenizer
    instruction, response, layer = "Count the cats.", "two cats", 1
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": instruction}], tokenize=False, add_generation_prompt=True
    )
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    answer_ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + answer_ids])
    with torch.no_grad():
        output = loaded.model.eval()(input_ids=ids, output_hidden_states=True)
    expected = output.hidden_states[layer][0, len(prompt_ids) :].mean(0).numpy()
    read = read_response(loaded, instruction, response, layer)
    np.testing.assert_allclose(read, expected, rtol=1e-5, atol=1e-6)
    other = read_response(loaded, instruction, "a different answer entirely", layer)
    assert not np.allclose(other, expected)


@pytest.mark.slow  # loads a model
def test_items_are_read_after_their_instruction(tiny_llama: Path) -> None:
    items = [
        {
            "item_id": "cats",
            "question": "Count the cats.",
            "responses": [{"response_id": "r1", "content": "two cats"}],
        }
    ]
    loaded = load_base_model(tiny_llama, dtype=inference_dtype())  # as item_readings loads it
    read = item_readings(tiny_llama, items, 1)["cats"]["r1"]
    expected = read_response(loaded, "Count the cats.", "two cats", 1)
    np.testing.assert_allclose(read, expected, rtol=1e-5)
    assert not np.allclose(read, read_response(loaded, "", "two cats", 1))


def test_peer_consensus_is_the_mean_cosine_similarity_to_the_items_other_responses() -> None:
    from sklearn.metrics.pairwise import cosine_similarity

    rng = np.random.default_rng(3)
    shared = rng.normal(size=8)
    five = {f"r{n}": shared + rng.normal(scale=0.5, size=8) for n in range(4)}
    five["outlier"] = rng.normal(size=8)
    two = {"x": rng.normal(size=8), "y": rng.normal(size=8)}
    consensus = peer_consensus({"five": five, "two": two, "one": {"alone": rng.normal(size=8)}})
    vectors = np.stack(list(five.values()))
    similarity = cosine_similarity(vectors - vectors.mean(0))  # centred: three or more answers
    for n, rid in enumerate(five):
        assert consensus[rid] == pytest.approx(np.delete(similarity[n], n).mean())
    assert consensus["outlier"] < min(consensus[f"r{n}"] for n in range(4))
    pair = cosine_similarity(np.stack([two["x"], two["y"]]))[0, 1]  # two answers: as they are
    assert consensus["x"] == consensus["y"] == pytest.approx(pair)
    assert consensus["alone"] == 0.0
