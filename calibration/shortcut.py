"""Shortcut judges: the bar a judge must clear, fitted without a language model.

docs/JUDGE_QUALITY.md found that a logistic regression over the responses' lengths, list markers
and models matches PandaLM-7B on held-out PandaLM instructions. A shortcut judge is that model
fitted on the campaign's own reference by cross-fitting (Chernozhukov et al. 2018, "Double/debiased
machine learning", §3): the items are split at random into ``folds`` folds, and every unit of a
fold is judged by the model fitted on the units of the *other* folds that have a reference, so no
unit's verdict has seen its own item's labels. Its rows join the frame as an ordinary model judge
named :data:`SHORTCUT_JUDGE` and go through every metric, interval and table unchanged.

* pointwise: ordinary least squares of the reference score on [1, log(1 + characters), has a
  list item, one-hot model] (:class:`~schemas.audit_records.ResponseFacts`, the bias audit's),
  the prediction limited to the scale's range (a score outside the scale is no judge's answer);
* pairwise: a multinomial logistic regression (features standardised, C = 1) of the reference
  label (A / B / tie) on the same features of response A then response B; the verdict is the
  most probable label.

METRICS.md ("Shortcut baselines") defines both.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from calibration.errors import CalibrationInputError
from calibration.pairwise import LABELS
from calibration.scale import Scale
from calibration.units import META_COLUMNS, UnitData
from schemas.audit_records import ResponseFacts
from schemas.ids import parse_unit_key

SHORTCUT_JUDGE = "baseline:shortcut"
"""The shortcut judge's name in the frame and every table (``baseline:`` marks a baseline)."""
BASELINE_PREFIX = "baseline:"
SHORTCUT_FOLDS = 5


def is_baseline(judge: str) -> bool:
    """Whether ``judge`` names a baseline (no language model), not a real judge."""
    return judge.startswith(BASELINE_PREFIX)


def item_folds(items: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Per unit, its fold (0 .. folds-1): the distinct items in a seeded random order, dealt to
    the folds in turn, so that all units of an item share a fold."""
    distinct, index = np.unique(items.astype(str), return_inverse=True)
    order = np.random.default_rng(seed).permutation(distinct.size)
    fold_of_item = np.empty(distinct.size, dtype=np.int64)
    fold_of_item[order] = np.arange(distinct.size) % folds
    return fold_of_item[index]


def shortcut_judgements(
    data: UnitData,
    facts: Iterable[ResponseFacts],
    *,
    folds: int = SHORTCUT_FOLDS,
    seed: int = 0,
) -> pd.DataFrame:
    """The shortcut judge's rows (judgement-frame columns) for every unit of ``data``.

    ``facts``: the length, list format and model of every response of the units
    (:func:`data.readmodels.judge_facts.campaign_response_facts` for a campaign). Raises
    :class:`CalibrationInputError` when a response has no shape, or when fewer than two items
    have a reference (nothing to fit on outside a fold).
    """
    shapes = {fact.response_id: fact for fact in facts}
    keys = [parse_unit_key(str(unit)) for unit in data.units]
    missing = sorted({r for key in keys for r in key.response_ids if r not in shapes})
    if missing:
        raise CalibrationInputError(
            f"{len(missing)} response(s) have no text for the shortcut baseline, e.g. "
            f"{missing[0]!r}: give the dataset the judgements are about"
        )
    models = sorted({fact.model for fact in shapes.values()})
    features = np.array(
        [np.concatenate([_features(shapes[r], models) for r in key.response_ids]) for key in keys]
    )
    items = data.meta["item_id"].to_numpy(dtype=object)
    labelled = ~np.isnan(data.reference)
    n_items = np.unique(items[labelled].astype(str)).size
    if n_items < 2:
        raise CalibrationInputError(
            "the shortcut baseline needs a reference on at least two items (it is fitted on the "
            f"other items' units); {n_items} item(s) have one"
        )
    fold = item_folds(items, min(folds, n_items), seed)
    scale = Scale.of(data.protocol) if data.protocol.is_pointwise else None
    values: np.ndarray = np.empty(data.n_units, dtype=object)
    for k in np.unique(fold):
        train = labelled & (fold != k)
        judged = fold == k
        if not train.any():  # every labelled item sits in this fold
            continue
        if scale is not None:
            values[judged] = least_squares_scores(
                features[train], data.reference[train], features[judged], scale
            )
        else:
            values[judged] = _pairwise_verdicts(
                features[train], data.reference[train].astype(int), features[judged]
            )
    judged_units = np.array([v is not None for v in values])
    rows = data.meta.loc[judged_units, [c for c in META_COLUMNS if c in data.meta]].copy()
    rows.insert(0, "unit", data.units[judged_units])
    rows["rater"] = SHORTCUT_JUDGE
    rows["kind"] = "model"
    rows["value"] = values[judged_units]
    rows["shown_order"] = "AB"
    rows["parse_status"] = "ok"
    return rows.reset_index(drop=True)


def least_squares_scores(
    x_train: np.ndarray, y_train: np.ndarray, x: np.ndarray, scale: Scale
) -> np.ndarray:
    """Ordinary least squares of ``y_train`` on [1, ``x_train``] (the minimum-norm solution when
    the columns are collinear: the predictions are the same for every solution), predicted at
    ``x`` and limited to the scale's range."""
    design = np.column_stack([np.ones(len(x_train)), x_train])
    coefficients, *_ = np.linalg.lstsq(design, y_train, rcond=None)
    predicted = np.column_stack([np.ones(len(x)), x]) @ coefficients
    return np.clip(predicted, scale.low, scale.high)


def _pairwise_verdicts(x_train: np.ndarray, codes: np.ndarray, x: np.ndarray) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    seen = np.unique(codes)
    if seen.size == 1:  # one label in the training folds: the model can only say it
        return np.array([LABELS[int(seen[0])]] * len(x), dtype=object)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    model.fit(x_train, codes)
    return np.array([LABELS[int(c)] for c in model.predict(x)], dtype=object)


def _features(fact: ResponseFacts, models: list[str]) -> np.ndarray:
    one_hot = [float(fact.model == model) for model in models]
    return np.array([np.log1p(fact.length), float(fact.has_list), *one_hot])
