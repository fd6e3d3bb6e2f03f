"""The examples in every privstats module's docstrings run and print what they say.

Every module of the package is collected (a new module is covered without editing this list); the CLI,
demo, report and plotting modules run in tests/cli/test_cli_doctests.py.
"""

import doctest
import importlib
import pkgutil

import pytest

import privstats

CLI_MODULES = {"privstats.cli", "privstats.demo", "privstats.report", "privstats.plotting"}
MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(privstats.__path__, "privstats.")
    if not m.name.endswith("__main__") and m.name not in CLI_MODULES
)


def test_every_module_is_collected():
    assert {"privstats.privacy.ledger", "privstats.stats.frequency", "privstats.engine.core"} <= set(MODULES)


@pytest.mark.parametrize("name", ["privstats", *MODULES])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
