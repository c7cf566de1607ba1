"""A classifier head on a frozen base model: ``critic train --objective head``.

The generative critic learns to *write* its verdict; on a CPU a 135M model cannot be fine-tuned on
a few hundred long prompts in minutes. The head critic reads the same SFT file, runs the frozen
base model once over each judge prompt, and fits a linear softmax classifier on two features of
one decoder layer's output (passed through the model's final norm): the hidden state of the last
prompt token (where the verdict would be written) and the mean hidden state over the prompt. The
layer is chosen with ``l2`` by the cross-validation below (probes of intermediate layers often
beat the last one), and judging runs the model only up to that layer. Classes are the verdicts in
the *shown* order (A / B / tie) for pairwise records, the scale values seen in training for scores.

Pairwise heads read each response rather than the prompt as a whole (``kind="pair-difference"``):
the mean hidden state over the tokens of Response A and of Response B (their character spans are
``answer_spans`` of the prompt, in the SFT file's ``meta``), and a softmax over
``[a − b, |a − b|]``, the Bradley–Terry form of a reward model's pairwise loss (Ouyang et al., 2022)
with ``|a − b|`` for ties. It is fitted on every record and its mirror (responses swapped, label
swapped) and reads each pair both ways, so swapping the two responses swaps p(A) and p(B) exactly:
a linear read-out of the whole prompt learns the shown position as readily as the content. Chosen
by grouped cross-validation on PandaLM's train split (log-loss 0.81 against 0.90 for the prompt
features; docs/JUDGE_QUALITY.md).

Fitting: features standardised with the training mean and standard deviation, weights by L-BFGS
on the mean cross-entropy plus ``l2 · ‖W‖² / 2`` (multinomial logistic regression, as sklearn's
``LogisticRegression``). The cross-entropy is taken against the consensus label
(``TrainConfig.head_targets == "consensus"``) or, for pairwise records, against the share of the
unit's annotators who gave each verdict (``"annotators"``: ``meta.labels``), so a 2–1 split
teaches less confidence than a unanimous pair: learning from the label distribution rather than
its majority (Peterson et al., 2019, *Human uncertainty makes classification more robust*; Uma et
al., 2021, *Learning from disagreement: a survey*). ``l2`` (and the layer) is chosen from a grid
by K-fold cross-validation on the training records **grouped by item** (no item in two folds), on
the mean log-loss of the consensus label whichever targets were fitted; the out-of-fold
probabilities of the chosen setting are kept, so that a calibration map can be
fitted without touching held-out data.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from critic.classifier_head import (
    MIRROR,
    PAIRWISE_CLASSES,
    ClassifierHead,
    HeadKind,
    pair_inputs,
    save_head,
    swap_sides,
)
from critic.head_features import HeadSetupError, prompt_features, prompt_lengths
from critic.modeling import CRITIC_INFO_FILE, FINAL_FOLDER, inference_dtype, load_base_model
from critic.sft import SftRecord, read_sft
from critic.train_config import TrainConfig
from critic.train_result import TrainingSetupError, TrainResult
from schemas.option_text import OptionText
from schemas.protocols import to_shown

CV_FILE = "head_cv.json"
DEFAULT_L2_GRID: tuple[float, ...] = TrainConfig.head_l2
"""The L2 strengths the cross-validation chooses among unless told (``TrainConfig.head_l2``)."""
_PAIRWISE_ONLY = OptionText(
    "{head_targets} annotators applies to pairwise files: a score's consensus is a mean, not one "
    "of the head's classes; fit a score head on the consensus"
)


@dataclass(frozen=True)
class HeadFit:
    """A fitted head, its training losses and the cross-validation behind its ``l2``."""

    head: ClassifierHead
    losses: list[tuple[int, float]]
    """(L-BFGS evaluation, training objective) of the final fit."""
    cv: list[dict[str, float]]
    """Per ``layer`` and ``l2``: mean out-of-fold log-loss and accuracy."""
    out_of_fold: np.ndarray
    """(n, classes) out-of-fold probabilities at the chosen ``l2``."""


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


def record_distribution(record: SftRecord, classes: list[str]) -> np.ndarray:
    """The share of a pairwise record's annotators (``meta.labels``) who gave each of
    ``classes``, in the shown order; labels that are not a verdict (none given) are left out."""
    if record.meta.get("protocol") != "pairwise":
        raise HeadSetupError(_PAIRWISE_ONLY)
    swapped = list(record.meta.get("shown") or []) != list(record.meta.get("pair") or [])
    given = [str(value) for value in (record.meta.get("labels") or {}).values() if value]
    shown = [to_shown(value, swapped=swapped) for value in given]
    if not shown or any(label not in classes for label in shown):
        raise HeadSetupError(
            f"an SFT record ({record.meta.get('unit_key')}) has annotator labels {given!r} in "
            f"meta.labels, not one or more of {classes}; export it with critiquelab"
        )
    return np.array([shown.count(label) / len(shown) for label in classes])


def fit_head(
    features: np.ndarray | dict[int, np.ndarray],
    targets: list[str],
    groups: list[str],
    *,
    classes: list[str],
    l2_grid: tuple[float, ...] = DEFAULT_L2_GRID,
    folds: int = 5,
    seed: int = 0,
    kind: HeadKind = "prompt",
    distributions: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> HeadFit:
    """Choose the layer and ``l2`` by grouped K-fold cross-validation (lowest mean out-of-fold
    log-loss of ``targets``; the stronger ``l2`` on a tie), then fit on every record.
    ``features``: one array, or layer → array (from :func:`prompt_features`); ``kind`` as
    :attr:`ClassifierHead.kind`; ``distributions``: (n, classes) label distributions to fit
    instead of ``targets`` (:func:`record_distribution`), scored against ``targets`` all the
    same. ``progress`` is called with the settings (layer, ``l2``) cross-validated so far and
    their number."""
    by_layer = features if isinstance(features, dict) else {0: features}
    y = np.array([classes.index(t) for t in targets])
    fitted = np.eye(len(classes))[y] if distributions is None else np.asarray(distributions)
    if fitted.shape != (len(y), len(classes)):
        raise ValueError(f"distributions are {fitted.shape}, not (records, classes)")
    fold = _group_folds(groups, folds, seed)
    cv, oof_by = [], {}
    for layer, x in by_layer.items():
        for l2 in l2_grid:
            oof = np.zeros((len(y), len(classes)))
            for k in sorted(set(fold)):
                train, test = fold != k, fold == k
                head, _ = _fit(x[train], fitted[train], classes, l2, kind)
                oof[test] = head.probabilities(x[test])
            picked = np.clip(oof[np.arange(len(y)), y], 1e-12, 1.0)
            cv.append(
                {
                    "layer": layer,
                    "l2": l2,
                    "log_loss": float(-np.log(picked).mean()),
                    "accuracy": float((oof.argmax(1) == y).mean()),
                }
            )
            oof_by[layer, l2] = oof
            if progress is not None:
                progress(len(cv), len(by_layer) * len(l2_grid))
    best = min(cv, key=lambda row: (row["log_loss"], -row["l2"]))
    layer, l2 = int(best["layer"]), best["l2"]
    head, losses = _fit(by_layer[layer], fitted, classes, l2, kind)
    head.layer = layer
    return HeadFit(head, losses, cv, oof_by[layer, l2])


def train_head(config: TrainConfig, on_log: Callable[[dict[str, Any]], None] | None) -> TrainResult:
    """``critic train --objective head``: prompt features of the frozen base model, a head by
    grouped cross-validation, saved with ``critic.json`` and the out-of-fold predictions.

    ``on_log`` receives the progress of the feature pass (:class:`FeatureMeter`'s entries,
    every ``logging_steps`` batches and at the end), of the cross-validation (``settings`` done of
    all) and the final fit's losses."""
    records = read_sft(config.data)
    train_records = [record for record in records if record.split == "train"]
    if not train_records:
        raise TrainingSetupError(f"{config.data} has no records with meta.split == 'train'")
    if not config.head_l2 or not all(math.isfinite(v) and v >= 0 for v in config.head_l2):
        raise TrainingSetupError(
            OptionText("{head_l2} is {value}; give L2 strengths, finite and >= 0",
                       value=config.head_l2)
        )  # fmt: skip
    if config.max_prompt_tokens is not None and config.max_prompt_tokens < 1:
        raise TrainingSetupError(
            OptionText("{max_prompt_tokens} is {value}; give a positive number of tokens",
                       value=config.max_prompt_tokens)
        )  # fmt: skip
    final_dir = config.output_dir / FINAL_FOLDER
    if (final_dir / CRITIC_INFO_FILE).exists():
        raise TrainingSetupError(f"{final_dir} already holds a critic; choose another -o folder")
    dtype = inference_dtype()
    loaded = load_base_model(config.base_model, dtype=dtype)
    started = time.perf_counter()
    pairwise = train_records[0].meta.get("protocol") == "pairwise"
    if config.head_targets == "annotators" and not pairwise:
        raise HeadSetupError(_PAIRWISE_ONLY)
    lengths = prompt_lengths(loaded, [record.messages[:-1] for record in train_records])
    too_long = 0
    if config.max_prompt_tokens is not None:
        kept = [n <= config.max_prompt_tokens for n in lengths]
        too_long = kept.count(False)
        train_records = [record for record, keep in zip(train_records, kept, strict=True) if keep]
        lengths = [n for n, keep in zip(lengths, kept, strict=True) if keep]
        if not train_records:
            raise TrainingSetupError(
                OptionText("every training prompt is longer than {max_prompt_tokens} ({value}); "
                           "raise it", value=config.max_prompt_tokens)
            )  # fmt: skip
    targets = [record_class(record) for record in train_records]
    classes = list(PAIRWISE_CLASSES) if pairwise else sorted(set(targets), key=float)
    kind: HeadKind = "pair-difference" if pairwise else "prompt"
    meter = FeatureMeter(len(lengths), sum(lengths), config.logging_steps, on_log)
    features = prompt_features(
        loaded,
        [record.messages[:-1] for record in train_records],
        config.eval_batch_size,
        layers=config.head_layers,
        answer_spans=[_answer_spans(record) for record in train_records] if pairwise else None,
        progress=meter,
    )
    groups = [str(record.meta.get("item_id")) for record in train_records]
    distributions = None
    notes: list[OptionText] = []
    targets_fitted = config.head_targets
    if config.head_targets == "annotators":
        distributions = np.array([record_distribution(r, classes) for r in train_records])
        consensus = np.eye(len(classes))[[classes.index(t) for t in targets]]
        if np.allclose(distributions, consensus):
            # one verdict per record (a single annotator, or unanimous ones): the same fit
            targets_fitted, distributions = "consensus", None
            notes.append(
                OptionText(
                    "{head_targets} annotators: every training record has one verdict (a single "
                    "annotator, or unanimous ones), so the annotators' shares are the consensus "
                    "labels: the consensus was fitted, and critic.json records it as the targets"
                )
            )

    def cv_progress(done: int, total: int) -> None:
        if on_log is not None:
            on_log({"stage": "cross-validation", "settings": f"{done}/{total}"})

    fit = fit_head(
        features,
        targets,
        groups,
        classes=classes,
        l2_grid=config.head_l2,
        folds=config.head_folds,
        seed=config.seed,
        kind=kind,
        distributions=distributions,
        progress=cv_progress,
    )
    for step, loss in fit.losses:
        if on_log is not None and (step % config.logging_steps == 0 or step == len(fit.losses) - 1):
            on_log({"step": step, "loss": loss})
    depth = len(loaded.model.get_decoder().layers)
    edges = grid_edges(fit.head, config.head_l2, config.head_layers, depth)
    notes += edges.notes()
    final_dir.mkdir(parents=True, exist_ok=True)
    save_head(fit.head, final_dir)
    meta = train_records[0].meta
    info = {
        "objective": "head",
        "base_model": str(Path(config.base_model).resolve()),
        "kind": loaded.kind,
        "protocol": meta.get("protocol"),
        "prompt_id": meta.get("prompt_id"),
        "scale": meta.get("scale"),
        "classes": classes,
        "head_kind": kind,
        "targets": targets_fitted,
        "targets_asked": config.head_targets,
        "dtype": str(dtype).removeprefix("torch."),
        "l2": fit.head.l2,
        "layer": fit.head.layer,
        "cv": fit.cv,
        "grid_edges": asdict(edges),
        "train_records": len(train_records),
        "too_long": too_long,
        "notes": [str(note) for note in notes],
        "train_config": {
            key: str(value) if isinstance(value, Path) else value
            for key, value in asdict(config).items()
        },
    }
    (final_dir / CRITIC_INFO_FILE).write_text(json.dumps(info, indent=2))
    out_of_fold = [
        {
            "unit_key": record.meta.get("unit_key"),
            "item_id": record.meta.get("item_id"),
            "shown": record.meta.get("shown"),
            "label": record.meta.get("label"),
            "probs": dict(zip(classes, map(float, row), strict=True)),
        }
        for record, row in zip(train_records, fit.out_of_fold, strict=True)
    ]
    (final_dir / CV_FILE).write_text(json.dumps(out_of_fold, indent=1, ensure_ascii=False))
    seconds = time.perf_counter() - started
    return TrainResult(
        final_dir=final_dir,
        steps=len(fit.losses),
        losses=fit.losses,
        train_tokens=meter.tokens,
        seconds=seconds,
        tokens_per_second=meter.tokens / seconds if seconds > 0 else float("nan"),
        truncated=0,
        too_long=too_long,
        notes=tuple(notes),
    )


class FeatureMeter:
    """Counts the feature pass's prompts and tokens and reports its progress to ``on_log`` every
    ``every`` batches and at the end: ``rows`` done of all, ``tokens``, ``rows_per_s``,
    ``tokens_per_s`` and ``seconds_left`` (the tokens left at the rate so far)."""

    def __init__(
        self,
        rows: int,
        tokens: int,
        every: int,
        on_log: Callable[[dict[str, Any]], None] | None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.total_rows, self.total_tokens = rows, tokens
        self.every, self.on_log, self.clock = max(every, 1), on_log, clock
        self.rows = self.tokens = self.batches = 0
        self.started = clock()

    def __call__(self, rows: int, tokens: int) -> None:
        self.rows += rows
        self.tokens += tokens
        self.batches += 1
        if self.on_log is None or (self.batches % self.every and self.rows < self.total_rows):
            return
        seconds = self.clock() - self.started
        tokens_per_s = self.tokens / seconds if seconds > 0 else float("nan")
        self.on_log(
            {
                "stage": "features",
                "rows": f"{self.rows}/{self.total_rows}",
                "tokens": self.tokens,
                "rows_per_s": self.rows / seconds if seconds > 0 else float("nan"),
                "tokens_per_s": tokens_per_s,
                "seconds_left": (self.total_tokens - self.tokens) / tokens_per_s
                if self.tokens
                else float("nan"),
            }
        )


@dataclass(frozen=True)
class GridEdges:
    """Whether the chosen L2 and layer lie at an edge of the grid searched, beyond which the
    cross-validation might have found a better one: ``"smallest"`` / ``"largest"``, or None
    (inside the grid, a grid of one value, or a layer at the model's first or last)."""

    l2: Literal["smallest", "largest"] | None
    layer: Literal["shallowest", "deepest"] | None
    l2_grid: tuple[float, ...]
    layers: tuple[int, ...]
    """The layers searched, 1-based (0 = the last resolved to its number)."""

    def notes(self) -> list[OptionText]:
        """A sentence for each edge."""
        notes = []
        if self.l2 is not None:
            notes.append(
                OptionText(
                    "head: the chosen L2 is the {edge} of the grid searched ({grid}); the best "
                    "may lie beyond it: widen {head_l2}",
                    edge=self.l2,
                    grid=", ".join(f"{v:g}" for v in self.l2_grid),
                )
            )
        if self.layer is not None:
            notes.append(
                OptionText(
                    "head: the chosen layer is the {edge} of those searched ({layers}); a layer "
                    "beyond it may be better: add some to {head_layers}",
                    edge=self.layer,
                    layers=", ".join(map(str, self.layers)),
                )
            )
        return notes


def grid_edges(
    head: ClassifierHead, l2_grid: tuple[float, ...], layers: tuple[int, ...], depth: int
) -> GridEdges:
    """:class:`GridEdges` of ``head``'s L2 and layer in a model of ``depth`` decoder layers."""
    searched = sorted({layer or depth for layer in layers})
    chosen = head.layer or depth
    layer_edge: Literal["shallowest", "deepest"] | None = None
    if len(searched) > 1 and chosen == searched[0] and chosen > 1:
        layer_edge = "shallowest"
    elif len(searched) > 1 and chosen == searched[-1] and chosen < depth:
        layer_edge = "deepest"
    l2_edge: Literal["smallest", "largest"] | None = None
    if len(set(l2_grid)) > 1 and head.l2 == min(l2_grid):
        l2_edge = "smallest"
    elif len(set(l2_grid)) > 1 and head.l2 == max(l2_grid):
        l2_edge = "largest"
    return GridEdges(l2_edge, layer_edge, tuple(sorted(l2_grid)), tuple(searched))


def _fit(
    features: np.ndarray, distributions: np.ndarray, classes: list[str], l2: float, kind: HeadKind
) -> tuple[ClassifierHead, list[tuple[int, float]]]:
    if kind == "pair-difference":  # every record and its mirror: no side is favoured
        distributions = np.concatenate([distributions, distributions[:, MIRROR]])
        features = pair_inputs(np.concatenate([features, swap_sides(features)]))
    x = torch.as_tensor(features, dtype=torch.float32)
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    x = (x - mean) / std
    target = torch.as_tensor(distributions, dtype=torch.float32)  # class probabilities
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
    head = ClassifierHead(classes, mean, std, weight.detach(), bias.detach(), l2, kind=kind)
    return head, losses


def _answer_spans(record: SftRecord) -> tuple[tuple[int, int], ...]:
    spans = record.meta.get("answer_spans")
    if not spans or len(spans) != 2:
        raise HeadSetupError(
            "a pairwise SFT record has no meta.answer_spans (where Response A and B are in the "
            "prompt); export the file again with this version of critiquelab (text-only prompts)"
        )
    return tuple((int(start), int(end)) for start, end in spans)


def _group_folds(groups: list[str], folds: int, seed: int) -> np.ndarray:
    """Fold number (0 … K−1) of each record, K = min(``folds``, items): the sorted item names
    shuffled with ``seed`` and dealt out in turn, so no item is in two folds."""
    names = sorted(set(groups))
    if len(names) < 2:
        raise HeadSetupError("cross-validation needs training records from at least two items")
    random.Random(seed).shuffle(names)
    count = min(folds, len(names))
    index = {name: position % count for position, name in enumerate(names)}
    return np.array([index[group] for group in groups])


def _score_text(value: float) -> str:
    return str(int(value)) if math.isclose(value, round(value)) else f"{value:.12g}"
