"""A head critic's classifier (:class:`ClassifierHead`) and its file, ``head.pt``: what
:func:`critic.modeling.load_critic` loads beside the frozen base model, and what
:mod:`critic.head` fits (its module docstring says how and why).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

HEAD_FILE = "head.pt"
PAIRWISE_CLASSES: tuple[str, ...] = ("A", "B", "tie")
HeadKind = Literal["prompt", "pair-difference"]
MIRROR = [1, 0, 2]
"""Class order of :data:`PAIRWISE_CLASSES` with the two responses swapped."""


@dataclass
class ClassifierHead:
    """Standardisation and linear softmax weights over the features of
    :func:`critic.head_features.prompt_features`."""

    classes: list[str]
    """Class names: ``A``/``B``/``tie`` in the shown order, or score values as text."""
    mean: torch.Tensor
    std: torch.Tensor
    weight: torch.Tensor
    """(classes, features)."""
    bias: torch.Tensor
    l2: float
    layer: int = 0
    """Decoder layer (1-based) whose output the features come from; 0 = the last one."""
    kind: HeadKind = "prompt"
    """``prompt``: last-token and mean features of the prompt; ``pair-difference``: each
    response's mean features, read both ways (module doc)."""

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(n, classes) probabilities for (n, features) raw features of
        :func:`critic.head_features.prompt_features`."""
        if self.kind == "prompt":
            return self._softmax(features)
        both_ways = self._softmax(pair_inputs(swap_sides(features)))[:, MIRROR]
        return (self._softmax(pair_inputs(features)) + both_ways) / 2

    def _softmax(self, inputs: np.ndarray) -> np.ndarray:
        x = (torch.as_tensor(inputs, dtype=torch.float32) - self.mean) / self.std
        with torch.no_grad():
            return (x @ self.weight.T + self.bias).softmax(-1).numpy()


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
            "layer": torch.tensor(head.layer),
            "classes": json.dumps(head.classes),
            "kind": head.kind,
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
        layer=int(state["layer"]),
        kind=state.get("kind", "prompt"),
    )


def swap_sides(features: np.ndarray) -> np.ndarray:
    """Pair features with Response A's and Response B's halves exchanged."""
    half = features.shape[1] // 2
    return np.concatenate([features[:, half:], features[:, :half]], axis=1)


def pair_inputs(features: np.ndarray) -> np.ndarray:
    """``[a − b, |a − b|]`` from ``[a, b]``: what the pair-difference head's softmax reads."""
    half = features.shape[1] // 2
    difference = features[:, :half] - features[:, half:]
    return np.concatenate([difference, np.abs(difference)], axis=1)
