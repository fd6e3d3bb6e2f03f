"""Input validation used at every public boundary.

Each check raises a :class:`ValueError` (or :class:`TypeError` for a wrong type)
whose message starts with the argument's name, and returns the cleaned value.
Nothing is modified in place.

>>> check_epsilon(0.5)
0.5
>>> check_epsilon(0)
Traceback (most recent call last):
ValueError: epsilon must be a finite number > 0, got 0
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = [
    "check_epsilon",
    "check_delta",
    "check_positive_int",
    "check_domain_size",
    "check_power_of_two",
    "check_bounds",
    "as_float_array",
    "as_domain_values",
    "as_binary_labels",
    "check_same_length",
    "check_probability",
    "check_choice",
]


def _is_number(x: Any) -> bool:
    """A real number (int, float, Fraction, numpy scalar), not a bool."""
    return isinstance(x, (numbers.Real, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def check_epsilon(epsilon: Any, name: str = "epsilon", *, allow_inf: bool = False) -> float:
    """A privacy parameter ε > 0 (finite unless ``allow_inf``)."""
    if not _is_number(epsilon) or math.isnan(epsilon) or epsilon <= 0 or (math.isinf(epsilon) and not allow_inf):
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return float(epsilon)


def check_delta(delta: Any, name: str = "delta", *, allow_zero: bool = False) -> float:
    """δ in (0, 1), or [0, 1) with ``allow_zero``."""
    ok = _is_number(delta) and not math.isnan(delta) and (delta >= 0 if allow_zero else delta > 0) and delta < 1
    if not ok:
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"{name} must be in {interval}, got {delta!r}")
    return float(delta)


def check_probability(p: Any, name: str) -> float:
    """A number in [0, 1]."""
    if not _is_number(p) or not (0 <= p <= 1):
        raise ValueError(f"{name} must be a number in [0, 1], got {p!r}")
    return float(p)


def check_positive_int(k: Any, name: str, *, minimum: int = 1) -> int:
    """An integer >= ``minimum``."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {k!r}")
    return int(k)


def check_domain_size(d: Any, name: str = "domain_size", *, power_of_two: bool = False) -> int:
    """A domain size d >= 2 (optionally a power of two)."""
    d = check_positive_int(d, name, minimum=2)
    if power_of_two:
        check_power_of_two(d, name)
    return d


def check_power_of_two(k: Any, name: str) -> int:
    """A positive power of two."""
    k = check_positive_int(k, name)
    if k & (k - 1):
        raise ValueError(f"{name} must be a power of two, got {k}")
    return k


def check_bounds(bounds: Any, name: str = "bounds") -> tuple[float, float]:
    """Public data bounds ``(lo, hi)`` with lo < hi, both finite.

    Bounds are required where the papers assume a known domain; they are never
    taken from the data, which would leak it.
    """
    if bounds is None:
        raise ValueError(
            f"{name} is required: pass public bounds (lo, hi) known without looking at the data "
            "(deriving them from the data would leak it)"
        )
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lo, hi) of numbers, got {bounds!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
        raise ValueError(f"{name} must be finite with lo < hi, got {bounds!r}")
    return lo, hi


def as_float_array(x: Any, name: str, *, bounds: tuple[float, float] | None = None, ndim: int = 1,
                   allow_empty: bool = False) -> np.ndarray:
    """A float array without NaN or infinities, optionally inside ``bounds``.

    Accepts anything array-like (lists, numpy, pandas or polars columns).
    """
    try:
        arr = np.asarray(x.to_numpy() if hasattr(x, "to_numpy") else x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numeric array-like") from None
    if arr.ndim == 0 and ndim == 1:
        raise ValueError(f"{name} must be a 1-d array, got a scalar")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        bad = "NaN" if np.isnan(arr).any() else "infinite values"
        raise ValueError(f"{name} contains {bad}")
    if bounds is not None and arr.size:
        lo, hi = bounds
        if arr.min() < lo or arr.max() > hi:
            raise ValueError(f"{name} has values outside bounds [{lo}, {hi}]: min {arr.min()}, max {arr.max()}")
    return arr


def as_domain_values(values: Any, domain_size: int, name: str = "values", *, allow_empty: bool = False) -> np.ndarray:
    """Integer items in ``[0, domain_size)`` as an int64 array."""
    try:
        raw = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be array-like of integers") from None
    if raw.ndim == 0:
        raw = raw.reshape(1)
    if raw.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {raw.shape}")
    if raw.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    if raw.dtype.kind == "f":
        if not np.all(np.isfinite(raw)):
            raise ValueError(f"{name} contains NaN or infinite values")
        if np.any(raw != np.round(raw)):
            raise ValueError(f"{name} must be integers in [0, {domain_size}), got non-integer values")
    elif raw.dtype.kind not in "iub":
        raise TypeError(f"{name} must contain integers in [0, {domain_size}), got dtype {raw.dtype}")
    if raw.dtype.kind == "u" and raw.size and raw.max() > np.iinfo(np.int64).max:  # would wrap to negative
        raise ValueError(f"{name} must be in [0, {domain_size}), got values up to {raw.max()}")
    if raw.dtype.kind == "f" and raw.size and np.abs(raw).max() >= 2.0**63:
        raise ValueError(f"{name} must be in [0, {domain_size}), got values in [{raw.min()}, {raw.max()}]")
    arr = raw.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= domain_size):
        raise ValueError(f"{name} must be in [0, {domain_size}), got values in [{arr.min()}, {arr.max()}]")
    return arr


def as_binary_labels(y: Any, name: str = "y_true") -> np.ndarray:
    """Labels of exactly two classes as a bool array (True = positive class).

    Accepts {0, 1}, {-1, 1} or {False, True}; both classes must be present.
    """
    arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    classes = np.unique(arr)
    if classes.size != 2:
        raise ValueError(f"{name} must contain exactly two classes (both present), got {classes.tolist()[:5]}")
    if set(classes.tolist()) not in ({0, 1}, {-1, 1}, {False, True}):
        raise ValueError(f"{name} classes must be {{0, 1}}, {{-1, 1}} or booleans, got {classes.tolist()}")
    return arr == classes[1]


def check_same_length(**arrays: np.ndarray) -> int:
    """All arrays have the same length; returns it."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError("length mismatch: " + ", ".join(f"{k} has {n}" for k, n in lengths.items()))
    return next(iter(lengths.values()))


def check_choice(value: Any, name: str, choices) -> str:
    """One of a fixed set of strings."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value
