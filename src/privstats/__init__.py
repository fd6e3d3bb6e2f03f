"""privstats: differentially private statistics over distributed data.

One statistic, four trust models (``local``, ``shuffle``, ``secure``, ``central``):
the public functions take the model as a parameter (default ``"central"`` for every
statistic) and return an :class:`Estimate`; :func:`plan` predicts the error and cost of
every model before any data is touched.  Submodules load on first use (SciPy style).

>>> import privstats
>>> privstats.Estimate.__name__
'Estimate'
>>> privstats.local.GRR.__name__
'GRR'
"""

from __future__ import annotations

import importlib

from privstats.estimate import Estimate

# the planner function shadows its module's name on the package (light: stdlib only at import)
from privstats.plan import _MODULES as _STATISTIC_MODULES
from privstats.plan import plan

__version__ = "0.2.0"

# Public statistics, imported on first use so that ``import privstats`` stays light
# and optional extras are only needed by the functions that use them.
_LAZY = {
    # pairwise statistics, distributions, frequencies: the planner's map of statistic -> module
    **_STATISTIC_MODULES,
    # training-set summarization
    "summarize": "privstats.stats.summarization",
}

# submodules, imported on first attribute access (``privstats.local.GRR``)
_SUBMODULES = (
    "local",
    "shuffle",
    "secure",
    "privacy",
    "engine",
    "central",
    "cdf",
    "ustat",
    "stats",
    "summarization",
    "estimate",
    "validation",
)

__all__ = ["Estimate", "__version__", "plan", *_LAZY, *_SUBMODULES]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        module = importlib.import_module(f"privstats.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'privstats' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
