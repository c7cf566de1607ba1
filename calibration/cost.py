"""Cost and time per 1,000 units of each judge, from the token usage and latency stored with its
judgements and the prices the user states (METRICS.md, "Judge bias and cost").

A unit is *measured* when every call made for it (a pair judged in both orders is two calls) was
paid for (not answered from the cache) and its usage (for tokens) or latency (for time) was
recorded. Per 1,000 units = 1000 × the mean over measured units of the unit's summed tokens,
price or seconds — what judging 1,000 more units would take, as AlpacaEval's
"price / time per 1000 examples".

A read-out of another judge's calls (``<judge>-probs``, ``<judge>-debiased``:
:mod:`schemas.readouts`) records no usage of its own; it is charged the calls of the judge it is
read out of, on its own units: one call per unit, two for a pair judged in both orders.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from calibration.errors import CalibrationInputError
from schemas.audit_records import JudgementUsage
from schemas.readouts import readout_source

_Number = TypeVar("_Number", int, float)


class Prices(BaseModel):
    """What a judge's tokens cost, in any currency, per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(
        ge=0,
        allow_inf_nan=False,
        strict=True,
        description="price per million input (prompt) tokens",
    )
    output: float = Field(
        ge=0,
        allow_inf_nan=False,
        strict=True,
        description="price per million output (completion) tokens",
    )


class JudgeCost(BaseModel):
    """Tokens, price and time of one judge per 1,000 units."""

    model_config = ConfigDict(frozen=True)

    judge: str
    n_units: int
    """Units with at least one stored judgement of this judge."""
    n_calls: int
    n_cached: int
    """Calls answered from the judge cache (no tokens paid)."""
    n_units_tokens: int
    """Measured units for tokens and price."""
    n_units_time: int
    """Measured units for time."""
    input_tokens_per_1000: float | None
    output_tokens_per_1000: float | None
    cost_per_1000: float | None
    """None without prices for this judge or without a measured unit."""
    seconds_per_1000: float | None
    prices: Prices | None
    source: str | None = None
    """The judge whose calls this read-out was read out of (``critic-v1`` for
    ``critic-v1-probs``); calls, tokens and time are that judge's on this judge's units. None
    when the judge's own calls are counted."""


def judge_costs(
    usage: Sequence[JudgementUsage],
    prices: Mapping[str, Prices] | Prices | None = None,
    judges: Sequence[str] | None = None,
) -> list[JudgeCost]:
    """One :class:`JudgeCost` per judge (``judges``, or every judge in ``usage``), in name order.

    ``prices``: one :class:`Prices` for every judge, or a mapping judge → prices (judges left out
    get no cost; a name that is not a judge here is an error, so that a typo does not silently
    drop a price). A read-out (``<judge>-probs``, ``<judge>-debiased``) whose own calls recorded
    neither tokens nor time is charged the calls of ``<judge>`` in ``usage`` on its units.
    """
    calls: dict[str, dict[str, list[JudgementUsage]]] = defaultdict(lambda: defaultdict(list))
    for row in usage:
        calls[row.judge][row.unit].append(row)
    names = sorted(calls) if judges is None else list(judges)
    if isinstance(prices, Mapping):
        unknown = sorted(set(prices) - set(names))
        if unknown:
            raise CalibrationInputError(
                f"prices given for {', '.join(unknown)}, which did not judge here; judges: "
                + (", ".join(names) or "none")
            )
    return [_cost(name, *_charged_calls(name, calls), _price(prices, name)) for name in names]


def _charged_calls(
    judge: str, calls: Mapping[str, Mapping[str, list[JudgementUsage]]]
) -> tuple[dict[str, list[JudgementUsage]], str | None]:
    """The calls ``judge`` is charged per unit, and the judge they were made by when it is a
    read-out of another judge's calls; a unit the source did not judge keeps the read-out's
    own (unrecorded) rows, so it is not measured."""
    own = dict(calls.get(judge, {}))
    source = readout_source(judge)
    recorded = any(
        r.input_tokens is not None or r.output_tokens is not None or r.latency_s is not None
        for rows in own.values()
        for r in rows
    )
    if source is None or source not in calls or recorded:
        return own, None
    made = calls[source]
    return {unit: made.get(unit) or rows for unit, rows in own.items()}, source


def _price(prices: Mapping[str, Prices] | Prices | None, judge: str) -> Prices | None:
    if isinstance(prices, Prices) or prices is None:
        return prices
    return prices.get(judge)


def _total(values: Iterable[_Number | None]) -> _Number | None:
    """The sum of values recorded for every call of a unit; None when any call lacks one."""
    total: _Number = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def _cost(
    judge: str,
    units: Mapping[str, list[JudgementUsage]],
    source: str | None,
    price: Prices | None,
) -> JudgeCost:
    paid = {unit: rows for unit, rows in units.items() if not any(r.cached for r in rows)}
    tokens = [
        (inputs, outputs)
        for rows in paid.values()
        if (inputs := _total(r.input_tokens for r in rows)) is not None
        and (outputs := _total(r.output_tokens for r in rows)) is not None
    ]
    seconds = [
        total for rows in paid.values() if (total := _total(r.latency_s for r in rows)) is not None
    ]
    per_in = 1000 * sum(t[0] for t in tokens) / len(tokens) if tokens else None
    per_out = 1000 * sum(t[1] for t in tokens) / len(tokens) if tokens else None
    cost = None
    if price is not None and per_in is not None and per_out is not None:
        cost = (per_in * price.input + per_out * price.output) / 1e6
    return JudgeCost(
        judge=judge,
        n_units=len(units),
        n_calls=sum(len(rows) for rows in units.values()),
        n_cached=sum(r.cached for rows in units.values() for r in rows),
        n_units_tokens=len(tokens),
        n_units_time=len(seconds),
        input_tokens_per_1000=per_in,
        output_tokens_per_1000=per_out,
        cost_per_1000=cost,
        seconds_per_1000=1000 * sum(seconds) / len(seconds) if seconds else None,
        prices=price,
        source=source,
    )


def parse_prices(raw: object, where: str) -> dict[str, Prices]:
    """A price file's parsed JSON: an object judge → ``{"input": N, "output": N}``, prices per
    million tokens, each a finite number ≥ 0 (``true`` and ``"7"`` are not numbers here)."""
    if not isinstance(raw, dict):
        raise CalibrationInputError(
            f'{where}: expected an object judge → {{"input": N, "output": N}}'
        )
    fix = 'give {"input": N, "output": N}, prices per million tokens ≥ 0'
    result = {}
    for judge, value in raw.items():
        if not isinstance(value, dict) or set(value) != {"input", "output"}:
            keys = ", ".join(map(str, value)) if isinstance(value, dict) else type(value).__name__
            raise CalibrationInputError(f"{where}: judge {judge!r}: {fix} (found {keys})")
        for side in ("input", "output"):
            problem = price_problem(value[side])
            if problem is not None:
                raise CalibrationInputError(
                    f"{where}: judge {judge!r}: `{side}` is {problem}; {fix}"
                )
        result[str(judge)] = Prices(input=value["input"], output=value["output"])
    return result


def price_problem(value: object) -> str | None:
    """What makes ``value`` no price (None for a finite number ≥ 0), as ``is …`` continues it."""
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if not isinstance(value, int | float):
        return f"{value!r} (a {_json_type(value)})"
    if not math.isfinite(value) or value < 0:
        return f"{value!r}"
    return None


def _json_type(value: object) -> str:
    return {str: "string", list: "list", dict: "object", type(None): "null"}.get(
        type(value), type(value).__name__
    )
