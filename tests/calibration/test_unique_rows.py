"""``unique_rows`` is ``np.unique(axis=0)`` (distinct rows in order, first occurrences, inverse),
computed on integer codes column by column; compared with numpy on random tables."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.alpha import unique_rows


@pytest.mark.parametrize("seed", range(40))
def test_unique_rows_equals_numpy_unique_along_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_rows, n_columns = int(rng.integers(1, 400)), int(rng.integers(1, 5))
    table = rng.integers(0, int(rng.integers(1, 7)), size=(n_rows, n_columns)) / 3.0
    table[rng.random(table.shape) < 0.1] = np.inf  # missing values, as _value_patterns has them
    table[rng.random(table.shape) < 0.1] = -0.0  # equal to 0.0
    expected = np.unique(table, axis=0, return_index=True, return_inverse=True)
    distinct, first, inverse = unique_rows(table)
    np.testing.assert_array_equal(distinct, expected[0])
    np.testing.assert_array_equal(first, expected[1])
    np.testing.assert_array_equal(inverse, expected[2].ravel())
