"""Krippendorff's alpha against the krippendorff package (on binned data) and memory use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from calibration import AlphaData, krippendorff_alpha


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_krippendorff_with_missing_values(level):
    rng = np.random.default_rng(11)
    for _ in range(5):
        data = rng.integers(1, 6, size=(5, 80)).astype(float)
        data[rng.random(data.shape) < 0.35] = np.nan
        expected = krippendorff.alpha(data, level_of_measurement=level)
        assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-12)


def test_published_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", 4 coders x 12 units.
    nan = np.nan
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    assert round(krippendorff_alpha(data, "nominal"), 3) == 0.743
    assert round(krippendorff_alpha(data, "interval"), 3) == 0.849


def test_weighted_alpha_equals_alpha_of_the_resampled_units():
    rng = np.random.default_rng(2)
    data = rng.integers(1, 8, size=(3, 40)).astype(float)
    data[0, :5] = np.nan
    prepared = AlphaData.from_matrix(data)
    indices = rng.integers(0, 40, size=40)
    weights = np.bincount(indices, minlength=40)[None, :].astype(float)
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(data[:, indices], level_of_measurement=level)
        assert prepared.evaluate(weights, level)[0] == pytest.approx(expected, abs=1e-12)


def test_undefined_alpha_is_nan():
    assert np.isnan(krippendorff_alpha(np.full((3, 4), 2.0)))
    assert np.isnan(krippendorff_alpha(np.array([[1.0, np.nan], [np.nan, 2.0]])))


_MEMORY_SCRIPT = """
import json, numpy as np
from calibration import AlphaData
from calibration.bootstrap import unit_resample_counts
rng = np.random.default_rng(0)
truth = rng.normal(size=100_000)
data = truth + rng.normal(scale=0.5, size=(3, 100_000))   # continuous: ~300k distinct values
prepared = AlphaData.from_matrix(data)
ones = np.ones((1, 100_000))
point = {level: float(prepared.evaluate(ones, level)[0]) for level in ("interval", "ordinal")}
boot = [prepared.evaluate(w, "ordinal") for w in unit_resample_counts(100_000, 4, 0)]
# VmHWM is this process's own peak. ru_maxrss would count the parent (pytest, 1 GB late in a CI
# run) as it was at the start: Linux carries the old address space's peak across exec.
status = open("/proc/self/status").read().splitlines()
peak_mb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
print(json.dumps({"point": point, "peak_mb": peak_mb, "boot": [float(b[0]) for b in boot]}))
"""


@pytest.mark.slow  # a process of its own
def test_alpha_on_100k_continuous_units_stays_under_1_gb():
    if not Path("/proc/self/status").exists():
        pytest.skip("the peak memory is read from Linux's /proc/self/status (VmHWM)")
    result = subprocess.run(
        [sys.executable, "-c", _MEMORY_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    figures = json.loads(result.stdout)
    assert figures["peak_mb"] < 1024, figures
    # truth variance 1, rater noise 0.25: alpha ≈ 1 / 1.25 = 0.8
    assert figures["point"]["interval"] == pytest.approx(0.8, abs=0.01)
    assert figures["point"]["ordinal"] == pytest.approx(0.8, abs=0.03)
