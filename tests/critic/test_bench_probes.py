"""The two measurements of ``bench/stacking_probe.py``: a response's mean log-likelihood given its
instruction (against transformers' own loss on the same tokens), and the nested grouped
cross-validation (it finds a signal that is there, none where there is none, and never lets an
item's pairs into the folds that score them)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bench.stacking_probe import mean_log_likelihood, nested_cv
from critic.modeling import load_base_model

LABELS = np.array(["A", "B", "tie"])


def test_mean_log_likelihood_is_minus_the_models_loss_on_the_response(tiny_llama: Path) -> None:
    loaded = load_base_model(tiny_llama, dtype=torch.float32)
    tokenizer = loaded.tokenizer
    instruction, response = "Count the cats.", "two cats"
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": instruction}], tokenize=False, add_generation_prompt=True
    )
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    answer_ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + answer_ids])
    labels = ids.clone()
    labels[0, : len(prompt_ids)] = -100  # the loss over the response's tokens only
    with torch.no_grad():
        loss = float(loaded.model.eval()(input_ids=ids, labels=labels).loss)
    assert mean_log_likelihood(loaded, instruction, response) == pytest.approx(-loss, rel=1e-5)
    other = mean_log_likelihood(loaded, instruction, "a different answer entirely")
    assert other != pytest.approx(-loss, rel=1e-3)


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
