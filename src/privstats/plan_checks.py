"""Checks of the public parameters :func:`privstats.plan` passes to the predictors.

Every parameter a predictor reads is checked here, once, with the argument named, before any
predictor runs: a bad value ends in a ``ValueError``/``TypeError`` instead of an IndexError,
ZeroDivisionError, MemoryError, a hang or a negative predicted stderr deep inside a predictor.

>>> check_plan_args("quantiles", 1000, 1.0, 0.0, (0, 1), {"q": [0.5]})[4]
{'q': [0.5]}
>>> check_plan_args("quantiles", 1000, 1.0, 0.0, (1, 0), {})
Traceback (most recent call last):
...
ValueError: bounds must be finite with lo < hi, got (1, 0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from privstats.validation import (
    MAX_CELLS,
    check_array,
    check_bounds,
    check_delta,
    check_domain_size,
    check_epsilon,
    check_option,
    check_positive_int,
    check_real,
)

__all__ = ["MAX_PLAN_GRID", "MAX_PLAN_N", "check_plan_args"]

MAX_PLAN_N = 10**10
"""Largest number of users a plan is made for (more than the world's population); the shuffle
accountants' binomial sums grow with n, so a larger n would run for minutes."""


MAX_PLAN_GRID = 1 << 14
"""Largest ECDF / quantile / ROC grid a plan is made for: the local hierarchical-histogram
prediction costs time linear in the grid (12 s at 2¹⁴ on one core), so a finer grid would hang."""


_SLOW_PREDICTIONS = (
    ("range_counts", "domain", 1 << 12),  # 4 s at 2¹², over 30 s at 2¹⁶
    ("roc_curve", "grid", 1 << 10),  # 2.4 s at 2¹⁰, over 30 s at 2¹²
    ("heavy_hitters", "domain", 1 << 20),  # 0.8 s at 2²⁰, over 40 s at 2²⁸
    ("frequencies", "domain", 1 << 24),  # 2.3 s at 2²⁴, 20 s at 2²⁸
)


def _check_n(n: Any) -> int:
    if isinstance(n, (float, np.floating)) and float(n).is_integer():
        n = int(n)  # n=1e6 is a common way to write a count
    return check_positive_int(n, "n", minimum=2, maximum=MAX_PLAN_N)


def _levels(q: Any, name: str = "q") -> list[float]:
    arr = check_array(q, name, ndim=None).ravel()
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one quantile level")
    if not np.all((arr > 0) & (arr < 1)):
        raise ValueError(f"{name} must be quantile levels in (0, 1), got {arr.tolist()[:5]}")
    return arr.tolist()


def _open_fraction(v: Any, name: str) -> float:
    f = check_real(v, name)
    if not 0 < f < 1:
        raise ValueError(f"{name} must be in (0, 1), got {f!r}")
    return f


def _positive(v: Any, name: str) -> float:
    f = check_real(v, name)
    if f <= 0:
        raise ValueError(f"{name} must be > 0, got {f!r}")
    return f


def _zeta(v: Any, name: str = "zeta") -> tuple[float, float]:
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) != 2:
        raise ValueError(f"{name} must be a pair (zeta1, zeta2) of numbers in [0, 1], got {v!r:.40}")
    pair = tuple(check_real(z, name) for z in v)
    if not all(0 <= z <= 1 for z in pair):
        raise ValueError(f"{name} must be a pair of numbers in [0, 1], got {v!r:.40}")
    return pair[0], pair[1]


def _options() -> dict[str, tuple[str, ...]]:
    from privstats.cdf.smoothing import SMOOTHING_METHODS
    from privstats.ustat.kernels import GMD_QUANTISATIONS
    from privstats.ustat.tree import DISCARDS, SPLITTINGS

    return {
        "oracle": ("auto", "grr", "oue", "olh", "hr"),
        "ties": ("half", "zero"),
        "smoothing": ("linear", *SMOOTHING_METHODS),
        "splitting": SPLITTINGS,
        "discard": DISCARDS,
        "variant": ("a", "b"),
        "quantization": GMD_QUANTISATIONS,  # "dither" is the GMD's; a kernel's plan refuses it
        "neighbours": ("replace", "add-remove"),
    }


def _checks(n: int) -> dict[str, Callable[[Any, str], Any]]:
    """name -> check(value, name) of every option a predictor reads."""

    def count(lo: int, hi: int) -> Callable[[Any, str], int]:
        return lambda v, name: check_positive_int(v, name, minimum=lo, maximum=hi)

    return {
        "kernel_range": lambda v, name: check_bounds(v, name),
        "q": _levels,
        "domain": lambda v, name: v if isinstance(v, (list, tuple)) else check_domain_size(v, name),
        "domain_size": lambda v, name: check_domain_size(v, name),
        "grid": count(2, MAX_PLAN_GRID),
        "bins": count(2, 1 << 20),  # k = bins categories (Kendall: bins², capped below)
        "n_pos": count(1, n - 1),
        "P": count(1, max(1, MAX_CELLS // n)),
        "n_servers": count(2, 1024),
        "groups": count(2, max(2, min(n, 1 << 16))),
        "depth": count(1, 12),  # HL's grid of 2^depth cells: the secure prediction is dense (2^depth)²
        "mean_fraction": _open_fraction,
        "ci_fraction": _open_fraction,
        "lipschitz": _positive,
        "zeta": _zeta,
        **{
            k: (lambda allowed: lambda v, name: check_option(v, name, allowed))(a)
            for k, a in _options().items()
        },
    }


def check_plan_args(statistic: str, n: Any, epsilon: Any, delta: Any, bounds: Any, options: dict) -> tuple:
    """``(n, epsilon, delta, bounds, options)`` checked and normalised (see the module docstring)."""
    n = _check_n(n)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=True)
    if bounds is not None:
        bounds = check_bounds(bounds)
    checks = _checks(n)
    out = {}
    for name, value in options.items():
        if value is None:
            continue  # an option given as None takes its default
        check = checks.get(name)
        out[name] = value if check is None else check(value, name)
    if statistic == "kendall_tau" and "bins" in out:  # bins² joint categories
        out["bins"] = check_positive_int(out["bins"], "bins", minimum=2, maximum=1 << 10)
    # the predictions whose cost grows with the domain or grid (measured on one core, n = 10⁴): a larger
    # value ran past a minute, so it is refused with its cap named rather than left to hang
    for stat, name, cap in _SLOW_PREDICTIONS:
        if statistic == stat and isinstance(out.get(name), int):
            out[name] = check_positive_int(out[name], name, minimum=2, maximum=cap)
    return n, epsilon, delta, bounds, out
