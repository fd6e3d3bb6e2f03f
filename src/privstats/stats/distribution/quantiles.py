"""Private quantiles: exponential, independent and joint exponential mechanisms (central), Algorithm 1 on
a private ECDF (central, secure, local) and the shuffled range counts (shuffle)."""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from functools import lru_cache

import numpy as np

from privstats.cdf.local import LocalPrefixNoise
from privstats.cdf.quantiles import OutputGrid, independent_exponential_quantiles, joint_exponential_quantiles
from privstats.cdf.smoothing import smooth
from privstats.cdf.tree import (
    choose_mechanism,
    count_noise_draws,
    dithered_bounds,
    simulate_discrete_laplace,
    uniform_grid,
)
from privstats.estimate import Estimate
from privstats.plan import Option, check_model
from privstats.privacy.randomness import RNGLike, as_source
from privstats.stats.distribution.ecdf import _plan_ecdf_central, _plan_ecdf_local, _plan_ecdf_secure, ecdf
from privstats.stats.distribution.plumbing import (
    NEIGHBOURS,
    _pure_estimate,
    _quantile_levels,
    _width,
)
from privstats.stats.units import Call, choose, unit
from privstats.validation import (
    MAX_GRID,
    as_float_array,
    check_array,
    check_bounds,
    check_choice,
    check_epsilon,
    check_positive_int,
    check_rng,
)


def _auto_quantile_method() -> str:
    """The central method ``"auto"`` runs: the tree (Algorithm 1 on the isotonic central ECDF).

    Not the planner's smallest predicted error at uniform data (JointExp there): on real data the
    tree is the one whose interval and stderr hold.  Its interval inverts the band of the very curve
    the point comes from (no budget split), and it releases the grid cell that holds a tied value.
    The exponential mechanisms give tied values no mass (a uniform base measure over the bounds), so
    on discrete data (ages, codes, a block of zeros) the release is a point of the gap next to the
    tied value, up to half the gap off (1.4-2 sd in issue 26's table), and their interval needs a
    separate ECDF at a share of ε whose band was 4-32x the spread.  They run when named
    (``method="joint"``: 1.2-2.8x smaller RMSE on continuous data at small n).
    """
    return "tree"


def _band_interval(thresholds, raw, se, qs, level, bounds, *, dithered: bool = False, law=None):
    """Quantile intervals by inverting the pointwise band of a raw (unbiased) ECDF on a grid.

    The sample q-quantile lies in (t_{j-1}, t_j] for the first grid point t_j with F_n(t_j) >= q;
    the curve inverted is the isotonic projection of the raw one;
    the interval runs from the grid cell below the first point whose upper band reaches q to
    the first point whose lower band does (each side misses with probability ~(1 - level)/2).
    On a ``dithered`` grid each end comes in by (1 - level)/2 of a cell: there a tied value sits
    uniformly in its cell, so a band that always holds its cell (a tied block's margin dwarfs the
    noise: coverage 1.000 on fair's ages) misses it by exactly that much either side.  Within
    ``bounds``, never zero width.

    ``law``: (the release, a cell's midpoint; the release law's moves, :func:`release_law`) keeps only
    the part of the band within the law's reach of the release: its moves' quantile, plus the
    release's cell (trimmed as above).  An interval then misses where the band or the law does, so
    each is taken at 1 − (1 − level)/2.  The band alone over-covered where the noise is large (0.99-1.0
    for the local tree): it counts every cell the pointwise band reaches, where the isotonic curve's
    crossing moves far less.  The law alone cannot see the release's own bias (the local tree's on
    tied ages), hence the intersection.  Only the local tree's intervals are cut (``LAW_CUT_MODELS``).

    >>> t = np.arange(1.0, 11.0)  # cells (0, 1], ..., (9, 10]; every value is 4.3
    >>> F = (t >= 4.3).astype(float)
    >>> [float(v[0]) for v in _band_interval(t, F, np.full(10, 0.01), [0.5], 0.95, (0, 10))]
    [4.0, 5.0]
    >>> [float(v[0]) for v in _band_interval(t, F, np.full(10, 0.01), [0.5], 0.95, (0, 10), dithered=True)]
    [4.025, 4.975]
    """
    from scipy.special import ndtri

    if law is not None:  # a miss of either is a miss of the intersection: each at half the miss rate
        level = (1 + level) / 2
    z = float(ndtri(0.5 + level / 2))
    t = np.asarray(thresholds, dtype=float)
    cell = float(t[1] - t[0]) if t.size > 1 else float(t[0] - bounds[0])
    # the isotonic projection of the raw curve: a first crossing of a raw noisy curve over
    # thousands of grid points would be biased early (multiple comparisons)
    F = smooth(np.asarray(raw, dtype=float), "isotonic")
    up, down = F + z * np.asarray(se), F - z * np.asarray(se)
    i_lo = np.searchsorted(np.maximum.accumulate(up), qs, side="left")
    i_hi = np.searchsorted(np.maximum.accumulate(down), qs, side="left")
    edges = np.concatenate([[t[0] - cell], t])  # the grid's cell edges, the first cell's lower one too
    lo_edge = edges[np.clip(i_lo, 0, t.size)]  # t_{i_lo - 1}
    hi_edge = edges[np.clip(i_hi, 0, t.size - 1) + 1]
    trim = (1 - level) / 2 * cell if dithered else 0.0
    lo_t, hi_t = lo_edge + trim, hi_edge - trim
    # an end the trim takes past the far bound keeps its edge (the interval would have no width)
    lo = np.clip(np.where(lo_t < bounds[1], lo_t, lo_edge), *bounds)
    hi = np.clip(np.where(hi_t > bounds[0], hi_t, hi_edge), *bounds)
    if law is not None:  # the band holds the release's cell, so the intersection never empties
        release, moves = law
        reach = np.quantile(np.abs(moves), level, axis=0) + cell / 2 - trim  # the move, then the cell
        lo = np.maximum(lo, np.clip(release - reach, *bounds))
        hi = np.minimum(hi, np.clip(release + reach, *bounds))
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
    grid: int | None = None,
    rng: RNGLike = None,
    delta: float | None = None,
    ci_fraction: float = 0.1,
    postprocess: str = "clip",
    **kwargs,
) -> Estimate:
    """ε-DP quantiles of ``x`` at probabilities ``q``, with confidence intervals.

    ``method``: ``"tree"`` (Algorithm 1 on a private ECDF: any number of quantiles for one budget;
    what ``"auto"`` runs, see below), ``"exponential"`` (Smith 2011, one quantile, or ε/m each for
    several — ``"independent"``: rank error Laplace(2m/ε')) or ``"joint"`` (JointExp, GJK 2021; 2..16
    quantiles, O(m n log n): rank error ≈ Laplace(4/ε')).  The exponential mechanisms are 1.2-2.8x more
    accurate on continuous data at small n, but give tied values no mass: on discrete data (ages in
    5-year steps, a block of zeros) they release a point of the gap next to the tied value, up to half
    that gap off, and their interval needs a separate ECDF (``ci_fraction`` of ε) far noisier than their
    point; so ``"auto"`` runs the tree, whose interval comes from its own curve (issue 26).
    ``privstats.plan`` predicts the tree, not the exponential mechanisms.  ``model="shuffle"`` delegates to
    ``privstats.stats.distribution.shuffle_quantiles.shuffle_quantiles`` ((ε, δ), δ required); ``model="secure"``
    and ``"local"`` use the tree method over secure aggregation or local hierarchies.

    ``grid``: the tree's cells of the bounds (its release is a cell's midpoint); by default a power of
    two near nε/8 (central) or nε/2 (secure) when n is public (:func:`tree_grid`), else 4096; the grid
    is dithered (:func:`dithered_bounds`, shift from ``rng``): a tied value's rounding is noise, not a
    fixed offset.  (A served secure DAP task draws its shift once, when it is made: the same law.)

    Uncertainty: ``est.ci(level)`` inverts the pointwise band of a raw private ECDF (the
    tree's own curve; for the exponential mechanisms a separate central ECDF with
    ``ci_fraction`` of ε, the point estimate getting the rest; ``ci_fraction=0``: no
    interval), its ends brought in by (1 − level)/2 of a cell on a dithered grid (:func:`_band_interval`);
    the local tree's band is then cut to its release law's reach.
    ``stderr``: for the trees (central, secure, local) the spread of Algorithm 1 re-run on
    the released curve plus draws of the mechanism's public noise law (:func:`release_law`,
    post-processing: ~0 deep inside a tied block, a gap's width times the chance of crossing it next to
    one; plus the dithered rounding, cell²/12); otherwise the 95% interval's half-width / 1.96.  Values are clipped into
    ``bounds`` and ordered with q (raw values in ``details["unbiased"]``; ``postprocess="none"``).

    >>> import numpy as np
    >>> x = np.random.default_rng(1).uniform(0, 10, 5000)
    >>> est = quantiles(x, [0.1, 0.9], epsilon=1.0, bounds=(0, 10), rng=2)
    >>> est.params["method"], bool(est.ci()[0][0] < 1.0 < est.ci()[1][0])
    ('tree', True)
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
    if grid is not None:
        check_positive_int(grid, "grid", maximum=MAX_GRID)  # checked even where the method ignores it
    if "bins" in kwargs:
        check_positive_int(kwargs["bins"], "bins", minimum=2, maximum=MAX_GRID)
    c = Call.of("quantiles", locals(), qs=qs)
    if model == "shuffle":
        est, band = choose("quantiles", "shuffle", "auto").run(c)
        return _finish_quantiles(est, qs, band, bounds, postprocess)
    c.xs = as_float_array(x, "x", bounds=bounds)
    c.n = c.xs.size if neighbours == "replace" else None  # n is private under add/remove
    chosen = _quantile_method(c)
    unit_ = choose("quantiles", model, "exponential" if chosen == "independent" else chosen)
    values, protocol, params, cost, band = unit_.run(Call(**{**vars(c), "method": chosen}))
    params.update(method=chosen, q=qs.tolist())
    if model == "local":
        protocol = "ecdf-local-hierarchy+algorithm1"
    est = _pure_estimate(values, None, c, protocol, params, cost)
    return _finish_quantiles(est, qs, band, bounds, postprocess)


def _quantile_method(c: Call) -> str:
    """The named method, the planner's (central ``"auto"``), or the tree (secure, local)."""
    model, method = c.model, c.method
    if model in ("secure", "local") or method != "auto":
        chosen = method
    else:
        chosen = _auto_quantile_method()
    if model in ("secure", "local"):
        if method not in ("auto", "tree"):
            raise ValueError(
                f"model={model!r} quantiles use method='tree' (Algorithm 1 on a private ECDF), "
                f"got method={method!r}"
            )
        chosen = "tree"
    return check_choice(chosen, "method", ("exponential", "independent", "joint", "tree"))


def shuffle_run(c: Call):
    """The shuffle model: prefix counts of a shuffled dyadic tree (``privstats.stats.frequency``)."""
    from privstats.stats.distribution.shuffle_quantiles import shuffle_quantiles

    bounds = c.bounds
    est = shuffle_quantiles(c.x, c.q, epsilon=c.epsilon, delta=c.delta, bounds=bounds, rng=c.rng, **c.kwargs)
    d = est.details
    edges = d["grid_start"] + d["bin_width"] * np.arange(1, d["prefix_counts"].size + 1)
    n = est.n or 1
    law = None
    if "prefix_covariance" in d:  # the release law (as the trees'), plus the dithered bin's rounding
        from privstats.stats.distribution.roc import _noise_factor

        cov = np.asarray(d["prefix_covariance"]) / n**2
        E = np.random.default_rng(LAW_SEED).standard_normal((LAW_DRAWS, cov.shape[0])) @ _noise_factor(cov).T
        spread, _ = _release_law(np.clip(d["prefix_counts"] / n, 0.0, 1.0), E, edges, np.atleast_1d(c.qs))
        law = np.sqrt(spread**2 + d["bin_width"] ** 2 / 12.0)
        est = replace(est, params={**est.params, "stderr_method": STDERR_METHOD})
    # no moves: the shuffled bins keep the band alone (``LAW_CUT_MODELS``)
    return est, (edges, d["prefix_counts"] / n, np.asarray(d["prefix_stderr"]) / n, law, None)


def tree_run(c: Call):
    """Algorithm 1 on the model's isotonic private ECDF; its raw curve's band gives the intervals."""
    k = tree_grid(c.model, c.n, c.epsilon, c.grid)
    bounds, rng, shift = c.bounds, c.rng, None
    # every tree (a served secure DAP task draws its shift when it is made: SecureSpec.shift, the same
    # law) shifts the grid by a public uniform fraction of a cell
    if k >= 2:
        src = as_source(c.rng)  # rng=None: the OS CSPRNG, and the ECDF draws its own from it
        rng = None if c.rng is None else src
        bounds, shift = dithered_bounds(c.bounds, k, float(src.random()))
    res = ecdf(
        c.xs,
        epsilon=c.epsilon,
        bounds=bounds,
        grid=k,
        smoothing="isotonic",
        neighbours=c.neighbours,
        model=c.model,
        rng=rng,
        **c.kwargs,
    )
    # Algorithm 1 names the cell (t_{j-1}, t_j] the sample quantile lies in by its upper edge t_j; its
    # midpoint (a public grid point too) halves the rounding and centres it: on continuous data the
    # quantile sits anywhere in the cell, on tied data the tied value does
    cell = (bounds[1] - bounds[0]) / np.asarray(res.quantiles).size
    values = np.asarray(res.quantile(c.qs)) - cell / 2
    cost = {"messages_per_user": res.estimate.messages_per_user, "bits_per_user": res.estimate.bits_per_user}
    params = {**res.estimate.params}
    law = tree_release_law(res, c.qs, cell, dithered=shift is not None)
    if law is not None:
        params["stderr_method"] = STDERR_METHOD
    if shift is not None:
        params["grid_shift"] = shift
    return (
        values,
        "ecdf-tree+algorithm1",
        params,
        cost,
        (res.quantiles, res.raw, res.stderr, *(law or (None, None))),
    )


LAW_DRAWS = 200
LAW_OUTER = 10  # second-level curves of the bias correction
LAW_SEED = 20261126
STDERR_METHOD = f"release law: {LAW_DRAWS} draws of the public noise on the released curve, bias-corrected"


def tree_release_law(res, qs, cell: float, *, dithered: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """The tree quantiles' stderr and the release law's moves (:func:`release_law`), in-process and
    served alike: the stderr is the law's spread plus, on a dithered grid, the rounding to the cell's
    midpoint, uniform over the cell (cell²/12).  ``None`` without a tree's noise model."""
    law = release_law(res, qs)
    if law is None or not dithered:
        return law
    return np.sqrt(law[0] ** 2 + cell**2 / 12.0), law[1]


def release_law(res, qs, draws: int = LAW_DRAWS) -> tuple[np.ndarray, np.ndarray] | None:
    """The spread of Algorithm 1's release, simulated from what is released (post-processing only),
    and the simulated releases' moves from the release (``draws`` rows, one column per q).

    A parametric bootstrap: the released curve's isotonic projection stands in for the data's ECDF, the
    tree's public noise law (the secure model: the servers' shares summed) is drawn ``draws`` times with
    a fixed seed (the local hierarchy: its aggregate, by the clients' law, :func:`_local_noise_draws`),
    and each draw goes through the same isotonic projection and Algorithm 1; the standard
    deviation of those releases is the stderr.  Unlike the band's half-width (which counts a gap at full
    width whenever the pointwise band reaches across it) it weighs each cell by the chance the release
    lands there: ~0 deep inside a tied block, a gap's jump times its frequency next to one, with the
    isotonic pooling over flat stretches in it.  The plug-in curve is itself noisy, which fattens the
    law's tails: a second level of curves (the released one plus one more draw) measures how, and the
    variance is extrapolated back to the data's curve (:func:`_law_spread`).  The moves bound the
    interval (:func:`_band_interval`).  ``None`` without a tree's noise model.
    """
    E = _noise_draws(res, draws)
    if E is None:
        return None
    return _release_law(np.asarray(res.raw, dtype=float), E, np.asarray(res.quantiles, dtype=float), qs)


def _release_law(raw: np.ndarray, E: np.ndarray, t: np.ndarray, qs) -> tuple[np.ndarray, np.ndarray]:
    """:func:`release_law` given the released raw curve, its noise draws ``E`` and thresholds."""
    draws = E.shape[0]
    F0 = smooth(raw, "isotonic")
    r1 = _law_releases(F0, E, t, qs)
    moves = r1 - _law_releases(F0, np.zeros((1, t.size)), t, qs)
    if LAW_OUTER == 0:
        return np.sqrt(r1.var(axis=0, ddof=1)), moves
    inner = E[: max(2, draws // 4)]
    v2 = np.mean(
        [
            _law_releases(smooth(F0 + E[-1 - b], "isotonic"), inner, t, qs).var(axis=0, ddof=1)
            for b in range(LAW_OUTER)
        ],
        axis=0,
    )
    return _law_spread(r1.var(axis=0, ddof=1), v2), moves


def _noise_draws(res, draws: int, seed: int = LAW_SEED) -> np.ndarray | None:
    """``draws`` fixed-seed draws of the released curve's noise (F units, one row each) from the tree's
    public noise law; ``None`` without a tree's noise model.  (``seed``: the law's own draws
    are fixed; tests draw the law at the data's curve afresh.)"""
    nm = res.estimate.details.get("noise_model")
    mech = None if nm is None else nm.get("mechanism")
    if isinstance(mech, LocalPrefixNoise):
        return _local_noise_draws(mech, np.asarray(res.raw, dtype=float), round(nm["total"]), draws, seed)
    if mech is None or not hasattr(mech, "noise_to_statistic"):
        return None
    total = float(nm["total"])
    n = round(total) if nm["public_total"] else None
    k = np.asarray(res.raw).size
    # the secure model: the central tree's noise from each server, summed
    return count_noise_draws(mech, np.random.default_rng(seed), draws, n)[:, :k] / total


def _local_noise_draws(mech, raw: np.ndarray, n: int, draws: int, seed: int) -> np.ndarray | None:
    """The local hierarchy's release noise (F units), drawn ``draws`` times at the released curve.

    The users' cells are read off the released curve's isotonic projection (the plug-in data) and the
    aggregate is drawn from them by the clients' law (``simulate_counts``: the oracles' and the users'
    split over levels, with their correlations); each draw's consistent prefix counts less the plug-in
    ones is a row.  ~3 ms a draw at 4,096 cells.  ``None`` (the band's stderr) where the users are
    too few for most draws to reach every level.
    """
    hh, k = mech.hh, raw.size
    cum = np.rint(smooth(raw, "isotonic") * n)
    counts = np.zeros(hh.domain_size, dtype=np.int64)
    counts[:k] = np.diff(cum, prepend=0.0)
    counts[-1] += n - int(counts.sum())
    gen = np.random.default_rng(seed)
    E = np.empty((draws, k))
    r = 0
    for _ in range(10 * draws):  # bounded: at tiny n most draws may leave a level empty
        state = hh.simulate_counts(counts, gen)
        if np.any(state.level_sizes == 0):  # a release with an empty level is refused: not in its law
            continue
        E[r] = (hh.consistent_prefix(state)[:k] - cum) / n
        r += 1
        if r == draws:
            return E
    return None


def _law_releases(F0: np.ndarray, E: np.ndarray, t: np.ndarray, qs) -> np.ndarray:
    """Algorithm 1's releases (grid thresholds, one row per noise draw) when the curve is ``F0`` and
    its noise each row of ``E``."""
    k = t.size
    # Algorithm 1 on a monotone curve: the first threshold with F >= q (the last if none)
    return np.array(
        [t[np.minimum(np.searchsorted(smooth(F0 + e, "isotonic"), qs, side="left"), k - 1)] for e in E]
    )


def _law_spread(v1: np.ndarray, v2: np.ndarray) -> np.ndarray:
    """The release law's sd, extrapolated from the released curve to the data's.

    ``v1``: the variance of releases simulated on the released curve (plug-in noise σ², the curve's
    own), ``v2``: the mean variance on that curve plus one more draw (2σ²).  Next to a tied block the
    law's variance is a crossing's, ∝ P(margin + noise < 0) ≈ Φ(−m/√(1+τ²)) at plug-in noise τ²,
    whose log is ≈ −m²/(2(1+τ²)): from τ² = 1, 2 to 0 it falls 3x the step from 2 to 1, so
    V₀ ≈ V₁·(V₁/V₂)³ (at m = 1, 2, 3: 0.93, 0.88, 0.84x the exact Φ(−m); the plug-in V₁ alone is
    1.5x, 3.4x and 12x, and the additive correction 2V₁ − V₂ used before reads 1.25x, 1.46x and below
    0, floored at V₁/4: 3x).  Away from a tie (a continuous quantile) the plug-in noise barely moves
    the law, V₁ ≈ V₂, and nothing changes.
    """
    return np.sqrt(_extrapolate_tail(v1, v2))


def _extrapolate_tail(p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """P₀ ≈ P₁·(P₁/P₂)³ (:func:`_law_spread`), the ratio capped at 1 (a law the extra noise did not
    widen is left as it is)."""
    ratio = np.divide(p1, p2, out=np.ones_like(p1), where=p2 > 0)
    return p1 * np.minimum(ratio, 1.0) ** 3


def exponential_run(c: Call):
    """Exponential mechanisms on the sorted values (independent ε/m each, or JointExp), with a central
    ECDF band from ``ci_fraction`` of ε for the intervals."""
    qs, bounds, neighbours, ci_fraction = c.qs, c.bounds, c.neighbours, c.ci_fraction
    src = as_source(c.rng) if c.rng is not None else None
    eps_point = c.epsilon * (1 - ci_fraction)
    band = None
    if ci_fraction > 0:
        res = ecdf(
            c.xs,
            epsilon=c.epsilon * ci_fraction,
            bounds=bounds,
            grid=min(c.grid or 1024, 1024),
            smoothing="none",
            neighbours=neighbours,
            model="central",
            rng=src,
        )
        band = (res.quantiles, res.raw, res.stderr)
    levels, inverse = np.unique(qs, return_inverse=True)  # equal levels share one release
    sx = np.sort(c.xs)
    mechanism = joint_exponential_quantiles if c.method == "joint" else independent_exponential_quantiles
    v = mechanism(sx, levels, epsilon=eps_point, bounds=bounds, rng=src, neighbours=neighbours)
    if c.method != "joint":
        v = np.maximum.accumulate(v)  # post-processing: quantiles ordered like their levels
    values = np.asarray(v, dtype=float)[inverse.ravel()]
    protocol = {
        "joint": "joint-exponential",
        "exponential": "exponential",
        "independent": "independent-exponential",
    }
    params: dict = OutputGrid(bounds).params  # every release is a point of this public grid
    if ci_fraction > 0:
        params.update(ci_fraction=ci_fraction, interval="central ECDF band")
    return values, protocol[c.method], params, {"messages_per_user": 0.0, "bits_per_user": 0.0}, band


INTERVAL_METHOD = "inverted pointwise band of a raw private ECDF"
# where the band is cut to the release law's reach (:func:`_band_interval`): the local hierarchy's
# curve, whose noise is large next to the isotonic crossing's moves (the band alone covered
# 0.99-1.000 in 8 of its 20 cells in issue 26's table).  Elsewhere the cut, each part at
# 1 − (1 − level)/2, measured no better: the shuffled bins' intervals are one or two wide bins
# (above 0.99 in 6 of 10 cells either way), and the central and secure bands are tight already
# (central 0.951-0.992 → 0.971-0.993, secure 0.943-0.985 → 0.969-0.988)
LAW_CUT_MODELS = ("local",)


def band_ci(t, F, se, qs, bounds, *, dithered: bool, law=None):
    """``ci_fn(level)`` of the quantiles at ``qs`` from a raw curve's band (:func:`_band_interval`; ``law``:
    the release and its law's moves), the in-process release's and a served secure task's alike."""
    return functools.partial(_band_interval, t, F, se, qs, bounds=bounds, dithered=dithered, law=law)


def _finish_quantiles(est: Estimate, qs, band, bounds, postprocess) -> Estimate:
    """Clip into bounds, order with q, attach the band-inverted intervals (:func:`_band_interval`, its
    ends brought in on a dithered grid); ``stderr`` the release law's
    spread where the band carries one, else the 95% interval's half-width / 1.96."""
    raw = np.asarray(est.value, dtype=float)
    details = dict(est.details)
    value = raw
    if postprocess == "clip":
        order = np.argsort(qs, kind="stable")
        v = np.clip(raw, *bounds)
        v[order] = np.maximum.accumulate(v[order])
        value, details["unbiased"] = v, raw
    stderr = None
    law_se = None
    if band is not None:
        t, F, se, *rest = band
        law_se, moves = rest if rest else (None, None)
        dithered = "grid_shift" in est.params  # the trees' and the shuffled bins' grids, not the exp. band's
        law = None if moves is None or est.model not in LAW_CUT_MODELS else (raw, moves)
        ci_fn = band_ci(t, F, se, qs, bounds, dithered=dithered, law=law)
        details["ci_fn"] = ci_fn
        lo95, hi95 = ci_fn(0.95)
        stderr = (hi95 - lo95) / (2 * 1.959963984540054) if law_se is None else np.asarray(law_se)
        details["interval_method"] = INTERVAL_METHOD
    return replace(
        est, value=value, stderr=stderr, details=details, support=(float(bounds[0]), float(bounds[1]))
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
        noise = simulate_discrete_laplace(gen, float(mech.scale), (errs.shape[0], shares, mech.n_nodes)).sum(
            axis=1
        )
    for r in range(errs.shape[0]):  # a few hundred draws of the aggregate, not per user
        if model == "local":
            state = hh.simulate_counts(counts, gen)
            F = hh.consistent_prefix(state)[:grid]
        else:
            F = mech.estimate_counts(stat + mech.noise_to_statistic(noise[r]), n)[:grid]
        errs[r] = inverse_ecdf(t, smooth(F / n, "isotonic"), q) - truth
    # the release is a cell's midpoint: the sample quantile sits uniformly inside that cell; the trees'
    # grids are dithered (:func:`dithered_bounds`): k cells of width/(k - 1)
    scale = grid / (grid - 1.0) if grid >= 2 else 1.0
    return scale * float(np.sqrt(np.mean(errs**2) + 1.0 / (12.0 * grid**2)))


def tree_grid(model: str, n: int | None, epsilon: float, grid: int | None) -> int:
    """The tree's grid: ``grid`` when given, else (n public) a power of two near nε/8 (central) or nε/2
    (secure), 16..4096, else 4096.

    A finer grid rounds less but its tree is taller (more noise per threshold): the simulated RMSE at
    uniform data (:func:`_tree_quantile_rmse`, n = 300..10⁵, ε = 0.5..2) is least at about nε/8 cells,
    and 4096 cells cost 1.4-1.9x that at nε <= 2500.  On a fixed grid the rounding is a bias for fixed
    data (a tied value's place in its cell does not change between releases): at nε/8 it reached
    1.1-1.5 sd on the real sets of issue 26, and 1.3 sd at nε/2 (randhie, n = 5,000, ε = 0.5).  Every
    tree's grid is now dithered (:func:`dithered_bounds`; a served secure task draws its shift when it
    is made), its rounding unbiased noise.  The secure grid stays 4x finer (a coarser one was measured:
    its stderr got worse); the central takes the optimum: the finer grid there cost a stderr 2.2-3.3x
    too large on tied data (fair at n = 5,000, ε = 0.5: the taller tree's noise moved q = 0.75 off a
    tied value's cell, far and in 0.5% of releases, a tail one release overstates; 0.025% at nε/8)
    and 0.42-0.97x the RMSE.
    ``n`` is public only under replace-one neighbours (``None`` otherwise: 4096).  The local tree
    keeps 4096 (its simulation takes seconds per grid).
    """
    if grid is not None:
        return int(grid)
    if n is None or model not in ("central", "secure"):
        return 4096
    cells = n * epsilon / (8.0 if model == "central" else 2.0)
    return int(min(4096, max(16, 1 << round(math.log2(max(cells, 1.0))))))


def _plan_quantiles_tree(model: str, *, n, epsilon, bounds=None, grid=None, q=(0.5,), **_) -> Option:
    """Algorithm 1 on the model's isotonic ECDF, simulated at uniform data (:func:`_tree_quantile_rmse`)."""
    grid = tree_grid(model, int(n), float(epsilon), grid)
    curve = {"central": _plan_ecdf_central, "secure": _plan_ecdf_secure, "local": _plan_ecdf_local}[model]
    opt = curve(n=n, epsilon=epsilon, grid=grid)
    se = _tree_quantile_rmse(model, int(n), float(epsilon), int(grid), _quantile_levels(q))
    return Option(
        model,
        opt.protocol + "+algorithm1",
        {**opt.params, "grid": grid},
        _width(bounds) * se,
        messages_per_user=opt.messages_per_user,
        bits_per_user=opt.bits_per_user,
    )


def _plan_quantiles_shuffle(*, n, epsilon, delta=0.0, bounds=None, bins="auto", **_):
    """Prefix counts of the shuffled dyadic tree (needs δ > 0) plus the dithered bin's rounding (unbiased,
    sd width/√12); ``bins="auto"`` as the release chooses them."""
    from privstats.stats.distribution.shuffle_quantiles import (
        shuffle_quantile_bins,
        shuffle_quantile_protocol,
        shuffle_quantile_rmse,
    )

    if delta <= 0:
        return None
    if bins == "auto":
        bins = shuffle_quantile_bins(n, epsilon, delta)
    proto, err = (
        shuffle_quantile_protocol(n, epsilon, delta, bins),
        shuffle_quantile_rmse(n, epsilon, delta, bins),
    )
    if proto is None or err is None:
        return None
    return Option(
        "shuffle",
        "shuffle-range-quantiles",
        {"bins": bins},
        _width(bounds) * math.hypot(*err),
        messages_per_user=float(proto.messages_per_user),
        bits_per_user=float(proto.bits_per_user),
        delta=delta,
    )


def _with_shape_range(predictor):
    if predictor is None:
        return None
    return _shape_range(predictor)


def _shape_range(predictor):
    """The predictor's Option with the range of its RMSE over data shapes within the bounds.

    Its ``stderr`` is at uniform data (one rank of the data = (hi − lo)/n); in rank terms (the error of
    F at the release, ``stderr / width``) it holds for any data, but in value units it is that divided
    by the data's density near the quantile, which public parameters do not give: from 0 (a tied value
    on a grid point: exact) to (hi − lo)/√2 (a gap across the range at the quantile: either side of it
    is released).  Measured on four real sets (issue 26) the ratio to the uniform prediction ran from
    0.06 (a gap next to a block of zeros) to 17 (ages in 5-year steps: nearly exact).
    """

    @functools.wraps(predictor)
    def wrapped(**kw):
        opt = predictor(**kw)
        if opt is None:
            return None
        w = _width(kw.get("bounds"))
        note = (
            f"stderr {opt.stderr:.3g} at uniform data (F error {opt.stderr / w:.3g} at any data); over data "
            f"shapes within the bounds from 0 (a tied value) to {w / math.sqrt(2):.3g} (a gap at the quantile)"
        )
        return replace(opt, stderr_range=(0.0, w / math.sqrt(2)), note=note)

    return wrapped


# the units, in the planner's order: a predictor (public parameters) and a run each
_tree = {m: functools.partial(_plan_quantiles_tree, m) for m in ("central", "secure", "local")}
for _model, _protocol, _method, _options, _predictor, _run in (
    # the exponential mechanisms run when named; the planner has no prediction for them (on tied data
    # their error is half the gap next to the tied value, which public parameters do not give)
    ("central", "exponential", "exponential", ("ci_fraction",), None, exponential_run),
    ("central", "joint-exponential", "joint", ("ci_fraction",), None, exponential_run),
    ("central", "tree", "tree", ("grid",), _tree["central"], tree_run),
    ("secure", "tree", "tree", ("grid",), _tree["secure"], tree_run),
    ("local", "tree", "tree", ("grid",), _tree["local"], tree_run),
    ("shuffle", "range-counts", "auto", ("delta", "bins"), _plan_quantiles_shuffle, shuffle_run),
):
    unit(
        "quantiles",
        _model,
        _protocol,
        method=_method,
        options=_options,
        predictor=_with_shape_range(_predictor),
    )(_run)
