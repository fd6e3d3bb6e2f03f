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

from privstats.demo.collect import collect as collect
from privstats.demo.config import HEADLINE_EPSILON as HEADLINE_EPSILON
from privstats.demo.config import HEADLINE_ONLY as HEADLINE_ONLY
from privstats.demo.config import INCOME_BOUNDS as INCOME_BOUNDS
from privstats.demo.config import INCOME_THRESHOLD as INCOME_THRESHOLD
from privstats.demo.config import ORACLE_COLUMNS as ORACLE_COLUMNS
from privstats.demo.config import ORDINAL_LEVELS as ORDINAL_LEVELS
from privstats.demo.config import QUANTILE_LEVELS as QUANTILE_LEVELS
from privstats.demo.config import ROW_COLUMNS as ROW_COLUMNS
from privstats.demo.config import SHUFFLE_DELTA as SHUFFLE_DELTA
from privstats.demo.config import SHUFFLE_QUANTILE_USERS as SHUFFLE_QUANTILE_USERS
from privstats.demo.config import SHUFFLE_RANGE_USERS as SHUFFLE_RANGE_USERS
from privstats.demo.config import SIZES as SIZES
from privstats.demo.config import DemoSize as DemoSize
from privstats.demo.data import demo_data as demo_data
from privstats.demo.data import gini_mean_difference_exact as gini_mean_difference_exact
from privstats.demo.report import _jsonable as _jsonable
from privstats.demo.report import run_demo as run_demo
from privstats.demo.report import write_report as write_report
from privstats.demo.running import DemoResult as DemoResult
from privstats.demo.running import _call as _call
from privstats.demo.running import _estimate_of as _estimate_of
from privstats.demo.running import scenario_seed as scenario_seed
from privstats.demo.scenarios import SCENARIOS as SCENARIOS
from privstats.demo.scenarios.distribution import hosmer_lemeshow_exact as hosmer_lemeshow_exact
from privstats.demo.scenarios.pairwise import _roc_parts as _roc_parts
from privstats.demo.scenarios.pairwise import collision_probability_exact as collision_probability_exact
from privstats.demo.scenarios.pairwise import gini_coefficient_exact as gini_coefficient_exact

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
