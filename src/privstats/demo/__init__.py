"""``privstats demo``: every statistic under every trust model, on data that ships with the project.

The demo is a list of small *scenarios*.  Each computes the exact (non-private)
value with numpy / SciPy / scikit-learn, runs the private statistic under each trust
model the library offers, and records a row: statistic, trust model, protocol,
ε (δ), private estimate, exact value, absolute error, standard error, bits per
user and time.  A scenario whose function has not landed (not importable yet) or
a model a statistic does not support is skipped with a printed note.

Data: a Zipf sample (frequencies), synthetic log-normal incomes (ECDF, quantiles,
Gini), a logistic-regression score on scikit-learn's bundled breast-cancer data
(AUC, ROC), an ordinal 6×6 pair (Kendall's tau) and scikit-learn's 8×8 digits
(summarization).  Everything is generated from a fixed seed: the run is reproducible.

>>> result = collect(size="tiny", scenarios=["oracles"])
>>> "GRR" in {r["oracle"] for r in result.oracle_rows}
True
"""

from __future__ import annotations

from privstats.demo.collect import collect
from privstats.demo.config import (
    HEADLINE_EPSILON,
    HEADLINE_ONLY,
    INCOME_BOUNDS,
    INCOME_THRESHOLD,
    ORACLE_COLUMNS,
    ORDINAL_LEVELS,
    QUANTILE_LEVELS,
    ROW_COLUMNS,
    SHUFFLE_DELTA,
    SHUFFLE_QUANTILE_USERS,
    SHUFFLE_RANGE_USERS,
    SIZES,
    DemoSize,
)
from privstats.demo.data import demo_data, gini_mean_difference_exact
from privstats.demo.report import _jsonable, run_demo, write_report
from privstats.demo.running import DemoResult, _call, _estimate_of, scenario_seed
from privstats.demo.scenarios import SCENARIOS
from privstats.demo.scenarios.distribution import hosmer_lemeshow_exact
from privstats.demo.scenarios.pairwise import _roc_parts, collision_probability_exact, gini_coefficient_exact

__all__ = [
    "SCENARIOS",
    "SIZES",
    "DemoResult",
    "collect",
    "demo_data",
    "run_demo",
    "scenario_seed",
    "write_report",
]
# also importable from here (tests, the CLI): constants, exact references and helpers
_REEXPORTED = (
    DemoSize,
    HEADLINE_EPSILON,
    HEADLINE_ONLY,
    INCOME_BOUNDS,
    INCOME_THRESHOLD,
    ORACLE_COLUMNS,
    ORDINAL_LEVELS,
    QUANTILE_LEVELS,
    ROW_COLUMNS,
    SHUFFLE_DELTA,
    SHUFFLE_QUANTILE_USERS,
    SHUFFLE_RANGE_USERS,
    gini_mean_difference_exact,
    hosmer_lemeshow_exact,
    gini_coefficient_exact,
    collision_probability_exact,
    _call,
    _estimate_of,
    _jsonable,
    _roc_parts,
)
