"""Every docstring example in calibration/ runs (published values among them, e.g. Krippendorff's
own example in calibration.alpha), so the examples a reader copies stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import calibration

_FINDER = doctest.DocTestFinder()
MODULES_WITH_EXAMPLES = sorted(
    info.name
    for info in pkgutil.walk_packages(calibration.__path__, "calibration.")
    if any(test.examples for test in _FINDER.find(importlib.import_module(info.name)))
)


def test_the_examples_include_krippendorffs_published_values() -> None:
    examples = _FINDER.find(importlib.import_module("calibration.alpha"))
    wanted = [example.want for test in examples for example in test.examples]
    assert "[0.743, 0.815, 0.849]\n" in wanted  # nominal, ordinal, interval (Krippendorff 2011)
    assert "calibration.alpha" in MODULES_WITH_EXAMPLES


@pytest.mark.parametrize("name", MODULES_WITH_EXAMPLES)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"no example of {name} ran"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"
