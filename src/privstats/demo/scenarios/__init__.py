"""The demo's scenarios, one module per statistic family; :data:`SCENARIOS` lists them in run order.

A scenario is ``scenario(ctx) -> None``: it computes the exact value, runs the private statistic
under each trust model through ``ctx.each_model`` and records rows.  To add one, write it in the
family's module and add one line here (and its name to ``privstats.cli.demo.DEMO_SCENARIOS``).
"""

from __future__ import annotations

from collections.abc import Callable

from privstats.demo.running import _Context
from privstats.demo.scenarios.distribution import (
    scenario_ecdf,
    scenario_hosmer_lemeshow,
    scenario_quantiles,
    scenario_roc,
)
from privstats.demo.scenarios.frequency import scenario_frequencies, scenario_oracles, scenario_range_counts
from privstats.demo.scenarios.pairwise import (
    scenario_auc,
    scenario_auc_scale,
    scenario_collision,
    scenario_gini,
    scenario_gini_coefficient,
    scenario_kendall,
)
from privstats.demo.scenarios.summarization import scenario_summarization

__all__ = ["SCENARIOS"]

SCENARIOS: dict[str, Callable[[_Context], None]] = {
    "oracles": scenario_oracles,
    "frequencies": scenario_frequencies,
    "range_counts": scenario_range_counts,
    "ecdf": scenario_ecdf,
    "quantiles": scenario_quantiles,
    "auc": scenario_auc,
    "auc_scale": scenario_auc_scale,
    "roc": scenario_roc,
    "hosmer_lemeshow": scenario_hosmer_lemeshow,
    "kendall": scenario_kendall,
    "gini": scenario_gini,
    "gini_coefficient": scenario_gini_coefficient,
    "collision": scenario_collision,
    "summarization": scenario_summarization,
}
