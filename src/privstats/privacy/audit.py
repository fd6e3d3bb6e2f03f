"""Empirical privacy auditing: a statistical lower bound on a mechanism's ε.

Run a mechanism many times on two neighbouring inputs, reduce every output to one
number (the output itself, or a test statistic such as the log-likelihood ratio
``ln p_a(o)/p_b(o)`` — by Neyman–Pearson its threshold events are the most
distinguishing ones), then look for an event S — one value, or a tail
{s ≥ t} / {s ≤ t} — whose probabilities differ most.  With Clopper–Pearson
bounds at confidence 1 − alpha (Bonferroni-corrected over the events tried),
``ln((P_a(S)_lower − δ) / P_b(S)_upper)`` is a lower bound on ε that holds with
probability 1 − alpha.  A correct mechanism never exceeds its claimed ε (except
with probability alpha); an under-noised one does once there are enough trials.
:func:`expected_epsilon_lower_bound` predicts the bound from exact output
probabilities, to choose the number of trials before running anything.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> a = rng.laplace(0, 1.0, 20000).round(); b = rng.laplace(1, 1.0, 20000).round()
>>> epsilon_lower_bound(a, b) <= 1.0
True
>>> two_d = np.stack([a, rng.integers(0, 2, a.size)], axis=1)   # outputs with two coordinates
>>> epsilon_lower_bound(two_d, np.stack([b, b * 0], axis=1), statistic=lambda o: o[:, 0]) <= 1.0
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

__all__ = ["epsilon_lower_bound", "expected_epsilon_lower_bound"]


def _cp_lower(k: np.ndarray, n: float, a: float) -> np.ndarray:
    return np.where(k > 0, stats.beta.ppf(a, np.maximum(k, 1e-12), n - k + 1), 0.0)


def _cp_upper(k: np.ndarray, n: float, a: float) -> np.ndarray:
    return np.where(k < n, stats.beta.ppf(1 - a, k + 1, np.maximum(n - k, 1e-12)), 1.0)


def _candidates(pooled: np.ndarray, max_events: int) -> np.ndarray:
    """Indices of the support values used as events: all, or pooled quantiles dense in both tails."""
    if pooled.size <= max_events:
        return np.arange(pooled.size)
    half = max(2, max_events // 2)
    tail = np.geomspace(0.5, max(1e-9, 0.5 / 2 ** (half // 2)), half // 2)
    probs = np.unique(np.concatenate([np.linspace(0, 1, half), tail, 1 - tail]))
    cum = np.cumsum(pooled) / pooled.sum()
    return np.unique(np.minimum(np.searchsorted(cum, probs, side="left"), pooled.size - 1))


def _bound_from_counts(
    count_a: np.ndarray,
    count_b: np.ndarray,
    n_a: float,
    n_b: float,
    *,
    delta: float,
    alpha: float,
    max_events: int,
) -> float:
    """The bound from per-support-value counts (support sorted ascending)."""
    idx = _candidates(count_a / n_a + count_b / n_b, max_events)
    cum_a, cum_b = np.cumsum(count_a), np.cumsum(count_b)
    events = {
        "eq": (count_a[idx], count_b[idx]),
        "le": (cum_a[idx], cum_b[idx]),
        "ge": (n_a - cum_a[idx] + count_a[idx], n_b - cum_b[idx] + count_b[idx]),
    }
    level = alpha / (2 * 3 * idx.size)
    best = 0.0
    for ka, kb in events.values():
        for k1, n1, k2, n2 in ((ka, n_a, kb, n_b), (kb, n_b, ka, n_a)):
            lo = _cp_lower(k1, n1, level) - delta
            hi = _cp_upper(k2, n2, level)
            ok = (lo > 0) & (hi > 0)
            if ok.any():
                best = max(best, float(np.max(np.log(lo[ok] / hi[ok]))))
    return best if math.isfinite(best) else 0.0


def _scalar_outputs(
    samples: ArrayLike, statistic: Callable[[np.ndarray], ArrayLike] | None, name: str
) -> np.ndarray:
    x = np.asarray(samples)
    if statistic is not None:
        x = np.asarray(statistic(x))
    if x.ndim > 1 and x.size != x.shape[0]:
        raise ValueError(
            f"{name} has shape {x.shape}: pass statistic= to reduce each output (a row) to one number"
        )
    x = x.ravel()
    if x.size == 0:
        raise ValueError(f"{name} must not be empty")
    return x


def epsilon_lower_bound(
    samples_a: ArrayLike,
    samples_b: ArrayLike,
    *,
    delta: float = 0.0,
    alpha: float = 1e-3,
    max_events: int = 200,
    statistic: Callable[[np.ndarray], ArrayLike] | None = None,
) -> float:
    """A (1 − alpha)-confidence lower bound on ε from outputs on two neighbouring inputs.

    ``samples_a``/``samples_b``: one output per trial (first axis).  Multi-dimensional
    outputs need ``statistic``, a vectorized function from the array of outputs to one
    number per trial (e.g. the log-likelihood ratio, or the coordinate that differs);
    any fixed function is post-processing, so the bound stays valid.  Events tried:
    single values and both tails {s ≥ t}, {s ≤ t}, in both directions (a vs b and
    b vs a); above ``max_events`` distinct values the thresholds are pooled quantiles,
    dense in both tails.  ``delta`` is subtracted from the larger probability, which
    audits an (ε, δ) claim.
    """
    a = _scalar_outputs(samples_a, statistic, "samples_a")
    b = _scalar_outputs(samples_b, statistic, "samples_b")
    support, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
    count_a = np.bincount(inverse[: a.size], minlength=support.size).astype(np.float64)
    count_b = np.bincount(inverse[a.size :], minlength=support.size).astype(np.float64)
    return _bound_from_counts(
        count_a, count_b, float(a.size), float(b.size), delta=delta, alpha=alpha, max_events=max_events
    )


def expected_epsilon_lower_bound(
    values: ArrayLike,
    prob_a: ArrayLike,
    prob_b: ArrayLike,
    trials: Any,
    *,
    delta: float = 0.0,
    alpha: float = 1e-3,
    max_events: int = 200,
) -> float:
    """The bound :func:`epsilon_lower_bound` reaches when every count equals its expectation.

    ``values``: the possible values of the (scalar) statistic; ``prob_a``/``prob_b``:
    their exact probabilities on the two inputs; ``trials``: runs per input (an int or
    a pair).  A planning tool — choose trials so the real mechanism's prediction sits
    below its ε and an under-noised one's well above — not a test by itself.

    >>> import math
    >>> p = math.e / (math.e + 1)                        # binary randomized response, ε = 1
    >>> round(expected_epsilon_lower_bound([0, 1], [p, 1 - p], [1 - p, p], 10**9), 2)
    1.0
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    pa = np.asarray(prob_a, dtype=np.float64).ravel()
    pb = np.asarray(prob_b, dtype=np.float64).ravel()
    if not (values.size == pa.size == pb.size) or values.size == 0:
        raise ValueError("values, prob_a and prob_b must be non-empty and of the same length")
    n_a, n_b = (trials, trials) if np.ndim(trials) == 0 else trials
    order = np.argsort(values, kind="stable")
    support, inverse = np.unique(values[order], return_inverse=True)
    ea = np.bincount(inverse, weights=pa[order], minlength=support.size) * float(n_a)
    eb = np.bincount(inverse, weights=pb[order], minlength=support.size) * float(n_b)
    return _bound_from_counts(ea, eb, float(n_a), float(n_b), delta=delta, alpha=alpha, max_events=max_events)
