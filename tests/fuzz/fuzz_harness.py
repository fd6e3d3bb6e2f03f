"""Shared machinery of the bad-input fuzz suite (issue 18).

Every public call must end in one of two ways:

* a ``ValueError`` / ``TypeError`` (``NotImplementedError`` for a statistic a trust model does
  not offer) whose message names the argument that was changed, or
* a sound result: finite values inside the statistic's range (``support``), standard errors finite
  and >= 0 (or absent), and an interval that is finite, inside the range and of positive width
  wherever the stderr is positive.

Anything else is a finding: a hang (the call runs past ``HANG_SECONDS``), a wrong exception type
(IndexError, ZeroDivisionError, OverflowError, MemoryError, …), a NaN/inf/negative standard error,
or an error that does not name the argument.  :func:`run_call` classifies one call and
:data:`COUNTS` tallies the outcomes of a run (the slow test prints them).
"""

from __future__ import annotations

import collections
import inspect
import math
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import privstats
from privstats.estimate import Estimate

HANG_SECONDS = 20.0  # a call that runs longer than this on a loaded CI core is a hang
COUNTS: collections.Counter = collections.Counter()
FINDINGS: list[str] = []


class Hang(BaseException):
    """Raised by the per-call alarm (a BaseException so library code cannot swallow it)."""


@dataclass
class Case:
    """A valid base call of a public function plus the kinds of its arguments."""

    label: str
    func: Callable
    kwargs: dict
    kinds: dict = field(default_factory=dict)  # argument name -> kind (see BAD)

    def call(self, **changes):
        return self.func(**{**self.kwargs, **changes})


# ---------------------------------------------------------------------------------------------
# bad values, by kind of argument
# ---------------------------------------------------------------------------------------------
class _Weird:
    def __repr__(self) -> str:
        return "<weird>"


HUGE = 10**400
BAD: dict[str, list] = {
    "epsilon": [
        0,
        -1.0,
        float("nan"),
        float("inf"),
        -float("inf"),
        "1",
        None,
        True,
        1e-300,
        HUGE,
        -HUGE,
        complex(1, 0),
        [1.0],
        np.float64("nan"),
        1e6,
        1e-12,
    ],
    "delta": [-0.1, 1.0, 1.5, float("nan"), "x", True, HUGE, complex(0.1, 0), [1e-6]],
    "rng": [-1, -(2**70), "seed", 1.5, float("nan"), _Weird(), 2**200],
    "float_data": [
        [],
        [float("nan")] * 4,
        [float("inf")] * 4,
        [0.2, None, 0.3, 0.4],
        [[0.1, 0.2], [0.3]],
        np.array([True, False] * 10),
        np.array([0.1 + 0.1j] * 20),
        ["a", "b", "c", "d"],
        [HUGE] * 4,
        np.array([0.1] * 20, dtype=object),
        0.5,
        np.zeros((4, 4)) + 0.3,
        [5.0] * 20,
        [-HUGE] * 4,
        "0.1,0.2",
    ],
    "labels": [
        [],
        [1, 1, 1, 1],
        [0, 1, 2, 1],
        [0, None, 1, 1],
        [[0, 1], [1]],
        np.array([0.5 + 1j] * 4),
        ["a", "b", "a", "b"],
        [float("nan"), 1, 0, 1],
        [HUGE, 0] * 2,
        1,
        [0, 1],
    ],
    "int_data": [
        [],
        [float("nan")] * 4,
        [0.5] * 4,
        [-1] * 4,
        [99] * 4,
        [0, None, 1],
        [[0, 1], [2]],
        np.array([0.5j] * 4),
        ["a", "b"],
        [HUGE] * 4,
        [2**63] * 4,
        np.array([2**64 - 1] * 4, np.uint64),
        np.zeros((2, 2, 2), int),
        "0,1",
    ],
    "bounds": [
        None,
        (1, 0),
        (0, float("nan")),
        (0, float("inf")),
        "ab",
        (0,),
        (0, 1, 2),
        (-1e308, 1e308),
        (HUGE, HUGE + 1),
        (0, None),
        (True, 2),
        5,
        (complex(0, 1), 1),
    ],
    "domain": [0, 1, -3, 2.5, True, HUGE, 2**40, "4", None, float("nan"), [4]],
    "option": [None, "bogus", 3, True, float("nan"), ["auto"], "", " local"],
    "count": [0, -1, True, float("nan"), "2", 2.5, 10**12, HUGE, None, -HUGE],
    "probability": [-0.1, 1.1, float("nan"), "0.5", None, True, HUGE, [0.5]],
    "fraction": [0, 1, -0.5, float("nan"), "0.5", None, True, HUGE, complex(0.5, 0)],
    "quantile_levels": [
        [],
        [float("nan")],
        [1.5],
        [-0.1],
        [0.5, None],
        [[0.5], [0.1, 0.2]],
        ["a"],
        [HUGE],
        np.array([0.5j]),
        np.array([True]),
    ],
    "ranges": [
        [(3, 1)],
        [(0, 99)],
        [(-1, 2)],
        [(0.5, 2)],
        [(0,)],
        "ab",
        [(0, None)],
        [(HUGE, HUGE)],
        5,
        [[(0, 1)]],
        [(True, 2)],
    ],
}


# ---------------------------------------------------------------------------------------------
# the base calls: every public statistic under every trust model it supports
# ---------------------------------------------------------------------------------------------
N = 40
X = np.linspace(0.05, 0.95, N)
Y = np.tile([0, 1], N // 2)
ITEMS = np.arange(N) % 4
KIND_COMMON = {"epsilon": "epsilon", "rng": "rng"}


def _cases() -> list[Case]:
    P = privstats
    out: list[Case] = []

    def add(label, func, kinds, **kwargs):
        if kwargs.get("model") == "shuffle":
            kwargs.setdefault("delta", 1e-6)  # (ε, δ)-DP: δ is never spent unless passed
        out.append(Case(label, func, {**kwargs}, {**KIND_COMMON, **kinds}))

    for model in ("local", "secure", "central"):
        extra = {"delta": 1e-6} if model == "secure" else {}
        add(
            f"auc/{model}",
            P.auc,
            {
                "y_true": "labels",
                "y_score": "float_data",
                "bounds": "bounds",
                "method": "option",
                "ties": "option",
                "splitting": "option",
                "discard": "option",
                "oracle": "option",
                "P": "count",
                "domain_size": "count",
                "model": "option",
                "delta": "delta",
            },
            y_true=Y,
            y_score=X,
            epsilon=1.0,
            model=model,
            bounds=(0, 1),
            rng=1,
            **extra,
        )
        add(
            f"kendall_tau/{model}",
            P.kendall_tau,
            {
                "x": "float_data",
                "y": "float_data",
                "bounds": "bounds",
                "variant": "option",
                "bins": "count",
                "oracle": "option",
                "P": "count",
                "method": "option",
                "model": "option",
            },
            x=X,
            y=X[::-1].copy(),
            epsilon=1.0,
            model=model,
            bounds=(0, 1),
            rng=1,
        )
        add(
            f"gini_mean_difference/{model}",
            P.gini_mean_difference,
            {
                "x": "float_data",
                "bounds": "bounds",
                "bins": "count",
                "quantization": "option",
                "oracle": "option",
                "P": "count",
                "method": "option",
                "model": "option",
                "delta": "delta",
            },
            x=X,
            epsilon=1.0,
            model=model,
            bounds=(0, 1),
            rng=1,
        )
        add(
            f"gini_coefficient/{model}",
            P.gini_coefficient,
            {
                "x": "float_data",
                "bounds": "bounds",
                "mean_fraction": "fraction",
                "method": "option",
                "model": "option",
            },
            x=X,
            epsilon=1.0,
            model=model,
            bounds=(0, 1),
            rng=1,
        )
        add(
            f"collision_probability/{model}",
            P.collision_probability,
            {
                "x": "int_data",
                "domain_size": "domain",
                "oracle": "option",
                "P": "count",
                "method": "option",
                "model": "option",
                "delta": "delta",
            },
            x=ITEMS,
            epsilon=1.0,
            model=model,
            domain_size=4,
            rng=1,
        )
        add(
            f"ustatistic/{model}",
            P.ustatistic,
            {
                "x": "float_data",
                "bounds": "bounds",
                "kernel_range": "bounds",
                "bins": "count",
                "quantization": "option",
                "oracle": "option",
                "P": "count",
                "method": "option",
                "model": "option",
                "lipschitz": "fraction",
            },
            x=X,
            kernel=lambda a, b: np.abs(a - b),
            epsilon=1.0,
            model=model,
            bounds=(0, 1),
            kernel_range=(0, 1),
            rng=1,
        )
        add(
            f"ecdf/{model}",
            P.ecdf,
            {
                "x": "float_data",
                "bounds": "bounds",
                "grid": "count",
                "smoothing": "option",
                "neighbours": "option",
                "method": "option",
                "model": "option",
                "n_servers": "count",
                "protocol": "option",
            },
            x=X,
            epsilon=1.0,
            model=model,
            bounds=(0, 1),
            grid=16,
            rng=1,
        )
        add(
            f"roc_curve/{model}",
            P.roc_curve,
            {
                "y_true": "labels",
                "y_score": "float_data",
                "bounds": "bounds",
                "grid": "count",
                "smoothing": "option",
                "labels": "option",
                "method": "option",
                "model": "option",
            },
            y_true=Y,
            y_score=X,
            epsilon=1.0,
            model=model,
            bounds=(0, 1),
            grid=16,
            rng=1,
        )
    for model in ("local", "secure", "central", "shuffle"):
        kw = {"bins": 16} if model == "shuffle" else {"grid": 64}
        add(
            f"quantiles/{model}",
            P.quantiles,
            {
                "x": "float_data",
                "q": "quantile_levels",
                "bounds": "bounds",
                "method": "option",
                "neighbours": "option",
                "model": "option",
                "grid": "count",
                "bins": "count",
            },
            x=X,
            q=[0.25, 0.5, 0.75],
            epsilon=10.0 if model == "shuffle" else 1.0,
            model=model,
            bounds=(0, 1),
            rng=1,
            **kw,
        )
    for model in ("local", "shuffle", "central"):
        add(
            f"frequencies/{model}",
            P.frequencies,
            {
                "values": "int_data",
                "domain": "domain",
                "model": "option",
                "protocol": "option",
                "delta": "delta",
            },
            values=ITEMS,
            domain=4,
            epsilon=1.0,
            model=model,
            rng=1,
        )
        add(
            f"range_counts/{model}",
            P.range_counts,
            {
                "values": "int_data",
                "domain": "domain",
                "model": "option",
                "ranges": "ranges",
                "delta": "delta",
            },
            values=ITEMS,
            ranges=[(0, 2), (1, 4)],
            domain=4,
            epsilon=1.0,
            model=model,
            rng=1,
        )
        add(
            f"heavy_hitters/{model}",
            P.heavy_hitters,
            {
                "values": "int_data",
                "domain": "domain",
                "model": "option",
                "threshold": "fraction",
                "delta": "delta",
            },
            values=ITEMS,
            domain=4,
            epsilon=1.0,
            model=model,
            rng=1,
        )
    add(
        "hosmer_lemeshow/central",
        P.hosmer_lemeshow,
        {
            "y_true": "labels",
            "y_prob": "float_data",
            "groups": "count",
            "depth": "count",
            "bootstrap": "count",
            "budget": "option",
            "method": "option",
            "min_expected": "fraction",
            "bounds": "bounds",
        },
        y_true=Y,
        y_prob=X,
        bounds=(0, 1),
        epsilon=1.0,
        depth=4,
        groups=4,
        bootstrap=100,
        rng=1,
    )
    return out


CASES = _cases()
CASE_BY_LABEL = {c.label: c for c in CASES}


# ---------------------------------------------------------------------------------------------
# classification
# ---------------------------------------------------------------------------------------------
def _finite_or_none(name: str, v: Any) -> str | None:
    if v is None:
        return None
    arr = np.asarray(v, dtype=np.float64) if not isinstance(v, np.ndarray) else v.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        return f"{name} has NaN/inf"
    return None


def soundness_problem(result: Any) -> str | None:
    """None if the result is sound, else what is wrong with it."""
    results = result if isinstance(result, tuple) else (result,)
    for r in results:
        if isinstance(r, Estimate):
            try:
                val = np.asarray(r.value, dtype=np.float64)
            except (TypeError, ValueError):
                val = None
            if val is not None and not np.all(np.isfinite(val)):
                return "value has NaN/inf"
            if r.stderr is not None:
                se = np.asarray(r.stderr, dtype=np.float64)
                if not np.all(np.isfinite(se)):
                    return "stderr has NaN/inf"
                if np.any(se < 0):
                    return "stderr is negative"
            p = range_problem(r, val)
            if p:
                return p
        elif hasattr(r, "probabilities") and hasattr(r, "quantiles"):  # PrivateECDF
            for name in ("probabilities", "quantiles", "stderr"):
                p = _finite_or_none(name, getattr(r, name))
                if p:
                    return p
            if r.stderr is not None and np.any(r.stderr < 0):
                return "stderr is negative"
            probs = np.asarray(r.probabilities, dtype=np.float64)
            if np.any(probs < 0) or np.any(probs > 1):
                return "ECDF probabilities outside [0, 1]"
            p = soundness_problem(r.estimate) if r.estimate is not None else None
            if p:
                return p
        elif isinstance(r, np.ndarray) and r.size and r.dtype.kind == "f" and not np.isfinite(r[1:-1]).all():
            return "array has NaN/inf"  # fpr/tpr of roc_curve are finite; thresholds run from +inf to -inf
    return None


def range_problem(r: Estimate, val: np.ndarray | None) -> str | None:
    """Values inside the statistic's range (``support``), and an interval that is finite, ordered,
    inside the range and of zero width only where the stderr is 0 (issue 26)."""
    tol = 1e-9
    if val is not None and r.support is not None and val.dtype.kind == "f":
        lo, hi = r.support
        if np.any(val < lo - tol * max(1, abs(lo))) or np.any(val > hi + tol * max(1, abs(hi))):
            return f"value outside the statistic's range {r.support}"
    if r.stderr is None or val is None or "ci_fn" in r.details:
        return None
    try:
        lo_ci, hi_ci = (np.asarray(v, dtype=np.float64) for v in r.ci())
    except (ValueError, TypeError) as exc:
        return f"ci() failed: {type(exc).__name__}: {exc}"
    if not (np.all(np.isfinite(lo_ci)) and np.all(np.isfinite(hi_ci))) or np.any(lo_ci > hi_ci):
        return "interval is not finite and ordered"
    if "discrete_laplace_scale" in (r.details.get("ci_law") or {}):
        return None  # integer noise that is 0 with probability >= level: [v, v] is the exact interval
    se = np.broadcast_to(np.asarray(r.stderr, dtype=np.float64), np.shape(hi_ci))
    if np.any((hi_ci - lo_ci <= 0) & (se > 1e-12 * np.maximum(1.0, np.abs(hi_ci)))):
        return "zero-width interval with stderr > 0"
    return None


def _alarm(_sig, _frm):
    raise Hang()


def timed(fn: Callable[[], Any], seconds: float | None):
    """Run ``fn`` with a per-call alarm that coexists with pytest-timeout's own SIGALRM timer."""
    if not seconds:
        return fn()
    old_handler = signal.signal(signal.SIGALRM, _alarm)
    old_remaining, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    t0 = time.monotonic()
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_remaining:
            signal.setitimer(signal.ITIMER_REAL, max(old_remaining - (time.monotonic() - t0), 1e-3))


ACCEPTED = (ValueError, TypeError, NotImplementedError)


def run_call(
    label: str,
    fn: Callable[[], Any],
    names: tuple[str, ...],
    *,
    timeout: float | None = HANG_SECONDS,
    check: Callable[[Any], str | None] = soundness_problem,
) -> str:
    """Run one call and classify it: 'ok', 'error', or a finding ('hang', 'wrong-type', 'unsound',
    'unnamed').  ``names``: the message of an error must contain one of them."""
    COUNTS["calls"] += 1
    try:
        result = timed(fn, timeout)
    except Hang:
        outcome, what = "hang", f"no answer after {timeout} s"
    except ACCEPTED as exc:
        msg = str(exc)
        if names and not any(n.lower() in msg.lower() for n in names):
            outcome, what = "unnamed", f"{type(exc).__name__}: {msg[:200]}"
        else:
            outcome, what = "error", ""
    except Exception as exc:
        outcome, what = "wrong-type", f"{type(exc).__name__}: {str(exc)[:200]}"
    else:
        problem = check(result)
        outcome, what = ("unsound", problem) if problem else ("ok", "")
    COUNTS[outcome] += 1
    if outcome not in ("ok", "error"):
        FINDINGS.append(f"{outcome}: {label}: {what}")
    return outcome


def arg_names(func: Callable) -> tuple[str, ...]:
    try:
        return tuple(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return ()


def bad_calls(case: Case):
    """Every (argument, bad value) of a case: one call each."""
    for arg, kind in case.kinds.items():
        for bad in BAD[kind]:
            yield arg, bad


def summary() -> str:
    keys = ("calls", "ok", "error", "hang", "wrong-type", "unsound", "unnamed")
    head = ", ".join(f"{k} {COUNTS[k]}" for k in keys)
    return head + ("\n" + "\n".join(FINDINGS) if FINDINGS else "")


def is_finding(outcome: str) -> bool:
    return outcome not in ("ok", "error")


def finite(x: float) -> bool:
    return isinstance(x, float) and math.isfinite(x)


# values that are never valid for their kind: a call that accepts them silently ignored an option
_NEVER_VALID = {
    "option": lambda v: (not isinstance(v, str) and v is not None) or v in ("bogus", "", " local"),
    "count": lambda v: (
        v is not None and not (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 2**53)
    ),
    "fraction": lambda v: (
        v is not None and (isinstance(v, (bool, str, complex)) or (isinstance(v, float) and math.isnan(v)))
    ),
}


def must_fail(kind: str, value: Any) -> bool:
    """True when ``value`` is invalid for every argument of ``kind`` (so 'ok' means it was ignored)."""
    f = _NEVER_VALID.get(kind)
    return bool(f and f(value))
