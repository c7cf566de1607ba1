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
  others say is more often the better one, a signal no judge of the pair alone can see;
* ``no-lm+pmi`` and ``no-lm+head+consensus+pmi``: with each response's pointwise mutual
  information with its instruction (its mean token log-probability after the instruction minus
  after an empty user turn) and their difference. An answer that the instruction explains
  better than the model's prior alone is, by this reading, more on topic.

The test split is never read. Run after ``bench/judge_quality.py`` (its ``--work`` folder)::

    .venv/bin/python bench/stacking_probe.py --work /tmp/jq/run6 --base-model smollm2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its siblings

from judge_quality import (  # noqa: E402
    head_out_of_fold,
    no_lm_search,
    read_units,
    train_arrays,
)
from peer_consensus import item_readings, peer_consensus  # noqa: E402


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
    readings = item_readings(
        args.base_model, [item for item in items if item["item_id"] in train_items], layer
    )
    alone = item_readings(
        args.base_model,
        [item for item in items if item["item_id"] in train_items],
        layer,
        with_instruction=False,
    )
    seconds = time.perf_counter() - started
    likelihood = {rid: r.log_likelihood for item in readings.values() for rid, r in item.items()}
    consensus = peer_consensus(
        {item: {rid: r.hidden_mean for rid, r in rs.items()} for item, rs in readings.items()}
    )
    loglik = _pair_columns(likelihood, units, keys)
    mutual_information = {
        rid: likelihood[rid] - reading.log_likelihood
        for item in alone.values()
        for rid, reading in item.items()
    }
    pmi = _pair_columns(mutual_information, units, keys)
    agreement = _pair_columns(consensus, units, keys)
    feature_sets = {
        "no-lm": shortcuts,
        "no-lm+head": np.hstack([shortcuts, head]),
        "no-lm+loglik": np.hstack([shortcuts, loglik]),
        "no-lm+head+loglik": np.hstack([shortcuts, head, loglik]),
        "loglik": loglik,
        "no-lm+consensus": np.hstack([shortcuts, agreement]),
        "no-lm+head+consensus": np.hstack([shortcuts, head, agreement]),
        "no-lm+pmi": np.hstack([shortcuts, pmi]),
        "no-lm+head+consensus+pmi": np.hstack([shortcuts, head, agreement, pmi]),
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
