"""The fuzz suite's slow variant runs only when asked for: ``pytest -m slow tests/fuzz``."""

import pytest


def pytest_collection_modifyitems(config, items):
    if "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="slow fuzz run: select it with -m slow")
    for item in items:
        if "slow" in item.keywords and "fuzz" in str(item.fspath):
            item.add_marker(skip)
