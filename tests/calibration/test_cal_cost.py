"""Cost and time per 1,000 units (calibration.cost): a hand-worked case and the price file."""

from __future__ import annotations

import math

import pytest

from calibration.cost import Prices, judge_costs, parse_prices
from calibration.errors import CalibrationInputError
from schemas.audit_records import JudgementUsage


def _call(unit, tokens_in, tokens_out, latency, cached=False, judge="J"):
    return JudgementUsage(judge, unit, tokens_in, tokens_out, latency, cached)


def test_hand_worked_cost_and_time():
    """u1: two calls, 100 + 120 tokens in, 10 + 20 out, 1.0 + 2.0 s; u2: cached (free, not
    measured); u3: latency 0.5 s, usage not recorded.
    Tokens: one measured unit (u1): 220 in, 30 out per unit → 220,000 and 30,000 per 1,000 units;
    price at 1 and 2 per million: (220,000·1 + 30,000·2) / 10⁶ = 0.28.
    Time: u1 (3.0 s) and u3 (0.5 s) measured, mean 1.75 s → 1,750 s per 1,000 units."""
    usage = [
        _call("u1", 100, 10, 1.0),
        _call("u1", 120, 20, 2.0),
        _call("u2", 90, 5, 0.1, cached=True),
        _call("u3", None, None, 0.5),
    ]
    (cost,) = judge_costs(usage, Prices(input=1, output=2))
    assert (cost.n_units, cost.n_calls, cost.n_cached) == (3, 4, 1)
    assert (cost.n_units_tokens, cost.n_units_time) == (1, 2)
    assert (cost.input_tokens_per_1000, cost.output_tokens_per_1000) == (220_000, 30_000)
    assert cost.cost_per_1000 == pytest.approx(0.28)
    assert cost.seconds_per_1000 == pytest.approx(1750)


def test_prices_per_judge_and_missing_records():
    usage = [_call("u1", 10, 1, None, judge="A"), _call("u1", None, None, None, judge="B")]
    a, b = judge_costs(usage, {"A": Prices(input=3, output=0)})
    assert a.cost_per_1000 == pytest.approx(1000 * 10 * 3 / 1e6) and a.seconds_per_1000 is None
    assert (b.cost_per_1000, b.input_tokens_per_1000, b.prices) == (None, None, None)
    with pytest.raises(CalibrationInputError, match="prices given for C, which did not judge"):
        judge_costs(usage, {"C": Prices(input=1, output=1)})


def test_price_file_errors_name_the_judge_and_the_fix():
    assert parse_prices({"A": {"input": 2.5, "output": 10}}, "p.json")["A"].output == 10
    assert parse_prices({"A": {"input": 0, "output": 3}}, "p.json")["A"].input == 0
    with pytest.raises(CalibrationInputError, match="p.json: expected an object judge"):
        parse_prices([], "p.json")
    bad = [
        ({"input": -1, "output": 1}, "`input` is -1; give"),
        ({"in": 1, "output": 1}, r"give \{"),
        ({"input": True, "output": 1}, "`input` is true \\(a boolean\\)"),  # accepted as 1 before
        ({"input": 1, "output": "7"}, "`output` is '7' \\(a string\\)"),  # accepted as 7 before
        ({"input": 1, "output": None}, "`output` is None \\(a null\\)"),
        ({"input": 1, "output": math.inf}, "`output` is inf; give"),
        ({"input": math.nan, "output": 1}, "`input` is nan; give"),
        (7, r"give \{.*found int"),
    ]
    for value, message in bad:
        with pytest.raises(CalibrationInputError, match="p.json: judge 'A': " + message):
            parse_prices({"A": value}, "p.json")


def test_prices_are_finite_numbers_not_booleans_or_text():
    """The model itself refuses what the price file's reader refuses (a caller in Python)."""
    for value in (True, "7", math.nan, math.inf, -1):
        with pytest.raises(ValueError):
            Prices(input=value, output=1)
    assert Prices(input=1, output=2).input == 1.0


def test_read_outs_are_charged_the_calls_they_are_read_out_of():
    """``J`` judged u1 in both orders (100 + 120 tokens in, 10 + 20 out, 1 + 2 s) and u2 once
    (50 in, 5 out, 0.5 s). ``J-probs`` (one row per shown order) and ``J-debiased`` (one row per
    pair, u1 only, plus u3, which J never judged) store no usage. Charged J's calls:
    J-probs: u1 220 / 30 / 3 s, u2 50 / 5 / 0.5 s → 135,000 in, 17,500 out, 1,750 s per 1,000
    units (what J itself costs); J-debiased: u1 measured (220,000 / 30,000 / 3,000 s), u3 not.
    A read-out that recorded its own usage (``K-probs``, from a file) keeps its own."""
    usage = [
        _call("u1", 100, 10, 1.0, judge="J"),
        _call("u1", 120, 20, 2.0, judge="J"),
        _call("u2", 50, 5, 0.5, judge="J"),
        _call("u1", None, None, None, judge="J-probs"),
        _call("u1", None, None, None, judge="J-probs"),
        _call("u2", None, None, None, judge="J-probs"),
        _call("u1", None, None, None, judge="J-debiased"),
        _call("u3", None, None, None, judge="J-debiased"),
        _call("u1", 7, 1, None, judge="K-probs"),
        _call("u1", 999, 99, 9.0, judge="K"),
    ]
    costs = {c.judge: c for c in judge_costs(usage, Prices(input=1, output=2))}
    judge, probs = costs["J"], costs["J-probs"]
    debiased, own = costs["J-debiased"], costs["K-probs"]
    assert (probs.source, debiased.source, judge.source, own.source) == ("J", "J", None, None)
    assert (probs.n_units, probs.n_calls, probs.n_units_tokens) == (2, 3, 2)
    assert (probs.input_tokens_per_1000, probs.output_tokens_per_1000) == (135_000, 17_500)
    assert probs.seconds_per_1000 == pytest.approx(1750) == judge.seconds_per_1000
    assert probs.cost_per_1000 == pytest.approx(judge.cost_per_1000) == pytest.approx(0.17)
    assert (debiased.n_units, debiased.n_calls, debiased.n_units_tokens) == (2, 3, 1)
    assert (debiased.input_tokens_per_1000, debiased.seconds_per_1000) == (220_000, 3000)
    assert (own.input_tokens_per_1000, own.seconds_per_1000) == (7000, None)


def test_cost_table_names_the_calls_a_read_out_is_charged():
    from calibration.audits import JudgeAudit
    from calibration.report_audits import cost_caption, cost_table

    usage = [_call("u1", 10, 1, 1.0, judge="J"), _call("u1", None, None, None, judge="J-probs")]
    audit = JudgeAudit(
        pairwise=True, bootstrap=0, seed=0, length_gap=30, costs=judge_costs(usage), biases=[]
    )
    table = cost_table(audit)
    assert table["calls of"].to_dict() == {"J": "J", "J-probs": "J"}
    assert "charged the calls of the judge it was read out of" in cost_caption(audit)
    plain = audit.model_copy(update={"costs": judge_costs(usage[:1])})
    assert "calls of" not in cost_table(plain) and "read out" not in cost_caption(plain)
