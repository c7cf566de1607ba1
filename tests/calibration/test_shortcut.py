"""Shortcut baselines (calibration.shortcut): each fold's fit recomputed independently (sklearn's
LinearRegression / LogisticRegression on the other folds' units), a unit's verdict unchanged when
its own fold's reference changes, and the baseline as a judge of a calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from calibration import CalibrationOptions
from calibration.analysis import _units, calibrate
from calibration.errors import CalibrationInputError
from calibration.pairwise import LABELS
from calibration.report_compare import side_label
from calibration.shortcut import SHORTCUT_FOLDS, SHORTCUT_JUDGE, item_folds, shortcut_judgements
from data.readmodels.judge_facts import contains_list
from schemas.audit_records import ResponseFacts
from schemas.protocols import get_protocol

MODELS = ("m1", "m2", "m3")


def _score():
    return get_protocol("score", scale_min=1, scale_max=5, step=1)


def _row(unit: str, rater: str, kind: str, value: object, item: str, model: object) -> dict:
    return {"unit": unit, "rater": rater, "kind": kind, "value": value, "shown_order": "AB",
            "parse_status": "ok", "item_id": item, "task": None, "category": None,
            "group": None, "model": model}  # fmt: skip


def _shapes(seed: int = 0, items: int = 30) -> dict[str, ResponseFacts]:
    rng = np.random.default_rng(seed)
    shapes = {}
    for i in range(items):
        for model in MODELS:
            text = "word " * int(rng.integers(5, 400))
            if rng.random() < 0.4:
                text = "Steps:\n1. first\n2. second\n" + text
            rid = f"{model}-{i}"
            shapes[rid] = ResponseFacts(rid, model, len(text), contains_list(text))
    return shapes


def _pointwise(shapes: dict[str, ResponseFacts], seed: int = 0, labelled: float = 0.8):
    """One annotator per labelled response (so the reference is their score: longer responses
    score higher, with noise) and a real judge on every response."""
    rng = np.random.default_rng(seed)
    rows = []
    for rid, shape in shapes.items():
        item = rid.split("-")[1]
        unit = f"r:{rid}"
        if rng.random() < labelled:
            score = np.clip(np.round(1 + np.log1p(shape.length) / 2 + rng.normal(0, 1)), 1, 5)
            rows.append(_row(unit, "annotator:a", "human", float(score), item, shape.model))
        rows.append(_row(unit, "judge", "model", float(rng.integers(1, 6)), item, shape.model))
    return pd.DataFrame(rows)


def _pairwise(shapes: dict[str, ResponseFacts], seed: int = 0):
    """Pairs (m1, m2) and (m2, m3) per item; the human prefers the longer response, mostly."""
    rng = np.random.default_rng(seed)
    rows = []
    items = sorted({rid.split("-")[1] for rid in shapes}, key=int)
    for item in items:
        for a, b in (("m1", "m2"), ("m2", "m3")):
            ra, rb = f"{a}-{item}", f"{b}-{item}"
            unit = f"p:{ra}|{rb}"
            longer = "A" if shapes[ra].length > shapes[rb].length else "B"
            label = longer if rng.random() < 0.7 else str(rng.choice(["A", "B", "tie"]))
            rows.append(_row(unit, "annotator:a", "human", label, item, None))
            rows.append(_row(unit, "judge", "model", str(rng.choice(["A", "B"])), item, None))
    return pd.DataFrame(rows)


def _features(shape: ResponseFacts) -> list[float]:
    """The features as METRICS.md defines them, written out apart from the module."""
    return [np.log1p(shape.length), float(shape.has_list)] + [
        1.0 if shape.model == m else 0.0 for m in MODELS
    ]


def test_folds_keep_an_item_whole_and_are_balanced():
    items = np.array([f"i{k // 3}" for k in range(60)], dtype=object)
    fold = item_folds(items, 5, seed=1)
    for item in np.unique(items):
        assert np.unique(fold[items == item]).size == 1
    per_fold = np.bincount(fold) // 3
    assert sorted(per_fold) == [4, 4, 4, 4, 4]


def test_pointwise_fit_equals_sklearn_on_the_other_folds():
    shapes = _shapes()
    options = CalibrationOptions(protocol=_score(), bootstrap=0)
    data = _units(_pointwise(shapes), options, None)
    rows = shortcut_judgements(data, shapes.values(), seed=3).set_index("unit")
    fold = item_folds(data.meta["item_id"].to_numpy(dtype=object), SHORTCUT_FOLDS, 3)
    x = np.array([_features(shapes[u[2:]]) for u in data.units])
    labelled = ~np.isnan(data.reference)
    assert len(rows) == data.n_units  # unlabelled units are judged too
    for k in range(SHORTCUT_FOLDS):
        train = labelled & (fold != k)
        fit = LinearRegression().fit(x[train], data.reference[train])
        expected = np.clip(fit.predict(x[fold == k]), 1, 5)
        ours = rows.loc[data.units[fold == k], "value"].to_numpy(float)
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-9)


def test_a_units_verdict_does_not_see_its_own_folds_reference():
    shapes = _shapes()
    options = CalibrationOptions(protocol=_score(), bootstrap=0)
    frame = _pointwise(shapes)
    data = _units(frame, options, None)
    fold = item_folds(data.meta["item_id"].to_numpy(dtype=object), SHORTCUT_FOLDS, 0)
    in_fold_0 = set(data.units[fold == 0])
    changed = frame.copy()
    human_in_0 = (changed["kind"] == "human") & changed["unit"].isin(in_fold_0)
    changed.loc[human_in_0, "value"] = 6 - changed.loc[human_in_0, "value"].astype(float)
    before = shortcut_judgements(data, shapes.values()).set_index("unit")["value"].astype(float)
    after = shortcut_judgements(_units(changed, options, None), shapes.values())
    after = after.set_index("unit")["value"].astype(float)
    zero = sorted(in_fold_0)
    others = sorted(set(data.units) - in_fold_0)
    np.testing.assert_array_equal(before[zero].to_numpy(), after[zero].to_numpy())
    assert np.abs(before[others].to_numpy() - after[others].to_numpy()).max() > 0.05


def test_pairwise_fit_equals_sklearn_on_the_other_folds_and_ignores_its_own():
    shapes = _shapes(seed=2, items=40)
    options = CalibrationOptions(protocol=get_protocol("pairwise"), bootstrap=0)
    frame = _pairwise(shapes)
    data = _units(frame, options, None)
    rows = shortcut_judgements(data, shapes.values()).set_index("unit")
    fold = item_folds(data.meta["item_id"].to_numpy(dtype=object), SHORTCUT_FOLDS, 0)
    pairs = [u[2:].split("|") for u in data.units]
    x = np.array([_features(shapes[a]) + _features(shapes[b]) for a, b in pairs])
    codes = data.reference.astype(int)
    for k in range(SHORTCUT_FOLDS):
        train = fold != k
        fit = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
        fit.fit(x[train], codes[train])
        expected = [LABELS[c] for c in fit.predict(x[fold == k])]
        assert rows.loc[data.units[fold == k], "value"].tolist() == expected
    in_fold_0 = set(data.units[fold == 0])
    flipped = frame.copy()
    human_in_0 = (flipped["kind"] == "human") & flipped["unit"].isin(in_fold_0)
    flipped.loc[human_in_0, "value"] = flipped.loc[human_in_0, "value"].map(
        {"A": "B", "B": "A", "tie": "tie"}
    )
    after = shortcut_judgements(_units(flipped, options, None), shapes.values()).set_index("unit")
    zero = sorted(in_fold_0)
    assert after.loc[zero, "value"].tolist() == rows.loc[zero, "value"].tolist()


def test_the_baseline_is_a_judge_of_the_calibration_even_beside_chosen_judges():
    shapes = _shapes()
    options = CalibrationOptions(protocol=_score(), bootstrap=0, judges=("judge",))
    result = calibrate(_pointwise(shapes), options, facts=list(shapes.values())).result
    assert set(result.judges) == {"judge", SHORTCUT_JUDGE}
    assert result.judges[SHORTCUT_JUDGE].n == result.judges["judge"].n
    without = calibrate(_pointwise(shapes), options).result
    assert set(without.judges) == {"judge"}


def test_missing_texts_and_too_few_items_are_named():
    shapes = _shapes(items=3)
    options = CalibrationOptions(protocol=_score(), bootstrap=0)
    data = _units(_pointwise(shapes), options, None)
    partial = dict(list(shapes.items())[1:])
    with pytest.raises(CalibrationInputError, match="no text for the shortcut baseline"):
        shortcut_judgements(data, partial.values())
    one_item = _units(
        _pointwise({k: v for k, v in shapes.items() if k.endswith("-0")}), options, None
    )
    with pytest.raises(CalibrationInputError, match="at least two items"):
        shortcut_judgements(one_item, shapes.values())


def test_a_baseline_is_named_as_one_where_sides_are_shown():
    assert side_label(SHORTCUT_JUDGE) == f"{SHORTCUT_JUDGE} (baseline, no language model)"
    assert side_label("gpt-4o") == "gpt-4o"
