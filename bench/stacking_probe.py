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
* ``no-lm+head+loglik`` and ``loglik`` alone.

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
    questions = {item["item_id"]: item["question"] for item in items}
    texts = {
        response["response_id"]: (questions[units[key]["item_id"]], str(response["content"]))
        for key in keys
        for response in units[key]["responses"]
    }
    started = time.perf_counter()
    loaded = load_base_model(args.base_model, dtype=inference_dtype())
    likelihood = {rid: mean_log_likelihood(loaded, *texts[rid]) for rid in texts}
    seconds = time.perf_counter() - started
    pairs = np.array(
        [[likelihood[r["response_id"]] for r in units[key]["responses"]] for key in keys]
    )
    loglik = np.column_stack([pairs, pairs[:, 0] - pairs[:, 1]])
    feature_sets = {
        "no-lm": shortcuts,
        "no-lm+head": np.hstack([shortcuts, head]),
        "no-lm+loglik": np.hstack([shortcuts, loglik]),
        "no-lm+head+loglik": np.hstack([shortcuts, head, loglik]),
        "loglik": loglik,
    }
    return {
        "train_pairs": len(keys),
        "responses_scored": len(likelihood),
        "loglik_seconds": round(seconds, 1),
        "load_average": os.getloadavg(),
        "cv": {
            name: nested_cv(features, labels, groups, args.seed)
            for name, features in feature_sets.items()
        },
    }


def mean_log_likelihood(loaded: LoadedModel, instruction: str, response: str) -> float:
    """Mean log-probability of the response's tokens after the instruction (chat template)."""
    tokenizer = loaded.tokenizer
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": instruction}], tokenize=False, add_generation_prompt=True
    )
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"][-MAX_INSTRUCTION_TOKENS:]
    answer_ids = tokenizer(response, add_special_tokens=False)["input_ids"][:MAX_RESPONSE_TOKENS]
    answer_ids = answer_ids or [tokenizer.eos_token_id]
    ids = torch.tensor([prompt_ids + answer_ids], device=loaded.model.device)
    with torch.no_grad():
        logits = loaded.model.eval()(input_ids=ids).logits[0, :-1].float()
    chosen = torch.log_softmax(logits, -1)[torch.arange(ids.shape[1] - 1), ids[0, 1:]]
    return float(chosen[-len(answer_ids) :].mean())


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
