"""Cross-protocol consistency (calibration.consistency): a hand-worked case, the bootstrap
against a plain loop, δ, and the errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibration.bootstrap import percentile_interval, unit_resample_indices
from calibration.consistency import HUMANS, consistent, cross_protocol_consistency
from calibration.errors import CalibrationInputError
from schemas.protocols import get_protocol

ALIGN = get_protocol("alignmmbench")


def _row(unit, rater, kind, value, order="AB"):
    return {"unit": unit, "rater": rater, "kind": kind, "value": value, "shown_order": order}


def _frames():
    """Humans' mean scores r1 = 8, r2 = 5, r3 = 5.5; judge J scores 7, 7, 3.

    Pairs and who is consistent (δ = 1):
      p:r1|r2  humans A (8 > 5: yes)        J A (AB: 7 = 7, no) and tie (BA: |0| ≤ 1, yes) → ½
      p:r2|r3  humans tie (|5 − 5.5| ≤ 1)   J A (7 > 3: yes) → 1
      p:r1|r3  humans B (8 > 5.5: no)       J A (7 > 3: yes) → 1
    Humans 2/3, one inconsistent pair; J (½ + 1 + 1)/3 = 5/6, one pair with an inconsistent verdict.
    """
    scores = [("r1", 8, 8), ("r2", 4, 6), ("r3", 5, 6)]
    pointwise = [_row(f"r:{r}", f"annotator:{k}", "human", v)
                 for r, a, b in scores for k, v in (("x", a), ("y", b))]  # fmt: skip
    pointwise += [_row(f"r:{r}", "J", "model", v) for r, v in (("r1", 7), ("r2", 7), ("r3", 3))]
    humans = {"p:r1|r2": "A", "p:r2|r3": "tie", "p:r1|r3": "B"}
    pairwise = [_row(p, f"annotator:{k}", "human", v) for p, v in humans.items() for k in "xy"]
    pairwise += [
        _row("p:r1|r2", "J", "model", "A", "AB"),
        _row("p:r1|r2", "J", "model", "tie", "BA"),
        _row("p:r2|r3", "J", "model", "A"),
        _row("p:r1|r3", "J", "model", "A"),
    ]
    return pd.DataFrame(pointwise), pd.DataFrame(pairwise)


def test_hand_worked_case():
    pointwise, pairwise = _frames()
    report = cross_protocol_consistency(pointwise, pairwise, ALIGN, bootstrap=0)
    rates = {r.rater: r for r in report.raters}
    assert report.n_pairs == 3 and report.delta == 1.0  # the scale's step
    assert rates[HUMANS].consistency == pytest.approx(2 / 3)
    assert rates["J"].consistency == pytest.approx(5 / 6)
    assert (rates[HUMANS].n_inconsistent, rates["J"].n_inconsistent) == (1, 1)
    cases = {(c.rater, c.pair): c for c in report.cases}
    assert set(cases) == {(HUMANS, "p:r1|r3"), ("J", "p:r1|r2")}
    assert cases[("J", "p:r1|r2")].preference == "A/tie"
    assert cases[("J", "p:r1|r2")].share_consistent == 0.5
    assert (cases[(HUMANS, "p:r1|r3")].score_a, cases[(HUMANS, "p:r1|r3")].score_b) == (8, 5.5)


def test_delta_decides_ties():
    pointwise, pairwise = _frames()
    report = cross_protocol_consistency(pointwise, pairwise, ALIGN, delta=0.4, bootstrap=0)
    # |5 − 5.5| = 0.5 > 0.4: the humans' tie is now inconsistent too
    assert report.raters[0].consistency == pytest.approx(1 / 3)


def test_interval_matches_a_plain_bootstrap_loop():
    pointwise, pairwise = _frames()
    report = cross_protocol_consistency(pointwise, pairwise, ALIGN, bootstrap=300, seed=4)
    per_pair = np.array([0.5, 1.0, 1.0])  # J, pairs in key order: p:r1|r2, p:r1|r3, p:r2|r3
    samples = [per_pair[drawn].mean() for chunk in unit_resample_indices(3, 300, 4)
               for drawn in chunk]  # fmt: skip
    judge = next(r for r in report.raters if r.rater == "J")
    assert judge.ci == pytest.approx(percentile_interval(np.array(samples)))


def test_consistent_codes():
    preference = np.array([0, 0, 1, 1, 2, 2])
    a, b = np.array([6, 5, 5, 4, 5, 5]), np.array([5, 5, 5, 5, 6, 7])
    assert consistent(preference, a, b, 1.0).tolist() == [1, 0, 0, 1, 1, 0]


def test_errors_name_the_problem():
    pointwise, pairwise = _frames()
    with pytest.raises(CalibrationInputError, match="first campaign must be pointwise"):
        cross_protocol_consistency(pairwise, pairwise, get_protocol("pairwise"))
    other = pairwise.assign(unit=pairwise["unit"].str.replace("r", "s"))
    with pytest.raises(CalibrationInputError, match="must cover the same responses"):
        cross_protocol_consistency(pointwise, other, ALIGN)
    with pytest.raises(CalibrationInputError, match="did not judge both campaigns; in both: J"):
        cross_protocol_consistency(pointwise, pairwise, ALIGN, judges=("K",))
    with pytest.raises(CalibrationInputError, match="delta must be a number"):
        cross_protocol_consistency(pointwise, pairwise, ALIGN, delta=-1)
