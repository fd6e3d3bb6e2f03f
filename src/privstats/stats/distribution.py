"""Private distributions: ECDF, quantiles, ROC curve and Hosmer–Lemeshow calibration.

Implements Barczewski, Mawass & Ramon, *Differentially Private Empirical Cumulative
Distribution Functions* (with the errata of the research note) plus the best known
alternatives: a consistent b-ary tree (Hay et al.; OpenDP's reference), and the
exponential / joint exponential mechanisms for a few quantiles.

>>> import numpy as np, privstats
>>> x = np.random.default_rng(0).beta(2, 5, 20_000)
>>> res = privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), rng=0)
>>> bool(abs(res.evaluate(0.3) - np.mean(x <= 0.3)) < 0.01)
True
>>> q = privstats.quantiles(x, [0.5], epsilon=1.0, bounds=(0, 1), rng=0)
>>> bool(abs(q.value[0] - np.median(x)) < 0.01)
True
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from privstats.central import add_real_noise
from privstats.cdf.quantiles import (independent_exponential_quantiles, joint_exponential_quantiles)
from privstats.cdf.result import PrivateECDF
from privstats.cdf.smoothing import SMOOTHING_METHODS, smooth
from privstats.cdf.tree import choose_mechanism, grid_histogram, uniform_grid
from privstats.estimate import Estimate
from privstats.privacy import PureDP, discrete_laplace
from privstats.privacy.randomness import RNGLike, as_source
from privstats.validation import (as_binary_labels, as_float_array, check_bounds, check_choice, check_epsilon,
                                  check_positive_int, check_power_of_two, check_same_length)

__all__ = ["ecdf", "quantiles", "roc_curve", "hosmer_lemeshow"]

NEIGHBOURS = ("replace", "add-remove")


def _thresholds(grid, bounds) -> np.ndarray:
    lo, hi = bounds
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        return uniform_grid(bounds, check_positive_int(grid, "grid"))
    try:
        t = np.asarray(grid, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("grid must be an int (number of points) or an increasing array of thresholds") from None
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)):
        raise ValueError("grid must be an int or a non-empty finite 1-d array of thresholds")
    if np.any(np.diff(t) <= 0):
        raise ValueError("grid thresholds must be strictly increasing")
    if t[0] < lo or t[-1] > hi:
        raise ValueError(f"grid thresholds must lie inside bounds [{lo}, {hi}]")
    return t


def _private_cumulative(x: np.ndarray, thresholds: np.ndarray, bounds, *, epsilon: float, neighbours: str,
                        method: str, model: str, rng: RNGLike, n_servers: int = 2, protocol: str = "aggregation"):
    """Noisy ECDF values at ``thresholds`` (before smoothing), their exact stderr, mechanism and cost."""
    lo, hi = bounds
    internal = thresholds if thresholds[-1] >= hi else np.append(thresholds, hi)   # last point = total
    N = internal.size
    mech = choose_mechanism(N, epsilon, neighbours, method)
    n = x.size
    cost = {"messages_per_user": 0.0, "bits_per_user": 0.0}
    if model == "central":
        hist = grid_histogram(x, internal)
        noisy = mech.release(np.cumsum(hist[:-1]), rng=rng)
        name = mech.name
    else:
        cells = np.searchsorted(internal, x, side="left")
        if protocol == "fss":
            check_power_of_two(N, "grid")
            from privstats.secure.dcf import FSSECDFServer, fss_ecdf_keys
            from privstats.secure.noise import share_generator

            gen = share_generator(rng)
            k0, k1 = fss_ecdf_keys(cells, N.bit_length() - 1, rng=None if rng is None else int(gen.integers(2**62)))
            servers = [FSSECDFServer(k, mech, rng=None if rng is None else int(gen.integers(2**62))) for k in (k0, k1)]
            from privstats.secure.aggregation import open_partials

            noisy = open_partials([s.partial() for s in servers])
            cost = {"messages_per_user": 2.0, "bits_per_user": 16.0 * k0.key_bytes()}
            name = mech.name + "+fss-dcf"
        else:
            from privstats.secure.aggregation import SecureECDFAggregation

            proto = SecureECDFAggregation(mech, n_servers=n_servers, rng=rng)
            noisy = proto.run(cells) if n * (N + 1) <= 2**22 else proto.simulate(cells)
            cost = {"messages_per_user": float(n_servers), "bits_per_user": 128.0 * (n_servers - 1) + 64.0 * (N + 1)}
            name = mech.name + "+secure-aggregation"
    counts = mech.estimate_counts(noisy, n if neighbours == "replace" else None)
    sd = np.sqrt(mech.count_variance())
    total = float(n) if neighbours == "replace" else max(float(counts[-1]), 1.0)
    F = counts / total
    se = sd / total
    k = thresholds.size
    return F[:k], se[:k], mech, name, cost


def ecdf(x, *, epsilon: float, bounds, grid=1024, smoothing: str = "l2", neighbours: str = "replace",
         model: str = "central", method: str = "auto", rng: RNGLike = None, n_servers: int = 2,
         protocol: str = "aggregation") -> PrivateECDF:
    """ε-DP empirical CDF on a public grid, like ``scipy.stats.ecdf(x).cdf``.

    Parameters
    ----------
    x : array-like of values inside ``bounds`` (public, required).
    grid : number of uniform thresholds lo + i (hi - lo)/grid, or an increasing array.
    smoothing : ``"l2"`` (Eq. 3 QP), ``"l1"`` (Eq. 3 LP), ``"isotonic"`` or ``"none"``.
    neighbours : ``"replace"`` (n public, as in the paper) or ``"add-remove"`` (n private;
        the curve is divided by its noisy total).
    model : ``"central"`` or ``"secure"`` (m = ``n_servers`` servers with secret-shared
        counts and distributed noise; ``protocol="fss"`` uses two servers holding DCF
        keys, grid a power of two).
    method : ``"auto"`` (most accurate for the public parameters), ``"binary"`` (the
        paper's tree), ``"b-ary"`` or ``"b-ary:<b>"``.

    Returns a :class:`~privstats.cdf.result.PrivateECDF` (``evaluate``, ``quantile``,
    ``confidence_interval``, ``plot``, ``.estimate``).

    >>> import numpy as np
    >>> r = ecdf([0.1, 0.4, 0.4, 0.9], epsilon=1e6, bounds=(0, 1), grid=10, rng=0)
    >>> r.evaluate([0.4, 0.95]).tolist()
    [0.75, 1.0]
    """
    epsilon = check_epsilon(epsilon)
    bounds = check_bounds(bounds)
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    check_choice(smoothing, "smoothing", SMOOTHING_METHODS)
    check_choice(protocol, "protocol", ("aggregation", "fss"))
    if model not in ("central", "secure"):
        if model in ("local", "shuffle"):
            raise NotImplementedError(f"ecdf has no {model!r} protocol; use privstats.quantiles(model={model!r}) "
                                      "for quantiles, or model='central' / 'secure'")
        raise ValueError(f"model must be one of ['central', 'secure', 'local', 'shuffle'], got {model!r}")
    if model == "secure" and protocol == "aggregation" and (not isinstance(n_servers, int) or n_servers < 2):
        raise ValueError(f"n_servers must be an integer >= 2, got {n_servers!r}")
    xs = as_float_array(x, "x", bounds=bounds)
    thresholds = _thresholds(grid, bounds)
    raw, se, mech, name, cost = _private_cumulative(xs, thresholds, bounds, epsilon=epsilon, neighbours=neighbours,
                                                    method=method, model=model, rng=rng, n_servers=n_servers,
                                                    protocol=protocol)
    values = smooth(raw, smoothing)
    params = {**mech.params(), "smoothing": smoothing}
    if model == "secure":
        params.update(servers=2 if protocol == "fss" else n_servers, secure_protocol=protocol)
    est = Estimate(values, stderr=se, guarantee=PureDP(epsilon), model=model, protocol=name, params=params,
                   n=int(xs.size), neighbours=neighbours, details={"thresholds": thresholds, "raw": raw}, **cost)
    return PrivateECDF(thresholds, values, se, estimate=est, raw=raw)


def _auto_quantile_method(m: int, n: int) -> str:
    if m == 1:
        return "exponential"
    if m > 16:
        return "tree"
    return "joint" if n <= 50_000 else "independent"


def quantiles(x, q, *, epsilon: float, bounds, model: str = "central", method: str = "auto",
              neighbours: str = "replace", grid: int = 4096, rng: RNGLike = None, delta: float | None = None,
              **kwargs) -> Estimate:
    """ε-DP quantiles of ``x`` at probabilities ``q``.

    ``method``: ``"exponential"`` (Smith 2011, one quantile, or ε/m each for several
    — ``"independent"``), ``"joint"`` (JointExp, GJK 2021), ``"tree"`` (Algorithm 1
    on a private ECDF: any number of quantiles for one budget), or ``"auto"``: one
    quantile → exponential; more than 16 → tree; otherwise joint for n <= 50,000,
    else independent (faster at equal accuracy for large n; n is public under
    replace-one).  ``model="shuffle"`` delegates to
    ``privstats.stats.frequency.shuffle_quantiles`` ((ε, δ)); ``model="secure"`` uses
    the tree method over secure aggregation.

    >>> import numpy as np
    >>> x = np.random.default_rng(1).uniform(0, 10, 5000)
    >>> est = quantiles(x, [0.1, 0.9], epsilon=1.0, bounds=(0, 10), rng=2)
    >>> est.params["method"]
    'joint'
    """
    epsilon = check_epsilon(epsilon)
    bounds = check_bounds(bounds)
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if qs.ndim != 1 or qs.size == 0 or not np.all(np.isfinite(qs)) or np.any((qs < 0) | (qs > 1)):
        raise ValueError("q must be probabilities in [0, 1]")
    if model == "shuffle":
        try:
            from privstats.stats.frequency import shuffle_quantiles
        except (ImportError, AttributeError):
            raise NotImplementedError("model='shuffle' quantiles need privstats.stats.frequency.shuffle_quantiles, "
                                      "which is not available yet") from None
        return shuffle_quantiles(x, q, epsilon=epsilon, delta=delta, bounds=bounds, rng=rng, **kwargs)
    if model == "local":
        raise NotImplementedError("local-model quantiles are not supported here; use model='shuffle', 'secure' "
                                  "or 'central'")
    if model not in ("central", "secure"):
        raise ValueError(f"model must be one of ['central', 'secure', 'shuffle', 'local'], got {model!r}")
    xs = as_float_array(x, "x", bounds=bounds)
    chosen = _auto_quantile_method(qs.size, xs.size) if method == "auto" else method
    if model == "secure":
        chosen = "tree"
    check_choice(chosen, "method", ("exponential", "independent", "joint", "tree"))
    order = np.argsort(qs)
    if chosen == "tree":
        res = ecdf(xs, epsilon=epsilon, bounds=bounds, grid=grid, smoothing="isotonic", neighbours=neighbours,
                   model=model, rng=rng, **kwargs)
        values = np.asarray(res.quantile(qs))
        protocol, params = "ecdf-tree+algorithm1", {**res.estimate.params}
    else:
        sx = np.sort(xs)
        if chosen == "joint":
            v = joint_exponential_quantiles(sx, qs[order], epsilon=epsilon, bounds=bounds, rng=rng, neighbours=neighbours)
        else:
            v = independent_exponential_quantiles(sx, qs[order], epsilon=epsilon, bounds=bounds, rng=rng,
                                                  neighbours=neighbours)
        values = np.empty(qs.size)
        values[order] = v
        protocol, params = {"joint": "joint-exponential", "exponential": "exponential",
                            "independent": "independent-exponential"}[chosen], {}
    params.update(method=chosen, q=qs.tolist())
    return Estimate(values, stderr=None, guarantee=PureDP(epsilon), model=model, protocol=protocol, params=params,
                    n=int(xs.size), neighbours=neighbours, messages_per_user=0.0 if model == "central" else None)


def roc_curve(y_true, y_score, *, epsilon: float, bounds=(0.0, 1.0), labels: str = "public", grid: int = 1024,
              smoothing: str = "isotonic", method: str = "auto", model: str = "central", rng: RNGLike = None,
              **kwargs):
    """ε-DP ROC curve from two private ECDFs (scores of positives and of negatives).

    Returns ``fpr, tpr, thresholds, estimate``: the curve from (0, 0) to (1, 1) with
    "predict positive when score > threshold" (thresholds decreasing, from +inf to
    -inf), and an :class:`Estimate` whose ``value`` is the ROC AUC (trapezoids on the
    smoothed curve).

    ``labels="public"``: the classes and their sizes are public, a neighbour changes one
    score within its class, so each curve gets the full ε (parallel composition).
    ``labels="private"``: a neighbour may also flip a label, so each class curve is
    ε/2-DP under add/remove and normalised by its noisy total (basic composition: ε).
    Score orientation: higher = more likely positive (scikit-learn's convention).

    >>> import numpy as np
    >>> y = np.r_[np.zeros(500), np.ones(500)]; s = np.r_[np.linspace(0, .6, 500), np.linspace(.4, 1, 500)]
    >>> fpr, tpr, thr, est = roc_curve(y, s, epsilon=1.0, rng=0)
    >>> bool(abs(est.value - 0.944) < 0.03)
    True
    """
    epsilon = check_epsilon(epsilon)
    bounds = check_bounds(bounds)
    check_choice(labels, "labels", ("public", "private"))
    check_choice(smoothing, "smoothing", SMOOTHING_METHODS)
    y = as_binary_labels(y_true, "y_true")
    s = as_float_array(y_score, "y_score", bounds=bounds)
    check_same_length(y_true=y, y_score=s)
    eps_each, nb = (epsilon, "replace") if labels == "public" else (epsilon / 2, "add-remove")
    src = as_source(rng) if rng is not None else None
    curves = []
    for cls in (True, False):
        r = ecdf(s[y == cls], epsilon=eps_each, bounds=bounds, grid=grid, smoothing=smoothing, neighbours=nb,
                 method=method, model=model, rng=src, **kwargs)
        curves.append(r)
    pos, neg = curves
    tau = pos.quantiles
    tpr = np.concatenate([[0.0], 1.0 - pos.probabilities[::-1], [1.0]])
    fpr = np.concatenate([[0.0], 1.0 - neg.probabilities[::-1], [1.0]])
    thresholds = np.concatenate([[np.inf], tau[::-1], [-np.inf]])
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
    est = Estimate(auc, stderr=None, guarantee=PureDP(epsilon), model=model, protocol="roc-two-ecdfs",
                   params={"labels": labels, "epsilon_per_curve": eps_each, "smoothing": smoothing,
                           **{f"curve_{k}": v for k, v in pos.estimate.params.items()}},
                   n=int(y.size), neighbours="replace",
                   details={"fpr": fpr, "tpr": tpr, "thresholds": thresholds,
                            "positives": pos, "negatives": neg})
    return fpr, tpr, thresholds, est


def hosmer_lemeshow(y_true, y_prob, *, epsilon: float, groups: int = 10, depth: int = 10, min_expected: float = 0.5,
                    method: str = "auto", rng: RNGLike = None) -> Estimate:
    """ε-DP Hosmer–Lemeshow statistic and its p-value (Algorithm 2, corrected).

    Budget ε' = ε/(L+9): the group boundaries are the (q/Q)-quantiles of a private
    ECDF of the predicted probabilities on a 2^L grid ((L+1)ε'), then the 4Q counts
    E_1q = Σ p, E_0q = Σ (1-p), O_1q = Σ y, O_0q = Σ (1-y) over half-open groups
    (t_{q-1}, t_q] each get independent noise of scale 1/ε' (8 of them change under
    replace-one: 8ε').  Noisy E below ``min_expected`` is floored.  The p-value uses
    χ² with Q-2 degrees of freedom, which ignores the DP noise (approximate).

    Returns an :class:`Estimate` with ``value`` = H and ``details["p_value"]``.
    """
    epsilon = check_epsilon(epsilon)
    Q = check_positive_int(groups, "groups", minimum=3)
    L = check_positive_int(depth, "depth")
    y = as_binary_labels(y_true, "y_true").astype(np.float64)
    p = as_float_array(y_prob, "y_prob", bounds=(0.0, 1.0))
    check_same_length(y_true=y, y_prob=p)
    eps1 = epsilon / (L + 9)
    src = as_source(rng)
    curve = ecdf(p, epsilon=(L + 1) * eps1, bounds=(0.0, 1.0), grid=1 << L, smoothing="isotonic", method=method,
                 rng=src)
    cuts = np.maximum.accumulate(np.asarray(curve.quantile(np.arange(1, Q) / Q)))
    g = np.searchsorted(cuts, p, side="left")               # group q holds (t_{q-1}, t_q]
    E1 = np.bincount(g, weights=p, minlength=Q)
    E0 = np.bincount(g, weights=1 - p, minlength=Q)
    O1 = np.bincount(g, weights=y, minlength=Q).astype(np.int64)
    O0 = np.bincount(g, weights=1 - y, minlength=Q).astype(np.int64)
    E1n, _ = add_real_noise(E1, eps1, sensitivity=1.0, rng=src)
    E0n, _ = add_real_noise(E0, eps1, sensitivity=1.0, rng=src)
    O1n = O1 + np.asarray(discrete_laplace(1 / eps1, size=Q, rng=src))
    O0n = O0 + np.asarray(discrete_laplace(1 / eps1, size=Q, rng=src))
    E1c, E0c = np.maximum(E1n, min_expected), np.maximum(E0n, min_expected)
    H = float(np.sum((O1n - E1c) ** 2 / E1c + (O0n - E0c) ** 2 / E0c))
    pval = float(stats.chi2.sf(H, Q - 2))
    return Estimate(H, stderr=None, guarantee=PureDP(epsilon), model="central", protocol="hosmer-lemeshow-algorithm2",
                    params={"groups": Q, "depth": L, "epsilon_prime": eps1, "min_expected": min_expected,
                            "quantile_curve": curve.estimate.protocol},
                    n=int(y.size), neighbours="replace",
                    details={"p_value": pval, "thresholds": cuts, "E1": E1n, "E0": E0n, "O1": O1n, "O0": O0n,
                             "dof": Q - 2})
