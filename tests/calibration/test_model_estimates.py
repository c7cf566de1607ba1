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
from calibration.model_estimates import AVERAGE, WIN_RATE, judge_tuning
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


def _judge_lambda(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> float:
    """PPI++'s power tuning within the values estimated, written out: each part (one value's
    labelled Y, labelled f, unlabelled f) centred on its own means, then
    Σ (Y − Ȳ)(f − f̄) / n over (1 + n/N) · var(every centred f), clipped to [0, 1]."""
    products = sum(float(np.sum((y - y.mean()) * (f - f.mean()))) for y, f, _ in parts)
    centred = [v - v.mean() for _, f, f_tilde in parts for v in (f, f_tilde) if v.size]
    n, big_n = sum(y.size for y, _, _ in parts), sum(t.size for _, _, t in parts)
    spread = float(np.var(np.concatenate(centred), ddof=1))
    return float(np.clip(products / n / ((1 + n / big_n) * spread), 0.0, 1.0))


def _frame_lambda(frame: pd.DataFrame, tasks: tuple[str, ...] = ()) -> float:
    """The judge's λ over the values ``frame``'s leaderboard estimates: each model's (or each
    model's on each of ``tasks``)."""
    parts = [
        (y, f, f_tilde.to_numpy())
        for model in ("m1", "m2")
        for y, f, f_tilde in (
            [_split(frame, model, task) for task in tasks] if tasks else [_split(frame, model)]
        )
    ]
    return _judge_lambda(parts)


def test_the_judges_lambda_is_fitted_within_each_value_estimated() -> None:
    """Hand-worked (METRICS.md, "One λ per judge"): two models whose means the judge ranks as the
    humans do. Centred on each model's means, Y − Ȳ = (−1, 1), (−2, 2) and every f − f̄ = ±1:
    Σ (Y − Ȳ)(f − f̄) / n = 6/4 and var(f − f̄) over the 8 units = 8/7, so
    λ = 1.5 / ((1 + 4/4) · 8/7) = 21/32. Uncentred, the same units give 0.452."""
    nan = np.nan
    first = (np.array([1.0, 3.0, nan, nan]), np.array([4.0, 6.0, 5.0, 7.0]))
    second = (np.array([5.0, 9.0, nan, nan]), np.array([9.0, 11.0, 10.0, 12.0]))
    assert judge_tuning([first, second]) == pytest.approx(21 / 32, abs=1e-12)
    lonely = (np.array([4.0, nan]), np.array([1.0, 2.0]))  # one label: nothing to centre on
    assert judge_tuning([first, second, lonely]) == pytest.approx(21 / 32, abs=1e-12)
    assert judge_tuning([first]) is None  # two labelled units in all
    # model 2's humans order its units against the judge: within the models the covariance is
    # (2 − 4)/4 < 0, so λ = 0, where the uncentred pool (the models' means) still gives 0.34
    reversed_second = (np.array([9.0, 5.0, nan, nan]), second[1])
    assert judge_tuning([first, reversed_second]) == 0.0


def test_a_scale_mean_equals_ppi_on_the_models_units() -> None:
    frame = _pointwise_frame("score", (None,), labelled=8, units=40)
    result = calibrate(frame, CalibrationOptions(_score(), bootstrap=0)).result
    assert result.model_estimates is not None
    by_model = {e.model: e for e in result.model_estimates.estimates}
    assert set(by_model) == {"m1", "m2"}
    tuning = _frame_lambda(frame)  # the judge's one λ, within both models
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
    tuning = _frame_lambda(frame)  # one λ for the judge, within each model (not category)
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
    tuning = _frame_lambda(frame, ("chart", "meme", "ocr"))  # within each model's tasks
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


def test_the_sample_note_says_what_each_routing_samples() -> None:
    """The note under "Model scores" follows the queue's rules (PROTOCOLS.md): least-annotated
    breaks ties by a seeded random key, not the import order; stratified keeps its random
    share."""
    frame = _pointwise_frame("score", (None,), 8, 40)
    notes = {
        routing: calibrate(
            frame, CalibrationOptions(_score(), bootstrap=0, routing=routing)
        ).result.model_estimates.sample  # type: ignore[union-attr]
        for routing in ("least-annotated", "stratified", "judge-disagreement")
    }
    assert "seeded random order" in notes["least-annotated"]
    assert "lowest unit id" not in notes["least-annotated"]
    assert "estimation sample" in notes["stratified"]
    assert notes["judge-disagreement"].startswith("none: ")


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
    parts = {}  # per model: its labelled wins, the judge's on them, the judge's on the others
    for model in models:
        y, f, f_tilde = [], [], []
        for unit, (a, b, truth) in truth_of.items():
            if model not in (a, b):
                continue
            flip = (lambda v: v) if model == a else (lambda v: 1 - v)
            if int(unit[2:].split("a")[0]) < 20:
                y.append(flip(win[truth]))
                f.append(flip(judge_a[unit]))
            else:
                f_tilde.append(flip(judge_a[unit]))
        parts[model] = (np.array(y), np.array(f), np.array(f_tilde))
    tuning = _judge_lambda(list(parts.values()))  # within each model's pairs
    for estimate in result.model_estimates.estimates:
        assert estimate.leaderboard == WIN_RATE
        expected = prediction_powered_mean(*parts[estimate.model], tuning=tuning)
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
