"""The docstring examples of the CLI, demo, report and plotting modules run."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "name", ["privstats.cli", "privstats.demo", "privstats.report", "privstats.plotting"]
)
def test_module_doctests(name, capsys):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
