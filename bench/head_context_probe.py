"""Does the pairwise head read a response better alone than beside the other one? (train only)

The pair-difference head (:mod:`critic.head`) reads each response's mean hidden state inside the
judge prompt, where Response B is read with Response A in its context. This probe reads every
response of the **train split** once more in a prompt of its own (the question and that response
only) and compares the two feature sets by the same model family the head uses: a softmax over
``[a − b, |a − b|]``, fitted on every pair and its mirror, read both ways, C from a grid, scored by
5-fold cross-validation grouped by item (mean log-loss and accuracy with ties). The test split is
never read. Run after ``bench/judge_quality.py`` (its ``--work`` folder has the files)::

    .venv/bin/python bench/head_context_probe.py --work /tmp/jq/run5 --base-model smollm2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from critic.head_features import prompt_features  # noqa: E402
from critic.modeling import inference_dtype, load_base_model  # noqa: E402
from critic.sft import read_sft  # noqa: E402

MIRROR = {"A": "B", "B": "A", "tie": "tie"}


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="judge_quality.py's --work")
    parser.add_argument("--base-model", type=Path, required=True)
    parser.add_argument("--layers", default="12,15,18")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    layers = tuple(int(layer) for layer in args.layers.split(","))
    records = [r for r in read_sft(args.work / "sft.jsonl") if r.split == "train"]
    items = [json.loads(line) for line in (args.work / "pandalm" / "dataset.jsonl").open()]
    texts = {
        response["response_id"]: (item["question"], str(response["content"]))
        for item in items
        for response in item["responses"]
    }
    loaded = load_base_model(args.base_model, dtype=inference_dtype())
    system = records[0].messages[0]["content"]
    ids = sorted({rid for record in records for rid in record.meta["pair"]})
    conversations = []
    spans: list[tuple[tuple[int, int], ...]] = []  # one span: the response alone
    for rid in ids:
        question, text = texts[rid]
        head = f"## Question\n{question}\n\n## Response\n"
        user = {"role": "user", "content": head + text}
        conversations.append([{"role": "system", "content": system}, user])
        spans.append(((len(head), len(head) + len(text)),))
    alone = prompt_features(loaded, conversations, layers=layers, answer_spans=spans)
    in_pair = prompt_features(
        loaded,
        [record.messages[:-1] for record in records],
        layers=layers,
        answer_spans=[tuple(tuple(s) for s in r.meta["answer_spans"]) for r in records],
    )
    row = {rid: n for n, rid in enumerate(ids)}
    labels = np.array([r.meta["label"] for r in records])
    groups = np.array([r.meta["item_id"] for r in records])
    swapped = np.array([r.meta["shown"] != r.meta["pair"] for r in records])[:, None]
    result: dict[str, dict[str, list[float]]] = {}
    for layer in layers:
        width = alone[layer].shape[1]
        first, second = in_pair[layer][:, :width], in_pair[layer][:, width:]
        features = {
            "alone": (
                alone[layer][[row[r.meta["pair"][0]] for r in records]],
                alone[layer][[row[r.meta["pair"][1]] for r in records]],
            ),
            "in_pair": (np.where(swapped, second, first), np.where(swapped, first, second)),
        }
        for c in (1e-4, 1e-3, 1e-2):
            for name, (a, b) in features.items():
                loss, accuracy = _grouped_cv(a, b, labels, groups, c, args.seed)
                result.setdefault(f"layer {layer}, C {c:g}", {})[name] = [loss, accuracy]
    return result


def _grouped_cv(
    a: np.ndarray, b: np.ndarray, labels: np.ndarray, groups: np.ndarray, c: float, seed: int
) -> list[float]:
    """Mean log-loss and accuracy of the mirrored pair-difference softmax, 5 folds by item."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.model_selection import GroupKFold
    from sklearn.preprocessing import StandardScaler

    loss = correct = 0.0
    for train, test in GroupKFold(n_splits=5, shuffle=True, random_state=seed).split(
        a, labels, groups
    ):
        gap = np.abs(a[train] - b[train])
        x = np.vstack(
            [np.hstack([a[train] - b[train], gap]), np.hstack([b[train] - a[train], gap])]
        )
        y = np.concatenate([labels[train], [MIRROR[label] for label in labels[train]]])
        scaler = StandardScaler().fit(x)
        model = LogisticRegression(C=c, max_iter=3000).fit(scaler.transform(x), y)
        gap = np.abs(a[test] - b[test])
        forward = model.predict_proba(scaler.transform(np.hstack([a[test] - b[test], gap])))
        backward = model.predict_proba(scaler.transform(np.hstack([b[test] - a[test], gap])))
        classes = list(model.classes_)
        probs = (forward + backward[:, [classes.index(MIRROR[k]) for k in classes]]) / 2
        loss += log_loss(labels[test], probs, labels=classes) * len(test)
        correct += float((np.array(classes)[probs.argmax(1)] == labels[test]).sum())
    return [round(loss / len(labels), 3), round(correct / len(labels), 3)]


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
