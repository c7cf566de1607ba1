"""A classifier head on a frozen base model: ``critic train --objective head``.

The generative critic learns to *write* its verdict; on a CPU a 135M model cannot be fine-tuned on
a few hundred long prompts in minutes. The head critic reads the same SFT file, runs the frozen
base model once over each judge prompt, and fits a linear softmax classifier on two features of
the final layer (after its norm): the hidden state of the last prompt token (where the verdict
would be written) and the mean hidden state over the prompt. Classes are the verdicts in the
*shown* order (A / B / tie) for pairwise records, the scale values seen in training for scores.

Fitting: features standardised with the training mean and standard deviation, weights by L-BFGS
on the mean cross-entropy plus ``l2 · ‖W‖² / 2`` (multinomial logistic regression, as sklearn's
``LogisticRegression``). ``l2`` is chosen from a grid by K-fold cross-validation on the training
records **grouped by item** (no item in two folds), on mean log-loss; the out-of-fold
probabilities of the chosen ``l2`` are kept so that a calibration map can be fitted without
touching held-out data.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from critic.collate import CriticCollator, EncodedConversation, render_prompt
from critic.modeling import LoadedModel
from critic.sft import SftRecord
from schemas.protocols import to_shown

HEAD_FILE = "head.pt"
CV_FILE = "head_cv.json"
PAIRWISE_CLASSES: tuple[str, ...] = ("A", "B", "tie")
DEFAULT_L2_GRID: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 1.0, 10.0)


class HeadSetupError(ValueError):
    """A head cannot be trained on this model or file, with what to do."""


@dataclass
class ClassifierHead:
    """Standardisation and linear softmax weights over :func:`prompt_features`."""

    classes: list[str]
    """Class names: ``A``/``B``/``tie`` in the shown order, or score values as text."""
    mean: torch.Tensor
    std: torch.Tensor
    weight: torch.Tensor
    """(classes, features)."""
    bias: torch.Tensor
    l2: float

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(n, classes) softmax probabilities for (n, features) raw features."""
        x = (torch.as_tensor(features, dtype=torch.float32) - self.mean) / self.std
        with torch.no_grad():
            return (x @ self.weight.T + self.bias).softmax(-1).numpy()


@dataclass(frozen=True)
class HeadFit:
    """A fitted head, its training losses and the cross-validation behind its ``l2``."""

    head: ClassifierHead
    losses: list[tuple[int, float]]
    """(L-BFGS evaluation, training objective) of the final fit."""
    cv: list[dict[str, float]]
    """Per ``l2``: mean out-of-fold log-loss and accuracy."""
    out_of_fold: np.ndarray
    """(n, classes) out-of-fold probabilities at the chosen ``l2``."""


def prompt_features(
    loaded: LoadedModel, conversations: list[list[dict[str, Any]]], batch_size: int = 8
) -> np.ndarray:
    """(n, 2·hidden) features of judge prompts (system + user messages; see the module doc)."""
    if loaded.processor is not None:
        raise HeadSetupError("--objective head supports text-only causal models for now")
    decoder = loaded.model.get_decoder().eval()
    collator = CriticCollator(loaded.tokenizer.pad_token_id, padding_side="right")
    encoded = [
        loaded.tokenizer(render_prompt(loaded.tokenizer, messages), add_special_tokens=False)[
            "input_ids"
        ]
        for messages in conversations
    ]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))  # little padding
    result: list[np.ndarray | None] = [None] * len(encoded)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        batch = collator([EncodedConversation(encoded[i], encoded[i]) for i in chunk])
        mask = batch["attention_mask"].to(decoder.device)
        with torch.no_grad():
            hidden = decoder(
                input_ids=batch["input_ids"].to(decoder.device), attention_mask=mask
            ).last_hidden_state.float()
        last = hidden[torch.arange(len(chunk)), mask.sum(-1) - 1]
        mean = (hidden * mask[..., None]).sum(1) / mask.sum(-1, keepdim=True)
        for row, index in enumerate(chunk):
            result[index] = torch.cat([last[row], mean[row]]).cpu().numpy()
    return np.stack(result)  # type: ignore[arg-type]


def record_class(record: SftRecord) -> str:
    """The class a training record teaches: its verdict in the shown order, or its score."""
    meta = record.meta
    label = meta.get("label")
    if label is None:
        raise HeadSetupError("an SFT record has no meta.label; export it with critiquelab")
    if meta.get("protocol") == "pairwise":
        swapped = list(meta.get("shown") or []) != list(meta.get("pair") or [])
        return to_shown(str(label), swapped=swapped)
    return _score_text(float(label))


def fit_head(
    features: np.ndarray,
    targets: list[str],
    groups: list[str],
    *,
    classes: list[str],
    l2_grid: tuple[float, ...] = DEFAULT_L2_GRID,
    folds: int = 5,
    seed: int = 0,
) -> HeadFit:
    """Choose ``l2`` by grouped K-fold cross-validation, then fit on every record."""
    y = np.array([classes.index(t) for t in targets])
    fold = _group_folds(groups, folds, seed)
    cv, oof_by_l2 = [], {}
    for l2 in l2_grid:
        oof = np.zeros((len(y), len(classes)))
        for k in sorted(set(fold)):
            train, test = fold != k, fold == k
            head, _ = _fit(features[train], y[train], classes, l2)
            oof[test] = head.probabilities(features[test])
        picked = np.clip(oof[np.arange(len(y)), y], 1e-12, 1.0)
        cv.append(
            {
                "l2": l2,
                "log_loss": float(-np.log(picked).mean()),
                "accuracy": float((oof.argmax(1) == y).mean()),
            }
        )
        oof_by_l2[l2] = oof
    best = min(cv, key=lambda row: (row["log_loss"], -row["l2"]))["l2"]
    head, losses = _fit(features, y, classes, best)
    return HeadFit(head, losses, cv, oof_by_l2[best])


def save_head(head: ClassifierHead, folder: Path) -> Path:
    """Write the head's tensors and classes to ``folder/head.pt``."""
    path = folder / HEAD_FILE
    torch.save(
        {
            "mean": head.mean,
            "std": head.std,
            "weight": head.weight,
            "bias": head.bias,
            "l2": torch.tensor(head.l2),
            "classes": json.dumps(head.classes),
        },
        path,
    )
    return path


def load_head(folder: Path) -> ClassifierHead:
    """Read ``folder/head.pt`` (tensors only: ``torch.load(weights_only=True)``)."""
    state = torch.load(folder / HEAD_FILE, weights_only=True)
    return ClassifierHead(
        classes=json.loads(state["classes"]),
        mean=state["mean"],
        std=state["std"],
        weight=state["weight"],
        bias=state["bias"],
        l2=float(state["l2"]),
    )


def _fit(
    features: np.ndarray, y: np.ndarray, classes: list[str], l2: float
) -> tuple[ClassifierHead, list[tuple[int, float]]]:
    x = torch.as_tensor(features, dtype=torch.float32)
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    x = (x - mean) / std
    target = torch.as_tensor(y, dtype=torch.long)
    weight = torch.zeros(len(classes), x.shape[1], requires_grad=True)
    bias = torch.zeros(len(classes), requires_grad=True)
    optimiser = torch.optim.LBFGS(
        [weight, bias], max_iter=200, line_search_fn="strong_wolfe", tolerance_grad=1e-6
    )
    losses: list[tuple[int, float]] = []

    def objective() -> torch.Tensor:
        optimiser.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ weight.T + bias, target)
        loss = loss + l2 * weight.pow(2).sum() / 2
        loss.backward()
        losses.append((len(losses), float(loss.detach())))
        return loss

    optimiser.step(objective)
    head = ClassifierHead(classes, mean, std, weight.detach(), bias.detach(), l2)
    return head, losses


def _group_folds(groups: list[str], folds: int, seed: int) -> np.ndarray:
    names = sorted(set(groups))
    if len(names) < 2:
        raise HeadSetupError("cross-validation needs training records from at least two items")
    random.Random(seed).shuffle(names)
    count = min(folds, len(names))
    index = {name: position % count for position, name in enumerate(names)}
    return np.array([index[group] for group in groups])


def _score_text(value: float) -> str:
    return str(int(value)) if math.isclose(value, round(value)) else f"{value:.12g}"
