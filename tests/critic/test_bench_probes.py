"""The measurements of ``bench/stacking_probe.py``: what one forward pass reads of a response after
its instruction (its mean log-likelihood against transformers' own loss on the same tokens, its
mean hidden state against the model's hidden states), the peer consensus (against scikit-learn's
cosine similarity), and the nested grouped cross-validation (it finds a signal that is there,
none where there is none, and never lets an item's pairs into the folds that score them)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bench.peer_consensus import item_readings, peer_consensus, read_response
from bench.stacking_probe import nested_cv
from critic.modeling import inference_dtype, load_base_model

pytestmark = pytest.mark.slow  # each test starts processes (or trains models)

LABELS = np.array(["A", "B", "tie"])


def test_a_response_is_read_as_the_models_loss_and_hidden_states_on_its_tokens(
    tiny_llama: Path,
) -> None:
    loaded = load_base_model(tiny_llama, dtype=torch.float32)
    tokenizer = loaded.tokenizer
    instruction, response, layer = "Count the cats.", "two cats", 1
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": instruction}], tokenize=False, add_generation_prompt=True
    )
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    answer_ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + answer_ids])
    labels = ids.clone()
    labels[0, : len(prompt_ids)] = -100  # the loss over the response's tokens only
    with torch.no_grad():
        output = loaded.model.eval()(input_ids=ids, labels=labels, output_hidden_states=True)
    reading = read_response(loaded, instruction, response, layer)
    assert reading.log_likelihood == pytest.approx(-float(output.loss), rel=1e-5)
    expected = output.hidden_states[layer][0, len(prompt_ids) :].mean(0).numpy()
    np.testing.assert_allclose(reading.hidden_mean, expected, rtol=1e-5, atol=1e-6)
    other = read_response(loaded, instruction, "a different answer entirely", layer)
    assert other.log_likelihood != pytest.approx(reading.log_likelihood, rel=1e-3)
    assert not np.allclose(other.hidden_mean, reading.hidden_mean)


def test_items_are_read_with_their_instruction_or_after_an_empty_user_turn(
    tiny_llama: Path,
) -> None:
    """The probe's pointwise mutual information is the difference of these two readings."""
    items = [
        {
            "item_id": "cats",
            "question": "Count the cats.",
            "responses": [{"response_id": "r1", "content": "two cats"}],
        }
    ]
    loaded = load_base_model(tiny_llama, dtype=inference_dtype())  # as item_readings loads it
    after = item_readings(tiny_llama, items, 1)["cats"]["r1"]
    alone = item_readings(tiny_llama, items, 1, with_instruction=False)["cats"]["r1"]
    expected_after = read_response(loaded, "Count the cats.", "two cats", 1)
    expected_alone = read_response(loaded, "", "two cats", 1)
    assert after.log_likelihood == pytest.approx(expected_after.log_likelihood, rel=1e-5)
    assert alone.log_likelihood == pytest.approx(expected_alone.log_likelihood, rel=1e-5)
    assert alone.log_likelihood != pytest.approx(after.log_likelihood, rel=1e-4)


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


def _pairs(informative: bool, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """60 items of 6 pairs each; the first feature names the label when ``informative``."""
    rng = np.random.default_rng(seed)
    labels = LABELS[rng.integers(0, 3, size=360)]
    noise = rng.normal(size=(360, 3))
    signal = (labels == "A").astype(float) - (labels == "B").astype(float)
    first = 3 * signal + rng.normal(scale=0.3, size=360) if informative else noise[:, 0]
    features = np.column_stack([first, noise[:, 1:]])
    groups = np.repeat([f"item{i}" for i in range(60)], 6)
    return features, labels, groups


def test_nested_cv_scores_a_signal_and_its_absence() -> None:
    features, labels, groups = _pairs(informative=True, seed=0)
    found = nested_cv(features, labels, groups, seed=0)
    features, labels, groups = _pairs(informative=False, seed=1)
    none = nested_cv(features, labels, groups, seed=0)
    # no signal: about the entropy of three balanced classes (ln 3 = 1.099), about chance
    assert none["log_loss"] == pytest.approx(np.log(3), abs=0.05)
    assert 0.2 < none["accuracy"] < 0.45
    # the first feature separates A from B: ties are the only misses left
    assert found["accuracy"] > 0.9 and found["log_loss"] < 0.4


def test_nested_cv_holds_items_out_of_the_folds_that_score_them() -> None:
    """Pairs of one item share a label here, and features that only identify the item: a
    fold that let an item's pairs into its training part would score them perfectly."""
    rng = np.random.default_rng(2)
    item_labels = LABELS[rng.integers(0, 3, size=60)]
    groups = np.repeat([f"item{i}" for i in range(60)], 6)
    labels = np.repeat(item_labels, 6)
    features = np.repeat(rng.normal(size=(60, 40)), 6, axis=0)  # an item's own fingerprint
    held_out = nested_cv(features, labels, groups, seed=0)
    assert held_out["accuracy"] < 0.5  # chance for three classes, not memorised items


def test_the_generative_probes_folds_hold_items_out_and_never_read_the_test_split(
    tmp_path: Path,
) -> None:
    import json

    from bench.generative_cv_probe import fold_file, majority_floor

    rows = [
        {"meta": {"item_id": f"item-{i // 3}", "split": "eval" if i >= 24 else "train",
                  "label": "A" if i % 3 else "B", "unit_key": f"u{i}"}}
        for i in range(30)
    ]  # fmt: skip
    sft = tmp_path / "sft.jsonl"
    sft.write_text("".join(json.dumps(row) + "\n" for row in rows))
    seen: dict[str, str] = {}
    for fold in range(4):
        target = tmp_path / f"fold{fold}.jsonl"
        counts = fold_file(sft, fold, 4, 0, target)
        written = [json.loads(line)["meta"] for line in target.open()]
        assert [meta["unit_key"] for meta in written] == [f"u{i}" for i in range(24)]
        assert counts == {"train": 18, "eval": 6}  # 8 train items, 2 held out per fold
        for meta in written:  # an item's records stay together
            if meta["split"] == "eval":
                assert seen.setdefault(meta["item_id"], str(fold)) == str(fold)
        held = [meta["label"] for meta in written if meta["split"] == "eval"]
        assert majority_floor(target) == held.count("A") / len(held)  # A is 2/3 of train labels
    assert len(seen) == 8  # every train item is held out exactly once
