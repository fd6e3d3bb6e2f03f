"""The private ECDF: one unit per trust model (central tree, secure aggregation or FSS, local hierarchy)."""

from __future__ import annotations

import math

import numpy as np

from privstats.cdf.result import PrivateECDF
from privstats.cdf.smoothing import SMOOTHING_METHODS, smooth
from privstats.cdf.tree import choose_mechanism, grid_histogram, uniform_grid
from privstats.plan import Option, check_model, warn_if_useless
from privstats.privacy.randomness import RNGLike
from privstats.stats.distribution.plumbing import NEIGHBOURS, _central_curve, _pure_estimate, _short
from privstats.stats.units import Call, choose, unit
from privstats.validation import (
    MAX_GRID,
    as_float_array,
    check_bounds,
    check_choice,
    check_epsilon,
    check_positive_int,
    check_power_of_two,
    check_rng,
)

SECURE_OPTIONS = ("grid", "method", "neighbours", "n_servers", "protocol")


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


def _plan_ecdf_central(*, n, epsilon, grid=1024, **_):
    """RMS over the grid of the raw curve's exact stderr (smoothing only lowers it)."""
    mech, se = _central_curve(n, epsilon, grid)
    return Option("central", mech.name, _short(mech.params()), se)


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


def _plan_ecdf_local(*, n, epsilon, grid=1024, **_) -> Option:
    from privstats.cdf.local import chosen_mean_prefix_variance, local_hierarchy

    hh = local_hierarchy(int(grid), epsilon, n, "auto")  # one cell per threshold (the last is the bound)
    return Option(
        "local",
        "local-hierarchical-histogram",
        {"branching": hh.branching, "height": hh.height},
        math.sqrt(chosen_mean_prefix_variance(int(grid), epsilon, n)) / n,
        messages_per_user=float(hh.messages_per_user),
        bits_per_user=float(hh.bits_per_user),
    )


def _curve(c: Call, mech, noisy, name: str, cost: dict):
    """Shared finishing of the central and secure counts: the ECDF values at the thresholds, their exact
    stderr and the noise model (normalised by n, or by the noisy total under add/remove)."""
    n, neighbours = c.x.size, c.neighbours
    counts = mech.estimate_counts(noisy, n if neighbours == "replace" else None)
    sd = np.sqrt(mech.count_variance())
    total = float(n) if neighbours == "replace" else max(float(counts[-1]), 1.0)
    F = counts / total
    se = sd / total
    k = c.thresholds.size
    noise_model = {"mechanism": mech, "total": total, "public_total": neighbours == "replace", "values": F}
    return F[:k], se[:k], mech, name, cost, noise_model


@unit("ecdf", "central", "tree", "auto", ("grid", "method", "neighbours"), _plan_ecdf_central)
def central_counts(c: Call):
    """The curator's grid histogram, cumulated, through the tree mechanism."""
    mech = choose_mechanism(c.internal.size, c.epsilon, c.neighbours, c.method)
    hist = grid_histogram(c.x, c.internal)
    noisy = mech.release(np.cumsum(hist[:-1]), rng=c.rng)
    return _curve(c, mech, noisy, mech.name, {"messages_per_user": 0.0, "bits_per_user": 0.0})


def _fss_counts(c: Call, mech, cells):
    """Two servers hold DCF keys of each user's cell (grid a power of two)."""
    from privstats.secure.aggregation import open_partials
    from privstats.secure.dcf import FSSECDFServer, fss_ecdf_keys
    from privstats.secure.noise import share_generator

    N = c.internal.size
    check_power_of_two(N, "grid")
    seeds: list = [None, None, None]  # rng=None: OS CSPRNG for keys and noise
    if c.rng is not None:
        gen = share_generator(c.rng)
        seeds = [int(gen.integers(2**62)) for _ in range(3)]
    k0, k1 = fss_ecdf_keys(cells, N.bit_length() - 1, rng=seeds[0])
    servers = [FSSECDFServer(k, mech, rng=r) for k, r in zip((k0, k1), seeds[1:], strict=False)]
    noisy = open_partials([s.partial() for s in servers])
    cost = {"messages_per_user": 2.0, "bits_per_user": 16.0 * k0.key_bytes()}
    return noisy, cost, mech.name + "+fss-dcf", 2.0


@unit("ecdf", "secure", "tree+secure-aggregation", "auto", SECURE_OPTIONS, _plan_ecdf_secure)
def secure_counts(c: Call):
    """Secret-shared one-hot cells (``protocol="aggregation"``, m servers) or DCF keys (``"fss"``),
    each server adding a full noise share."""
    from privstats.secure.aggregation import DistributedNoiseMechanism, SecureECDFAggregation

    N, n = c.internal.size, c.x.size
    mech = choose_mechanism(N, c.epsilon, c.neighbours, c.method)
    cells = np.searchsorted(c.internal, c.x, side="left")
    if c.protocol == "fss":
        noisy, cost, name, factor = _fss_counts(c, mech, cells)
    else:
        proto = SecureECDFAggregation(mech, n_servers=c.n_servers, rng=c.rng)
        noisy = proto.run(cells) if n * (N + 1) <= 2**22 else proto.simulate(cells)
        cost = {
            "messages_per_user": float(c.n_servers),
            "bits_per_user": 128.0 * (c.n_servers - 1) + 64.0 * (N + 1),
        }
        name = mech.name + "+secure-aggregation"
        factor = proto.variance_factor
    # every server's share is a full discrete Laplace (the guarantee holds against any one server
    # that knows its share and sees the output): the opened noise has `factor` x the central variance
    return _curve(c, DistributedNoiseMechanism(mech, factor), noisy, name, cost)


@unit("ecdf", "local", "hierarchical-histogram", "auto", ("grid", "method"), _plan_ecdf_local)
def local_counts(c: Call):
    """Local model: each user reports its cell through a hierarchical histogram (see privstats.cdf.local)."""
    from privstats.cdf.local import LocalPrefixNoise, local_hierarchy, release_local_prefix_counts

    x, thresholds, internal, epsilon, method, rng = c.x, c.thresholds, c.internal, c.epsilon, c.method, c.rng
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
    _lo, hi = bounds
    internal = thresholds if thresholds[-1] >= hi else np.append(thresholds, hi)  # last point = total
    c = Call.of("ecdf", locals(), x=xs, n=xs.size)
    raw, se, mech, name, cost, noise_model = choose("ecdf", model, "auto").run(c)
    return _release(c, raw, se, mech, name, cost, noise_model, smoothing)


def _release(c: Call, raw, se, mech, name: str, cost: dict, noise_model: dict, smoothing: str) -> PrivateECDF:
    """The one finishing step of the ECDF: smoothing, parameters, the useless-result warning (n public
    only) and the :class:`PrivateECDF` with its :class:`Estimate`."""
    model, neighbours, epsilon, thresholds, xs = c.model, c.neighbours, c.epsilon, c.thresholds, c.x
    protocol, n_servers = c.protocol, c.n_servers
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
            stacklevel=4,
        )
    est = _pure_estimate(values, se, c, name, params, cost, details=details, support=(0.0, 1.0))
    return PrivateECDF(thresholds, values, se, estimate=est, raw=raw)
