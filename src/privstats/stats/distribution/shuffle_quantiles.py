"""Quantiles in the shuffle model (``privstats.quantiles(model="shuffle")``): the first bin whose
shuffled prefix count reaches qn (Ghazi et al. App. E), on bins the plan chooses, shifted by a public
uniform fraction of a bin."""

from __future__ import annotations

import functools
import math

import numpy as np

from privstats.cdf.smoothing import smooth
from privstats.cdf.tree import dithered_bounds
from privstats.estimate import Estimate
from privstats.privacy.randomness import RNGLike, as_source
from privstats.shuffle.hadamard import SIMULATE_MAX_MESSAGES, HadamardMultiMessage
from privstats.stats.frequency import range_counts, require_delta
from privstats.validation import (
    MAX_CELLS,
    as_float_array,
    check_array,
    check_bounds,
    check_epsilon,
    check_positive_int,
)

__all__ = ["shuffle_quantile_bins", "shuffle_quantile_protocol", "shuffle_quantile_rmse", "shuffle_quantiles"]


def shuffle_quantiles(
    x,
    q,
    *,
    epsilon: float,
    delta: float | None = None,
    bounds,
    rng: RNGLike = None,
    bins: int | str = "auto",
    **options,
) -> Estimate:
    """Quantiles from shuffled range counts (Ghazi et al. App. E): the first bin whose prefix count
    (noisy, then made monotone by isotonic regression) reaches qn.

    ``x`` is discretised into ``bins`` (a power of two; ``"auto"``: the one of least predicted RMSE at
    uniform data, :func:`shuffle_quantile_bins`) equal bins over the public ``bounds``,
    shifted by a public uniform fraction of a bin drawn from ``rng`` (dithered rounding, as the
    central and secure trees: :func:`privstats.cdf.tree.dithered_bounds`; on a fixed grid a tied
    value's release was off by the same amount in every run); the answer is the midpoint of the
    chosen bin.  (ε, δ)-DP in the shuffle model.

    >>> import numpy as np
    >>> x = np.random.default_rng(0).uniform(0, 1, 4000)
    >>> est = shuffle_quantiles(x, [0.5], epsilon=1.0, delta=1e-6, bounds=(0, 1), bins=8, rng=1)
    >>> bool(abs(est.value[0] - 0.5) < 0.2)
    True
    """
    epsilon = check_epsilon(epsilon, model="shuffle")
    lo, hi = check_bounds(bounds)
    xs = as_float_array(x, "x", bounds=(lo, hi))
    delta = require_delta(delta, xs.size)
    if isinstance(bins, str) and bins == "auto":
        bins = shuffle_quantile_bins(xs.size, epsilon, delta)
    bins = check_positive_int(bins, "bins", minimum=2, maximum=MAX_CELLS)
    if bins & (bins - 1):
        raise ValueError(f"bins must be a power of two, got {bins}")
    qs = np.atleast_1d(check_array(q, "q", ndim=None))
    if qs.ndim != 1 or qs.size == 0 or not np.all(np.isfinite(qs)) or np.any((qs < 0) | (qs > 1)):
        raise ValueError("q must be probabilities in [0, 1]")
    src = as_source(rng)  # rng=None: the OS CSPRNG, for the shift and the protocol alike
    (start, _), shift = dithered_bounds((lo, hi), bins, float(src.random()))
    width = (hi - lo) / (bins - 1)
    codes = np.clip(np.floor((xs - start) / width).astype(np.int64), 0, bins - 1)
    prefix = range_counts(
        codes,
        None,
        domain=bins,
        epsilon=epsilon,
        delta=delta,
        model="shuffle",
        rng=None if rng is None else src,
        postprocess="none",
        **options,
    )
    n = xs.size
    # monotone post-processing of #{x < bin end}: the isotonic fit, not the running maximum (which
    # follows the noise's highs: at n = 300 it crossed q = 0.25 bins early, 9 sd of bias on randhie)
    P = n * smooth(np.clip(prefix.value / n, 0.0, 1.0), "isotonic")
    idx = np.minimum(np.searchsorted(P, qs * n, side="left"), bins - 1)
    value = start + (idx + 0.5) * width
    return Estimate(
        value=value,
        stderr=None,
        guarantee=prefix.guarantee,
        model="shuffle",
        protocol="shuffle-range-quantiles",
        params={**prefix.params, "bins": bins, "bounds": (lo, hi), "grid_shift": shift},
        n=n,
        messages_per_user=prefix.messages_per_user,
        bits_per_user=prefix.bits_per_user,
        details={
            "q": qs,
            "prefix_counts": prefix.value,
            "prefix_stderr": prefix.stderr,
            "prefix_covariance": _box_covariance(prefix.details["terms"], prefix.details["node_variance"]),
            "bin_width": width,
            "grid_start": start,
        },
    )


def _box_covariance(terms, node_variance: np.ndarray) -> np.ndarray:
    """Covariance of box counts that sum independent noisy nodes: Σ over shared nodes of w w' var."""
    rows = np.repeat(np.arange(len(terms)), [len(t) for t in terms])
    cols = np.fromiter((node for t in terms for node in t), dtype=np.int64, count=rows.size)
    w = np.fromiter((v for t in terms for v in t.values()), dtype=float, count=rows.size)
    M = np.zeros((len(terms), node_variance.size))
    M[rows, cols] = w
    return (M * node_variance) @ M.T


def shuffle_quantile_protocol(n: int, epsilon: float, delta: float, bins: int) -> HadamardMultiMessage | None:
    """The prefix tree's protocol over ``bins`` leaves; ``None`` where it refuses these parameters or
    its messages are too many to simulate in process."""
    try:
        proto = HadamardMultiMessage(bins, n=n, epsilon=epsilon, delta=delta, k=1 + int(math.log2(bins)))
    except ValueError:
        return None
    return None if n * proto.messages_per_user > SIMULATE_MAX_MESSAGES else proto


def shuffle_quantile_rmse(n: int, epsilon: float, delta: float, bins: int) -> tuple[float, float] | None:
    """Predicted error of :func:`shuffle_quantiles` at uniform data, in units of the bounds' width:
    (the prefix count's noise over n, the dithered bin's rounding sd); ``None`` where
    :func:`shuffle_quantile_protocol` is."""
    proto = shuffle_quantile_protocol(n, epsilon, delta, bins)
    if proto is None:
        return None
    node_se = float(np.sqrt(proto.variance(np.zeros(1))[0]))
    return node_se * math.sqrt(math.log2(bins) / 2) / n, 1 / (bins - 1) / math.sqrt(12)


@functools.lru_cache(maxsize=128)
def shuffle_quantile_bins(n: int, epsilon: float, delta: float) -> int:
    """The power of two in [2, 1024] of least predicted RMSE (:func:`shuffle_quantile_rmse`): the
    rounding falls and the noise grows with the bins, so the search stops where the sum turns.

    >>> shuffle_quantile_bins(300, 2.0, 1e-6), shuffle_quantile_bins(5000, 2.0, 1e-6)
    (8, 64)
    """
    best, best_bins = math.inf, 2
    for bins in (2**j for j in range(1, 11)):
        err = shuffle_quantile_rmse(n, epsilon, delta, bins)
        if err is None or math.hypot(*err) >= best:
            break
        best, best_bins = math.hypot(*err), bins
    return best_bins
