"""The examples in the core modules' docstrings run and print what they say."""

import doctest
import importlib

import pytest

MODULES = [
    "privstats", "privstats.estimate", "privstats.validation", "privstats.central",
    "privstats.privacy.guarantees", "privstats.privacy.randomness", "privstats.privacy.samplers",
    "privstats.privacy.composition", "privstats.privacy.ledger", "privstats.privacy.audit",
    "privstats.local.base", "privstats.local.grr",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
