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
    "EPSILON_MIN",
    "MAX_CELLS",
    "as_binary_labels",
    "as_domain_values",
    "as_float_array",
    "check_array",
    "check_bounds",
    "check_choice",
    "check_delta",
    "check_domain_size",
    "check_epsilon",
    "check_option",
    "check_positive_int",
    "check_power_of_two",
    "check_probability",
    "check_real",
    "check_rng",
    "check_same_length",
]

EPSILON_MIN = 1e-12
"""Smallest ε accepted.  Below it the noise is over 10¹² times the sensitivity, so no estimate over
fewer than ~10²⁴ users carries information, and variances (∝ 1/ε²) head for float overflow
(NaN or inf standard errors at ε ≈ 1e-300); refusing is clearer than a NaN."""

RANDOMIZER_EPSILON_MAX = 700.0
"""Largest ε of a local or shuffle randomizer: e^ε overflows a float above ≈ 709."""

MAX_GRID = 1 << 24
"""Largest ECDF grid / number of thresholds: the tree noise and smoothing keep several float arrays
of this size (16 M thresholds ≈ 128 MiB each); a finer grid than that resolves nothing the noise
does not swamp."""

MAX_CELLS = 1 << 28
"""Largest number of cells (domain × grid, k × k kernel matrix, tree nodes) a call may allocate:
2²⁸ float64 cells are 2 GiB, already more than a CI worker should hold; more would run for minutes
or end in MemoryError, so it is refused up front with the argument named."""


def _is_number(x: Any) -> bool:
    """A real number (int, float, Fraction, numpy scalar), not a bool."""
    return isinstance(x, (numbers.Real, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _short(x: Any) -> str:
    """repr of a value for an error message, cut short (a 10**400 has 401 digits)."""
    r = repr(x)
    return r if len(r) <= 60 else r[:40] + "…" + r[-10:]


def check_real(x: Any, name: str, *, finite: bool = True) -> float:
    """A real number (not a bool, string or complex) as a float; huge ints are refused, not overflowed.

    >>> check_real(2, "lipschitz")
    2.0
    """
    if not _is_number(x):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__} {_short(x)}")
    try:
        v = float(x)
    except (OverflowError, ValueError):
        raise ValueError(f"{name} must be a finite number, got {_short(x)} (too large for a float)") from None
    if finite and not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {_short(x)}")
    return v


def check_epsilon(
    epsilon: Any,
    name: str = "epsilon",
    *,
    allow_inf: bool = False,
    minimum: float = EPSILON_MIN,
    model: str | None = None,
) -> float:
    """A privacy parameter ε in [``minimum``, ∞) (finite unless ``allow_inf``); see :data:`EPSILON_MIN`."""
    if not _is_number(epsilon):
        raise ValueError(
            f"{name} must be a finite number > 0, got {type(epsilon).__name__} {_short(epsilon)}"
        )
    try:
        v = float(epsilon)
    except (OverflowError, ValueError):
        raise ValueError(f"{name} must be a finite number > 0, got {_short(epsilon)} (too large)") from None
    if math.isnan(v) or v <= 0 or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be a finite number > 0, got {_short(epsilon)}")
    if v < minimum:
        raise ValueError(
            f"{name} must be >= {minimum:g}, got {v:g}: below it the noise exceeds {1 / minimum:.0e} "
            "times the sensitivity, so nothing could be estimated, and variances (∝ 1/ε²) "
            "overflow towards inf/NaN"
        )
    if model in ("local", "shuffle") and v > RANDOMIZER_EPSILON_MAX:
        raise ValueError(
            f"{name} must be <= {RANDOMIZER_EPSILON_MAX:g} for model={model!r}, got {v:g}: the "
            "randomizers and the shuffle accountant work with e^ε, which overflows a float above "
            "ε ≈ 709 (and such an ε protects nothing; use model='central' for noise-free checks)"
        )
    return v


def check_delta(delta: Any, name: str = "delta", *, allow_zero: bool = False) -> float:
    """δ in (0, 1), or [0, 1) with ``allow_zero``."""
    interval = "[0, 1)" if allow_zero else "(0, 1)"
    if not _is_number(delta):
        raise ValueError(f"{name} must be a number in {interval}, got {type(delta).__name__} {_short(delta)}")
    try:
        v = float(delta)
    except OverflowError:
        v = math.inf
    ok = not math.isnan(v) and (v >= 0 if allow_zero else v > 0) and v < 1
    if not ok:
        raise ValueError(f"{name} must be in {interval}, got {_short(delta)}")
    return float(delta)


def check_probability(p: Any, name: str) -> float:
    """A number in [0, 1]."""
    if not _is_number(p) or not (0 <= p <= 1):
        raise ValueError(f"{name} must be a number in [0, 1], got {_short(p)}")
    return float(p)


MAX_INT = 1 << 53
"""Default largest integer option: above 2⁵³ integers are no longer exact in the float arithmetic
every count, grid or permutation number ends up in."""


def check_positive_int(k: Any, name: str, *, minimum: int = 1, maximum: int | None = MAX_INT) -> int:
    """An integer in [``minimum``, ``maximum``]."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {type(k).__name__} {_short(k)}")
    if k < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {_short(k)}")
    if maximum is not None and k > maximum:
        raise ValueError(f"{name} must be an integer of at most {maximum}, got {_short(k)}")
    return int(k)


def check_option(value: Any, name: str, allowed) -> Any:
    """One of the allowed option values (checked even where the chosen model ignores the option).

    >>> check_option("l2", "smoothing", ("l1", "l2"))
    'l2'
    """
    try:
        ok = isinstance(value, str) and value in allowed
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {sorted(map(str, allowed))}, got {_short(value)}")
    return value


def check_rng(rng: Any, name: str = "rng") -> Any:
    """``None`` (OS CSPRNG), a non-negative integer seed, a ``numpy.random.Generator`` /
    ``SeedSequence`` / ``BitGenerator``, or a privstats random source; returned unchanged.

    A negative or non-integer seed is refused here instead of deep inside numpy.
    """
    if rng is None or isinstance(rng, (np.random.Generator, np.random.SeedSequence, np.random.BitGenerator)):
        return rng
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError(f"{name} must be None, a seed (integer >= 0) or a numpy Generator, got {rng!r}")
    if isinstance(rng, (int, np.integer)):
        if rng < 0:
            raise ValueError(f"{name} seed must be an integer >= 0, got {_short(rng)}")
        return rng
    if hasattr(rng, "random") and hasattr(rng, "integers"):  # privstats RandomSource and friends
        return rng
    raise TypeError(
        f"{name} must be None, a seed (integer >= 0) or a numpy Generator, got "
        f"{type(rng).__name__} {_short(rng)}"
    )


def check_domain_size(d: Any, name: str = "domain_size", *, power_of_two: bool = False) -> int:
    """A domain size d >= 2 (optionally a power of two)."""
    d = check_positive_int(d, name, minimum=2, maximum=MAX_CELLS)  # counts of d cells must fit in memory
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
    """Public data bounds ``(lo, hi)`` with lo < hi, both finite, and hi - lo finite.

    Bounds are required where the papers assume a known domain; they are never
    taken from the data, which would leak it.
    """
    if bounds is None:
        raise ValueError(
            f"{name} is required: pass public bounds (lo, hi) known without looking at the data "
            "(deriving them from the data would leak it)"
        )
    try:
        pair = tuple(bounds)
        if len(pair) != 2 or any(isinstance(b, (bool, np.bool_, str, bytes)) for b in pair):
            raise TypeError
        lo, hi = (float(b) for b in pair)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a pair (lo, hi) of finite numbers, got {_short(bounds)}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
        raise ValueError(f"{name} must be finite with lo < hi, got {_short(bounds)}")
    if not math.isfinite(hi - lo):  # (-1e308, 1e308): every scaled value and sensitivity overflows
        raise ValueError(f"{name} width hi - lo overflows a float, got {_short(bounds)}")
    return lo, hi


def check_array(x: Any, name: str, *, kind: str = "float", ndim: int | None = 1) -> np.ndarray:
    """``x`` as a rectangular numeric numpy array, without converting nonsense silently.

    Refused with the argument named: strings, ``None`` inside lists, ragged nesting,
    boolean (``kind="float"``), complex, object and date arrays, and Python ints too large
    for a float.  ``kind`` is ``"float"`` (float64) or ``"any"`` (the numeric dtype as given).
    Bounds, NaN and emptiness are the callers' checks (:func:`as_float_array`).

    >>> check_array([1, 2], "x").dtype
    dtype('float64')
    """
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be numeric array-like, got a string")
    if isinstance(x, np.ma.MaskedArray):  # np.asarray would silently use the masked entries
        masked = int(np.ma.getmaskarray(x).sum())
        if masked:
            raise ValueError(
                f"{name} is a masked array with {masked} masked entries: drop them first "
                "(x.compressed(), or one joint mask for paired inputs such as y_true and y_score)"
            )
        x = np.ma.getdata(x)
    obj = x.to_numpy() if hasattr(x, "to_numpy") else x
    try:
        raw = np.asarray(obj)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a rectangular array (equal-length rows), got ragged nesting"
        ) from None
    if raw.dtype.kind == "O":
        flat = raw.ravel().tolist() if raw.ndim else [raw.item()]
        if any(v is None for v in flat):
            raise ValueError(f"{name} contains None (missing values must be removed or imputed first)")
        if any(isinstance(v, (list, tuple, np.ndarray)) for v in flat):
            raise ValueError(f"{name} must be a rectangular array (equal-length rows), got ragged nesting")
        odd = next((v for v in flat if not _is_number(v)), None)
        if odd is not None:
            raise TypeError(f"{name} must contain real numbers only, got {type(odd).__name__} {_short(odd)}")
        try:
            raw = np.asarray(flat, dtype=np.float64).reshape(raw.shape)
        except OverflowError:
            raise ValueError(f"{name} contains integers too large for a float") from None
    if raw.dtype.kind == "b" and kind == "float":
        raise TypeError(f"{name} must be numeric, got booleans (convert explicitly if 0/1 is meant)")
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric array-like, got dtype {raw.dtype}")
    if ndim is not None and raw.ndim != ndim:
        if raw.ndim == 0 and ndim == 1:
            raise ValueError(f"{name} must be a 1-d array, got a scalar")
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {raw.shape}")
    return raw.astype(np.float64, copy=False) if kind == "float" else raw


def as_float_array(
    x: Any, name: str, *, bounds: tuple[float, float] | None = None, ndim: int = 1, allow_empty: bool = False
) -> np.ndarray:
    """A float array without NaN or infinities, optionally inside ``bounds``.

    Accepts anything array-like (lists, numpy, pandas or polars columns); refuses booleans,
    complex numbers, ``None`` and ragged nesting (:func:`check_array`).
    """
    arr = check_array(x, name, kind="float", ndim=ndim)
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        bad = "NaN" if np.isnan(arr).any() else "infinite values"
        raise ValueError(f"{name} contains {bad}")
    if bounds is not None and arr.size:
        lo, hi = bounds
        outside = int(np.count_nonzero((arr < lo) | (arr > hi)))
        if outside:
            raise ValueError(f"{name}: {outside} {_values(outside)} outside bounds [{lo}, {hi}]")
    return arr


def as_domain_values(
    values: Any, domain_size: int, name: str = "values", *, allow_empty: bool = False
) -> np.ndarray:
    """Integer items in ``[0, domain_size)`` as an int64 array."""
    raw = check_array(values, name, kind="any", ndim=None)
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
    if raw.dtype.kind == "u":  # values above int64 would wrap to negative
        _refuse_outside(name, raw > np.iinfo(np.int64).max, domain_size)
    if raw.dtype.kind == "f":
        _refuse_outside(name, np.abs(raw) >= 2.0**63, domain_size)
    arr = raw.astype(np.int64)
    _refuse_outside(name, (arr < 0) | (arr >= domain_size), domain_size)
    return arr


def _values(count: int) -> str:
    return "value" if count == 1 else "values"


def _refuse_outside(name: str, outside: np.ndarray, domain_size: int) -> None:
    """ValueError naming the argument and COUNTING the entries outside [0, domain_size) (never their values)."""
    bad = int(np.count_nonzero(outside))
    if bad:
        raise ValueError(f"{name} must be in [0, {domain_size}): {bad} {_values(bad)} outside")


def as_binary_labels(y: Any, name: str = "y_true") -> np.ndarray:
    """Labels of exactly two classes as a bool array (True = positive class).

    Accepts {0, 1}, {-1, 1} or {False, True}; both classes must be present.
    """
    arr = check_array(y, name, kind="any", ndim=None)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    classes = np.unique(arr)
    # the messages count classes and never print them: a label value is data
    if classes.size != 2:
        raise ValueError(
            f"{name} must contain exactly two classes (both present), got {classes.size} distinct values"
        )
    if set(classes.tolist()) not in ({0, 1}, {-1, 1}, {False, True}):
        raise ValueError(f"{name} classes must be {{0, 1}}, {{-1, 1}} or booleans")
    return arr == classes[1]


def check_same_length(**arrays: np.ndarray) -> int:
    """All arrays have the same length; returns it."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError("length mismatch: " + ", ".join(f"{k} has {n}" for k, n in lengths.items()))
    return next(iter(lengths.values()))


def check_choice(value: Any, name: str, choices) -> str:
    """One of a fixed set of strings (same as :func:`check_option`)."""
    return check_option(value, name, choices)
