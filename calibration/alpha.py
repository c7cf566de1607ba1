"""Krippendorff's alpha for any number of coders, missing values allowed, bootstrap-ready.

Reference: K. Krippendorff, *Computing Krippendorff's Alpha-Reliability* (2011). With ``n`` the
number of pairable values (values in units coded at least twice), ``o_ck`` the coincidence matrix
and ``n_c`` its margins::

    alpha = 1 - D_o / D_e
    D_o = (1/n) Σ_c Σ_k o_ck δ²(c, k)
    D_e = (1/(n(n-1))) Σ_c Σ_k n_c n_k δ²(c, k)
    o_ck = Σ_u (number of ordered c-k pairs in unit u) / (m_u - 1)

δ² is ``[c != k]`` (nominal), ``(c - k)²`` (interval) or, for ordinal data,
``(Σ_{g=c..k} n_g - (n_c + n_k)/2)²``, which is ``(R_k - R_c)²`` with ``R`` the mid-ranks of the
pairable values: ordinal alpha is interval alpha on mid-ranks.

Every term is a sum over units, so :class:`AlphaData` stores each unit's contribution once (the
moments ``m, Σv, Σv², Σ_{i≠j}(v_i - v_j)²/(m-1)`` for interval data; the unit's coincidence cells
for nominal and ordinal data) and a bootstrap resample is a weighted sum of them. Nothing builds a
V × V matrix over distinct values, so continuous values (means of raters, expected scores) cost
memory in proportion to the data, not to the square of its distinct values.

>>> import numpy as np
>>> nan = np.nan  # Krippendorff (2011), 4 coders x 12 units
>>> data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
...         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
...         [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
...         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]
>>> [round(krippendorff_alpha(data, level), 3) for level in ("nominal", "ordinal", "interval")]
[0.743, 0.815, 0.849]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from scipy import sparse

from calibration.errors import CalibrationInputError

AlphaLevel = Literal["nominal", "ordinal", "interval"]
ALPHA_LEVELS: tuple[str, ...] = get_args(AlphaLevel)
_MAX_BLOCK = 4_000_000  # resamples × coincidence cells evaluated at once


@dataclass(frozen=True)
class AlphaData:
    """Per-unit contributions to Krippendorff's alpha for ``n_units`` units.

    ``moments``: (n_units, 4) columns ``m`` (pairable values), ``Σv``, ``Σv²``,
    ``Σ_{i≠j}(v_i - v_j)²/(m-1)``, with values shifted by one of them for numerical stability.
    ``cells``: sparse (n_units, P) contributions of each unit to the P coincidence cells that occur;
    ``cell_c`` / ``cell_k``: value codes of each cell; ``n_values``: distinct pairable values.
    """

    moments: np.ndarray
    cells: sparse.csr_matrix
    cell_c: np.ndarray
    cell_k: np.ndarray
    n_values: int
    patterns: sparse.csr_matrix | None = None
    """units × distinct value patterns, when units repeat the same values (discrete scales):
    the contributions above are then per pattern, and weights are summed per pattern first."""

    @property
    def n_units(self) -> int:
        return self.moments.shape[0] if self.patterns is None else self.patterns.shape[0]

    @classmethod
    def from_matrix(cls, reliability_data: np.ndarray) -> AlphaData:
        """Prepare a coders × units matrix of numbers (NaN = missing)."""
        data = np.asarray(reliability_data, dtype=np.float64)
        if data.ndim != 2:
            raise CalibrationInputError("reliability data must be a coders × units matrix")
        patterns, representatives = _value_patterns(data)
        if patterns is not None:
            inner = cls.from_matrix(data[:, representatives])
            return cls(
                inner.moments, inner.cells, inner.cell_c, inner.cell_k, inner.n_values, patterns
            )
        present = ~np.isnan(data)
        m = present.sum(axis=0)
        pairable = present & (m >= 2)[None, :]
        codes = np.full(data.shape, -1, dtype=np.int64)
        values, inverse = np.unique(data[pairable], return_inverse=True)
        codes[pairable] = inverse
        shift = values[0] if values.size else 0.0
        shifted = np.where(pairable, data - shift, 0.0)
        m_pairable = pairable.sum(axis=0).astype(np.float64)
        s1 = shifted.sum(axis=0)
        s2 = (shifted**2).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            within = np.where(
                m_pairable >= 2, 2 * (m_pairable * s2 - s1**2) / (m_pairable - 1), 0.0
            )
        moments = np.column_stack([m_pairable, s1, s2, np.maximum(within, 0.0)])
        cells, cell_c, cell_k = _coincidence_cells(codes, m, values.size)
        return cls(moments, cells, cell_c, cell_k, int(values.size))

    def evaluate(self, weights: np.ndarray, level: AlphaLevel) -> np.ndarray:
        """Alpha per row of ``weights`` (resamples × units draw counts); NaN where undefined."""
        _check_level(level)
        weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if self.patterns is not None:
            weights = sum_per_pattern(weights, self.patterns)
        if level == "interval":
            return _interval(weights @ self.moments)
        block = max(1, _MAX_BLOCK // max(self.cells.shape[1], 1))
        parts = [
            self._evaluate_cells(weights[start : start + block], level)
            for start in range(0, weights.shape[0], block)
        ]
        return np.concatenate(parts)

    def _evaluate_cells(self, weights: np.ndarray, level: AlphaLevel) -> np.ndarray:
        if self.cells.shape[1] == 0:
            return np.full(weights.shape[0], np.nan)
        o = np.asarray((self.cells.T @ weights.T).T)  # resamples × cells
        n_c = np.zeros((weights.shape[0], self.n_values))
        np.add.at(n_c.T, self.cell_c, o.T)
        n = n_c.sum(axis=1)
        if level == "nominal":
            disagreeing = o[:, self.cell_c != self.cell_k].sum(axis=1)
            expected = n**2 - (n_c**2).sum(axis=1)
            return _ratio(n, disagreeing, expected, magnitude=n**2)
        ranks = np.cumsum(n_c, axis=1) - n_c / 2.0
        observed = (o * (ranks[:, self.cell_c] - ranks[:, self.cell_k]) ** 2).sum(axis=1)
        spread = n * (n_c * ranks**2).sum(axis=1)
        expected = 2 * (spread - (n_c * ranks).sum(axis=1) ** 2)
        return _ratio(n, observed, expected, magnitude=spread)


def krippendorff_alpha(reliability_data: np.ndarray, level: AlphaLevel = "interval") -> float:
    """Krippendorff's alpha of a coders × units matrix (NaN = missing); NaN when undefined.

    Undefined means fewer than two pairable values or no variation among them (D_e = 0).
    """
    _check_level(level)
    data = AlphaData.from_matrix(reliability_data)
    return float(data.evaluate(np.ones((1, data.n_units)), level)[0])


def _check_level(level: str) -> None:
    if level not in ALPHA_LEVELS:
        raise CalibrationInputError(
            f"alpha level {level!r} is not one of " + ", ".join(ALPHA_LEVELS)
        )


_MAX_PATTERNS = 50_000


def sum_per_pattern(weights: np.ndarray, patterns: sparse.csr_matrix) -> np.ndarray:
    """Unit weights (resamples × units) summed per pattern (resamples × patterns)."""
    return np.asarray((patterns.T @ np.ascontiguousarray(weights.T)).T)


def _value_patterns(data: np.ndarray) -> tuple[sparse.csr_matrix | None, np.ndarray]:
    """Group units whose values are the same multiset (their contributions are equal).

    Returns the units × patterns indicator and one representative unit per pattern, or None when
    grouping would not save much (mostly distinct units, e.g. continuous values).
    """
    n_units = data.shape[1]
    if n_units < 64:
        return None, np.zeros(0, dtype=np.int64)
    ordered = np.sort(np.where(np.isnan(data), np.inf, data), axis=0).T
    # the sort puts each unit's missing values last: columns past the most values a unit has
    # are missing everywhere and change no grouping
    ordered = ordered[:, : max(int((~np.isnan(data)).sum(axis=0).max()), 1)]
    _, first, inverse = unique_rows(ordered)
    if first.size > min(_MAX_PATTERNS, n_units // 4):
        return None, np.zeros(0, dtype=np.int64)
    patterns = sparse.csr_matrix(
        (np.ones(n_units), (np.arange(n_units), inverse.ravel())), shape=(n_units, first.size)
    )
    return patterns, first


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_index=True, return_inverse=True)`` (1-D inverse).

    The same distinct rows in the same (lexicographic) order, first occurrences and inverse, but
    computed column by column on integer codes: numpy sorts rows as opaque records, about 1 s per
    million rows, which was most of the time of a million-unit calibration.
    """
    rows = np.asarray(rows)
    key = np.zeros(rows.shape[0], dtype=np.int64)
    for number, column in enumerate(rows.T):
        values, codes = np.unique(column, return_inverse=True)
        # key and codes are dense codes below the row count, so this fits in int64
        key = key * values.size + codes.ravel()
        if 0 < number < rows.shape[1] - 1:
            key = np.unique(key, return_inverse=True)[1].ravel()
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return rows[first], first, inverse.ravel()


def _coincidence_cells(
    codes: np.ndarray, m: np.ndarray, n_values: int
) -> tuple[sparse.csr_matrix, np.ndarray, np.ndarray]:
    """Each unit's contribution to o_ck: the ordered pairs of its values, each weighing 1/(m_u - 1).

    Summed over the pairs of coders (i, j), i != j, that both coded the unit: with n_uc the
    unit's count of value c, that is n_uc · (n_uk − [c = k]) / (m_u − 1). Computed from the
    counts of each unit's distinct values, so the cost grows with the answers, not with the
    square of the coders (a leave-one-out table over V coders was O(V³ × units)).
    """
    n_units = codes.shape[1]
    width = max(n_values, 1)
    coded = codes >= 0
    unit_of = np.broadcast_to(np.arange(n_units), codes.shape)[coded]
    key, count = np.unique(unit_of * width + codes[coded], return_counts=True)
    unit, value = key // width, key % width  # sorted by unit, then value
    start = np.searchsorted(unit, unit, side="left")
    position = np.arange(unit.size) - start
    distinct = np.bincount(unit, minlength=n_units)
    with np.errstate(divide="ignore"):
        share = 1.0 / (m - 1.0)
    units, cells, contributions = [], [], []
    for a in range(int(distinct.max()) if unit.size else 0):
        first = np.flatnonzero(position == a)
        for b in range(a, int(distinct.max())):
            pairs = first[distinct[unit[first]] > b]
            other = start[pairs] + b
            weight = count[pairs] * (count[other] - (a == b)) * share[unit[pairs]]
            for c_index, k_index in ((pairs, other), (other, pairs))[: 1 + (a != b)]:
                units.append(unit[pairs])
                cells.append(value[c_index] * width + value[k_index])
                contributions.append(weight)
    unit_ids = np.concatenate(units) if units else np.zeros(0, dtype=np.int64)
    cell_id = np.concatenate(cells) if cells else np.zeros(0, dtype=np.int64)
    weights = np.concatenate(contributions) if contributions else np.zeros(0)
    kept = weights > 0
    distinct_cells, column = np.unique(cell_id[kept], return_inverse=True)
    matrix = sparse.csr_matrix(
        (weights[kept], (unit_ids[kept], column.ravel())), shape=(n_units, distinct_cells.size)
    )
    return matrix, distinct_cells // width, distinct_cells % width


def _interval(sums: np.ndarray) -> np.ndarray:
    n, s1, s2, observed = sums.T
    return _ratio(n, observed, 2 * (n * s2 - s1**2), magnitude=n * s2)


def _ratio(
    n: np.ndarray, observed: np.ndarray, expected: np.ndarray, *, magnitude: np.ndarray
) -> np.ndarray:
    """alpha = 1 - (n - 1) · observed / expected; NaN where n < 2 or nothing varies.

    ``magnitude`` is the size of the terms whose difference is ``expected``: an expected
    disagreement below 1e-10 of it is rounding noise of identical values, not variation.
    """
    defined = (n >= 2) & (expected > 1e-10 * np.abs(magnitude))
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    return np.where(defined, alpha, np.nan)
