"""Pairwise metrics against sklearn, with both orders, unparsed rules and position bias."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, precision_recall_fscore_support

from calibration import pairwise_metrics

LABELS = ["A", "B", "tie"]


def test_single_order_matches_sklearn():
    rng = np.random.default_rng(0)
    truth = list(rng.choice(LABELS, 200, p=[0.45, 0.4, 0.15]))
    verdicts = [t if rng.random() < 0.7 else rng.choice(LABELS) for t in truth]
    verdicts[:6] = [None] * 6
    result = pairwise_metrics(verdicts, truth, unparsed="wrong")
    predicted = [v or "unparsed" for v in verdicts]
    p, r, f, _ = precision_recall_fscore_support(
        truth, predicted, labels=LABELS, average="macro", zero_division=0
    )
    assert result["acc_with_tie"] == pytest.approx(accuracy_score(truth, predicted))
    assert (result["precision_macro"], result["recall_macro"], result["f1_macro"]) == pytest.approx(
        (p, r, f)
    )
    assert result["kappa"] == pytest.approx(cohen_kappa_score(truth, predicted))
    decisive = [i for i, t in enumerate(truth) if t != "tie"]
    assert result["acc_without_tie"] == pytest.approx(
        np.mean([predicted[i] == truth[i] for i in decisive])
    )
    assert result["coverage"] == pytest.approx(194 / 200)


def test_both_orders_weigh_half_and_consistency_is_per_pair():
    # pair 1: both orders A (reference A); pair 2: AB says B, BA says A (reference B);
    # pair 3: one order only, tie (reference tie)
    units = [1, 1, 2, 2, 3]
    verdicts = ["A", "A", "B", "A", "tie"]
    shown = ["AB", "BA", "AB", "BA", "AB"]
    reference = ["A", "A", "B", "B", "tie"]
    result = pairwise_metrics(verdicts, reference, shown=shown, units=units)
    weights = [0.5, 0.5, 0.5, 0.5, 1.0]
    predicted, truth = verdicts, reference
    assert result["acc_with_tie"] == pytest.approx(
        accuracy_score(truth, predicted, sample_weight=weights)
    )
    assert result["kappa"] == pytest.approx(
        cohen_kappa_score(truth, predicted, sample_weight=weights)
    )
    assert result["consistency"] == 0.5  # pair 1 consistent, pair 2 not
    assert result["agreement_both_orders"] == 0.5
    # verdicts choosing the response shown first: A shown AB (1), A-canonical shown BA is the
    # second shown (0), B shown AB (0), A shown BA (0), tie (0) -> 1 of 5
    assert result["prefer_first"] == pytest.approx(1 / 5)
    assert result["tie_rate"] == pytest.approx(1 / 5)
    assert result["n"] == 3


def test_unparsed_rules():
    verdicts, reference = ["A", None, "B"], ["A", "tie", "B"]
    assert pairwise_metrics(verdicts, reference, unparsed="tie")["acc_with_tie"] == 1.0
    assert pairwise_metrics(verdicts, reference, unparsed="wrong")["acc_with_tie"] == pytest.approx(
        2 / 3
    )
    dropped = pairwise_metrics(verdicts, reference, unparsed="drop")
    assert dropped["acc_with_tie"] == 1.0 and dropped["n"] == 2
    # an unparsed order makes the pair inconsistent under 'wrong'
    both = pairwise_metrics(["A", None], ["A", "A"], shown=["AB", "BA"], units=[1, 1])
    assert both["consistency"] == 0.0


def test_bad_rule_is_a_clear_error():
    with pytest.raises(ValueError, match="^unparsed 'maybe' is not one of wrong, tie, drop$"):
        pairwise_metrics(["A"], ["A"], unparsed="maybe")
