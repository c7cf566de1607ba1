"""Prediction-powered model scores in a calibration (calibration.model_estimates): each value
recomputed from the frame with calibration.ppi's functions (tested against ppi_py), the
AlignMMBench average as the mean of task estimates, pairwise win rates, and the reasons given."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calibration import CalibrationOptions
from calibration.analysis import calibrate
from calibration.model_estimates import AVERAGE, WIN_RATE
from calibration.ppi import MeanEstimate, mean_of_estimates, prediction_powered_mean
from schemas.protocols import get_protocol


def _score():
    return get_protocol("score", scale_min=1, scale_max=5, step=1)


def _row(unit: str, rater: str, kind: str, value: object, **meta: object) -> dict:
    base = {"unit": unit, "rater": rater, "kind": kind, "value": value, "shown_order": "AB",
            "parse_status": "ok", "item_id": unit, "task": None, "category": None,
            "group": None, "model": None, "rationale": "", "expected_score": np.nan}  # fmt: skip
    return base | meta


def _pointwise_frame(
    protocol: str, tasks: tuple[str | None, ...], labelled: int, units: int, seed: int = 0
) -> pd.DataFrame:
    """Two models; per task ``units`` units the judge scores (truth + 1, clipped, with noise),
    the first ``labelled`` of which two annotators also score."""
    rng = np.random.default_rng(seed)
    scale = _score() if protocol == "score" else get_protocol(protocol)
    rows = []
    for model in ("m1", "m2"):
        for task in tasks:
            for i in range(units):
                unit = f"r:{model}-{task}-{i}"
                truth = float(rng.integers(int(scale.scale_min), int(scale.scale_max) + 1))
                meta = {"model": model, "task": task}
                if i < labelled:
                    for name in ("annotator:a", "annotator:b"):
                        rows.append(_row(unit, name, "human", truth, **meta))
                noisy = truth + 1 + float(rng.integers(-1, 2))
                judge = min(max(noisy, scale.scale_min), scale.scale_max)
                rows.append(_row(unit, "judge", "model", judge, **meta))
    return pd.DataFrame(rows)


def _same(ours: MeanEstimate | None, expected: MeanEstimate | None) -> None:
    assert ours is not None and expected is not None
    for name in ("value", "variance", "low", "high"):
        assert getattr(ours, name) == pytest.approx(getattr(expected, name), rel=1e-12, abs=1e-12)


def _split(frame: pd.DataFrame, model: str, task: str | None = None):
    mine = frame[(frame["model"] == model) & ((frame["task"] == task) if task else True)]
    humans = mine[mine["kind"] == "human"].groupby("unit")["value"].mean()
    judge = mine[mine["kind"] == "model"].set_index("unit")["value"]
    labelled = judge.index.isin(humans.index)
    return humans[judge.index[labelled]].to_numpy(), judge[labelled].to_numpy(), judge[~labelled]


def _judge_lambda(y: np.ndarray, f: np.ndarray) -> float:
    """PPI++'s power tuning over every unit the judge scored (y NaN: unlabelled), written out:
    cov(Y, f) / ((1 + n/N) · var(f over all)), clipped to [0, 1]."""
    labelled = ~np.isnan(y)
    n, big_n = int(labelled.sum()), int((~labelled).sum())
    y_l, f_l = y[labelled], f[labelled]
    covariance = float(np.mean((y_l - y_l.mean()) * (f_l - f_l.mean())))
    return float(np.clip(covariance / ((1 + n / big_n) * np.var(f, ddof=1)), 0.0, 1.0))


def _frame_lambda(frame: pd.DataFrame) -> float:
    """The judge's λ over every unit of ``frame`` (all models, tasks and categories)."""
    humans = frame[frame["kind"] == "human"].groupby("unit")["value"].mean()
    judge = frame[frame["kind"] == "model"].set_index("unit")["value"].astype(float)
    return _judge_lambda(humans.reindex(judge.index).to_numpy(float), judge.to_numpy())


def test_a_scale_mean_equals_ppi_on_the_models_units() -> None:
    frame = _pointwise_frame("score", (None,), labelled=8, units=40)
    result = calibrate(frame, CalibrationOptions(_score(), bootstrap=0)).result
    assert result.model_estimates is not None
    by_model = {e.model: e for e in result.model_estimates.estimates}
    assert set(by_model) == {"m1", "m2"}
    tuning = _frame_lambda(frame)  # the judge's one λ, from both models' labels
    for model, estimate in by_model.items():
        y, f, f_tilde = _split(frame, model)
        expected = prediction_powered_mean(y, f, f_tilde.to_numpy(), tuning=tuning)
        assert estimate.tuning == pytest.approx(tuning, rel=1e-12)
        assert estimate.prediction_powered is not None
        assert estimate.prediction_powered.df == 7  # λ taken as fixed: n − 1
        assert estimate.leaderboard == AVERAGE and estimate.judge == "judge"
        _same(estimate.prediction_powered, expected.prediction_powered)
        _same(estimate.humans_only, expected.humans_only)
        assert estimate.judge_only == pytest.approx(np.concatenate([f, f_tilde]).mean())
        assert estimate.effective_labels == pytest.approx(expected.effective_labels)
        assert (estimate.n_labelled, estimate.n_unlabelled) == (8, 32)
        # the judge's +1 bias shows in its own value; PPI++ corrects it toward the humans
        assert estimate.judge_only > estimate.prediction_powered.value


def test_mmie_is_in_percent() -> None:
    frame = _pointwise_frame("mmie", ("physics",), labelled=6, units=20)
    result = calibrate(frame, CalibrationOptions(get_protocol("mmie"), bootstrap=0)).result
    assert result.model_estimates is not None
    estimate = result.model_estimates.estimates[0]
    y, f, f_tilde = _split(frame, estimate.model)
    factor = 100.0 / get_protocol("mmie").scale_max
    expected = prediction_powered_mean(
        y * factor, f * factor, f_tilde.to_numpy() * factor, tuning=_frame_lambda(frame)
    )  # λ is the same on either scale
    assert estimate.prediction_powered is not None
    assert estimate.prediction_powered.value == pytest.approx(expected.prediction_powered.value)
    assert estimate.prediction_powered.high == pytest.approx(expected.prediction_powered.high)


def test_mmie_has_an_estimate_per_category_beside_the_overall_percent() -> None:
    frame = _pointwise_frame("mmie", ("SA", "PBL"), labelled=6, units=20)
    frame["category"], frame["task"] = frame["task"], "physics"  # MMIE's categories, one field
    result = calibrate(frame, CalibrationOptions(get_protocol("mmie"), bootstrap=0)).result
    assert result.model_estimates is not None
    mine = {e.leaderboard: e for e in result.model_estimates.estimates if e.model == "m1"}
    assert set(mine) == {AVERAGE, "category:PBL", "category:SA"}
    factor = 100.0 / get_protocol("mmie").scale_max
    tuning = _frame_lambda(frame)  # one λ for the judge, across categories and models
    for name in ("PBL", "SA"):
        part = frame[frame["category"] == name]
        y, f, f_tilde = _split(part, "m1")
        expected = prediction_powered_mean(
            y * factor, f * factor, f_tilde.to_numpy() * factor, tuning=tuning
        )
        _same(mine[f"category:{name}"].prediction_powered, expected.prediction_powered)
        _same(mine[f"category:{name}"].humans_only, expected.humans_only)
        assert mine[f"category:{name}"].n_labelled == 6
    y, f, f_tilde = _split(frame, "m1")
    overall = prediction_powered_mean(
        y * factor, f * factor, f_tilde.to_numpy() * factor, tuning=tuning
    )
    _same(mine[AVERAGE].prediction_powered, overall.prediction_powered)


def test_alignmmbench_average_is_the_mean_of_task_estimates() -> None:
    frame = _pointwise_frame("alignmmbench", ("ocr", "chart", "meme"), labelled=5, units=15)
    result = calibrate(frame, CalibrationOptions(get_protocol("alignmmbench"), bootstrap=0)).result
    assert result.model_estimates is not None
    mine = {e.leaderboard: e for e in result.model_estimates.estimates if e.model == "m2"}
    assert set(mine) == {AVERAGE, "task:ocr", "task:chart", "task:meme"}
    tuning = _frame_lambda(frame)  # one λ for the judge, across tasks and models
    tasks = [
        prediction_powered_mean(*_split_arrays(frame, "m2", t), tuning=tuning)
        for t in ("chart", "meme", "ocr")
    ]
    for task, expected in zip(("chart", "meme", "ocr"), tasks, strict=True):
        _same(mine[f"task:{task}"].prediction_powered, expected.prediction_powered)
    average = mine[AVERAGE]
    _same(average.prediction_powered, mean_of_estimates([t.prediction_powered for t in tasks]))
    _same(average.humans_only, mean_of_estimates([t.humans_only for t in tasks]))
    assert average.judge_only == pytest.approx(np.mean([t.judge_only for t in tasks]))
    assert average.n_labelled == 15 and average.n_unlabelled == 30
    # worth c·15 labels: with c·5 labels of each task's 15 units, the humans-only variance of the
    # average, Σ (1/(c·5) − 1/15)·s²(Y of the task) / 3², is the PPI++ one
    spread = [np.var(_split_arrays(frame, "m2", t)[0], ddof=1) for t in ("chart", "meme", "ocr")]
    scale = average.effective_labels / 15
    humans_at_scale = sum((1 / (scale * 5) - 1 / 15) * s2 for s2 in spread) / 9
    assert humans_at_scale == pytest.approx(average.prediction_powered.variance, rel=1e-9)


def _split_arrays(frame: pd.DataFrame, model: str, task: str):
    y, f, f_tilde = _split(frame, model, task)
    return y, f, f_tilde.to_numpy()


def test_too_few_labels_or_no_unlabelled_unit_gives_a_reason() -> None:
    protocol = _score()
    few = calibrate(
        _pointwise_frame("score", (None,), 1, 10), CalibrationOptions(protocol, bootstrap=0)
    )
    assert few.result.model_estimates is not None
    estimate = few.result.model_estimates.estimates[0]
    assert estimate.prediction_powered is None and estimate.humans_only is None
    assert estimate.reason is not None and "at least 2" in estimate.reason
    assert estimate.judge_only is not None
    every = calibrate(
        _pointwise_frame("score", (None,), 10, 10), CalibrationOptions(protocol, bootstrap=0)
    )
    assert every.result.model_estimates is not None
    estimate = every.result.model_estimates.estimates[0]
    assert estimate.prediction_powered is None and estimate.humans_only is not None
    assert estimate.reason is not None and "no unlabelled unit" in estimate.reason


def test_judge_routed_labels_give_no_interval() -> None:
    frame = _pointwise_frame("score", (None,), 8, 40)
    options = CalibrationOptions(_score(), bootstrap=0, routing="judge-uncertainty")
    result = calibrate(frame, options).result
    assert result.model_estimates is not None
    assert all(e.prediction_powered is None for e in result.model_estimates.estimates)
    assert all("judge-uncertainty" in (e.reason or "") for e in result.model_estimates.estimates)


def test_pairwise_win_rate_counts_a_tie_as_half() -> None:
    """Three models in pairs; the judge's verdict on a pair judged in both orders is averaged."""
    rng = np.random.default_rng(3)
    models = ("x", "y", "z")
    rows = []
    truth_of = {}
    for i in range(60):
        a, b = rng.choice(models, size=2, replace=False)
        unit = f"p:{i}a|{i}b"
        truth = str(rng.choice(["A", "B", "tie"]))
        truth_of[unit] = (a, b, truth)
        meta = {"model_a": str(a), "model_b": str(b)}
        if i < 20:
            rows.append(_row(unit, "annotator:a", "human", truth, **meta))
        verdict = truth if rng.random() < 0.7 else str(rng.choice(["A", "B", "tie"]))
        rows.append(_row(unit, "judge", "model", verdict, **meta))
        rows.append(_row(unit, "judge", "model", truth, shown_order="BA", **meta))
    frame = pd.DataFrame(rows)
    result = calibrate(frame, CalibrationOptions(get_protocol("pairwise"), bootstrap=0)).result
    assert result.model_estimates is not None
    win = {"A": 1.0, "tie": 0.5, "B": 0.0}
    judged = frame[frame["kind"] == "model"].assign(v=lambda d: d["value"].map(win))
    judge_a = judged.groupby("unit")["v"].mean()
    # the judge's λ over the pairs, each once as model A's win (B's is 1 − A's: the same λ)
    y_a = np.array([win[truth_of[u][2]] if int(u[2:].split("a")[0]) < 20 else np.nan
                    for u in judge_a.index])  # fmt: skip
    tuning = _judge_lambda(y_a, judge_a.to_numpy(float))
    for estimate in result.model_estimates.estimates:
        assert estimate.leaderboard == WIN_RATE
        y, f, f_tilde = [], [], []
        for unit, (a, b, truth) in truth_of.items():
            if estimate.model not in (a, b):
                continue
            flip = (lambda v: v) if estimate.model == a else (lambda v: 1 - v)
            if int(unit[2:].split("a")[0]) < 20:
                y.append(flip(win[truth]))
                f.append(flip(judge_a[unit]))
            else:
                f_tilde.append(flip(judge_a[unit]))
        expected = prediction_powered_mean(
            np.array(y), np.array(f), np.array(f_tilde), tuning=tuning
        )
        assert estimate.tuning == pytest.approx(tuning, rel=1e-12)
        _same(estimate.prediction_powered, expected.prediction_powered)
        assert estimate.judge_only == pytest.approx(expected.judge_only)


def test_the_json_holds_the_estimates_and_the_schema_admits_them() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from calibration.result import result_schema

    frame = _pointwise_frame("score", (None,), 8, 40)
    result = calibrate(frame, CalibrationOptions(_score(), bootstrap=0)).result
    written = json.loads(result.to_json())
    first = written["model_estimates"]["estimates"][0]
    assert set(first["prediction_powered"]) == {"value", "variance", "low", "high", "df"}
    # Student's t over the model's 8 labelled units; the judge's λ, from both models' 16 labels,
    # is taken as fixed (calibration.model_estimates, "One λ per judge")
    assert first["prediction_powered"]["df"] == 7
    assert first["humans_only"]["df"] == 7
    assert first["reason"] is None and first["effective_labels"] > 0
    jsonschema.validate(written, result_schema())


def test_the_model_scores_table_and_html_section_show_the_three_values() -> None:
    from calibration.analysis import calibrate as run
    from calibration.report_html import render_html
    from calibration.tables import MODEL_SCORE_COLUMNS, model_score_table

    frame = _pointwise_frame("score", (None,), 8, 40)
    report = run(frame, CalibrationOptions(_score(), bootstrap=0))
    assert report.result.model_estimates is not None
    estimate = report.result.model_estimates.estimates[0]
    table = model_score_table(report.result)
    assert tuple(table.columns) == MODEL_SCORE_COLUMNS and len(table) == 2
    row = table.iloc[0]
    assert estimate.prediction_powered is not None and estimate.effective_labels is not None
    half = (estimate.prediction_powered.high - estimate.prediction_powered.low) / 2
    assert row["PPI++ ±"] == f"{estimate.prediction_powered.value:.3f} ± {half:.3f}"
    assert row["worth N labels"] == f"8 labels worth {estimate.effective_labels:.0f}"
    assert row["humans-only ±"].endswith("(n = 8)")
    html = render_html(report)
    assert "<h2>Model scores</h2>" in html and row["PPI++ ±"] in html
    few = run(_pointwise_frame("score", (None,), 1, 10), CalibrationOptions(_score(), bootstrap=0))
    assert "at least 2" in model_score_table(few.result).iloc[0]["worth N labels"]
