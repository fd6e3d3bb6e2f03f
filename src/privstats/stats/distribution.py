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

import math
from functools import lru_cache

import numpy as np
from scipy import stats

from privstats.cdf.quantiles import independent_exponential_quantiles, joint_exponential_quantiles
from privstats.cdf.result import PrivateECDF
from privstats.cdf.smoothing import SMOOTHING_METHODS, smooth
from privstats.cdf.tree import choose_mechanism, grid_histogram, uniform_grid
from privstats.central import discrete_laplace_variance
from privstats.estimate import Estimate
from privstats.plan import Option, check_model, register, warn_if_useless
from privstats.privacy import PureDP, discrete_laplace
from privstats.privacy.randomness import RNGLike, as_source
from privstats.validation import (
    MAX_GRID,
    as_binary_labels,
    as_float_array,
    check_array,
    check_bounds,
    check_choice,
    check_epsilon,
    check_positive_int,
    check_power_of_two,
    check_real,
    check_rng,
    check_same_length,
)

__all__ = [
    "auc_variance",
    "ecdf",
    "hosmer_lemeshow",
    "hosmer_lemeshow_accounting",
    "quantiles",
    "raw_covariance",
    "roc_curve",
]

NEIGHBOURS = ("replace", "add-remove")


def _thresholds(grid, bounds) -> np.ndarray:
    lo, hi = bounds
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        return uniform_grid(bounds, check_positive_int(grid, "grid", maximum=MAX_GRID))
    try:
        t = np.asarray(grid, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "grid must be an int (number of points) or an increasing array of thresholds"
        ) from None
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)):
        raise ValueError("grid must be an int or a non-empty finite 1-d array of thresholds")
    if np.any(np.diff(t) <= 0):
        raise ValueError("grid thresholds must be strictly increasing")
    if t[0] < lo or t[-1] > hi:
        raise ValueError(f"grid thresholds must lie inside bounds [{lo}, {hi}]")
    return t


def _private_cumulative(
    x: np.ndarray,
    thresholds: np.ndarray,
    bounds,
    *,
    epsilon: float,
    neighbours: str,
    method: str,
    model: str,
    rng: RNGLike,
    n_servers: int = 2,
    protocol: str = "aggregation",
):
    """Noisy ECDF values at ``thresholds`` (before smoothing), their exact stderr, mechanism and cost."""
    _lo, hi = bounds
    internal = thresholds if thresholds[-1] >= hi else np.append(thresholds, hi)  # last point = total
    N = internal.size
    if model == "local":
        return _local_cumulative(x, thresholds, internal, epsilon=epsilon, method=method, rng=rng)
    mech = choose_mechanism(N, epsilon, neighbours, method)
    n = x.size
    cost = {"messages_per_user": 0.0, "bits_per_user": 0.0}
    if model == "central":
        hist = grid_histogram(x, internal)
        noisy = mech.release(np.cumsum(hist[:-1]), rng=rng)
        name = mech.name
    else:
        cells = np.searchsorted(internal, x, side="left")
        from privstats.secure.aggregation import DistributedNoiseMechanism, open_partials

        if protocol == "fss":
            check_power_of_two(N, "grid")
            from privstats.secure.dcf import FSSECDFServer, fss_ecdf_keys
            from privstats.secure.noise import share_generator

            seeds: list = [None, None, None]  # rng=None: OS CSPRNG for keys and noise
            if rng is not None:
                gen = share_generator(rng)
                seeds = [int(gen.integers(2**62)) for _ in range(3)]
            k0, k1 = fss_ecdf_keys(cells, N.bit_length() - 1, rng=seeds[0])
            servers = [FSSECDFServer(k, mech, rng=r) for k, r in zip((k0, k1), seeds[1:], strict=False)]
            noisy = open_partials([s.partial() for s in servers])
            cost = {"messages_per_user": 2.0, "bits_per_user": 16.0 * k0.key_bytes()}
            name = mech.name + "+fss-dcf"
            factor = 2.0
        else:
            from privstats.secure.aggregation import SecureECDFAggregation

            proto = SecureECDFAggregation(mech, n_servers=n_servers, rng=rng)
            noisy = proto.run(cells) if n * (N + 1) <= 2**22 else proto.simulate(cells)
            cost = {
                "messages_per_user": float(n_servers),
                "bits_per_user": 128.0 * (n_servers - 1) + 64.0 * (N + 1),
            }
            name = mech.name + "+secure-aggregation"
            factor = proto.variance_factor
        # every server's share is a full discrete Laplace (the guarantee holds against any one server
        # that knows its share and sees the output): the opened noise has `factor` x the central variance
        mech = DistributedNoiseMechanism(mech, factor)
    counts = mech.estimate_counts(noisy, n if neighbours == "replace" else None)
    sd = np.sqrt(mech.count_variance())
    total = float(n) if neighbours == "replace" else max(float(counts[-1]), 1.0)
    F = counts / total
    se = sd / total
    k = thresholds.size
    noise_model = {"mechanism": mech, "total": total, "public_total": neighbours == "replace", "values": F}
    return F[:k], se[:k], mech, name, cost, noise_model


def _local_cumulative(
    x: np.ndarray, thresholds: np.ndarray, internal: np.ndarray, *, epsilon: float, method: str, rng: RNGLike
):
    """Local model: each user reports its cell through a hierarchical histogram (see privstats.cdf.local)."""
    from privstats.cdf.local import LocalPrefixNoise, local_hierarchy, release_local_prefix_counts

    N, n = internal.size, x.size
    if N < 2:
        raise ValueError(
            "grid must have at least 2 cells for model='local' (one threshold below the upper bound)"
        )
    hh = local_hierarchy(N, epsilon, n, method)
    cells = np.searchsorted(internal, x, side="left")  # x counted at tau_i iff x <= tau_i
    counts, sd, _, info = release_local_prefix_counts(cells, hh, rng)
    F, se = counts / n, sd / n
    k = thresholds.size
    noise_model = {
        "mechanism": LocalPrefixNoise(hh, info["plug_in_counts"], info["level_sizes"]),
        "total": float(n),
        "public_total": True,
        "values": F,
    }
    params = {
        "mechanism": hh.name,
        "grid_points": N,
        "branching": hh.branching,
        "height": hh.height,
        "padded_leaves": hh.padded_size,
        "split": hh.split,
        "oracle": hh.oracle,
        "level_oracles": [o.name for o in hh.oracles],
        "path": info["path"],
        "level_sizes": info["level_sizes"].tolist(),
        "choice": "smallest mean exact prefix variance at uniform data" if method == "auto" else method,
    }
    cost = {"messages_per_user": float(hh.messages_per_user), "bits_per_user": float(hh.bits_per_user)}
    return F[:k], se[:k], params, "local-hierarchical-histogram", cost, noise_model


def ecdf(
    x,
    *,
    epsilon: float,
    bounds,
    grid=1024,
    smoothing: str | None = None,
    neighbours: str = "replace",
    model: str = "central",
    method: str = "auto",
    rng: RNGLike = None,
    n_servers: int = 2,
    protocol: str = "aggregation",
) -> PrivateECDF:
    """ε-DP empirical CDF on a public grid, like ``scipy.stats.ecdf(x).cdf``.

    Parameters
    ----------
    x : array-like of values inside ``bounds`` (public, required).
    grid : number of uniform thresholds lo + i (hi - lo)/grid, or an increasing array.
    smoothing : ``"l2"`` (Eq. 3 QP), ``"l1"`` (Eq. 3 LP), ``"isotonic"`` or ``"none"``;
        default ``"l2"``, or ``"isotonic"`` for ``model="local"`` (Eq. 3's corrections live on
        the paper's binary noise tree; for local noise the Euclidean projection is better).
    neighbours : ``"replace"`` (n public, as in the paper) or ``"add-remove"`` (n private;
        the curve is divided by its noisy total).
    model : ``"central"``, ``"secure"`` (m = ``n_servers`` servers with secret-shared
        counts and distributed noise; ``protocol="fss"`` uses two servers holding DCF
        keys, grid a power of two) or ``"local"`` (ε-LDP: each user reports its grid cell
        through a hierarchical histogram of frequency oracles; ``rng=None`` runs the real
        clients with the OS CSPRNG, a seed simulates the aggregate; n is public, so
        ``neighbours="replace"`` only).
    method : ``"auto"`` (most accurate for the public parameters), ``"binary"`` (the
        paper's tree), ``"b-ary"`` or ``"b-ary:<b>"`` (local: tree branching b; split
        and level oracle still chosen).

    Returns
    -------
    PrivateECDF
        A :class:`~privstats.cdf.result.PrivateECDF` (``evaluate``, ``quantile``,
        ``confidence_interval``, ``plot``, ``.estimate``).  The smoothed curve is monotone and in
        [0, 1]; the raw unbiased values are in ``.raw`` (``estimate.details["unbiased"]``);
        ``smoothing="none"`` releases them.

    Examples
    --------
    >>> import numpy as np
    >>> r = ecdf([0.1, 0.4, 0.4, 0.9], epsilon=1e6, bounds=(0, 1), grid=10, rng=0)
    >>> r.evaluate([0.4, 0.95]).tolist()
    [0.75, 1.0]
    """
    epsilon = check_epsilon(epsilon)
    bounds = check_bounds(bounds)
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    if smoothing is None:
        smoothing = "isotonic" if model == "local" else "l2"
    check_choice(smoothing, "smoothing", SMOOTHING_METHODS)
    check_choice(protocol, "protocol", ("aggregation", "fss"))
    check_model("ecdf", model)
    if not isinstance(method, str):
        raise ValueError(f"method must be 'auto', 'binary', 'b-ary' or 'b-ary:<b>', got {method!r}")
    check_positive_int(n_servers, "n_servers", minimum=2, maximum=1024)  # each holds a share of the grid
    epsilon = check_epsilon(epsilon, model=model)
    check_rng(rng)
    if model == "local" and neighbours != "replace":
        raise ValueError(
            "model='local' needs neighbours='replace': local DP protects each user's value, and the "
            "collector counts the reports, so n is public (add/remove would hide participation)"
        )
    if model == "secure" and protocol == "aggregation" and (not isinstance(n_servers, int) or n_servers < 2):
        raise ValueError(f"n_servers must be an integer >= 2, got {n_servers!r}")
    xs = as_float_array(x, "x", bounds=bounds)
    thresholds = _thresholds(grid, bounds)
    raw, se, mech, name, cost, noise_model = _private_cumulative(
        xs,
        thresholds,
        bounds,
        epsilon=epsilon,
        neighbours=neighbours,
        method=method,
        model=model,
        rng=rng,
        n_servers=n_servers,
        protocol=protocol,
    )
    values = smooth(raw, smoothing)
    params = {**(mech if model == "local" else mech.params()), "smoothing": smoothing}
    if model == "secure":
        params.update(servers=2 if protocol == "fss" else n_servers, secure_protocol=protocol)
    details = {"thresholds": thresholds, "raw": raw, "unbiased": raw, "noise_model": noise_model}
    if neighbours != "replace":
        # n is private under add/remove: publish only the noisy total the mechanism already released
        # (the last cumulative count, covered by the same epsilon), never the exact n
        details["noisy_n"] = float(noise_model["total"])
    else:
        warn_if_useless(
            "ecdf",
            float(np.max(se)) if se.size else None,
            n=int(xs.size),
            epsilon=epsilon,
            model=model,
            protocol=name,
            stacklevel=3,
        )
    est = Estimate(
        values,
        stderr=se,
        guarantee=PureDP(epsilon),
        model=model,
        protocol=name,
        params=params,
        n=int(xs.size) if neighbours == "replace" else None,
        neighbours=neighbours,
        details=details,
        support=(0.0, 1.0),
        **cost,
    )
    return PrivateECDF(thresholds, values, se, estimate=est, raw=raw)


def _auto_quantile_method(qs, n: int | None, epsilon: float, bounds, grid: int, ci_fraction: float) -> str:
    """The central method with the smallest predicted error (:func:`privstats.plan`), public values only.

    ``n`` is public under replace-one neighbours and passed then; under add/remove it is private
    (``None``) and the choice cannot use it: one quantile → exponential, 2..16 → independent
    (never slow, whatever the private n), more → tree.
    """
    from privstats.plan import plan

    m = np.asarray(qs).size
    if n is None:
        return "exponential" if m == 1 else "independent" if m <= 16 else "tree"
    best = plan(
        "quantiles",
        n=max(int(n), 2),
        epsilon=epsilon,
        bounds=bounds,
        q=qs,
        grid=grid,
        ci_fraction=ci_fraction,
        model="central",
        warn=False,
    ).best
    methods = {
        "exponential": "exponential",
        "independent-exponential": "independent",
        "joint-exponential": "joint",
    }
    return methods.get(best.protocol, "tree")


def _band_interval(thresholds, raw, se, qs, level, lo_bound):
    """Quantile intervals by inverting the pointwise band of a raw (unbiased) ECDF on a grid.

    The sample q-quantile lies in (t_{j-1}, t_j] for the first grid point t_j with F_n(t_j) >= q;
    the curve inverted is the isotonic projection of the raw one;
    the interval runs from the grid cell below the first point whose upper band reaches q to
    the first point whose lower band does (each side misses with probability ~(1 - level)/2).
    """
    from scipy.special import ndtri

    z = float(ndtri(0.5 + level / 2))
    t = np.asarray(thresholds, dtype=float)
    # the isotonic projection of the raw curve: a first crossing of a raw noisy curve over
    # thousands of grid points would be biased early (multiple comparisons)
    F = smooth(np.asarray(raw, dtype=float), "isotonic")
    up, down = F + z * np.asarray(se), F - z * np.asarray(se)
    i_lo = np.searchsorted(np.maximum.accumulate(up), qs, side="left")
    i_hi = np.searchsorted(np.maximum.accumulate(down), qs, side="left")
    grid = np.concatenate([[lo_bound], t])  # t_{-1} = lower bound
    top = t[-1]
    lo = grid[np.clip(i_lo, 0, t.size)]  # t_{i_lo - 1}
    hi = np.where(i_hi >= t.size, top, t[np.clip(i_hi, 0, t.size - 1)])
    return lo, np.maximum(hi, lo)


def quantiles(
    x,
    q,
    *,
    epsilon: float,
    bounds,
    model: str = "central",
    method: str = "auto",
    neighbours: str = "replace",
    grid: int = 4096,
    rng: RNGLike = None,
    delta: float | None = None,
    ci_fraction: float = 0.1,
    postprocess: str = "clip",
    **kwargs,
) -> Estimate:
    """ε-DP quantiles of ``x`` at probabilities ``q``, with confidence intervals.

    ``method``: ``"exponential"`` (Smith 2011, one quantile, or ε/m each for several
    — ``"independent"``), ``"joint"`` (JointExp, GJK 2021; 2..16 quantiles, n <= 50,000),
    ``"tree"`` (Algorithm 1 on a private ECDF: any number of quantiles for one budget), or
    ``"auto"``: the one with the smallest predicted error (``privstats.plan("quantiles", ...,
    model="central")``).  The choice uses only public information: n only under
    ``neighbours="replace"`` (where it is public); under ``"add-remove"`` n is private and
    one quantile uses exponential, 2..16 independent, more the tree.  ``model="shuffle"`` delegates to
    ``privstats.stats.frequency.shuffle_quantiles`` ((ε, δ), δ required); ``model="secure"``
    and ``"local"`` use the tree method over secure aggregation or local hierarchies.

    Uncertainty: ``est.ci(level)`` inverts the pointwise band of a raw private ECDF (the
    tree's own curve; for the exponential mechanisms a separate central ECDF with
    ``ci_fraction`` of ε, the point estimate getting the rest; ``ci_fraction=0``: no
    interval).  ``stderr`` is the 95% interval's half-width / 1.96.  Values are clipped into
    ``bounds`` and ordered with q (raw values in ``details["unbiased"]``; ``postprocess="none"``).

    >>> import numpy as np
    >>> x = np.random.default_rng(1).uniform(0, 10, 5000)
    >>> est = quantiles(x, [0.1, 0.9], epsilon=1.0, bounds=(0, 10), rng=2)
    >>> est.params["method"], bool(est.ci()[0][0] < 1.0 < est.ci()[1][0])  # m = 2: joint ties, slower
    ('independent', True)
    """
    epsilon = check_epsilon(epsilon)
    bounds = check_bounds(bounds)
    check_choice(neighbours, "neighbours", NEIGHBOURS)
    check_model("quantiles", model)
    check_choice(postprocess, "postprocess", ("clip", "none"))
    if not (isinstance(ci_fraction, (int, float)) and 0 <= ci_fraction < 1):
        raise ValueError(f"ci_fraction must be in [0, 1), got {ci_fraction!r}")
    qs = np.atleast_1d(check_array(q, "q", ndim=None))
    if qs.ndim != 1 or qs.size == 0 or not np.all(np.isfinite(qs)) or np.any((qs < 0) | (qs > 1)):
        raise ValueError("q must be probabilities in [0, 1]")
    check_choice(method, "method", ("auto", "exponential", "independent", "joint", "tree"))
    check_rng(rng)
    check_positive_int(grid, "grid", maximum=MAX_GRID)  # checked even where the method ignores it
    if "bins" in kwargs:
        check_positive_int(kwargs["bins"], "bins", minimum=2, maximum=MAX_GRID)
    if model == "shuffle":
        from privstats.stats.frequency import shuffle_quantiles

        est = shuffle_quantiles(x, q, epsilon=epsilon, delta=delta, bounds=bounds, rng=rng, **kwargs)
        d = est.details
        edges = bounds[0] + d["bin_width"] * np.arange(1, d["prefix_counts"].size + 1)
        n = est.n or 1
        shuffle_band = (edges, d["prefix_counts"] / n, np.asarray(d["prefix_stderr"]) / n)
        return _finish_quantiles(est, qs, shuffle_band, bounds, postprocess)
    xs = as_float_array(x, "x", bounds=bounds)
    public_n = xs.size if neighbours == "replace" else None  # n is private under add/remove
    if model in ("secure", "local") or method != "auto":
        chosen = method
    else:
        chosen = _auto_quantile_method(qs, public_n, epsilon, bounds, grid, ci_fraction)
    if model in ("secure", "local"):
        if method not in ("auto", "tree"):
            raise ValueError(
                f"model={model!r} quantiles use method='tree' (Algorithm 1 on a private ECDF), "
                f"got method={method!r}"
            )
        chosen = "tree"
    check_choice(chosen, "method", ("exponential", "independent", "joint", "tree"))
    order = np.argsort(qs)
    band: tuple | None = None
    if chosen == "tree":
        res = ecdf(
            xs,
            epsilon=epsilon,
            bounds=bounds,
            grid=grid,
            smoothing="isotonic",
            neighbours=neighbours,
            model=model,
            rng=rng,
            **kwargs,
        )
        values = np.asarray(res.quantile(qs))
        protocol, params = "ecdf-tree+algorithm1", {**res.estimate.params}
        cost = {
            "messages_per_user": res.estimate.messages_per_user,
            "bits_per_user": res.estimate.bits_per_user,
        }
        band = (res.quantiles, res.raw, res.stderr)
        eps_point = epsilon
    else:
        src = as_source(rng) if rng is not None else None
        eps_point = epsilon * (1 - ci_fraction)
        if ci_fraction > 0:
            res = ecdf(
                xs,
                epsilon=epsilon * ci_fraction,
                bounds=bounds,
                grid=min(grid, 1024),
                smoothing="none",
                neighbours=neighbours,
                model="central",
                rng=src,
            )
            band = (res.quantiles, res.raw, res.stderr)
        sx = np.sort(xs)
        if chosen == "joint":
            v = joint_exponential_quantiles(
                sx, qs[order], epsilon=eps_point, bounds=bounds, rng=src, neighbours=neighbours
            )
        else:
            v = independent_exponential_quantiles(
                sx, qs[order], epsilon=eps_point, bounds=bounds, rng=src, neighbours=neighbours
            )
            v = np.maximum.accumulate(v)  # post-processing: quantiles ordered like their levels
        values = np.empty(qs.size)
        values[order] = v
        protocol, params = (
            {
                "joint": "joint-exponential",
                "exponential": "exponential",
                "independent": "independent-exponential",
            }[chosen],
            {},
        )
        if ci_fraction > 0:
            params.update(ci_fraction=ci_fraction, interval="central ECDF band")
        cost = {"messages_per_user": 0.0, "bits_per_user": 0.0}
    params.update(method=chosen, q=qs.tolist())
    if model == "local":
        protocol = "ecdf-local-hierarchy+algorithm1"
    est = Estimate(
        values,
        stderr=None,
        guarantee=PureDP(epsilon),
        model=model,
        protocol=protocol,
        params=params,
        n=public_n,
        neighbours=neighbours,
        **cost,
    )  # n is private (None) under add/remove
    return _finish_quantiles(est, qs, band, bounds, postprocess)


def _finish_quantiles(est: Estimate, qs, band, bounds, postprocess) -> Estimate:
    """Clip into bounds, order with q, attach the band-inverted intervals (95%: ``stderr``)."""
    from dataclasses import replace

    raw = np.asarray(est.value, dtype=float)
    details = dict(est.details)
    value = raw
    if postprocess == "clip":
        order = np.argsort(qs, kind="stable")
        v = np.clip(raw, *bounds)
        v[order] = np.maximum.accumulate(v[order])
        value, details["unbiased"] = v, raw
    stderr = None
    if band is not None:
        t, F, se = band

        def ci_fn(level, t=t, F=F, se=se, qs=qs, lo=bounds[0]):
            return _band_interval(t, F, se, qs, level, lo)

        details["ci_fn"] = ci_fn
        lo95, hi95 = ci_fn(0.95)
        stderr = (hi95 - lo95) / (2 * 1.959963984540054)
        details["interval_method"] = "inverted pointwise band of a raw private ECDF"
    return replace(
        est, value=value, stderr=stderr, details=details, support=(float(bounds[0]), float(bounds[1]))
    )


def raw_covariance(result: PrivateECDF) -> np.ndarray:
    """Covariance of the unsmoothed released values ``result.raw`` given the data.

    Exact when the curve is normalised by a public n (replace-one): the noise is
    linear, Cov = Cov(counts) / n^2.  Under add/remove the curve is counts / noisy
    total, and this is the delta-method covariance J Cov(counts) J^T with
    J = (I - F e_last^T) / total (evaluated at the released values).
    """
    nm = result.estimate.details["noise_model"]
    cov_counts = nm["mechanism"].count_covariance()
    k = result.raw.size
    total = nm["total"]
    if nm["public_total"]:
        return cov_counts[:k, :k] / total**2
    F = nm["values"]
    J = np.zeros((k, F.size))
    J[:, :k] = np.eye(k)
    J[:, -1] -= F[:k]
    J /= total
    return J @ cov_counts @ J.T


def _auc_terms(pos_raw: np.ndarray, neg_raw: np.ndarray):
    """AUC of the curve (1 - neg, 1 - pos) and its gradients w.r.t. the two raw curves."""
    tpr = np.concatenate([[0.0], 1.0 - pos_raw[::-1], [1.0]])
    fpr = np.concatenate([[0.0], 1.0 - neg_raw[::-1], [1.0]])
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
    # d auc / d tpr_j = (fpr_{j+1} - fpr_{j-1}) / 2,  d auc / d fpr_j = (tpr_{j-1} - tpr_{j+1}) / 2 (inner j)
    g_tpr = (fpr[2:] - fpr[:-2]) / 2
    g_fpr = (tpr[:-2] - tpr[2:]) / 2
    return auc, -g_tpr[::-1], -g_fpr[::-1]  # chain rule: tpr_j = 1 - pos_{N+1-j}


def _second_difference_cov(A: np.ndarray) -> np.ndarray:
    """Cov of (a_{j+1} - a_{j-1})_j for a ~ Cov A, with a_0 = a_{N+1} = 0."""
    Ap = np.zeros((A.shape[0] + 2, A.shape[1] + 2))
    Ap[1:-1, 1:-1] = A
    return Ap[2:, 2:] - Ap[2:, :-2] - Ap[:-2, 2:] + Ap[:-2, :-2]


def auc_variance(pos_raw, neg_raw, cov_pos, cov_neg) -> tuple[float, float]:
    """(exact variance, unbiased estimate) for the AUC of two noisy curves with independent noise.

    The trapezoidal AUC is bilinear in the two curves: AUC(p + e, q + f) - AUC(p, q) =
    g_p^T e + g_q^T f + (1/2) sum_j e_j (f_{j+1} - f_{j-1}) (in curve order, up to sign).
    The three terms are uncorrelated, so Var = g_p^T S_p g_p + g_q^T S_q g_q + T with
    T = (1/4) tr(S_p D S_q D^T).  Called with the true curves it returns the exact
    variance; with the released curves, E[plug-in] = Var + 2T, so ``plug-in - 2T``
    (floored at T, the variance's minimum) is the unbiased estimate returned second.
    """
    _, g_pos, g_neg = _auc_terms(pos_raw, neg_raw)
    cross = 0.25 * float(np.sum(cov_pos[::-1, ::-1] * _second_difference_cov(cov_neg[::-1, ::-1])))
    lin = float(g_pos @ cov_pos @ g_pos + g_neg @ cov_neg @ g_neg)
    return lin + cross, max(lin - cross, cross)


def roc_curve(
    y_true,
    y_score,
    *,
    epsilon: float,
    bounds=(0.0, 1.0),
    labels: str = "public",
    grid: int = 1024,
    smoothing: str = "isotonic",
    method: str = "auto",
    model: str = "central",
    rng: RNGLike = None,
    **kwargs,
):
    """ε-DP ROC curve from two private ECDFs (scores of positives and of negatives).

    Returns ``fpr, tpr, thresholds, estimate``: the curve from (0, 0) to (1, 1) with
    "predict positive when score > threshold" (thresholds decreasing, from +inf to
    -inf), and an :class:`Estimate` whose ``value`` is the ROC AUC (trapezoids on the
    smoothed curve).  ``stderr`` is that of the AUC of the unsmoothed curves
    (``details["auc_raw"]``, unbiased for the AUC on the grid): the AUC is bilinear in
    the two independent noisy curves, so its variance given the data is exact
    (:func:`auc_variance`; public labels) or a delta-method approximation (private
    labels: curves divided by noisy totals); it is estimated without bias from the
    released curves.  Smoothing is post-processing that usually shrinks the error, so
    for a smoothed curve the stderr is a conservative guide, checked by Monte Carlo.

    ``labels="public"``: the classes and their sizes are public, a neighbour changes one
    score within its class, so each curve gets the full ε (parallel composition).
    ``labels="private"``: a neighbour may also flip a label, so each class curve is
    ε/2-DP under add/remove and normalised by its noisy total (basic composition: ε).
    ``model="local"`` (public labels only): each user reports its score's grid cell with
    the full ε into its class's hierarchical histogram (one report per user); the AUC
    variance uses the exact noise covariance at the plug-in cell counts.
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
    check_model("roc_curve", model)
    y = as_binary_labels(y_true, "y_true")
    s = as_float_array(y_score, "y_score", bounds=bounds)
    check_same_length(y_true=y, y_score=s)
    if model == "local" and labels == "private":
        raise ValueError(
            "model='local' roc_curve needs labels='public': with private labels a user would have to "
            "hide its class, which the per-class local histograms do not; use model='central' or "
            "'secure' for private labels"
        )
    eps_each, nb = (epsilon, "replace") if labels == "public" else (epsilon / 2, "add-remove")
    src = as_source(rng) if rng is not None else None
    curves = []
    for cls in (True, False):
        r = ecdf(
            s[y == cls],
            epsilon=eps_each,
            bounds=bounds,
            grid=grid,
            smoothing=smoothing,
            neighbours=nb,
            method=method,
            model=model,
            rng=src,
            **kwargs,
        )
        curves.append(r)
    pos, neg = curves
    tau = pos.quantiles
    tpr = np.concatenate([[0.0], 1.0 - pos.probabilities[::-1], [1.0]])
    fpr = np.concatenate([[0.0], 1.0 - neg.probabilities[::-1], [1.0]])
    thresholds = np.concatenate([[np.inf], tau[::-1], [-np.inf]])
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
    auc_raw, _, _ = _auc_terms(pos.raw, neg.raw)
    _, var_hat = auc_variance(pos.raw, neg.raw, raw_covariance(pos), raw_covariance(neg))
    est = Estimate(
        auc,
        stderr=float(np.sqrt(max(var_hat, 0.0))),
        guarantee=PureDP(epsilon),
        model=model,
        protocol="roc-two-ecdfs",
        params={
            "labels": labels,
            "epsilon_per_curve": eps_each,
            "smoothing": smoothing,
            **{f"curve_{k}": v for k, v in pos.estimate.params.items()},
        },
        n=int(y.size),
        neighbours="replace",
        **(
            {
                "messages_per_user": max(pos.estimate.messages_per_user, neg.estimate.messages_per_user),
                "bits_per_user": max(pos.estimate.bits_per_user, neg.estimate.bits_per_user),
            }
            if model == "local"
            else {}
        ),
        support=(0.0, 1.0),
        details={
            "fpr": fpr,
            "tpr": tpr,
            "thresholds": thresholds,
            "auc_raw": auc_raw,
            "unbiased": auc_raw,
            "stderr_method": (
                "exact noise covariance at the plug-in cell counts (unsmoothed)"
                if model == "local"
                else "exact (unsmoothed, public labels)"
            )
            if labels == "public"
            else "delta method (curves divided by noisy class totals)",
            "positives": pos,
            "negatives": neg,
        },
    )
    return fpr, tpr, thresholds, est


HL_BUDGETS = ("split", "tight", "paper")
HL_QUANTILE_FRACTION = 0.2  # "split": share of ε for the quantile ECDF
HL_STEPS = 1 << 20  # predicted probabilities are snapped to multiples of 2^-20


def hosmer_lemeshow_accounting(epsilon: float, depth: int, budget: str = "tight") -> dict:
    """Privacy accounting of :func:`hosmer_lemeshow`, computed from sensitivities and noise scales.

    Each record's predicted probability is snapped to k/K (K = 2^20) *before* summing,
    so E_1q = sum k / K and E_0q = sum (K - k) / K are integers in steps of 1/K and
    rounding adds no slack to the sensitivities (snapping the sums instead could move
    each of the 4 changed E coordinates one extra step).  Under replace-one a record
    leaves group a and joins group b:

    * ``"tight"`` (ε' = ε/(L+5)): the E vector (2Q coordinates) changes by at most
      p + (1-p) + p' + (1-p') = 2 in L1 (2K steps), the O vector by 2, so per-coordinate
      noise of scale K/ε' steps (E) and 1/ε' (O) costs 2ε' + 2ε';
    * ``"paper"`` (ε' = ε/(L+9), Theorem 5.1): 8 coordinates change, each by at most
      K steps (E) or 1 (O), each ε'-DP: 8ε'.

    plus (L+1)ε' for the quantile ECDF; ``"split"`` (as tight, but the quantile ECDF gets a
    fixed 20% of ε whatever L, so the sums get ε' = 0.8ε/4: at L = 10 their noise is 3.75x
    smaller; the ECDF only places the group cuts, whose error does not bias H).  Returns the per-part
    guarantees and their
    basic composition (``total``), which equals ε.

    >>> acc = hosmer_lemeshow_accounting(1.0, 10)
    >>> round(acc["epsilon_prime"] * 15, 12), round(acc["total"].epsilon, 12)
    (1.0, 1.0)
    """
    from fractions import Fraction

    from privstats.privacy import basic_composition

    check_choice(budget, "budget", HL_BUDGETS)
    L = int(depth)
    extra = 4 if budget in ("tight", "split") else 8
    eps1 = epsilon / (L + 1 + extra)
    eps_q = (L + 1) * eps1
    if budget == "split":  # the ECDF only places the group cuts: a fixed share, the sums get the rest
        eps_q = HL_QUANTILE_FRACTION * epsilon
        eps1 = (epsilon - eps_q) / 4
    scale_e = Fraction(HL_STEPS) / Fraction(eps1)  # steps of 1/K
    scale_o = 1 / Fraction(eps1)
    if budget in ("tight", "split"):
        parts = {
            "quantile_ecdf": PureDP(eps_q),
            "expected": PureDP(float(Fraction(2 * HL_STEPS) / scale_e)),  # L1 sensitivity 2K steps
            "observed": PureDP(float(Fraction(2) / scale_o)),
        }  # L1 sensitivity 2
    else:
        parts = {
            "quantile_ecdf": PureDP(eps_q),
            "expected": PureDP(float(4 * (Fraction(HL_STEPS) / scale_e))),  # 4 coordinates, K steps each
            "observed": PureDP(float(4 * (Fraction(1) / scale_o))),
        }  # 4 coordinates, 1 each
    return {
        "budget": budget,
        "epsilon_prime": eps1,
        "scale_expected_steps": scale_e,
        "scale_observed": scale_o,
        "epsilon_quantile": eps_q,
        "steps": HL_STEPS,
        "parts": parts,
        "total": basic_composition(list(parts.values())),
    }


def hl_group_sums(y: np.ndarray, prob: np.ndarray, cuts: np.ndarray, groups: int):
    """Integer group sums (E_1, E_0 in steps of 1/K; O_1, O_0) over (t_{q-1}, t_q]."""
    g = np.searchsorted(cuts, prob, side="left")
    k = np.rint(prob * HL_STEPS).astype(np.int64)
    E1 = np.bincount(g, weights=k, minlength=groups).astype(np.int64)
    size = np.bincount(g, minlength=groups).astype(np.int64)
    O1 = np.bincount(g, weights=y, minlength=groups).astype(np.int64)
    return E1, size * HL_STEPS - E1, O1, size - O1


def _hl_statistic(E1, E0, O1, O0, min_expected):
    E1c, E0c = np.maximum(E1, min_expected), np.maximum(E0, min_expected)
    return np.sum((O1 - E1c) ** 2 / E1c + (O0 - E0c) ** 2 / E0c, axis=-1)


def _dlap_sim(gen: np.random.Generator, scale: float, shape) -> np.ndarray:
    """Discrete Laplace draws for simulation only (difference of two geometrics)."""
    q = -np.expm1(-1.0 / scale)
    return (gen.geometric(q, shape) - gen.geometric(q, shape)).astype(np.float64)


def _hl_simulate(E1, E0, O1, O0, scale_e_steps, scale_o, min_expected, gen, reps):
    """H of ``reps`` re-noised copies of the given true-count plug-ins (post-processing only)."""
    Q = E1.size
    ne = _dlap_sim(gen, scale_e_steps, (reps, 2, Q)) / HL_STEPS
    no = _dlap_sim(gen, scale_o, (reps, 2, Q))
    return _hl_statistic(E1 + ne[:, 0], E0 + ne[:, 1], O1 + no[:, 0], O0 + no[:, 1], min_expected)


def hl_uncertainty(
    E1n,
    E0n,
    O1n,
    O0n,
    accounting: dict,
    *,
    min_expected: float = 0.5,
    bootstrap: int = 2000,
    rng=None,
    shrink: bool = True,
) -> tuple[float, float]:
    """(p-value, stderr) of the DP Hosmer–Lemeshow statistic from the released sums (post-processing).

    See :func:`hosmer_lemeshow`; ``shrink=False`` plugs the raw noisy residuals in (biased
    upwards: their square carries the noise variance twice), kept for tests.
    """
    gen = np.random.default_rng(rng)
    scale_e, scale_o = float(accounting["scale_expected_steps"]), float(accounting["scale_observed"])
    var_e = discrete_laplace_variance(scale_e) / HL_STEPS**2
    var_o = discrete_laplace_variance(scale_o)
    H = float(_hl_statistic(E1n, E0n, O1n, O0n, min_expected))
    E1h, E0h = np.maximum(E1n, min_expected), np.maximum(E0n, min_expected)
    Q = E1h.size
    n_q = np.maximum(np.rint(E1h + E0h), 1).astype(np.int64)
    O1_null = gen.binomial(n_q, np.clip(E1h / (E1h + E0h), 0, 1), size=(bootstrap, Q)).astype(np.float64)
    null = _hl_simulate(E1h, E0h, O1_null, n_q - O1_null, scale_e, scale_o, min_expected, gen, bootstrap)
    p_value = float((1 + np.count_nonzero(null >= H)) / (1 + bootstrap))
    plug = []
    for O, E in ((O1n, E1h), (O0n, E0h)):
        d = O - E
        plug.append(E + np.sign(d) * np.sqrt(np.maximum(d**2 - var_o - var_e, 0.0)) if shrink else O)
    sims = _hl_simulate(E1h, E0h, plug[0], plug[1], scale_e, scale_o, min_expected, gen, bootstrap)
    return p_value, float(np.std(sims, ddof=1))


def hosmer_lemeshow(
    y_true,
    y_prob,
    *,
    epsilon: float,
    groups: int = 10,
    depth: int | None = None,
    min_expected: float = 0.5,
    method: str = "auto",
    budget: str = "split",
    bootstrap: int = 2000,
    rng: RNGLike = None,
    model: str = "central",
) -> Estimate:
    """ε-DP Hosmer–Lemeshow statistic with a noise-aware p-value and standard error (Algorithm 2, corrected).

    The group boundaries are the (q/Q)-quantiles of a private ECDF of the predicted
    probabilities on a 2^L grid ((L+1)ε'), then the 4Q sums E_1q = Σ p, E_0q = Σ (1-p),
    O_1q = Σ y, O_0q = Σ (1-y) over half-open groups (t_{q-1}, t_q] get independent
    exact discrete Laplace noise of scale 1/ε' (E on a 2^-20 grid, each p snapped
    first).  ``budget="tight"`` uses ε' = ε/(L+5) (the count vectors have L1
    sensitivity 2 + 2), ``"paper"`` Theorem 5.1's ε/(L+9); see
    :func:`hosmer_lemeshow_accounting` (in ``details["accounting"]``).  Noisy E below
    ``min_expected`` is floored.

    Uncertainty (post-processing of the released sums, parametric bootstrap from the
    known noise distribution, ``bootstrap`` draws):

    * ``details["p_value"]``: null "the model is calibrated": given the released group
      sizes n_q = E_1q + E_0q and mean probabilities E_1q / n_q, positives are
      Binomial(n_q, E_1q / n_q) per group (a held-out evaluation; slightly conservative,
      since a sum of Bernoulli(p_i) is less dispersed), then the same DP noise and
      flooring; p = (1 + #{H* >= H}) / (1 + B).  ``details["p_value_chi2"]`` is the
      classical χ²_{Q-2} tail, which ignores the DP noise and is anti-conservative at
      small ε.
    * ``stderr``: the standard deviation of H given the data, by re-noising plug-in true
      sums: E = released E, O - E = released difference shrunk by its noise variance
      (sign(d) sqrt(max(d² - s², 0))), so the squared residuals are not double-counted.

    ``model="secure"``: two non-colluding servers aggregate each client's label-split one-hot
    cell of its probability on a 2^depth grid (default depth 6: at n ≈ 6,000 and ε = 1 its
    stderr is ~4x smaller than at depth 10); H is a post-processing of the two released class
    curves (:mod:`privstats.secure.hosmer_lemeshow`), identical in law to the leader/helper
    deployment (``privstats serve leader|helper``, statistic ``hosmer_lemeshow``).

    >>> import numpy as np
    >>> rng = np.random.default_rng(0); p = rng.uniform(0.1, 0.9, 20_000); y = rng.uniform(size=p.size) < p
    >>> est = hosmer_lemeshow(y.astype(int), p, epsilon=10.0, budget="tight", rng=1)
    >>> est.params["epsilon_prime"] == 10.0 / 15, bool(est.details["p_value"] > 0.001)
    (True, True)
    """
    epsilon = check_epsilon(epsilon)
    check_model("hosmer_lemeshow", model)
    if depth is None:
        depth = 6 if model == "secure" else 10
    L = check_positive_int(depth, "depth", maximum=24)  # the quantile grid has 2^depth cells
    Q = check_positive_int(groups, "groups", minimum=3, maximum=1 << L)
    B = check_positive_int(bootstrap, "bootstrap", minimum=100, maximum=10**6)  # B x groups bootstrap draws
    if check_real(min_expected, "min_expected") <= 0:
        raise ValueError(
            f"min_expected must be > 0 (the statistic divides by the floored E), got {min_expected!r}"
        )
    if not isinstance(method, str):
        raise ValueError(f"method must be 'auto', 'binary', 'b-ary' or 'b-ary:<b>', got {method!r}")
    check_choice(budget, "budget", HL_BUDGETS)
    y = as_binary_labels(y_true, "y_true").astype(np.float64)
    p = as_float_array(y_prob, "y_prob", bounds=(0.0, 1.0))
    check_same_length(y_true=y, y_prob=p)
    if model == "secure":
        from privstats.secure.histogram import SecureSpec, release_in_process

        spec = SecureSpec("hosmer_lemeshow", epsilon=epsilon, bounds=(0.0, 1.0), grid=1 << L)
        est = release_in_process(spec, p, y.astype(np.int64), rng=rng, groups=Q)
        warn_if_useless(
            "hosmer_lemeshow",
            est.stderr,
            n=int(y.size),
            epsilon=epsilon,
            model="secure",
            protocol=est.protocol,
            stacklevel=3,
        )
        return est
    acc = hosmer_lemeshow_accounting(epsilon, L, budget)
    eps1 = acc["epsilon_prime"]
    src = as_source(rng)
    curve = ecdf(
        p,
        epsilon=acc["epsilon_quantile"],
        bounds=(0.0, 1.0),
        grid=1 << L,
        smoothing="isotonic",
        method=method,
        rng=src,
    )
    cuts = np.maximum.accumulate(np.asarray(curve.quantile(np.arange(1, Q) / Q)))
    E1, E0, O1, O0 = hl_group_sums(y, p, cuts, Q)
    noise_e = np.asarray(discrete_laplace(acc["scale_expected_steps"], size=2 * Q, rng=src), dtype=np.int64)
    noise_o = np.asarray(discrete_laplace(acc["scale_observed"], size=2 * Q, rng=src), dtype=np.int64)
    E1n, E0n = (E1 + noise_e[:Q]) / HL_STEPS, (E0 + noise_e[Q:]) / HL_STEPS
    O1n, O0n = (O1 + noise_o[:Q]).astype(np.float64), (O0 + noise_o[Q:]).astype(np.float64)
    H = float(_hl_statistic(E1n, E0n, O1n, O0n, min_expected))
    # the noise adds about (var_O + var_E)/E to each of the 2Q cells in expectation: remove it
    noise_var = (
        discrete_laplace_variance(float(acc["scale_observed"]))
        + discrete_laplace_variance(float(acc["scale_expected_steps"])) / HL_STEPS**2
    )
    H_unbiased = H - float(np.sum(noise_var / np.maximum(np.r_[E1n, E0n], min_expected)))

    gen = np.random.default_rng(src.uint64(4).tolist() if rng is None else int(src.integers(2**62)))
    p_value, stderr = hl_uncertainty(E1n, E0n, O1n, O0n, acc, min_expected=min_expected, bootstrap=B, rng=gen)
    warn_if_useless(
        "hosmer_lemeshow",
        stderr,
        n=int(y.size),
        epsilon=epsilon,
        model="central",
        protocol="hosmer-lemeshow-algorithm2",
        stacklevel=3,
    )
    return Estimate(
        max(H_unbiased, 0.0),
        stderr=stderr,
        support=(0.0, math.inf),
        guarantee=acc["total"],
        model="central",
        protocol="hosmer-lemeshow-algorithm2",
        params={
            "groups": Q,
            "depth": L,
            "budget": budget,
            "epsilon_prime": eps1,
            "min_expected": min_expected,
            "bootstrap": B,
            "quantile_curve": curve.estimate.protocol,
        },
        n=int(y.size),
        neighbours="replace",
        details={
            "p_value": p_value,
            "p_value_chi2": float(stats.chi2.sf(H, Q - 2)),
            "unbiased": H_unbiased,
            "H_plain": H,
            "noise_bias": H - H_unbiased,
            "thresholds": cuts,
            "E1": E1n,
            "E0": E0n,
            "O1": O1n,
            "O0": O0n,
            "dof": Q - 2,
            "accounting": acc,
            "p_value_method": "parametric bootstrap under calibration (Binomial) with DP noise",
            "stderr_method": "parametric bootstrap of the DP noise at shrunk plug-in sums",
        },
    )


# ---------------------------------------------------------------------------------------------
# planner registrations: predicted error and cost from public parameters only (uniform data)
# ---------------------------------------------------------------------------------------------
def _short(params: dict) -> dict:
    return {k: params[k] for k in ("branching", "height") if k in params}


def _central_curve(n, epsilon, grid, method="auto"):
    mech = choose_mechanism(int(grid), epsilon, "replace", method)  # one cell per threshold
    return mech, float(np.sqrt(np.mean(mech.count_variance()[:-1]))) / n


@register("ecdf", "central", "tree")
def _plan_ecdf_central(*, n, epsilon, grid=1024, **_):
    """RMS over the grid of the raw curve's exact stderr (smoothing only lowers it)."""
    mech, se = _central_curve(n, epsilon, grid)
    return Option("central", mech.name, _short(mech.params()), se)


@register("ecdf", "secure", "tree+secure-aggregation")
def _plan_ecdf_secure(*, n, epsilon, grid=1024, n_servers=2, **_) -> Option:
    from privstats.secure.noise import noise_variance_factor

    mech, se = _central_curve(n, epsilon, grid)
    se *= math.sqrt(noise_variance_factor(n_servers))  # every server's share is a full noise
    return Option(
        "secure",
        mech.name + "+secure-aggregation",
        {**_short(mech.params()), "servers": n_servers},
        se,
        messages_per_user=float(n_servers),
        bits_per_user=128.0 * (n_servers - 1) + 64.0 * (grid + 2),
    )


@register("ecdf", "local", "hierarchical-histogram")
def _plan_ecdf_local(*, n, epsilon, grid=1024, **_) -> Option:
    from privstats.cdf.local import local_hierarchy, mean_prefix_variance

    hh = local_hierarchy(int(grid), epsilon, n, "auto")  # one cell per threshold (the last is the bound)
    return Option(
        "local",
        "local-hierarchical-histogram",
        {"branching": hh.branching, "height": hh.height},
        math.sqrt(mean_prefix_variance(hh, n)) / n,
        messages_per_user=float(hh.messages_per_user),
        bits_per_user=float(hh.bits_per_user),
    )


def _width(bounds):
    return 1.0 if bounds is None else float(bounds[1]) - float(bounds[0])


def _quantile_levels(q) -> tuple[float, ...]:
    return tuple(float(v) for v in np.atleast_1d(q))


@register("quantiles", "central", "exponential")
def _plan_quantiles_exp(*, n, epsilon, bounds=None, q=(0.5,), ci_fraction=0.1, **_):
    """Independent exponential mechanisms at ε' = ε(1 − ci_fraction)/m each: rank error
    Laplace(2m/ε') (variance 8m²/ε'²) plus ≈ 4 ranks² from the random spacing it samples
    within (uniform data, where one rank is (hi − lo)/n in value)."""
    m = len(_quantile_levels(q))
    eps = epsilon * (1 - ci_fraction) / m
    return Option(
        "central",
        "exponential" if m == 1 else "independent-exponential",
        {"ci_fraction": ci_fraction},
        _width(bounds) * math.sqrt(8 / eps**2 + 4) / n,
    )


JOINT_MAX_N = 50_000  # JointExp costs O(m n log n) per call: larger n use the independent mechanisms


@register("quantiles", "central", "joint-exponential")
def _plan_quantiles_joint(*, n, epsilon, bounds=None, q=(0.5,), ci_fraction=0.1, **_):
    """JointExp (2..16 quantiles, n <= 50,000): its density is a product over the quantiles of
    exp(−ε'|rank error|/4) under the ordering constraint, so each rank error ≈ Laplace(4/ε')
    (variance 32/ε'²) plus the spacing's 4 ranks².  Measured/predicted at n = 2e4, ε = 1:
    1.02 (m = 3), 0.91 (m = 5), 1.5 (m = 16: the ordering couples close quantiles)."""
    m = len(_quantile_levels(q))
    if not 2 <= m <= 16 or n > JOINT_MAX_N:
        return None
    eps = epsilon * (1 - ci_fraction)
    return Option(
        "central",
        "joint-exponential",
        {"ci_fraction": ci_fraction},
        _width(bounds) * math.sqrt(32 / eps**2 + 4) / n,
    )


@lru_cache(maxsize=64)
def _tree_quantile_rmse(model: str, n: int, epsilon: float, grid: int, qs: tuple[float, ...]) -> float:
    """RMS error (in units of the bounds' width) of Algorithm 1 on the isotonic private ECDF at uniform data.

    Isotonic smoothing pools the tree's strongly correlated noise around the crossing (about 0.6x the
    curve's own stderr for the local tree at n = 2e4, ε = 1), which no closed form captures; so the
    release is drawn 200 times from its law with a fixed seed: the local protocol's aggregate from its
    sufficient statistic (``simulate_counts``: the clients' law), the central tree's noise (the
    secure model's: two full noise shares).  Public parameters only; a few ms a draw at any n.
    """
    from privstats.cdf.local import local_hierarchy
    from privstats.cdf.quantiles import inverse_ecdf

    t = uniform_grid((0.0, 1.0), grid)  # the last threshold is the upper bound: grid cells
    # evenly spread (uniform) data (i + ½)/n: #{i : (i + ½)/n <= t} per threshold, in O(grid)
    below = np.clip(np.floor(t * n - 0.5) + 1, 0, n).astype(np.int64)
    below[-1] = n
    counts = np.diff(below, prepend=0)
    q = np.asarray(qs)
    truth = t[np.searchsorted(np.cumsum(counts), np.ceil(q * n), side="left")]
    gen = np.random.default_rng(20261125)
    errs = np.empty((200, q.size))
    if model == "local":
        hh = local_hierarchy(grid, epsilon, n, "auto")
    else:
        mech = choose_mechanism(grid, epsilon, "replace", "auto")
        stat = mech.statistic(np.cumsum(counts))
        shares = 2 if model == "secure" else 1  # the secure model opens two full noise shares
        # every draw's node noise at once, by the simulation sampler (a prediction: no data involved)
        noise = _dlap_sim(gen, float(mech.scale), (errs.shape[0], shares, mech.n_nodes)).sum(axis=1)
    for r in range(errs.shape[0]):  # a few hundred draws of the aggregate, not per user
        if model == "local":
            state = hh.simulate_counts(counts, gen)
            y = hh.node_estimates(state)
            F = np.cumsum(hh.consistent_leaves(n, y, hh.level_variances(n, state.level_sizes))[-1])[:grid]
        else:
            F = mech.estimate_counts(stat + mech.noise_to_statistic(noise[r]), n)[:grid]
        errs[r] = inverse_ecdf(t, smooth(F / n, "isotonic"), q) - truth
    # Algorithm 1 returns a cell's upper edge: the sample quantile sits uniformly inside that cell
    return float(np.sqrt(np.mean(errs**2) + 1.0 / (3.0 * grid**2)))


def _plan_quantiles_tree(model: str, *, n, epsilon, bounds=None, grid=4096, q=(0.5,), **_) -> Option:
    """Algorithm 1 on the model's isotonic ECDF, simulated at uniform data (:func:`_tree_quantile_rmse`)."""
    curve = {"central": _plan_ecdf_central, "secure": _plan_ecdf_secure, "local": _plan_ecdf_local}[model]
    opt = curve(n=n, epsilon=epsilon, grid=grid)
    se = _tree_quantile_rmse(model, int(n), float(epsilon), int(grid), _quantile_levels(q))
    return Option(
        model,
        opt.protocol + "+algorithm1",
        opt.params,
        _width(bounds) * se,
        messages_per_user=opt.messages_per_user,
        bits_per_user=opt.bits_per_user,
    )


for _m in ("central", "secure", "local"):
    register("quantiles", _m, "tree")(lambda _m=_m, **kw: _plan_quantiles_tree(_m, **kw))


@register("quantiles", "shuffle", "range-counts")
def _plan_quantiles_shuffle(*, n, epsilon, delta=0.0, bounds=None, bins=64, **_):
    """Prefix counts of the shuffled dyadic tree (needs δ > 0) plus the bin's half width."""
    if delta <= 0:
        return None
    from privstats.shuffle.hadamard import HadamardMultiMessage

    L = int(math.log2(bins))
    try:
        proto = HadamardMultiMessage(bins, n=n, epsilon=epsilon, delta=delta, k=1 + L)
    except ValueError:
        return None
    node_se = float(np.sqrt(proto.variance(np.zeros(1))[0]))
    F_se = node_se * math.sqrt(L / 2) / n
    w = _width(bounds)
    bias = w / bins / math.sqrt(12)
    return Option(
        "shuffle",
        "shuffle-range-quantiles",
        {"bins": bins},
        math.hypot(w * F_se, bias),
        bias=bias,
        messages_per_user=float(proto.messages_per_user),
        bits_per_user=float(proto.bits_per_user),
        delta=delta,
    )


def _plan_roc(model, n, epsilon, grid, n_pos):
    n_pos = n // 2 if n_pos is None else int(n_pos)
    n_neg = n - n_pos
    if model == "local":
        from privstats.cdf.local import local_hierarchy

        covs = []
        for m in (n_pos, n_neg):
            hh = local_hierarchy(int(grid), epsilon, m, "auto")
            cells = np.full(int(grid), m / grid)
            levels = (
                np.full(hh.height, m / hh.height) if hh.split == "users" else np.full(hh.height, float(m))
            )
            covs.append(hh.prefix_covariance(cells, levels) / m**2)
        bits = float(hh.bits_per_user)
    else:
        mech = choose_mechanism(int(grid), epsilon, "replace", "auto")
        from privstats.secure.noise import noise_variance_factor

        cov = mech.count_covariance() * (noise_variance_factor(2) if model == "secure" else 1.0)
        covs = [cov / n_pos**2, cov / n_neg**2]
        bits = 0.0 if model == "central" else 128.0 + 64.0 * (grid + 2)
    curve = np.linspace(0, 1, int(grid) + 1)[1:]  # uniform scores: F(τ_i) = i / grid
    var, _ = auc_variance(curve, curve, covs[0], covs[1])
    return Option(
        model,
        "roc-two-ecdfs",
        {"grid": grid},
        math.sqrt(var),
        bits_per_user=bits,
        messages_per_user=0.0 if model == "central" else 1.0,
    )


for _m in ("central", "secure", "local"):
    register("roc_curve", _m, "roc-two-ecdfs")(
        lambda *, n, epsilon, grid=1024, n_pos=None, _m=_m, **_: _plan_roc(_m, n, epsilon, grid, n_pos)
    )


def _hl_groups_uniform(n: int, groups: int, mean_probabilities) -> tuple[np.ndarray, np.ndarray]:
    """Per group (n_g, π_g): equal sizes; π_g public, default evenly spread (g + ½)/Q."""
    pi = (np.arange(groups) + 0.5) / groups if mean_probabilities is None else np.asarray(mean_probabilities)
    if pi.shape != (groups,) or np.any((pi <= 0) | (pi >= 1)):
        raise ValueError(f"mean_probabilities must be {groups} probabilities in (0, 1)")
    return np.full(groups, n / groups), pi.astype(float)


def _hl_cut_variance(n: int, pi: np.ndarray, d2: np.ndarray, depth: int, se_f: float) -> float:
    """Variance H gains from private cuts: a cut snapped to the 2^depth grid and placed by a noisy
    ECDF (stderr ``se_f``) moves E|m| = n (1/(2·2^depth) + √(2/π) se_f) users between neighbouring
    groups, each changing the residual d by a term of variance π(1−π): Σ 4 Var(Δ_g) / D_g."""
    moved = n * (0.5 / (1 << depth) + math.sqrt(2 / math.pi) * se_f)
    cuts = np.full(pi.size, 2.0)
    cuts[[0, -1]] = 1.0  # the outer groups end at the bounds
    return float(np.sum(4 * pi * (1 - pi) * moved * cuts / d2))


@lru_cache(maxsize=64)
def _hl_central_rmse(n: int, epsilon: float, groups: int, depth: int, pi: tuple[float, ...]) -> float:
    """RMS error of the debiased H: the released sums drawn 4000 times from their law (positives per
    group Binomial(n_g, π) of a calibrated model, the sums' discrete Laplace noise, E floored as
    :func:`hosmer_lemeshow` does) with a fixed seed — the 1/E nonlinearity at small expected
    counts has no closed form — plus the private cuts' share (:func:`_hl_cut_variance`)."""
    acc = hosmer_lemeshow_accounting(epsilon, depth, "split")
    scale_e, scale_o = float(acc["scale_expected_steps"]), float(acc["scale_observed"])
    var_noise = discrete_laplace_variance(scale_o) + discrete_laplace_variance(scale_e) / HL_STEPS**2
    p = np.asarray(pi)
    size = max(round(n / groups), 1)
    e1, e0, d2 = size * p, size * (1 - p), size * p * (1 - p)
    g = np.random.default_rng(20261125)
    d = g.binomial(size, p, (4000, groups)) - e1  # O1 − E1 of calibrated data
    true = _hl_statistic(e1, e0, e1 + d, e0 - d, 0.5)
    ne = _dlap_sim(g, scale_e, (4000, 2, groups)) / HL_STEPS
    no = _dlap_sim(g, scale_o, (4000, 2, groups))
    E1n, E0n = e1 + ne[:, 0], e0 + ne[:, 1]
    H = _hl_statistic(E1n, E0n, e1 + d + no[:, 0], e0 - d + no[:, 1], 0.5)
    H = H - var_noise * np.sum(1 / np.maximum(np.c_[E1n, E0n], 0.5), axis=1)
    _, se_f = _central_curve(n, float(acc["epsilon_quantile"]), 1 << depth)
    return math.sqrt(float(np.mean((H - true) ** 2)) + _hl_cut_variance(n, p, d2, depth, se_f))


@register("hosmer_lemeshow", "central", "hosmer-lemeshow-algorithm2")
def _plan_hl_central(*, n, epsilon, groups=10, depth=10, mean_probabilities=None, **_) -> Option:
    """Simulated from the released sums' law (:func:`_hl_central_rmse`); groups of equal size
    at public mean probabilities (default evenly spread (g + ½)/Q), a calibrated model."""
    pi = _hl_groups_uniform(n, int(groups), mean_probabilities)[1]
    se = _hl_central_rmse(int(n), float(epsilon), int(groups), int(depth), tuple(pi.tolist()))
    return Option("central", "hosmer-lemeshow-algorithm2", {"groups": groups, "budget": "split"}, se)


@register("hosmer_lemeshow", "secure", "hosmer-lemeshow-two-ecdfs")
def _plan_hl_secure(*, n, epsilon, groups=10, depth=6, **_) -> Option:
    """Noise stderr of H = Σ r_g² w_g from the two class curves (w = 1/E1 + 1/E0): with the
    residuals' exact noise covariance S (Gaussian), Var H = 4 Σ w² E[d²] S_gg + 2 Σ w_g w_h S_gh²,
    at probabilities uniform on (0, 1) (the grid's cells share n evenly) and a calibrated model."""
    from privstats.secure.aggregation import DistributedNoiseMechanism
    from privstats.secure.histogram import SecureSpec, report_bits
    from privstats.secure.hosmer_lemeshow import _diff_cov, _groups
    from privstats.secure.noise import noise_variance_factor

    spec = SecureSpec("hosmer_lemeshow", epsilon=epsilon, bounds=(0.0, 1.0), grid=1 << int(depth))
    cov = DistributedNoiseMechanism(spec.mechanism, noise_variance_factor(2)).count_covariance()
    k = int(spec.internal.size)
    edges = np.concatenate([[0.0], spec.internal])
    mid = 0.5 * (edges[:-1] + edges[1:])
    per_cell = np.full(k, n / k)
    ends = _groups(np.cumsum(per_cell), int(groups))
    starts = np.concatenate([[0], ends[:-1] + 1])
    c = np.arange(k)
    G = ((c[None, :] >= starts[:, None]) & (c[None, :] <= ends[:, None])).astype(np.float64)
    C = _diff_cov(cov, k)
    a1, a0 = G * (1 - mid)[None, :], -G * mid[None, :]
    S = a1 @ C @ a1.T + a0 @ C @ a0.T
    e1, e0, d2 = G @ (per_cell * mid), G @ (per_cell * (1 - mid)), G @ (per_cell * mid * (1 - mid))
    w = 1 / e1 + 1 / e0
    var = 4 * np.sum(w**2 * d2 * np.diag(S)) + 2 * float(w @ (S**2) @ w)
    se_f = math.sqrt(float(np.mean(np.diag(cov)[:k]))) / n  # the pooled curve places the cuts
    var += _hl_cut_variance(n, G @ (per_cell * mid) / (G @ per_cell), d2, int(depth), se_f)
    return Option(
        "secure",
        "hosmer-lemeshow-two-ecdfs+dap-09+prio3",
        {"groups": groups, "depth": depth},
        math.sqrt(var),
        messages_per_user=1.0,
        bits_per_user=report_bits(spec.length),
    )
