"""Cost and time per 1,000 units (calibration.cost): a hand-worked case and the price file."""

from __future__ import annotations

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
    assert parse_prices('{"A": {"input": 2.5, "output": 10}}', "p.json")["A"].output == 10
    with pytest.raises(CalibrationInputError, match="p.json: not JSON"):
        parse_prices("{", "p.json")
    with pytest.raises(CalibrationInputError, match="p.json: judge 'A': give"):
        parse_prices('{"A": {"input": -1, "output": 1}}', "p.json")
    with pytest.raises(CalibrationInputError, match="p.json: judge 'A': give"):
        parse_prices('{"A": {"in": 1, "output": 1}}', "p.json")
