"""The slow tables of tests/results run only on request: PRIVSTATS_SLOW=1 pytest tests/results -m slow -s."""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PRIVSTATS_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow table (set PRIVSTATS_SLOW=1 to run)")
    for item in items:
        if "slow" in item.keywords and "tests/results" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
