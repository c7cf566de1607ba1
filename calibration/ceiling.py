"""The human ceiling: inter-human alpha and the leave-one-out comparison (METRICS.md).

Leave-one-out: for each annotator, their labels against the consensus of the *other* annotators
on the same units, and the judge against that same consensus on the same units (units where the
annotator labelled, the others reached a consensus and the judge gave a parsed value). Per metric,
``human`` and ``judge`` are means over annotators and ``degradation`` = judge − human: for error
metrics (mae, rmse...) positive means the judge is further from the humans than a human is; for
agreement metrics (correlations, accuracies, kappa, alpha) negative means that.
"""

from __future__ import annotations

import numpy as np

from calibration.pairwise import LABELS, PairwiseKernel, UnparsedRule
from calibration.pointwise import PointwiseKernel, metrics_for
from calibration.reference import ConsensusRule, NoMajorityRule, consensus
from calibration.scale import Scale

LOO_PAIRWISE_METRICS: tuple[str, ...] = (
    "acc_with_tie",
    "acc_without_tie",
    "precision_macro",
    "recall_macro",
    "f1_macro",
    "kappa",
)


def others_consensus(
    humans: np.ndarray,
    rater: int,
    rule: ConsensusRule,
    no_majority: NoMajorityRule,
    *,
    pairwise: bool,
) -> np.ndarray:
    """Consensus of every annotator except ``rater``, per unit (NaN where none)."""
    others = np.delete(humans, rater, axis=0)
    if others.shape[0] == 0:
        return np.full(humans.shape[1], np.nan)
    return consensus(others, rule, no_majority=no_majority, pairwise=pairwise)


class LeaveOneOut:
    """Leave-one-out consensus per annotator, reusable for every judge."""

    def __init__(
        self,
        humans: np.ndarray,
        raters: list[str],
        rule: ConsensusRule,
        no_majority: NoMajorityRule,
        *,
        scale: Scale | None,
    ) -> None:
        self.humans, self.raters, self.scale = humans, raters, scale
        pairwise = scale is None
        self.consensus = [
            others_consensus(humans, r, rule, no_majority, pairwise=pairwise)
            for r in range(len(raters))
        ]
        # An annotator's own metrics depend on the judge only through the units compared; judges
        # of one campaign mostly score the same units, so each (annotator, units) is computed once.
        self._human_points: dict[tuple[int, bytes], dict[str, float]] = {}
        # A judge's metrics against an annotator's others depend only on its values on those
        # units: judges that give the same scores there (a small campaign, a judge run twice
        # under two names) are compared once.
        self._judge_points: dict[tuple[int, bytes, bytes], dict[str, float]] = {}

    def pointwise(self, judge: np.ndarray | None) -> dict:
        """Per annotator and on average: human vs others, judge vs others (same units)."""
        scale = self.scale
        if scale is None:
            raise ValueError("a pairwise ceiling has no pointwise metrics")
        names = metrics_for(scale)
        per_rater: dict[str, dict] = {}
        for r, name in enumerate(self.raters):
            own, others = self.humans[r], self.consensus[r]
            mask = ~np.isnan(own) & ~np.isnan(others)
            if judge is not None:
                mask &= ~np.isnan(judge)
            if mask.sum() == 0:
                continue
            key = (r, np.packbits(mask).tobytes())
            if key not in self._human_points:
                self._human_points[key] = _point(own, others, mask, scale, names)
            entry = {"n": int(mask.sum()), "human": dict(self._human_points[key])}
            if judge is not None:
                judge_key = (*key, judge[mask].tobytes())
                if judge_key not in self._judge_points:
                    self._judge_points[judge_key] = _point(judge, others, mask, scale, names)
                entry["judge"] = dict(self._judge_points[judge_key])
            per_rater[name] = entry
        return _summarise(per_rater, names)

    def pairwise(
        self,
        unit: np.ndarray | None = None,
        verdict: np.ndarray | None = None,
        shown: np.ndarray | None = None,
        unparsed: UnparsedRule = "wrong",
    ) -> dict:
        """As :meth:`pointwise` for preferences; the judge given as its verdict rows."""
        if unit is not None and (verdict is None or shown is None):
            raise ValueError("a judge's unit rows need its verdicts and shown orders")
        per_rater: dict[str, dict] = {}
        for r, name in enumerate(self.raters):
            own, others = self.humans[r], self.consensus[r]
            mask = ~np.isnan(own) & ~np.isnan(others)
            if unit is not None:
                judged = np.zeros(mask.size, dtype=bool)
                judged[unit] = True
                mask &= judged
            if mask.sum() == 0:
                continue
            reference = _labels(np.where(mask, others, np.nan))
            rows = np.flatnonzero(mask)
            human = PairwiseKernel(rows, _labels(own[rows]), np.full(rows.size, "AB"), reference)
            entry = {"n": int(mask.sum()), "human": _pairwise_point(human)}
            if unit is not None and verdict is not None and shown is not None:
                keep = mask[unit]
                judge = PairwiseKernel(unit[keep], verdict[keep], shown[keep], reference, unparsed)
                entry["judge"] = _pairwise_point(judge)
            per_rater[name] = entry
        return _summarise(per_rater, LOO_PAIRWISE_METRICS)


def _point(values, reference, mask, scale, names) -> dict[str, float]:
    kernel = PointwiseKernel(np.where(mask, values, np.nan), reference, scale)
    evaluated = kernel.evaluate(np.ones((1, kernel.n_units)), names)
    return {k: float(v[0]) for k, v in evaluated.items()}


def _pairwise_point(kernel: PairwiseKernel) -> dict[str, float]:
    evaluated = kernel.evaluate(np.ones((1, kernel.n_units)))
    return {k: float(evaluated[k][0]) for k in LOO_PAIRWISE_METRICS}


def _labels(codes: np.ndarray) -> np.ndarray:
    return np.array([None if np.isnan(c) else LABELS[int(c)] for c in codes], dtype=object)


def _summarise(per_rater: dict[str, dict], names: tuple[str, ...]) -> dict:
    result: dict = {"by_annotator": per_rater, "n_annotators": len(per_rater)}
    for side in ("human", "judge"):
        entries = [entry[side] for entry in per_rater.values() if side in entry]
        if entries:
            result[side] = {name: _nanmean([entry[name] for entry in entries]) for name in names}
    if "judge" in result:
        result["degradation"] = {
            name: result["judge"][name] - result["human"][name] for name in names
        }
    return result


def _nanmean(values: list[float]) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else float("nan")
