"""The private Hosmer–Lemeshow statistic: Algorithm 2 (central) and two class ECDFs (secure leader/helper)."""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np
from scipy import stats

from privstats.cdf.tree import simulate_discrete_laplace
from privstats.central import discrete_laplace_variance
from privstats.estimate import Estimate
from privstats.plan import Option, UselessResultWarning, check_model
from privstats.privacy import PureDP, discrete_laplace
from privstats.privacy.randomness import RNGLike, as_source
from privstats.secure.hosmer_lemeshow import inverted_interval, lack_of_fit_grid, median_unbiased
from privstats.stats.distribution.ecdf import ecdf
from privstats.stats.distribution.plumbing import _central_curve
from privstats.stats.units import Call, choose, unit
from privstats.validation import (
    as_binary_labels,
    as_float_array,
    check_bounds,
    check_choice,
    check_epsilon,
    check_positive_int,
    check_real,
    check_same_length,
)

HL_BUDGETS = ("split", "tight", "paper")


HL_QUANTILE_FRACTION = 0.2  # "split": share of ε for the quantile ECDF


HL_STEPS = 1 << 20  # predicted probabilities are snapped to multiples of 2^-20


HL_SECURE_PROTOCOL = "hosmer-lemeshow-two-ecdfs+dap-09+prio3"  # what a deployed secure HL task runs


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


def _hl_pooled(E1n, E0n, O1n, O0n, s2: float, floor: float, debias: bool = True):
    """Noise-aware H from released sums (any leading axes): Σ_g (d_g² − s²) / max(V_g, floor).

    d_g = ((O1 − E1) − (O0 − E0)) / 2 pools the two released residuals of group g (in truth
    O0 − E0 = −(O1 − E1)), so its DP noise variance is s² (half a residual's); subtracting s²
    removes the noise's share of d². V_g = E1 E0 / (E1 + E0) is the group's binomial variance
    n_g π_g (1 − π_g), so with V_g ≥ ``floor`` every term is the classical (O−E)²/E pair; below
    it (groups whose V the noise cannot resolve, ``floor`` = 3 noise sd of E) the weight is capped
    instead of dividing noise by a near-zero noisy expected count.  ``debias=False`` on true
    sums gives the estimand Σ d_g² / max(V_g, floor).

    >>> float(_hl_pooled(np.array([30.0]), np.array([30.0]), np.array([40.0]), np.array([20.0]), 1.0, 2.0))
    6.6
    """
    d = ((O1n - E1n) - (O0n - E0n)) / 2
    e1, e0 = np.maximum(E1n, 0.0), np.maximum(E0n, 0.0)
    V = np.maximum(e1 * e0 / np.maximum(e1 + e0, 1e-12), floor)
    return np.sum((d**2 - (s2 if debias else 0.0)) / V, axis=-1)


def hl_grid_cuts(p: np.ndarray, groups: int, depth: int, bounds=(0.0, 1.0)) -> np.ndarray:
    """The decile rule the private cuts estimate: the cut q/Q is the smallest threshold
    lo + (hi − lo) k / 2^depth of the public grid at which the scores' empirical CDF reaches q/Q
    (:meth:`PrivateECDF.quantile` on the noise-free curve); tied scores never straddle a cut.

    >>> hl_grid_cuts(np.array([0.1, 0.1, 0.1, 0.6]), 4, 2).tolist()
    [0.25, 0.25, 0.25]
    """
    lo, hi = check_probability_bounds(bounds)
    t = lo + (hi - lo) * np.arange(1, (1 << depth) + 1) / (1 << depth)
    F = np.searchsorted(np.sort(p), t, side="right") / max(p.size, 1)
    k = np.searchsorted(F, np.arange(1, groups) * (1 - 1e-12) / groups, side="left")
    return t[np.minimum(k, t.size - 1)]


def hl_estimand(
    y_true,
    y_prob,
    *,
    epsilon: float,
    groups: int = 10,
    depth: int | None = None,
    budget: str = "split",
    bounds=(0.0, 1.0),
    model: str = "central",
    cut_draws: int = 200,
) -> float:
    """What the estimate (``est.unclipped``) of ``model`` estimates, computed on the exact data.

    ``"central"`` (depth 10): Σ_g d_g² / max(V_g, floor) (:func:`_hl_pooled`, ``debias=False``) on
    the exact sums, averaged over the group cuts the private ECDF places (``cut_draws`` draws of its
    noise, fixed seed; ``cut_draws=0``: the noise-free grid deciles of :func:`hl_grid_cuts`).  With
    every V_g ≥ floor (3 noise sd of a group's E, which shrinks as 1/ε) a term is the classical
    (O − E)²/E pair; a group whose binomial variance the noise cannot resolve (scores near 0 or 1 at
    small n ε) gets the capped weight 1/floor, so there it is below the classical H.  The average
    over the cuts is the target because H is not smooth in where a cut falls among tied or close
    scores (at the deciles' own placement it can differ from the average by an sd), and the
    estimate's stderr carries the cuts' spread (:func:`_hl_cut_jitter`).

    ``"secure"`` (depth 6): the same pooled statistic on what the two class curves can resolve
    (:func:`privstats.secure.hosmer_lemeshow.hl_estimand_from_class_counts`): each probability
    represented by its 2^depth grid cell's midpoint, groups cut on the grid at the deciles of the
    pooled curve the release's noise perturbs (``cut_draws`` draws of that noise, fixed seed; 0: the
    exact curve's deciles), and the V floor of the release's own noise covariance.  The midpoints are
    the resolution of the released data; at large n a cell's spread of scores (up to 1/2^depth)
    moves the group expectations and the statistic can differ from the classical H by more than its
    noise.

    Either is what a user checking calibration can learn at this (n, ε): the classical lack-of-fit
    of the groups the release resolves, with groups the noise hides down-weighted instead of dominating.
    The p-values are simulated from each statistic's own null law.
    """
    check_model("hosmer_lemeshow", model)
    cut_draws = check_positive_int(cut_draws, "cut_draws", minimum=0, maximum=100_000)
    y = as_binary_labels(y_true, "y_true").astype(np.float64)
    p = as_float_array(y_prob, "y_prob", bounds=check_probability_bounds(bounds))
    if model == "secure":
        return _hl_secure_estimand(y, p, epsilon, groups, 6 if depth is None else depth, bounds, cut_draws)
    depth = 10 if depth is None else depth
    acc = hosmer_lemeshow_accounting(epsilon, depth, budget)
    s2, floor = hl_noise_parts(acc)
    sums = lambda cuts: hl_group_sums(y, p, cuts, groups)  # noqa: E731
    if not cut_draws:
        E1, E0, O1, O0 = sums(hl_grid_cuts(p, groups, depth, bounds))
        return float(_hl_pooled(E1 / HL_STEPS, E0 / HL_STEPS, O1, O0, s2, floor, debias=False))
    src, vals = as_source(20261126), []
    for _ in range(cut_draws):
        E1, E0, O1, O0 = sums(
            _private_cuts(p, acc, groups, depth, check_probability_bounds(bounds), "auto", src)[1]
        )
        vals.append(float(_hl_pooled(E1 / HL_STEPS, E0 / HL_STEPS, O1, O0, s2, floor, debias=False)))
    return float(np.mean(vals))


def _hl_secure_estimand(y, p, epsilon: float, groups: int, depth: int, bounds, cut_draws: int) -> float:
    """:func:`hl_estimand` of the secure release: its exact class curves through its post-processing."""
    from privstats.secure.aggregation import DistributedNoiseMechanism
    from privstats.secure.histogram import SecureSpec, prefix_noise_law
    from privstats.secure.hosmer_lemeshow import hl_estimand_from_class_counts
    from privstats.secure.noise import noise_variance_factor

    spec = SecureSpec(
        "hosmer_lemeshow", epsilon=epsilon, bounds=check_probability_bounds(bounds), grid=1 << depth
    )
    k = int(spec.internal.size)
    hist = np.bincount(spec.cells(p, y.astype(np.int64)).ravel(), minlength=spec.length)
    pos, neg = np.cumsum(hist[: k + 1]), np.cumsum(hist[k + 1 :])
    mech = DistributedNoiseMechanism(spec.mechanism, noise_variance_factor(2))
    cov = mech.count_covariance()
    return hl_estimand_from_class_counts(
        pos, neg, cov, cov, spec.internal, spec.bounds[0], groups=groups,
        prefix_noise=prefix_noise_law(mech), cut_draws=cut_draws,
    )  # fmt: skip


def hl_noise_parts(accounting: dict) -> tuple[float, float]:
    """(s², floor) of :func:`_hl_pooled`: the pooled residual's noise variance and 3 noise sd of E."""
    var_e = discrete_laplace_variance(float(accounting["scale_expected_steps"])) / HL_STEPS**2
    return hl_noise_var(accounting) / 2, 3 * math.sqrt(var_e)


def hl_noise_var(accounting: dict) -> float:
    """Variance of one released O-minus-E residual: discrete Laplace noise of O plus that of E."""
    return (
        discrete_laplace_variance(float(accounting["scale_observed"]))
        + discrete_laplace_variance(float(accounting["scale_expected_steps"])) / HL_STEPS**2
    )


def hl_n_needed(epsilon: float, groups: int, depth: int, budget: str = "split") -> int:
    """Smallest n at which a middle group's sampling variance (n/Q)·¼ exceeds 2× its residual's DP
    noise variance s², below which the private test has little power whatever the model.

    >>> hl_n_needed(1.0, 10, 10) > 569
    True
    """
    s2 = hl_noise_var(hosmer_lemeshow_accounting(epsilon, depth, budget)) / 2
    return math.ceil(8 * groups * s2)


def _hl_simulate(E1, E0, O1, O0, scale_e_steps, scale_o, min_expected, gen, reps):
    """H of ``reps`` re-noised copies of the given true-count plug-ins (post-processing only)."""
    Q = E1.size
    ne = simulate_discrete_laplace(gen, scale_e_steps, (reps, 2, Q)) / HL_STEPS
    no = simulate_discrete_laplace(gen, scale_o, (reps, 2, Q))
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


def _hl_renoise(E1, E0, d, acc: dict, gen, reps: int):
    """:func:`_hl_pooled` of ``reps`` releases of true sums (E1, E0, O1 = E1 + d, O0 = E0 − d)."""
    scale_e, scale_o = float(acc["scale_expected_steps"]), float(acc["scale_observed"])
    Q = np.shape(E1)[-1]
    ne = simulate_discrete_laplace(gen, scale_e, (reps, 2, Q)) / HL_STEPS
    no = simulate_discrete_laplace(gen, scale_o, (reps, 2, Q))
    return _hl_pooled(
        E1 + ne[:, 0], E0 + ne[:, 1], E1 + d + no[:, 0], E0 - d + no[:, 1], *hl_noise_parts(acc)
    )


def _hl_dispersion(lack_of_fit: float, groups: int) -> float:
    """Variance factor of the moved users' residual spread in :func:`_hl_cut_jitter` at lack of fit h.

    A group's residual spread is h/Q times its binomial variance when the lack of fit is overdispersion
    (records in identical copies, e.g. a small data set resampled, whose labels move together) and 1
    when it is a systematic miscalibration (which the donor's share already carries); the release
    cannot tell the two apart, so the factor is their geometric mean √max(1, h/Q): at most √(h/Q) off
    either way, and 1 for a calibrated model.  Where it matters, H is large (n large), and there the
    cuts' spread is comparable to the sums' noise; at small n ε the noise dominates and it is moot.

    >>> _hl_dispersion(90.0, 10), _hl_dispersion(4.0, 10)
    (3.0, 1.0)
    """
    return math.sqrt(max(1.0, float(lack_of_fit) / groups))


def _hl_recentre(E1j, E0j, dj, h: float, s2: float, floor: float) -> float:
    """Scale of the jittered residuals that makes their mean lack of fit h again.

    The plug-in already sits at one draw of the private cuts, and the estimand (:func:`hl_estimand`)
    is the average over those draws: the jitter should spread H around h, not move it.  Moving users
    with their donor's share of its residual smooths the lack of fit between neighbouring groups (on
    breast cancer at n = 5000, ε = 0.5 the jittered mean was 58 against h = 90, while real cut draws
    averaged 81 against 90 at the grid's cuts), which took the law's noise sd down with it.

    >>> e = np.array([[10.0, 10.0]]); float(_hl_recentre(e, e, np.array([[2.0, -2.0]]), 6.4, 0.0, 1.0))
    2.0
    """
    m = float(np.mean(_hl_pooled(E1j, E0j, E1j + dj, E0j - dj, s2, floor, debias=False)))
    return math.sqrt(h / m) if h > 0 and m > 0 else 1.0


def _hl_cut_jitter(e1, e0, d, cuts, moved_sd: float, gen, reps: int, dispersion: float = 1.0):
    """``reps`` copies of the group sums (E1, E0, d) after the private cuts move (post-processing only).

    The cut between groups c and c + 1 moves m ~ N(0, moved_sd²) users (rounded, at most half the
    donor group: the private ECDF is isotonic and its cuts stay ordered) across it: they score about
    the cut t_c, and the residual they carry is their share k/n of the donor group's d (which already
    holds it) plus a spread of variance k (1 − k/n) t_c (1 − t_c) (a hypergeometric split): the total
    residual is conserved, so a calibrated model's H keeps its law and only the resolution of lack of
    fit between the groups varies.  Records that come in identical copies (ties of score and label)
    move together, so there the cuts' spread is larger than this independent-records model says:
    ``dispersion`` (:func:`_hl_dispersion`) multiplies the moved residual's spread variance.
    """
    Q, rows = e1.size, np.arange(reps)
    n_g = np.maximum(np.rint(e1 + e0), 0.0)
    E1, E0 = (np.repeat(np.asarray(v, dtype=np.float64)[None, :], reps, axis=0) for v in (e1, e0))
    d0 = np.broadcast_to(np.asarray(d, dtype=np.float64), (reps, Q))  # one residual vector, or one per copy
    D = d0.copy()
    m = np.rint(gen.normal(0.0, moved_sd, (reps, Q - 1)))
    for c in range(Q - 1):
        t = float(cuts[c])
        up = m[:, c] > 0  # the cut moves up: users of group c + 1 join group c
        donor = np.where(up, c + 1, c)
        k = np.minimum(np.abs(m[:, c]), n_g[donor] / 2).astype(np.int64)
        # their residual is their share of the donor's (it already holds it), give or take its spread
        share = k / np.maximum(n_g[donor], 1.0)
        spread = np.sqrt(dispersion * k * (1 - share) * t * (1 - t))
        moved_r = share * d0[rows, donor] + spread * gen.standard_normal(reps)
        sign = np.where(up, 1.0, -1.0)
        for g, sg in ((c, sign), (c + 1, -sign)):
            E1[:, g] += sg * k * t
            E0[:, g] += sg * k * (1 - t)
            D[:, g] += sg * moved_r
    return np.maximum(E1, 0.0), np.maximum(E0, 0.0), D


def hl_pooled_uncertainty(
    E1n, E0n, O1n, O0n, acc: dict, *, bootstrap: int = 2000, rng=None, cuts=None, moved_sd: float = 0.0
):
    """(p-value, stderr, ci_fn) of :func:`_hl_pooled` from the released sums (post-processing only).

    p-value: the statistic's null law simulated at the released group sizes n_g and mean
    probabilities π_g (positives Binomial(n_g, π_g), then the same DP noise); stderr: the spread
    of re-noised plug-in sums whose residual is the released one shrunk by its noise variance, and
    (``cuts`` given) whose groups trade the users the private cuts move (:func:`_hl_cut_jitter`,
    ``moved_sd`` = n × the private ECDF's noise sd, public): the cuts' own noise is in the stderr.
    ci_fn: :func:`~privstats.secure.hosmer_lemeshow.inverted_interval` over candidate lack of fit h
    (the plug-in rescaled to h, the same draws for every h).
    """
    gen = np.random.default_rng(rng)
    s2, floor = hl_noise_parts(acc)
    T = float(_hl_pooled(E1n, E0n, O1n, O0n, s2, floor))
    e1, e0 = np.maximum(E1n, 0.0), np.maximum(E0n, 0.0)
    n_q = np.maximum(np.rint((e1 + e0 + np.maximum(O1n, 0) + np.maximum(O0n, 0)) / 2), 1).astype(np.int64)
    pi = np.clip(e1 / np.maximum(e1 + e0, 1e-12), 0.0, 1.0)
    E1t, E0t = n_q * pi, n_q * (1 - pi)
    d_null = gen.binomial(n_q, pi, size=(bootstrap, n_q.size)) - E1t
    null = _hl_renoise(E1t, E0t, d_null, acc, gen, bootstrap)
    p_value = float((1 + np.count_nonzero(null >= T)) / (1 + bootstrap))
    d = ((O1n - E1n) - (O0n - E0n)) / 2
    d_plug = np.sign(d) * np.sqrt(np.maximum(d**2 - s2, 0.0))
    # the positive part max(d² − s², 0) is biased up where a residual is mostly noise (small n ε), and
    # the stderr grows with the plug-in's lack of fit: scale the plug-ins so theirs equals the estimate's
    V = np.maximum(e1 * e0 / np.maximum(e1 + e0, 1e-12), floor)
    fit = float(np.sum(d_plug**2 / V))
    d_dir = d_plug if fit > 0 else np.sqrt(V / V.size)  # the lack of fit's direction (uniform if none)
    fit_dir = float(np.sum(d_dir**2 / V))

    def law(h: float, g) -> np.ndarray:
        """The estimate's law when the plug-in's lack of fit is h."""
        dh = d_dir * math.sqrt(max(h, 0.0) / fit_dir)
        E1j, E0j, dj = e1, e0, dh
        if cuts is not None and moved_sd > 0:
            disp = _hl_dispersion(h, dh.size)
            E1j, E0j, dj = _hl_cut_jitter(e1, e0, dh, np.asarray(cuts), moved_sd, g, bootstrap, disp)
            dj = dj * _hl_recentre(E1j, E0j, dj, h, s2, floor)
        return _hl_renoise(E1j, E0j, dj, acc, g, bootstrap)

    sims = law(min(max(T, 0.0), fit), gen)
    se = float(np.std(sims, ddof=1))
    seed = int(gen.integers(2**62))  # common random numbers over the candidates h
    grid = lack_of_fit_grid(T, se)
    ci_fn = inverted_interval(grid, np.array([law(h, np.random.default_rng(seed)) for h in grid]), T)
    return p_value, se, ci_fn


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
    bounds=(0.0, 1.0),
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
    * ``stderr``: the spread of H given the data, re-noising plug-in true sums (E as released, O − E
      shrunk by its noise variance and scaled to the estimate's lack of fit), the cuts' spread added
      (:func:`_hl_cut_jitter`); ``ci()`` inverts that simulated law over values of :func:`hl_estimand`.

    ``bounds``: the public range (lo, hi) within [0, 1] of the predicted probabilities, default
    (0, 1) (a model whose outputs are known to be clipped, e.g. (0.01, 0.99), gets a finer grid for
    the group cuts); a probability outside it is an error, not clipped.

    ``model="secure"``: two non-colluding servers aggregate each client's label-split one-hot
    cell of its probability on a 2^depth grid (default depth 6: at n ≈ 6,000 and ε = 1 its
    stderr is ~4x smaller than at depth 10); H is a post-processing of the two released class
    curves (:mod:`privstats.secure.hosmer_lemeshow`), identical in law to the DAP-09 deployment
    (``privstats serve leader|helper``, statistic ``hosmer_lemeshow``).

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
    bounds = check_probability_bounds(bounds)
    y = as_binary_labels(y_true, "y_true").astype(np.float64)
    p = as_float_array(y_prob, "y_prob", bounds=bounds)
    check_same_length(y_true=y, y_prob=p)
    c = Call.of("hosmer_lemeshow", locals(), y=y, p=p, L=L, Q=Q, B=B)
    est = choose("hosmer_lemeshow", model, "auto").run(c)
    _warn_small_n(est, model, epsilon, Q, y.size)
    return est


def check_probability_bounds(bounds) -> tuple[float, float]:
    """Public bounds of predicted probabilities: a pair (lo, hi) with 0 <= lo < hi <= 1.

    >>> check_probability_bounds((0.01, 0.99))
    (0.01, 0.99)
    """
    lo, hi = check_bounds(bounds)
    if lo < 0.0 or hi > 1.0:
        raise ValueError(f"bounds must lie within [0, 1] (predicted probabilities), got {bounds!r}")
    return lo, hi


def _warn_small_n(est: Estimate, model: str, epsilon: float, Q: int, n: int) -> None:
    """H has no range: warn where the DP noise on a group's residual reaches its sampling spread
    n/(4Q) (central: twice the pooled residual's noise variance; secure: twice its median Var r).

    ``details["n_needed"]`` and ``details["underpowered"]`` (n below it) say so in the result too: there
    a clipped H = 0 and a large p-value mean "no evidence either way", not "calibrated"."""
    need = est.details.get("n_needed") or math.ceil(8 * Q * float(np.median(est.details["var_O_minus_E"])))
    est.details.update(n_needed=int(need), underpowered=n < need)
    if n < need:
        warnings.warn(
            f"hosmer_lemeshow ({model}): at epsilon={epsilon:g} with groups={Q} each group's residual "
            f"carries DP noise comparable to its sampling spread unless n >= {need} (n = {n}): the "
            "test has little power here; use fewer groups or a larger epsilon",
            UselessResultWarning,
            stacklevel=3,
        )


def secure_run(c: Call) -> Estimate:
    """Two servers aggregate each client's label-split cell; H post-processes the two class curves."""
    from privstats.secure.histogram import SecureSpec, release_in_process

    spec = SecureSpec("hosmer_lemeshow", epsilon=c.epsilon, bounds=c.bounds, grid=1 << c.L)
    return release_in_process(spec, c.p, c.y.astype(np.int64), rng=c.rng, groups=c.Q)


def _private_cuts(p, acc: dict, Q: int, L: int, bounds, method: str, src):
    """The group cuts: (q/Q)-quantiles of a private isotonic ECDF on the 2^L grid (``epsilon_quantile``)."""
    curve = ecdf(
        p,
        epsilon=acc["epsilon_quantile"],
        bounds=bounds,
        grid=1 << L,
        smoothing="isotonic",
        method=method,
        rng=src,
    )
    return curve, np.maximum.accumulate(np.asarray(curve.quantile(np.arange(1, Q) / Q)))


def _noisy_sums(c: Call, acc: dict, src):
    """Algorithm 2's release: group cuts from a private ECDF, then the 4Q sums with discrete Laplace."""
    y, p, Q = c.y, c.p, c.Q
    curve, cuts = _private_cuts(p, acc, Q, c.L, c.bounds, c.method, src)
    E1, E0, O1, O0 = hl_group_sums(y, p, cuts, Q)
    noise_e = np.asarray(discrete_laplace(acc["scale_expected_steps"], size=2 * Q, rng=src), dtype=np.int64)
    noise_o = np.asarray(discrete_laplace(acc["scale_observed"], size=2 * Q, rng=src), dtype=np.int64)
    E1n, E0n = (E1 + noise_e[:Q]) / HL_STEPS, (E0 + noise_e[Q:]) / HL_STEPS
    O1n, O0n = (O1 + noise_o[:Q]).astype(np.float64), (O0 + noise_o[Q:]).astype(np.float64)
    return curve, cuts, E1n, E0n, O1n, O0n


def central_run(c: Call) -> Estimate:
    """Algorithm 2 (corrected): the released sums, the debiased H and its bootstrap p-value and stderr."""
    epsilon, L, Q, B, y, min_expected, budget, rng = (
        c.epsilon,
        c.L,
        c.Q,
        c.B,
        c.y,
        c.min_expected,
        c.budget,
        c.rng,
    )
    acc = hosmer_lemeshow_accounting(epsilon, L, budget)
    eps1 = acc["epsilon_prime"]
    src = as_source(rng)
    curve, cuts, E1n, E0n, O1n, O0n = _noisy_sums(c, acc, src)
    H = float(_hl_statistic(E1n, E0n, O1n, O0n, min_expected))
    # the noise adds about (var_O + var_E)/E to each of the 2Q cells in expectation: remove it
    noise_var = hl_noise_var(acc)
    H_unbiased = H - float(np.sum(noise_var / np.maximum(np.r_[E1n, E0n], min_expected)))
    T = float(_hl_pooled(E1n, E0n, O1n, O0n, *hl_noise_parts(acc)))
    gen = np.random.default_rng(src.uint64(4).tolist() if rng is None else int(src.integers(2**62)))
    moved_sd = y.size * _central_curve(y.size, float(acc["epsilon_quantile"]), 1 << L)[1]
    p_value, stderr, ci_fn = hl_pooled_uncertainty(
        E1n, E0n, O1n, O0n, acc, bootstrap=B, rng=gen, cuts=cuts, moved_sd=moved_sd
    )
    n_needed = hl_n_needed(epsilon, Q, L, budget)
    return Estimate(
        median_unbiased(ci_fn),  # >= 0; T (mean-unbiased, may be < 0) is details["unbiased"]
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
            "unbiased": T,
            "unbiased_classical": H_unbiased,
            "n_needed": n_needed,
            "H_plain": H,
            "noise_bias": H - H_unbiased,
            "thresholds": cuts,
            "E1": E1n,
            "E0": E0n,
            "O1": O1n,
            "O0": O0n,
            "dof": Q - 2,
            "accounting": acc,
            "p_value_method": "simulated null law of the pooled statistic (Binomial groups, DP noise)",
            "stderr_method": "parametric bootstrap of the DP noise at shrunk plug-in residuals",
            "ci_fn": ci_fn,  # the estimand values whose simulated law holds the estimate
        },
    )


def _hl_groups_uniform(n: int, groups: int, mean_probabilities, bounds=None) -> tuple[np.ndarray, np.ndarray]:
    """Per group (n_g, π_g): equal sizes; π_g public, default evenly spread lo + (hi − lo)(g + ½)/Q
    over the probabilities' ``bounds`` (default (0, 1))."""
    lo, hi = check_probability_bounds((0.0, 1.0) if bounds is None else bounds)
    spread = lo + (hi - lo) * (np.arange(groups) + 0.5) / groups
    pi = spread if mean_probabilities is None else np.asarray(mean_probabilities)
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


def _lack_of_fit_shift(V: np.ndarray, D: np.ndarray, lack_of_fit: float | None) -> np.ndarray:
    """Per-group mean residual μ_g making E Σ (r_g + μ_g)² / D_g = ``lack_of_fit`` for r_g ~ (0, V_g).

    A calibrated model (None, or an H below Σ V/D) gets μ = 0; the excess is spread evenly over the
    groups' weights (μ_g² ∝ D_g).

    >>> _lack_of_fit_shift(np.array([4.0, 4.0]), np.array([4.0, 8.0]), 4.5).round(3).tolist()
    [2.449, 3.464]
    """
    if lack_of_fit is None:
        return np.zeros_like(V)
    excess = max(float(lack_of_fit) - float(np.sum(V / D)), 0.0)
    return np.sqrt(excess * D / D.size)


def _check_lack_of_fit(lack_of_fit) -> float | None:
    if lack_of_fit is None:
        return None
    v = check_real(lack_of_fit, "lack_of_fit")
    if not (math.isfinite(v) and v >= 0):
        raise ValueError(
            f"lack_of_fit must be a finite H >= 0 (the anticipated statistic), got {lack_of_fit!r}"
        )
    return v


@lru_cache(maxsize=64)
def _hl_central_rmse(
    n: int, epsilon: float, groups: int, depth: int, pi: tuple[float, ...], lack_of_fit: float | None = None
) -> float:
    """RMS error of :func:`_hl_pooled` about its estimand: the released sums drawn 4000 times from
    their law (positives per group Binomial(n_g, π) of a calibrated model, the sums' discrete
    Laplace noise, V floored as :func:`_hl_pooled` does) with a fixed seed — the 1/E nonlinearity at small
    expected counts has no closed form — after the private cuts moved users between the groups
    (:func:`_hl_cut_jitter`, the model the stderr uses; cuts midway between the groups' π)."""
    acc = hosmer_lemeshow_accounting(epsilon, depth, "split")
    s2, floor = hl_noise_parts(acc)
    p = np.asarray(pi)
    size = max(round(n / groups), 1)
    e1, e0 = size * p, size * (1 - p)
    g = np.random.default_rng(20261125)
    mu = _lack_of_fit_shift(size * p * (1 - p), np.maximum(size * p * (1 - p), floor), lack_of_fit)
    d = g.binomial(size, p, (4000, groups)) - e1 + mu  # O1 − E1: calibrated data, shifted by the lack of fit
    true = _hl_pooled(e1, e0, e1 + d, e0 - d, s2, floor, debias=False)
    # the private cuts move users between groups (:func:`_hl_cut_jitter`, as the stderr does), then the noise
    _, se_f = _central_curve(n, float(acc["epsilon_quantile"]), 1 << depth)
    disp = _hl_dispersion(0.0 if lack_of_fit is None else lack_of_fit, groups)
    e1j, e0j, dj = _hl_cut_jitter(e1, e0, d, (p[:-1] + p[1:]) / 2, n * se_f, g, 4000, disp)
    H = _hl_renoise(e1j, e0j, dj, acc, g, 4000)
    return math.sqrt(float(np.mean((H - true) ** 2)))


def _plan_hl_central(
    *, n, epsilon, groups=10, depth=10, mean_probabilities=None, bounds=None, lack_of_fit=None, **_
) -> Option:
    """Simulated from the released sums' law (:func:`_hl_central_rmse`); groups of equal size
    at public mean probabilities (default evenly spread over ``bounds``), a calibrated model, or
    one whose statistic is ``lack_of_fit`` (the anticipated H: the error grows with it, the noise
    multiplying each group's residual)."""
    pi = _hl_groups_uniform(n, int(groups), mean_probabilities, bounds)[1]
    lof = _check_lack_of_fit(lack_of_fit)
    se = _hl_central_rmse(int(n), float(epsilon), int(groups), int(depth), tuple(pi.tolist()), lof)
    return Option("central", "hosmer-lemeshow-algorithm2", {"groups": groups, "budget": "split"}, se)


def _plan_hl_secure(*, n, epsilon, groups=10, depth=6, bounds=None, lack_of_fit=None, **_) -> Option:
    """The secure release's RMS error (:func:`_hl_secure_rmse`, at a calibrated model or at the
    anticipated H ``lack_of_fit``) and its report size."""
    from privstats.secure.histogram import SecureSpec, report_bits

    lo_hi = check_probability_bounds((0.0, 1.0) if bounds is None else bounds)
    lof = _check_lack_of_fit(lack_of_fit)
    se = _hl_secure_rmse(int(n), float(epsilon), int(groups), int(depth), lo_hi, lof)
    spec = SecureSpec("hosmer_lemeshow", epsilon=epsilon, bounds=lo_hi, grid=1 << int(depth))
    params, bits = {"groups": groups, "depth": depth}, report_bits(spec.length)
    return Option("secure", HL_SECURE_PROTOCOL, params, se, messages_per_user=1.0, bits_per_user=bits)


@lru_cache(maxsize=64)
def _hl_secure_rmse(
    n: int,
    epsilon: float,
    groups: int,
    depth: int,
    bounds: tuple[float, float],
    lack_of_fit: float | None = None,
) -> float:
    """RMS error of the secure estimate (:func:`privstats.secure.hosmer_lemeshow._pooled`) about
    its estimand Σ r² / max(V, floor), simulated 4000 times with a fixed seed: probabilities uniform
    on ``bounds`` (the grid's cells share n evenly), a calibrated model (r ~ N(0, V)), the group
    sums' exact noise covariance (Gaussian), plus the private cuts' share (:func:`_hl_cut_variance`)."""
    from privstats.secure.aggregation import DistributedNoiseMechanism
    from privstats.secure.histogram import SecureSpec
    from privstats.secure.hosmer_lemeshow import _diff_cov, _groups, _pooled, _v_floor
    from privstats.secure.noise import noise_variance_factor

    spec = SecureSpec("hosmer_lemeshow", epsilon=epsilon, bounds=bounds, grid=1 << depth)
    cov = DistributedNoiseMechanism(spec.mechanism, noise_variance_factor(2)).count_covariance()
    k = int(spec.internal.size)
    edges = np.concatenate([[bounds[0]], spec.internal])
    mid = 0.5 * (edges[:-1] + edges[1:])
    per_cell = np.full(k, n / k)
    ends = _groups(np.cumsum(per_cell), groups)
    starts = np.concatenate([[0], ends[:-1] + 1])
    c = np.arange(k)
    G = ((c[None, :] >= starts[:, None]) & (c[None, :] <= ends[:, None])).astype(np.float64)
    C = _diff_cov(cov, k)
    a1, a0 = G * (1 - mid)[None, :], -G * mid[None, :]
    M1, M0 = np.concatenate([a1, G * mid[None, :], G]), np.concatenate([a0, G * mid[None, :], G])
    S = M1 @ C @ M1.T + M0 @ C @ M0.T
    Q = G.shape[0]
    var_r, floor = np.diag(S)[:Q], _v_floor(S, Q)
    e1, t, d2 = G @ (per_cell * mid), G @ per_cell, G @ (per_cell * mid * (1 - mid))
    g = np.random.default_rng(20261126)
    mu = _lack_of_fit_shift(d2, np.maximum(e1 * (t - e1) / t, floor), lack_of_fit)
    r = g.standard_normal((4000, Q)) * np.sqrt(d2) + mu
    w, V = np.linalg.eigh(S)
    z = (g.standard_normal((4000, 3 * Q)) * np.sqrt(np.maximum(w, 0.0))) @ V.T
    target = np.sum(r**2 / np.maximum(e1 * (t - e1) / t, floor), axis=1)
    est = _pooled(r + z[:, :Q], e1 + z[:, Q : 2 * Q], t + z[:, 2 * Q :], var_r, floor)
    var = float(np.mean((est - target) ** 2))
    se_f = math.sqrt(float(np.mean(np.diag(cov)[:k]))) / n  # the pooled curve places the cuts
    var += _hl_cut_variance(n, e1 / t, np.maximum(d2, floor), depth, se_f)
    return math.sqrt(var)


# the predictors are registered with their units (central first: the planner's order)
for _model, _protocol, _predictor, _run in (
    ("central", "hosmer-lemeshow-algorithm2", _plan_hl_central, central_run),
    ("secure", "hosmer-lemeshow-two-ecdfs", _plan_hl_secure, secure_run),
):
    unit(
        "hosmer_lemeshow",
        _model,
        _protocol,
        method="auto",
        options=("groups", "depth", "budget", "min_expected", "bootstrap", "method"),
        predictor=_predictor,
    )(_run)
