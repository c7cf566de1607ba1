"""What does the language model add to the shortcut features? (train split only)

``bench/judge_quality.py`` fits ``head+no-lm``: the no-LM baseline's features (both responses'
lengths, list markers and models) with the head's canonical log-probabilities beside them. This
probe scores such feature sets on the **train split** by a nested cross-validation: 5 outer folds
grouped by item, and inside each outer training part the baseline's own C search
(:func:`bench.judge_quality.no_lm_search`, 5 inner folds grouped by item). It reports the
out-of-fold log-loss and accuracy with ties of:

* ``no-lm``: the shortcut features alone (the no-LM baseline);
* ``no-lm+head``: with the head's out-of-fold canonical log-probabilities (``head_cv.json``);
* ``no-lm+loglik``: with each response's mean token log-probability under the base model, given
  its instruction (chat template, the instruction as the user turn), and their difference;
* ``no-lm+head+loglik`` and ``loglik`` alone;
* ``no-lm+consensus`` and ``no-lm+head+consensus``: with each response's agreement with the other
  responses to the same instruction (:func:`peer_consensus` of the mean hidden state over the
  response's tokens at the head's layer, read in the same forward pass as the log-likelihood),
  and their difference. Several models answer each instruction; a response that says what the
  others say is more often the better one, a signal no judge of the pair alone can see.

The test split is never read. Run after ``bench/judge_quality.py`` (its ``--work`` folder)::

    .venv/bin/python bench/stacking_probe.py --work /tmp/jq/run6 --base-model smollm2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling judge_quality
sys.path.insert(0, str(REPO))

from judge_quality import (  # noqa: E402
    head_out_of_fold,
    no_lm_search,
    read_units,
    train_arrays,
)

from critic.modeling import LoadedModel, inference_dtype, load_base_model  # noqa: E402

MAX_INSTRUCTION_TOKENS = 600
MAX_RESPONSE_TOKENS = 400


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="judge_quality.py's --work")
    parser.add_argument("--base-model", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=1, help="outer folds")
    args = parser.parse_args()
    items = [json.loads(line) for line in (args.work / "pandalm" / "dataset.jsonl").open()]
    units = read_units(args.work / "sft.jsonl", items)
    keys, _models, shortcuts, labels, groups = train_arrays(units)
    out_of_fold = head_out_of_fold(args.work / "head")
    head = np.array([out_of_fold[key] for key in keys])
    # every response of the train split's items, those in no pair too: the consensus is the
    # item's; the test split is never read
    train_items = {units[key]["item_id"] for key in keys}
    layer = json.loads((args.work / "head" / "final" / "critic.json").read_text())["layer"]
    started = time.perf_counter()
    loaded = load_base_model(args.base_model, dtype=inference_dtype())
    readings = {
        item["item_id"]: {
            str(response["response_id"]): read_response(
                loaded, item["question"], str(response["content"]), layer
            )
            for response in item["responses"]
        }
        for item in items
        if item["item_id"] in train_items
    }
    seconds = time.perf_counter() - started
    likelihood = {rid: r.log_likelihood for item in readings.values() for rid, r in item.items()}
    consensus = peer_consensus(
        {item: {rid: r.hidden_mean for rid, r in rs.items()} for item, rs in readings.items()}
    )
    loglik = _pair_columns(likelihood, units, keys)
    agreement = _pair_columns(consensus, units, keys)
    feature_sets = {
        "no-lm": shortcuts,
        "no-lm+head": np.hstack([shortcuts, head]),
        "no-lm+loglik": np.hstack([shortcuts, loglik]),
        "no-lm+head+loglik": np.hstack([shortcuts, head, loglik]),
        "loglik": loglik,
        "no-lm+consensus": np.hstack([shortcuts, agreement]),
        "no-lm+head+consensus": np.hstack([shortcuts, head, agreement]),
    }
    return {
        "train_pairs": len(keys),
        "responses_read": len(likelihood),
        "consensus_layer": layer,
        "read_seconds": round(seconds, 1),
        "load_average": os.getloadavg(),
        "cv": {
            name: nested_cv(features, labels, groups, args.seed)
            for name, features in feature_sets.items()
        },
    }


@dataclass(frozen=True)
class ResponseReading:
    """What one forward pass of the base model reads of a response after its instruction."""

    log_likelihood: float
    """Mean log-probability of the response's tokens."""
    hidden_mean: np.ndarray
    """Mean hidden state over the response's tokens after decoder layer ``layer``."""


def read_response(
    loaded: LoadedModel, instruction: str, response: str, layer: int
) -> ResponseReading:
    """The response after the instruction (chat template, the instruction as the user turn)."""
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
    logits = output.logits[0, :-1].float()
    chosen = torch.log_softmax(logits, -1)[torch.arange(ids.shape[1] - 1), ids[0, 1:]]
    hidden = output.hidden_states[layer][0, len(prompt_ids) :].float().mean(0)
    return ResponseReading(float(chosen[-len(answer_ids) :].mean()), hidden.cpu().numpy())


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


def _pair_columns(
    value: dict[str, float], units: dict[str, dict[str, Any]], keys: list[str]
) -> np.ndarray:
    """Per pair: the value of response A, of response B, and A − B."""
    pairs = np.array([[value[r["response_id"]] for r in units[key]["responses"]] for key in keys])
    return np.column_stack([pairs, pairs[:, 0] - pairs[:, 1]])


def nested_cv(
    features: np.ndarray, labels: np.ndarray, groups: np.ndarray, seed: int
) -> dict[str, Any]:
    """Out-of-fold log-loss and accuracy with ties: 5 outer folds grouped by item, the C search
    of the no-LM baseline inside each outer training part."""
    from sklearn.metrics import accuracy_score, log_loss
    from sklearn.model_selection import GroupKFold

    classes = sorted(set(labels))
    probabilities = np.zeros((len(labels), len(classes)))
    for train, test in GroupKFold(n_splits=5, shuffle=True, random_state=seed).split(
        features, labels, groups
    ):
        search = no_lm_search(features[train], labels[train], groups[train], seed)
        if list(search.classes_) != classes:
            raise ValueError(f"a fold lacks a class: {search.classes_} against {classes}")
        probabilities[test] = search.predict_proba(features[test])
    predicted = np.array(classes)[probabilities.argmax(1)]
    return {
        "log_loss": round(float(log_loss(labels, probabilities, labels=classes)), 3),
        "accuracy": round(float(accuracy_score(labels, predicted)), 3),
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
