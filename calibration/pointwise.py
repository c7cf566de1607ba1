"""Pointwise agreement of a judge J with a reference H (METRICS.md, "Pointwise").

Every metric is written as sums of per-unit contributions, evaluated for a matrix of unit weights
(resamples × units; a row of ones is the plain estimate). :class:`PointwiseKernel` prepares those
contributions once per judge; the public functions (``mae(judge, human)`` ...) are the same
kernel with weight one per unit, on the pairs where both values are present (NaN = missing).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import sparse, stats

from calibration.alpha import AlphaData, sum_per_pattern, unique_rows
from calibration.scale import Scale

POINTWISE_METRICS: tuple[str, ...] = (
    "mae",
    "mse",
    "rmse",
    "pearson",
    "spearman",
    "kendall",
    "cosine",
    "strict_acc",
    "fuzzy_acc",
    "qwk",
    "alpha_interval",
    "alpha_ordinal",
    "bias",
    "smd",
    "percent_mae",
)
"""Metrics with a bootstrap interval; ``n`` and ``coverage`` are counts, reported beside them."""

CORRELATION_METRICS: tuple[str, ...] = ("pearson", "spearman", "kendall")
SCALE_POINT_METRICS: tuple[str, ...] = ("strict_acc", "fuzzy_acc", "qwk")
_MAX_PAIRS = 20_000  # distinct (J, H) pairs below which units are grouped by pair
_MAX_TABLE_CELLS = 20_000  # joint value table for rank metrics; above it, scipy per resample
_TOLERANCE = 1e-10


def metrics_for(scale: Scale) -> tuple[str, ...]:
    """The pointwise metrics that apply on ``scale`` (no scale points: no strict/fuzzy/qwk)."""
    return tuple(
        name
        for name in POINTWISE_METRICS
        if (scale.is_discrete or name not in SCALE_POINT_METRICS)
        and (scale.percent or name != "percent_mae")
    )


class PointwiseKernel:
    """Per-unit contributions of one judge against the reference, for any unit weights.

    ``judge`` and ``human`` are aligned over the same units (NaN = missing); units where either is
    missing contribute nothing, so the weights may cover every unit of a campaign.
    """

    def __init__(
        self, judge: np.ndarray, human: np.ndarray, scale: Scale, *, group_pairs: bool = True
    ) -> None:
        j = np.asarray(judge, dtype=np.float64)
        h = np.asarray(human, dtype=np.float64)
        if j.shape != h.shape or j.ndim != 1:
            raise ValueError("judge and human must be 1-D arrays of the same length")
        self.scale = scale
        self.n_units = j.size
        self.mask = ~np.isnan(j) & ~np.isnan(h)
        self._pairs: sparse.csr_matrix | None = None
        if group_pairs and self.mask.sum() >= 64:
            rows = np.flatnonzero(self.mask)
            distinct, _, inverse = unique_rows(np.column_stack([j[rows], h[rows]]))
            if distinct.shape[0] <= min(_MAX_PAIRS, rows.size // 4):
                # every metric is a weighted sum over units: units with the same (J, H) pair
                # are one weighted unit of the inner kernel
                self._pairs = sparse.csr_matrix(
                    (np.ones(rows.size), (rows, inverse.ravel())),
                    shape=(self.n_units, distinct.shape[0]),
                )
                self._inner = PointwiseKernel(
                    distinct[:, 0], distinct[:, 1], scale, group_pairs=False
                )
                return
        self._j, self._h = j[self.mask], h[self.mask]
        self._linear = self._linear_stats()
        self._alpha = AlphaData.from_matrix(np.vstack([np.where(self.mask, j, np.nan), h]))
        self._rank_table = self._joint_table(*_codes(self._j), *_codes(self._h))
        self._point_table = None
        if scale.is_discrete:
            k = scale.n_points
            qj, qh = scale.point_index(self._j), scale.point_index(self._h)
            self._point_table = self._joint_table(qj, k, qh, k)

    def evaluate(self, weights: np.ndarray, names: tuple[str, ...] | None = None) -> dict:
        """Metric name → array of one value per weight row (NaN where undefined)."""
        wanted = names or metrics_for(self.scale)
        weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if self._pairs is not None:
            return self._inner.evaluate(sum_per_pattern(weights, self._pairs), wanted)
        values = _linear_metrics(weights @ self._linear, self.scale)
        if "alpha_interval" in wanted:
            values["alpha_interval"] = self._alpha.evaluate(weights, "interval")
        if "alpha_ordinal" in wanted:
            values["alpha_ordinal"] = self._alpha.evaluate(weights, "ordinal")
        if "spearman" in wanted or "kendall" in wanted:
            values.update(self._rank_metrics(weights))
        if self._point_table is not None and any(m in wanted for m in SCALE_POINT_METRICS):
            values.update(_scale_point_metrics(self._table_counts(self._point_table, weights)))
        return {name: values[name] for name in wanted}

    def n(self, weights: np.ndarray | None = None) -> np.ndarray:
        """Units with both values, per weight row."""
        if weights is None:
            return np.array([float(self.mask.sum())])
        return np.atleast_2d(np.asarray(weights, dtype=np.float64)) @ self.mask.astype(np.float64)

    def _linear_stats(self) -> np.ndarray:
        j, h = self._j, self._h
        jc = j - (j[0] if j.size else 0.0)  # shifted by a value of their own: exact for constants
        hc = h - (h[0] if h.size else 0.0)
        d = j - h
        columns = [np.ones_like(j), d, np.abs(d), d**2, jc, hc, jc**2, hc**2, jc * hc, j * h]
        columns += [j**2, h**2]
        stats_ = np.zeros((self.n_units, len(columns)))
        stats_[self.mask] = np.column_stack(columns) if j.size else 0.0
        return stats_

    def _joint_table(
        self, codes_a: np.ndarray, size_a: int, codes_b: np.ndarray, size_b: int
    ) -> _JointTable | None:
        if size_a * size_b > _MAX_TABLE_CELLS:
            return None
        return _JointTable(np.flatnonzero(self.mask), codes_a * size_b + codes_b, size_a, size_b)

    def _table_counts(self, table: _JointTable, weights: np.ndarray) -> np.ndarray:
        return table.counts(weights, self.n_units)

    def _rank_metrics(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        if self._rank_table is not None:
            return _rank_metrics_from_tables(self._table_counts(self._rank_table, weights))
        return _rank_metrics_by_resample(self._j, self._h, weights[:, self.mask])


class _JointTable:
    """Weighted counts of the (a, b) value pairs of the units ``rows``, per row of weights.

    One row of weights (a plain estimate, e.g. each annotator's leave-one-out) is a
    ``bincount``; many rows (bootstrap resamples) a product with a units × cells indicator,
    built on first use. Both add each cell's weights in ascending unit order, so both give the
    same sums to the bit.
    """

    def __init__(self, rows: np.ndarray, cells: np.ndarray, size_a: int, size_b: int) -> None:
        self.rows, self.cells, self.size_a, self.size_b = rows, cells, size_a, size_b
        self._indicator: sparse.csr_matrix | None = None

    def counts(self, weights: np.ndarray, n_units: int) -> np.ndarray:
        """Resamples × a values × b values."""
        n_cells = self.size_a * self.size_b
        if weights.shape[0] == 1:
            counts = np.bincount(self.cells, weights=weights[0, self.rows], minlength=n_cells)
            return counts.reshape(1, self.size_a, self.size_b)
        if self._indicator is None:
            self._indicator = sparse.csr_matrix(
                (np.ones(self.rows.size), (self.rows, self.cells)), shape=(n_units, n_cells)
            )
        counts = sum_per_pattern(weights, self._indicator)
        return counts.reshape(weights.shape[0], self.size_a, self.size_b)


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    distinct, inverse = np.unique(values, return_inverse=True)
    return inverse.astype(np.int64), max(distinct.size, 1)


def _linear_metrics(sums: np.ndarray, scale: Scale) -> dict[str, np.ndarray]:
    n, sd, sad, sdd, sj, sh, sjj, shh, sjh, raw_jh, raw_jj, raw_hh = sums.T
    with np.errstate(invalid="ignore", divide="ignore"):
        has = n > 0
        mae = np.where(has, sad / n, np.nan)
        mse = np.where(has, sdd / n, np.nan)
        bias = np.where(has, sd / n, np.nan)
        var_j = sjj - sj**2 / n
        var_h = shh - sh**2 / n
        cov = sjh - sj * sh / n
        varies_j = var_j > _TOLERANCE * sjj
        varies_h = var_h > _TOLERANCE * shh
        pearson = np.where((n >= 2) & varies_j & varies_h, cov / np.sqrt(var_j * var_h), np.nan)
        cosine = np.where((raw_jj > 0) & (raw_hh > 0), raw_jh / np.sqrt(raw_jj * raw_hh), np.nan)
        sd_h = np.sqrt(np.maximum(var_h, 0.0) / (n - 1))
        smd = np.where((n >= 2) & varies_h, bias / sd_h, np.nan)
    values = {
        "mae": mae,
        "mse": mse,
        "rmse": np.sqrt(mse),
        "bias": bias,
        "pearson": np.clip(pearson, -1.0, 1.0),
        "cosine": cosine,
        "smd": smd,
    }
    if scale.percent:
        values["percent_mae"] = mae / scale.high * 100.0
    return values


def _rank_metrics_from_tables(tables: np.ndarray) -> dict[str, np.ndarray]:
    """Spearman's rho and Kendall's tau-b from joint count tables (resamples × J values × H values).

    rho is Pearson's r of mid-ranks; tau-b = (P - Q) / sqrt((n0 - n1)(n0 - n2)) with P / Q the
    concordant / discordant pairs and n1, n2 the pairs tied in J, in H (Kendall 1945), which is
    what ``scipy.stats.kendalltau`` computes.
    """
    n = tables.sum(axis=(1, 2))
    rows, cols = tables.sum(axis=2), tables.sum(axis=1)
    mid = ((n + 1) / 2)[:, None]
    rank_j = np.cumsum(rows, axis=1) - (rows - 1) / 2 - mid
    rank_h = np.cumsum(cols, axis=1) - (cols - 1) / 2 - mid
    cov = np.einsum("bij,bi,bj->b", tables, rank_j, rank_h)
    var_j = (rows * rank_j**2).sum(axis=1)
    var_h = (cols * rank_h**2).sum(axis=1)
    after = tables[:, ::-1, ::-1].cumsum(axis=1).cumsum(axis=2)[:, ::-1, ::-1]
    below_left = tables[:, ::-1, :].cumsum(axis=1)[:, ::-1, :].cumsum(axis=2)
    concordant = np.zeros_like(tables)
    concordant[:, :-1, :-1] = after[:, 1:, 1:]
    discordant = np.zeros_like(tables)
    discordant[:, :-1, 1:] = below_left[:, 1:, :-1]
    p = (tables * concordant).sum(axis=(1, 2))
    q = (tables * discordant).sum(axis=(1, 2))
    n0 = n * (n - 1) / 2
    untied_j = n0 - (rows * (rows - 1) / 2).sum(axis=1)
    untied_h = n0 - (cols * (cols - 1) / 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where((var_j > 0) & (var_h > 0), cov / np.sqrt(var_j * var_h), np.nan)
        tau = np.where(
            (untied_j > 0) & (untied_h > 0), (p - q) / np.sqrt(untied_j * untied_h), np.nan
        )
    return {"spearman": np.clip(rho, -1, 1), "kendall": np.clip(tau, -1, 1)}


def _rank_metrics_by_resample(j: np.ndarray, h: np.ndarray, weights: np.ndarray) -> dict:
    """Fallback for values with too many distinct pairs for a table: scipy on each resample."""
    rho, tau = np.full(weights.shape[0], np.nan), np.full(weights.shape[0], np.nan)
    for row, counts in enumerate(weights):
        index = np.repeat(np.arange(j.size), counts.astype(np.int64))
        if index.size >= 2 and np.ptp(j[index]) > 0 and np.ptp(h[index]) > 0:
            rho[row] = stats.spearmanr(j[index], h[index]).statistic
            tau[row] = stats.kendalltau(j[index], h[index]).statistic
    return {"spearman": rho, "kendall": tau}


def _scale_point_metrics(tables: np.ndarray) -> dict[str, np.ndarray]:
    """Exact / adjacent agreement and quadratic weighted kappa from rounded-score tables.

    qwk = 1 - Σ w_ij O_ij / Σ w_ij E_ij, w_ij = (i - j)², E = outer(row sums, column sums) / n,
    over every scale point (Cohen 1968; ``sklearn.metrics.cohen_kappa_score(weights="quadratic")``).
    """
    k = tables.shape[1]
    gap = np.abs(np.subtract.outer(np.arange(k), np.arange(k)))
    n = tables.sum(axis=(1, 2))
    rows, cols = tables.sum(axis=2), tables.sum(axis=1)
    observed = (tables * gap**2).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.einsum("bi,bj,ij->b", rows, cols, gap**2) / n
        return {
            "strict_acc": np.where(n > 0, (tables * (gap == 0)).sum(axis=(1, 2)) / n, np.nan),
            "fuzzy_acc": np.where(n > 0, (tables * (gap <= 1)).sum(axis=(1, 2)) / n, np.nan),
            "qwk": np.where(expected > 0, 1 - observed / expected, np.nan),
        }


def _point_estimate(name: str) -> Callable[..., float]:
    def metric(judge: np.ndarray, human: np.ndarray, scale: Scale | None = None) -> float:
        kernel = PointwiseKernel(judge, human, scale or Scale(-np.inf, np.inf))
        values = kernel.evaluate(np.ones((1, kernel.n_units)), (name,))
        return float(values[name][0])

    metric.__name__ = name
    return metric


def _documented(name: str, doc: str) -> Callable[..., float]:
    metric = _point_estimate(name)
    metric.__doc__ = doc + "\n\nPairs where either side is NaN are left out; NaN when undefined."
    return metric


mae = _documented("mae", "Mean absolute error: mean |J - H|.")
mse = _documented("mse", "Mean squared error: mean (J - H)².")
rmse = _documented("rmse", "Root mean squared error: sqrt(mean (J - H)²).")
bias = _documented("bias", "Mean signed difference: mean (J - H) (positive: the judge is lenient).")
smd = _documented(
    "smd", "Standardised mean difference: mean (J - H) / sd(H), sample sd (ddof = 1)."
)
pearson = _documented(
    "pearson", "Pearson's r (as scipy.stats.pearsonr); NaN with fewer than 2 pairs or a constant."
)
spearman = _documented(
    "spearman", "Spearman's rho: Pearson's r of mid-ranks (as scipy.stats.spearmanr)."
)
kendall = _documented(
    "kendall", "Kendall's tau-b with tie correction (as scipy.stats.kendalltau, Kendall 1945)."
)
cosine = _documented("cosine", "Cosine similarity J·H / (‖J‖ ‖H‖) on raw points (MMIE's table).")
alpha_interval = _documented(
    "alpha_interval", "Krippendorff's alpha, interval level, with J and H as two coders."
)
alpha_ordinal = _documented(
    "alpha_ordinal", "Krippendorff's alpha, ordinal level, with J and H as two coders."
)


def strict_acc(judge: np.ndarray, human: np.ndarray, scale: Scale) -> float:
    """Exact agreement: fraction with round(J) == round(H) on the scale's points (half up).

    Our definition (AlignMMBench publishes "strict" accuracy without code); NaN if no pairs.
    """
    return _point_estimate("strict_acc")(judge, human, scale)


def fuzzy_acc(judge: np.ndarray, human: np.ndarray, scale: Scale) -> float:
    """Adjacent agreement: fraction with |round(J) - round(H)| ≤ 1 scale step (half up).

    Our definition (AlignMMBench publishes "fuzzy" accuracy without code); NaN if no pairs.
    """
    return _point_estimate("fuzzy_acc")(judge, human, scale)


def qwk(judge: np.ndarray, human: np.ndarray, scale: Scale) -> float:
    """Quadratic weighted Cohen's kappa of round(J) and round(H), labels = every scale point.

    Cohen (1968); equals ``sklearn.metrics.cohen_kappa_score(weights="quadratic", labels=...)``.
    """
    return _point_estimate("qwk")(judge, human, scale)


def percent_mae(judge: np.ndarray, human: np.ndarray, scale: Scale) -> float:
    """MAE in percent of the scale maximum (MMIE reports points / 6 × 100)."""
    kernel = PointwiseKernel(judge, human, scale)
    values = kernel.evaluate(np.ones((1, kernel.n_units)), ("mae",))
    return float(values["mae"][0] / scale.high * 100.0)
