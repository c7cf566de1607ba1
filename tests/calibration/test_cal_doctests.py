"""Every docstring example in calibration/ runs (published values among them, e.g. Krippendorff's
own example in calibration.alpha), so the examples a reader copies stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import calibration

MODULES = sorted(info.name for info in pkgutil.walk_packages(calibration.__path__, "calibration."))


def test_the_examples_include_krippendorffs_published_values() -> None:
    examples = doctest.DocTestFinder().find(importlib.import_module("calibration.alpha"))
    wanted = [example.want for test in examples for example in test.examples]
    assert "[0.743, 0.815, 0.849]\n" in wanted  # nominal, ordinal, interval (Krippendorff 2011)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"
