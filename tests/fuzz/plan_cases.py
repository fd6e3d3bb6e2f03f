"""Base calls of :func:`privstats.plan` for the bad-input fuzz suite (issue 26).

One valid call per statistic, with the kind (see ``fuzz_harness.BAD``) of every public
parameter and option the statistic's predictors read.  A plan must end in a ValueError /
TypeError naming the changed argument, or a sound plan: every option's predicted stderr and
bias finite and >= 0.
"""

from __future__ import annotations

import math

import privstats

COMMON = {"n": "count", "epsilon": "epsilon", "delta": "delta"}
PAIR_OPTS = {"P": "count", "oracle": "option", "zeta": "fraction"}

PLAN_CASES: dict[str, tuple[dict, dict]] = {
    # statistic: (valid options, kinds of the options)
    "auc": (
        {"bounds": (0, 1), "n_pos": 500},
        {
            "n_pos": "count",
            "domain_size": "count",
            "ties": "option",
            "smoothing": "option",
            "splitting": "option",
            **PAIR_OPTS,
        },
    ),
    "kendall_tau": ({}, {"variant": "option", "bins": "count", **PAIR_OPTS}),
    "gini_mean_difference": (
        {"bounds": (0, 1)},
        {"bounds": "bounds", "bins": "count", "quantization": "option", **PAIR_OPTS},
    ),
    "gini_coefficient": ({"bounds": (0, 1)}, {"bounds": "bounds", "mean_fraction": "fraction"}),
    "collision_probability": ({"domain_size": 8}, {"domain_size": "domain", **PAIR_OPTS}),
    "ustatistic": (
        {"bounds": (0, 1), "kernel_range": (0, 1)},
        {
            "bounds": "bounds",
            "kernel_range": "bounds",
            "bins": "count",
            "quantization": "option",
            "lipschitz": "fraction",
            **PAIR_OPTS,
        },
    ),
    "ecdf": ({"grid": 64}, {"grid": "count", "n_servers": "count"}),
    "roc_curve": ({"grid": 64}, {"grid": "count", "n_pos": "count"}),
    "quantiles": (
        {"bounds": (0, 1), "q": [0.25, 0.5]},
        {
            "bounds": "bounds",
            "q": "quantile_levels",
            "grid": "count",
            "bins": "count",
            "ci_fraction": "fraction",
        },
    ),
    "hosmer_lemeshow": (
        {"groups": 10, "depth": 6, "bounds": (0, 1)},
        {"groups": "count", "depth": "count", "bounds": "bounds"},
    ),
    "frequencies": ({"domain": 16}, {"domain": "domain"}),
    "range_counts": ({"domain": 16}, {"domain": "domain"}),
    "heavy_hitters": ({"domain": 64}, {"domain": "domain"}),
}


def plan_call(statistic: str, **changes):
    """``privstats.plan(statistic, ...)`` from the valid base call with ``changes``."""
    valid, _ = PLAN_CASES[statistic]
    kwargs = {"n": 1000, "epsilon": 1.0, "delta": 1e-6, "warn": False, **valid, **changes}
    return privstats.plan(statistic, **kwargs)


def plan_problem(p) -> str | None:
    """None if every option of the plan is sound, else what is wrong."""
    for o in p:
        for name in ("stderr", "bias"):
            v = getattr(o, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                return f"{o.model}/{o.protocol}: {name} = {v!r}"
    return None
