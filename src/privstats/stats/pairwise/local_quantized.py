"""Local model, Protocol A (Bell et al. 2020): each user quantises its value into k cells and sends
one frequency-oracle report (k-RR, OUE or Hadamard response); the aggregator estimates the
U-statistic of the cell histogram with the kernel's k×k matrix (structured O(k) operators for the
built-in kernels).

One unit per statistic, each with its predictor (from public parameters) and its run.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import numpy as np

from privstats.plan import Option, UselessResultWarning
from privstats.privacy.randomness import as_generator, as_source
from privstats.stats.pairwise.plumbing import (
    _auc_bins,
    _auc_cell_pair_bias,
    _auc_linear_family_bias,
    _check_dense,
    _check_structured,
    _classes,
    _collect,
    _default_smoothing,
    _kendall_bins,
    _pick_kernel_oracle,
    _pick_oracle,
    _quantization,
    _run_quantized,
    _simulating,
)
from privstats.stats.units import Call, Release, unit
from privstats.ustat import kernels as K
from privstats.ustat.params import choose_bins
from privstats.ustat.quantized import DENSE_MAX_CATEGORIES, STRUCTURED_MAX_CATEGORIES, QuantizedUStat
from privstats.validation import MAX_CELLS, check_positive_int

OPTIONS = ("bins", "oracle")
AUC_OPTIONS = ("domain_size", "oracle", "ties", "smoothing")
GMD_OPTIONS = (*OPTIONS, "quantization")
USTAT_OPTIONS = (*OPTIONS, "quantization", "lipschitz")


def _quantized_option(params: dict, stderr: float, proto: QuantizedUStat, **more) -> Option:
    """The planner's option for a quantised protocol: one report per user, of ``proto``'s size."""
    return Option(
        "local",
        "ustat-quantized",
        params,
        stderr,
        messages_per_user=1.0,
        bits_per_user=proto.bits_per_user,
        **more,
    )


def _max_categories(oracle: str) -> int:
    """Hadamard response (no structured variance yet) keeps the dense k×k path."""
    return DENSE_MAX_CATEGORIES if oracle == "hr" else STRUCTURED_MAX_CATEGORIES


# ----------------------------------------------------------------------------- AUC
def _plan_auc_quantized(
    *, n, epsilon, n_pos=None, domain_size=None, oracle="auto", ties=None, smoothing=None, **_
):
    """Protocol A: exact variance at uniform class histograms (the planner's public assumption) plus
    the largest quantisation bias over class densities linear on the bounds (pooled scores uniform),
    1/(3k²) (:func:`_auc_linear_family_bias`); ``smoothing="linear"`` is exact for linear densities,
    and the same bound is reported as the scale of its bias for curved ones.
    Ties ``"zero"`` count the same-bin pairs 0: bias 1/(2k) at uniform scores."""
    cls = _classes(n, n_pos)
    if cls is None:
        return None
    n_pos, n_neg = cls
    t = ties or "half"
    sm = smoothing or _default_smoothing(t, domain_size)
    grid = _auc_grid(cls, epsilon, domain_size, oracle, t, sm)
    if grid is None:
        return None
    k, orc = grid
    proto = QuantizedUStat(K.AUCOperator(k, t, sm), epsilon, orc)
    # at huge ε the exact variance is ~0 and can cancel to a tiny negative number
    var = max(proto.two_sample_variance(np.full(k, n_pos / k), np.full(k, n_neg / k)), 0.0)
    # + the data's own spread of the pairs sharing a bin around their ½ (Mann–Whitney null variance of
    # m⁺m⁻(m⁺ + m⁻ + 1)/12 per bin, m± ≈ n±/k): the binned AUC differs from the exact one by it
    var += (n / k + 1) / (12 * k * n_pos * n_neg)
    # with the linear correction the bias is 0 for linear class densities but not for curved ones, which
    # public parameters cannot bound: report the uncorrected worst case 1/(3k²) as its scale (at n = 569,
    # ε = 0.5 the grid has k = 2 cells, bound 0.083; measured on breast-cancer scores −0.066, issue 26)
    bias = _auc_linear_family_bias(k) if t == "half" else 0.5 / k
    return _quantized_option(
        {"domain_size": k, "oracle": orc, **({"smoothing": sm} if sm != "none" else {})},
        math.sqrt(var + bias**2),
        proto,
        bias=bias,
        note=f"bias 0 for linear class densities; up to {_auc_linear_family_bias(k):.2g} (the uncorrected "
        "worst case over linear densities, reported as the bias's scale) for curved ones"
        if sm == "linear"
        else "worst-case quantisation bias over linear class densities",
    )


def _auc_grid(cls: tuple[int, int], epsilon, domain_size, oracle, ties: str, smoothing: str):
    """Protocol A's bins k and oracle for ``(n_pos, n_neg)`` users: ``domain_size`` (else the planner's
    k), or None where no quantised protocol fits."""
    if domain_size:
        k, orc = int(domain_size), _pick_oracle(oracle, min(cls), epsilon, int(domain_size))
    else:
        k, orc = _auc_bins(*cls, epsilon, oracle, ties, smoothing)
    return None if k > _max_categories(orc) else (k, orc)


@unit("auc", "local", "ustat-quantized", "quantized", AUC_OPTIONS, _plan_auc_quantized)
def auc_quantized(c: Call) -> Release:
    """Bins and oracle as the predictor chooses them (or ``domain_size``); one report per user."""
    t = c.ties or "half"
    sm = c.smoothing or _default_smoothing(t, c.domain_size)
    cls = _classes(c.n, c.n_pos)
    grid = None if cls is None else _auc_grid(cls, c.epsilon, c.domain_size, c.oracle, t, sm)
    k, orc = grid if grid is not None else (c.domain_size, c.oracle)
    if k is None:
        raise ValueError("domain_size: no quantised AUC protocol fits these parameters; pass domain_size")
    proto = QuantizedUStat(K.AUCOperator(_check_structured(k, "domain_size", orc), t, sm), c.epsilon, orc)
    bins_p, bins_n = K.quantize(c.pos, (c.lo, c.hi), k), K.quantize(c.neg, (c.lo, c.hi), k)
    g = as_generator(c.rng) if _simulating(c.rng) else None
    sp, sn = _collect(proto, bins_p, c.rng, g), _collect(proto, bins_n, c.rng, g)
    value, var = proto.estimate_two_sample(sp, sn)
    params = {"domain_size": k, "oracle": orc, "ties": t, **({"smoothing": sm} if sm != "none" else {})}
    # the interval carries the planner's quantisation bias scale (1/(3k²) with ties ½): at k = 2 real
    # scores were 0.08–0.14 low and the plain ±1.96σ interval covered 0.80–0.89 (issue 26).  With the
    # linear correction the estimate is unbiased over the family that scale is the worst case of, so the
    # scale is a bias the data may have, not one it has: in quadrature, ±z√(σ² + b²), which covers for any
    # |bias| ≤ b.  Added to ±zσ instead (the worst case on top of the noise's) it covered 0.99–1.00 at
    # n = 5,000 on the four real sets, where the corrected grid's bias is 0.1-0.3σ.  Uncorrected (a given
    # grid) b is the estimate's own bias scale and stays added to the half-width (the local ROC's
    # uncorrected grid: realised bias 0.3-0.7σ, quadrature covered 0.88-0.98 over 100 seeds).
    # With the correction the scale is read off the released histograms (public post-processing): b is
    # the shared-cell pair share over 3k, which is 1/(3k²) at the planner's uniform histograms and grows
    # where both classes crowd one cell (randhie at n = 300, ε = 0.5: bias 1.75 · 1/(3k²), coverage
    # 0.8925 at 1/(3k²), 0.9525 at this scale; 400 seeds).
    if sm == "linear":
        bias = _auc_cell_pair_bias(proto.model.debias(sp), proto.model.debias(sn), sp.n, sn.n)
    else:
        bias = _auc_linear_family_bias(k) if t == "half" else 0.5 / k
    details = {"bias_bound": bias, **({"bias_rule": "quadrature"} if sm == "linear" else {})}
    return Release(value, var, params, bits=proto.bits_per_user, details=details)


# ----------------------------------------------------------------------------- Kendall's tau
def _plan_tau_local(*, n, epsilon, bins=None, oracle="auto", **_):
    """Protocol A on the k×k grid: exact variance of tau-a at a uniform product histogram, a range over
    the data's non-tie fractions, and the binned tau-b's bias.

    tau-b divides tau-a by √(ν_x ν_y), the binned non-tie fractions: 1 − 1/k at uniform margins (the
    best case, ``best_case``), lower on real data (0.3-0.75 per variable on the four real sets, 0.01-0.2
    on a peaked one), so the stated stderr takes ν = ½ per variable (the planner was 0.31-0.45x the RMSE
    in 9 of 20 real cells at 1 − 1/k, issue 26); with the bias scale the release allows on data that
    are not independent and uniform, :func:`_tau_b_bias_scale` (Gaussian-copula data with uniform
    margins, worst over the correlation and k), in quadrature; 0 at the best case.  It is not a worst
    case: public parameters bound neither ν (a variable in one bin has ν = 0) nor the bias on skewed
    margins."""
    k = bins or _kendall_bins(n, epsilon)
    orc = _pick_oracle(oracle, n, epsilon, k * k)
    if k * k > _max_categories(orc):
        return None
    proto = QuantizedUStat(K.KendallOperator(k, k), epsilon, orc)
    sd_a = math.sqrt(max(proto.conditional_variance(np.full(k * k, n / (k * k))), 0.0))
    nontie = 1 - 1 / k  # tau-b divides by √(non-tie x · non-tie y) = 1 − 1/k
    b = _tau_b_bias_scale()  # as the release's interval (:func:`_tau_b_ramped_bias`) on real data
    # the released tau-b is clipped into [−1, 1], so no data shape makes it off by more than 2
    worst = min(math.hypot(sd_a / _tau_guard_at_uniform(proto, k, n), b), 2.0)
    note = (
        f"stderr at non-tie fractions ½ (real binned data: 0.3-0.75) plus the bias ±{b:.2g} of binned "
        f"tau-b on Gaussian-copula data; {sd_a / nontie:.3g} at independent uniform data (the best case, "
        "no bias); "
        f"with the data's non-tie fractions ν_x, ν_y the noise is {sd_a:.3g}/√(ν_x ν_y); over data shapes "
        f"from {sd_a / nontie:.3g} (uniform margins) to {worst:.3g} (non-tie fractions at the release's "
        "guard, one noise sd: a peaked variable)"
    )
    return _quantized_option(
        {"bins": k, "oracle": orc},
        math.hypot(sd_a / 0.5, b),
        proto,
        bias=b,
        best_case=sd_a / nontie,
        stderr_range=(sd_a / nontie, max(worst, sd_a / nontie)),
        note=note,
    )


def _tau_guard_at_uniform(proto: QuantizedUStat, k: int, n: int) -> float:
    """The release's floor on a non-tie fraction (:data:`TAU_GUARD` noise sd, at least 1e-3), at the
    uniform histogram (public): the smallest denominator √(g_x g_y) tau-b can have, so sd(tau-a)/g is
    the noise where both variables are peaked in one bin (the worst case over data shapes)."""
    tie_x, _ = K.kendall_tie_operators(k, k)
    var = proto.conditional_variance(np.full(k * k, n / (k * k)), tie_x)
    return max(TAU_GUARD * math.sqrt(max(var, 0.0)), 1e-3)


@functools.lru_cache(maxsize=64)
def _tau_b_bin_bias(k: int, grid: int = 400) -> float:
    """Largest |binned tau-b − tau| over Gaussian copulas (ρ in ±0.2 … ±0.95) with uniform margins on
    k equal bins per variable (public: k only).  0 at k = 2 (the median split keeps tau = (2/π)·asin ρ),
    0.042 at k = 3, 0.053-0.054 at k = 4-6, 0.033 at k = 16: tau-b's tie correction overshoots and the
    bias decays slowly in k; on the real sets it was 0.03-0.09 at k = 2-10 (skewed and discrete margins
    go beyond this family)."""
    from scipy.special import ndtri

    if k < 3:
        return 0.0
    m = grid - grid % k
    a = ndtri((np.arange(m) + 0.5) / m)
    out = 0.0
    for r in (0.2, 0.4, 0.6, 0.8, 0.9, 0.95):  # the bias is odd in ρ
        c = np.exp(
            -(r * r * (a[:, None] ** 2 + a[None, :] ** 2) - 2 * r * a[:, None] * a[None, :]) / (2 - 2 * r * r)
        )
        P = (c / c.sum()).reshape(k, m // k, k, m // k).sum(axis=(1, 3))
        S = np.zeros((k + 1, k + 1))
        S[:k, :k] = np.cumsum(np.cumsum(P[::-1, ::-1], 0), 1)[::-1, ::-1]  # Σ over i' ≥ i, j' ≥ j
        conc = float(np.sum(P * S[1:, 1:]))
        disc = float(np.sum(P * (S[1:, :1] - S[1:, :k])))
        nu = 1 - float(np.sum(P.sum(axis=1) ** 2))  # both margins uniform: equal non-tie fractions
        out = max(out, abs(2 * (conc - disc) / nu - 2 / math.pi * math.asin(r)))
    return out


@unit("kendall_tau", "local", "ustat-quantized", "quantized", (*OPTIONS, "variant"), _plan_tau_local)
def kendall_tau_quantized(c: Call) -> Release:
    """One report of the (x, y) cell on the bins × bins grid; tau-b's non-tie fractions come from the
    same reports (delta method, exact to first order)."""
    n, epsilon = c.n, c.epsilon
    k = c.bins or _kendall_bins(n, epsilon)
    check_positive_int(k, "bins", minimum=2, maximum=math.isqrt(STRUCTURED_MAX_CATEGORIES))  # k² categories
    cat = K.quantize(c.xs, c.bx, k) * k + K.quantize(c.ys, c.by, k)
    orc = _pick_oracle(c.oracle, n, epsilon, k * k)
    _check_structured(k * k, "bins", orc)
    A = K.KendallOperator(k, k)
    extra: tuple[Any, ...] = (*K.kendall_tie_operators(k, k), _same_cell(k)) if c.variant == "b" else ()
    proto, ta, va, extras = _run_quantized(A, cat, epsilon, orc, c.rng, extra)
    params = {"bins": k, "categories": k * k, "oracle": orc, "variant": c.variant}
    if c.variant == "a":
        return Release(ta, va, params, bits=proto.bits_per_user)
    (ny, _, S), (nz, _, _), (same, _, _) = extras
    value, draws, guards = _tau_b_guarded(proto, A, extra, S, n, np.array([ta, ny, nz]), c.rng)
    var = float(np.var(draws, ddof=1))
    details: dict[str, Any] = {"tau_a": ta, "nontie_x": ny, "nontie_y": nz, "nontie_guards": guards}
    details["same_cell"] = min(max(same, 0.0), 1.0)
    # the binned tau-b's bias in quadrature (issue 26: the plain interval covered 0.87-0.92 in 5 of 20
    # real cells).  Scale: the Gaussian copula's worst case over ρ and k, ramped by k²·ŝ − 1 (ŝ: the
    # released same-cell pair share), the joint histogram's χ² distance from the uniform product; 0 at
    # independent uniform data, where binning adds no bias
    b = _tau_b_ramped_bias(details["same_cell"], k)
    details.update(bias_bound=b, bias_rule="quadrature", ci_fn=_tau_b_ci(value, draws, b))
    return Release(value, var, params, bits=proto.bits_per_user, details=details)


#: the χ² distance k²·ŝ − 1 at which the bias scale reaches its full value :func:`_tau_b_bias_scale`
#: (0 at independent uniform data; 0.5-4.5 on every real cell of issue 26)
TAU_BIAS_RAMP = 0.5


@functools.cache
def _tau_b_bias_scale() -> float:
    """max over k = 3..16 of :func:`_tau_b_bin_bias` (≈ 0.054, public), computed once."""
    return max(_tau_b_bin_bias(j) for j in range(3, 17))


def _tau_b_ramped_bias(same: float, k: int) -> float:
    """:func:`_tau_b_bias_scale` times min(1, max(0, (k²·same − 1)/:data:`TAU_BIAS_RAMP`))."""
    return _tau_b_bias_scale() * min(max((k * k * same - 1) / TAU_BIAS_RAMP, 0.0), 1.0)


def _same_cell(k: int) -> K.KronOperator:
    """I[x cell = x' cell and y cell = y' cell] on the k×k grid: the share of pairs sharing a cell."""
    return K.KronOperator(k, k, [(1.0, K.StepOperator(k, 0, 1, 0), K.StepOperator(k, 0, 1, 0))])


def _tau_b_ci(t: float, draws: np.ndarray, b: float):
    """The interval at ``level``: the level's central range of tau-b over the Gaussian draws of (tau-a,
    ν_x, ν_y), the ratio's law, each end moved out by what the bias bound b adds to ±zσ in
    :func:`bias_aware_halfwidth`; met with [−1, 1].  The law is skewed where a noisy ν is small (the
    stderr grows with the error: correlation 0.86 on fair at n = 5,000, ε = 2), and ±z·RMS around the
    value covered 0.99-1.00 in 4 of 20 real cells (issue 26)."""
    from scipy.special import ndtri

    from privstats.estimate import _inside, bias_aware_halfwidth

    sd = float(np.std(draws, ddof=1))

    def ci_fn(level: float) -> tuple[float, float]:
        lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
        w = float(bias_aware_halfwidth(level, sd, b)) - float(ndtri(0.5 + level / 2)) * sd
        return _inside(lo - w, hi + w, (hi - lo) / 2 + w, (-1.0, 1.0))

    return ci_fn


TAU_DRAWS = 4000  # Gaussian draws behind the local tau-b's stderr
TAU_GUARD = 1.0  # the non-tie fractions are floored at this many noise sd


def _tau_b_guarded(proto, A, extra, S, n: int, m: np.ndarray, rng) -> tuple[float, np.ndarray, list[float]]:
    """tau-b = tau-a / √(max(ν_x, g_x) max(ν_y, g_y)) from the noisy (tau-a, ν_x, ν_y) (ν: non-tie
    fractions), each ν guarded at g = 1 noise sd (public: from the plug-in covariance), and that ratio
    over Gaussian draws of the three with their joint plug-in covariance (Σ c·Û_B = Û_{Σ c·B} gives
    every pair's covariance): their variance is the stderr, their quantiles the interval.  The delta
    method divides by ν, so with ties and local noise (ν near 0) it reported stderr 213 where the
    spread was 0.1 (issue 26).
    """
    e = np.eye(3)

    def v(c):
        return proto.plug_in_variance(S, n, A.combine(c[0], (c[1], extra[0]), (c[2], extra[1])))

    d = np.array([v(e[i]) for i in range(3)])
    cov = np.diag(d)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        cov[i, j] = cov[j, i] = (v(e[i] + e[j]) - d[i] - d[j]) / 2
    guards = [max(TAU_GUARD * math.sqrt(max(d[i], 0.0)), 1e-3) for i in (1, 2)]

    def f(t):
        return t[..., 0] / np.sqrt(np.maximum(t[..., 1], guards[0]) * np.maximum(t[..., 2], guards[1]))

    w, V = np.linalg.eigh(cov)
    gen = np.random.default_rng(None if rng is None else as_generator(rng).integers(2**62))
    draws = m + (gen.standard_normal((TAU_DRAWS, 3)) * np.sqrt(np.maximum(w, 0.0))) @ V.T
    return float(f(m)), f(draws), guards


# ----------------------------------------------------------------------------- Gini mean difference
def _plan_gmd_local(*, n, epsilon, bounds=None, bins=None, oracle="auto", quantization="avg", **_):
    """Protocol A: exact variance at the uniform histogram (the planner's assumption).  ``"dither"``
    (a grid shifted by a public uniform fraction of a cell, :func:`_gmd_dithered_cells`) has no bias;
    its shift adds a zero-mean error that is ≈ 0 on smooth data (the stated stderr is the noise's).
    A fixed grid ("avg", "mid", "center") adds the
    quantisation bias b = :func:`_gmd_linear_cell_bias` (≈ w/(6k): the worst case over densities
    linear within each bin), stated as √(σ² + b²) with ``bias`` = b.  On real data (issue 26) the
    measured RMSE was 1.3–2.4σ, and the plan without b was 0.41–0.47x of it; with b, at the automatic k
    (b ≤ 2σ/3, :func:`_gmd_bins`) the plan is at most 1.2σ and read 0.59–1.02x the measured RMSE on the
    real sets (400 seeds; the best case σ is data uniform within bins, bias 0)."""
    w = 1.0 if bounds is None else float(bounds[1]) - float(bounds[0])
    if quantization == "dither":
        k = bins or _gmd_bins(n, epsilon, oracle)
        if k + 1 > _max_categories(oracle):
            return None
        op = K.GiniOperator(k + 1, "center")
        orc = _pick_kernel_oracle(oracle, n, epsilon, op)
        proto = QuantizedUStat(op, epsilon, orc)
        # the noise at uniform data (the two end cells hold half a cell each, on average over the
        # shift), and its range over shapes: all of it at both ends (least), in the middle, at one end
        shapes = np.zeros((4, k + 1))
        shapes[0], shapes[1, [0, -1]], shapes[2, (k + 1) // 2], shapes[3, 0] = n / k, n / 2, n, n
        shapes[0, [0, -1]] /= 2
        sds = [w * (k + 1) / k * math.sqrt(max(proto.conditional_variance(h), 0.0)) for h in shapes]
        return _quantized_option(
            {"bins": k, "oracle": orc, "quantization": "dither"},
            sds[0],
            proto,
            stderr_range=(min(sds), max(sds)),
            note=f"noise stderr {sds[0]:.3g} at data uniform on the bounds, {min(sds):.3g} to {max(sds):.3g} "
            "from data at both ends to data at one end; the grid's random shift makes the value unbiased "
            "for any data and adds a zero-mean error, ≈ 0 on smooth data and up to a third of the noise "
            "on tied data (issue 26's real sets)",
        )
    how = quantization if quantization in K.QUANTISATIONS else "avg"
    k = bins or _gmd_bins(n, epsilon, oracle, how)
    if k > _max_categories(oracle):
        return None
    op = K.GiniOperator(k, how)
    orc = _pick_kernel_oracle(oracle, n, epsilon, op)
    proto = QuantizedUStat(op, epsilon, orc)
    var = max(proto.conditional_variance(np.full(k, n / k)), 0.0)
    b = w * _gmd_linear_cell_bias(np.full(k, 1.0), how)
    sd = w * math.sqrt(var)
    return _quantized_option(
        {"bins": k, "oracle": orc},
        math.hypot(sd, b),
        proto,
        bias=b,
        best_case=sd,
        note=f"noise stderr {sd:.3g} at data uniform within bins, plus the quantisation bias ±{b:.3g} (worst "
        "case over densities linear within each bin; the interval adds it): from best to worst case over "
        f"that family the RMSE is {sd:.3g} to {math.hypot(sd, b):.3g}",
    )


GMD_BINS_MAX = 256  # the automatic choice's search range (the MSE is convex in k well below it)
# the automatic bins keep the bias bound b within this share of the noise sd σ: the interval is then
# at most ±2.32σ (bias-aware, covering for every |bias| ≤ b), which covers 0.98 where the real bias is
# 0 and 0.93 where it is 1.27b (as far as real data reached); at the MSE-best k, b ≈ σ and those read
# 0.992 and 0.916 (fair and randhie 1.000, breast-cancer radii 0.890 at n = 300, ε = 0.5, issue 26)
GMD_BIAS_SHARE = 2 / 3


@functools.lru_cache(maxsize=256)
def _gmd_bins(n: int, epsilon: float, oracle: str = "auto", quantization: str = "avg") -> int:
    """Bins k for the local GMD (on [0, 1]) minimising the predicted MSE σ(k)² + b(k)² (the exact
    variance at the uniform histogram and the quantisation bias b(k) ≈ 1/(6k) that a k-bin grid can
    have, :func:`_gmd_linear_cell_bias`) among the k with b(k) ≤ ``GMD_BIAS_SHARE``·σ(k): the MSE-best
    k sits at b ≈ σ, where an interval valid for every bias up to b over-covers (0.992) when the real
    bias is 0 and under-covers (0.91) at the 1.27b real data reached.  σ grows and b falls with k, so
    that is the first k with b ≤ 2σ/3: its predicted worst-case RMSE is 1-17% above the MSE-best k's,
    its noise sd 16-61% (the RMSE measured on the real sets: -17% to +58%, median +23%).  The generic
    ``choose_bins`` used the Lipschitz bound 1/k² and a k-RR variance bound instead of the exact one."""
    best, best_score, free, free_score = 0, math.inf, 2, math.inf
    rising = 0
    for k in range(2, GMD_BINS_MAX + 1):
        op = K.GiniOperator(k, quantization)
        orc = _pick_kernel_oracle(oracle, n, epsilon, op)
        var = max(QuantizedUStat(op, epsilon, orc).conditional_variance(np.full(k, n / k)), 0.0)
        b = _gmd_linear_cell_bias(np.full(k, 1.0), quantization)
        score = var + b**2
        if score < free_score:
            free, free_score = k, score
        if b <= GMD_BIAS_SHARE * math.sqrt(var) and score < best_score:
            best, best_score, rising = k, score, 0
        elif best:
            rising += 1
            if rising >= 8:  # past the minimum: the variance grows and the bias term flattens
                break
    return best or free  # no k up to GMD_BINS_MAX keeps b ≤ 2σ/3 (σ tiny): the MSE-best one


def _gmd_linear_cell_bias(h: np.ndarray, quantization: str = "avg") -> float:
    """Largest |bias| of the binned GMD (on [0, 1], k bins) over data whose density is linear within
    each bin, given the bin masses ``h`` (clipped at 0, normalised).  A pair in bins a > b is counted
    c_a − c_b (bin centres), off by δ_b − δ_a (offsets from the centres); summed over pairs that is
    2 Σ_a p_a m_a (P(above a) − P(below a)) with m_a the bin's mean offset, |m_a| ≤ 1/(6k) for a linear
    density; a pair sharing a bin is counted 1/(3k) ("avg") where a linear density has E|X − Y| in
    [4/(15k), 1/(3k)], so that term adds at most P(same bin)/(15k) ("mid", counted 1/(2k): 7/(30k);
    "center", counted 0: 1/(3k)).  At any histogram the bound is
    ≈ 1/(6k) (0.17–0.20/k on the four real sets); the measured biases were −1.27 to +1.27 of it (ages
    on 6 bins, radii on 3: peaked or discrete data is not linear within a bin, issue 26)."""
    p = np.clip(np.asarray(h, dtype=np.float64), 0.0, None)
    k = p.size
    if p.sum() <= 0:
        p = np.full(k, 1.0)
    p = p / p.sum()
    cum = np.cumsum(p)
    off = float(np.sum(p * np.abs((1 - cum) - (cum - p)))) / (3 * k)
    same = {"avg": 1 / 15, "mid": 7 / 30, "center": 1 / 3}.get(quantization, 1 / 15)  # k·max |diag − E|X−Y||
    return off + same * float(p @ p) / k


GMD_BIAS_EXCESS = 1.3  # real data's quantisation bias reached 1.27x the linear-within-bin bound (issue 26)


def _warn_gmd_bias(bias: float, sd: float, k: int) -> None:
    """Warn where the quantisation bias can reach the noise sd: the bound b covers densities linear
    within each bin, and peaked or discrete real data went to 1.27 b (1.19-1.24 sd at b = 0.8 sd,
    issue 26), so the warning fires at 1.3 b ≥ σ.  Post-processing: b and σ come from the released
    histogram.  The interval already allows for b; the warning says the point value can be off by
    about its stderr and how to trade the bias for noise."""
    if sd > 0 and GMD_BIAS_EXCESS * bias >= sd:
        warnings.warn(
            f"gini_mean_difference (local): the quantisation bias on {k} bins can reach the noise "
            f"stderr ({bias:.3g} for data linear within each bin, up to ~{GMD_BIAS_EXCESS:g}x that on "
            f"peaked or discrete data; stderr {sd:.3g}): the interval allows for {bias:.3g}, the value "
            "may be off by about its stderr; more bins (bins=) trade this bias for noise",
            UselessResultWarning,
            stacklevel=5,
        )


@unit("gini_mean_difference", "local", "ustat-quantized", "quantized", GMD_OPTIONS, _plan_gmd_local)
def gini_mean_difference_quantized(c: Call) -> Release:
    n, epsilon = c.n, c.epsilon
    if c.quantization == "dither":
        return _gmd_dithered(c)
    k = c.bins or _gmd_bins(n, epsilon, c.oracle, _quantization(c.quantization))
    check_positive_int(k, "bins", minimum=2, maximum=STRUCTURED_MAX_CATEGORIES)
    if c.oracle == "hr":
        _check_dense(k, "bins")
    op = K.GiniOperator(k, _quantization(c.quantization))
    orc = _pick_kernel_oracle(c.oracle, n, epsilon, op)
    _check_structured(k, "bins", orc)
    proto = QuantizedUStat(op, epsilon, orc)
    g = as_generator(c.rng) if _simulating(c.rng) else None
    value, var, S = proto.estimate(_collect(proto, K.quantize(c.u, (0, 1), k), c.rng, g))
    w = c.w
    params = {"bins": k, "oracle": orc, "quantization": c.quantization}
    # the interval carries the quantisation bias bound from the released histogram (post-processing):
    # without it real ages on 6 bins were 1.27 sd low and the interval covered 0.75 (issue 26)
    bias = w * _gmd_linear_cell_bias(S, _quantization(c.quantization))
    _warn_gmd_bias(bias, w * math.sqrt(max(var, 0.0)), k)
    details = {"bias_bound": bias, "bias_rule": "quadrature"}
    return Release(w * value, w * w * var, params, bits=proto.bits_per_user, details=details)


def _gmd_dithered_cells(u: np.ndarray, k: int, shift: float) -> np.ndarray:
    """Cells ``floor(u·k + shift)`` of [0, 1]: k cells of width 1/k shifted by ``shift`` ∈ [0, 1) of a
    cell, so k + 1 cells cover the range.

    Counting a pair |a − b|/k (0 in one cell) counts the grid edges between the two values, and over a
    uniform shift a segment of length d holds k·d edges on average: the binned GMD is unbiased for
    every data set, tied, peaked or narrower than a cell (the fixed grid's "avg" counting was off by
    up to 2.8x its linear-within-bin bound on scikit-learn's digits, where the values fill a quarter
    of one cell at k = 4, issue 26).

    >>> _gmd_dithered_cells(np.array([0.0, 0.3, 1.0]), 4, 0.5).tolist()
    [0, 1, 4]
    """
    return np.minimum(np.floor(np.asarray(u, dtype=np.float64) * k + shift), k).astype(np.int64)


def _gmd_dithered(c: Call) -> Release:
    """The local GMD on a dithered grid: ``bins`` cells (the automatic choice as for a fixed grid)
    shifted by a public uniform fraction of a cell, drawn per release (``rng``'s stream, or the OS
    CSPRNG), published as ``params["shift"]``; "center" counting over the k + 1 cells.  The stderr is
    the noise's given the cells; the shift's own error has mean 0 and was at most 0.34 of the noise
    sd on issue 26's five real sets (tied ages and blocks of zeros; ≈ 0 on smooth data)."""
    n, epsilon = c.n, c.epsilon
    k = c.bins or _gmd_bins(n, epsilon, c.oracle)
    check_positive_int(k, "bins", minimum=2, maximum=STRUCTURED_MAX_CATEGORIES - 1)
    if c.oracle == "hr":
        _check_dense(k + 1, "bins")
    op = K.GiniOperator(k + 1, "center")  # counts |a − b|/(k + 1): rescaled below to cells of 1/k
    orc = _pick_kernel_oracle(c.oracle, n, epsilon, op)
    _check_structured(k + 1, "bins", orc)
    proto = QuantizedUStat(op, epsilon, orc)
    g = as_generator(c.rng) if _simulating(c.rng) else None
    shift = float((g if g is not None else as_source(None)).random())  # public, data-independent
    value, var, _ = proto.estimate(_collect(proto, _gmd_dithered_cells(c.u, k, shift), c.rng, g))
    scale = c.w * (k + 1) / k
    params = {"bins": k, "oracle": orc, "quantization": "dither", "shift": shift}
    return Release(scale * value, scale * scale * var, params, bits=proto.bits_per_user)


# ----------------------------------------------------------------------------- collision probability
def _plan_collision_local(*, n, epsilon, domain_size=None, oracle="auto", **_):
    if not domain_size:
        return None
    d = int(domain_size)
    if d > STRUCTURED_MAX_CATEGORIES:
        return None
    orc = _pick_kernel_oracle(oracle, n, epsilon, K.CollisionOperator(d))
    if d > _max_categories(orc):
        return None
    proto = QuantizedUStat(K.CollisionOperator(d), epsilon, orc)
    var = proto.conditional_variance(np.full(d, n / d))
    return _quantized_option({"domain_size": d, "oracle": orc}, math.sqrt(var), proto)


@unit("collision_probability", "local", "ustat-quantized", "quantized", ("oracle",), _plan_collision_local)
def collision_probability_quantized(c: Call) -> Release:
    d = c.d
    _check_structured(d, "domain_size", c.oracle)  # before the choice: it scores O(d) histograms
    orc = _pick_kernel_oracle(c.oracle, c.n, c.epsilon, K.CollisionOperator(d))
    proto, value, var, _ = _run_quantized(K.CollisionOperator(d), c.xs, c.epsilon, orc, c.rng)
    return Release(value, var, {"domain_size": d, "oracle": orc}, 1.0, proto.bits_per_user)


# ----------------------------------------------------------------------------- any kernel
def _plan_ustat_local(
    *, n, epsilon, kernel=None, bounds=None, bins=None, quantization="avg", lipschitz=1.0, oracle="auto", **_
):
    """Protocol A needs the kernel itself (public code, not data): pass ``kernel=`` (a callable with
    ``bounds``, or a k×k matrix).  Exact variance at a uniform histogram (the planner's assumption;
    the cell-averaged matrix is then unbiased); None without the kernel, since the noise's variance
    depends on the whole matrix, not only on its range."""
    if kernel is None:
        return None
    _quantization(quantization)  # "dither" is the Gini mean difference's alone
    if callable(kernel):
        if bounds is None:
            return None
        lo, hi = float(bounds[0]), float(bounds[1])
        k = bins or min(choose_bins(n, epsilon, lipschitz=lipschitz, assumption="kernel"), 256)
        A = K.matrix_from_callable(
            lambda u, v: kernel(lo + u * (hi - lo), lo + v * (hi - lo)), k, quantization
        )
        params = {"bins": k, "quantization": quantization}
    else:
        A = K.check_kernel_matrix(kernel)
        k = A.shape[0]
        params = {"bins": k}
    if k > DENSE_MAX_CATEGORIES:
        return None
    orc = _pick_kernel_oracle(oracle, n, epsilon, A)
    proto = QuantizedUStat(A, epsilon, orc)
    var = max(proto.conditional_variance(np.full(k, n / k)), 0.0)
    return _quantized_option({**params, "oracle": orc}, math.sqrt(var), proto)


def _callable_matrix(c: Call) -> tuple[Any, np.ndarray, dict]:
    """A callable kernel averaged over 256 points per cell of the k×k matrix: k is capped so that
    k²·256 ≤ MAX_CELLS/4 (512 MiB, seconds; the default k = 4096 at ε = 40 allocated 32 GiB); the
    automatic choice stops at 256 bins, whose quantisation error (≤ lipschitz/256) is below the noise
    at any n a test can hold."""
    k_max = math.isqrt(MAX_CELLS // 1024)
    k = c.bins or min(choose_bins(c.n, c.epsilon, lipschitz=c.lipschitz, assumption="kernel"), 256)
    check_positive_int(k, "bins", minimum=2)
    _check_dense(k, "bins")
    if k > k_max:
        raise ValueError(
            f"bins: a callable kernel is averaged over 256 points in each cell of the dense k×k "
            f"matrix; k={k} exceeds {k_max} ({256 * 8 * k * k / 2**30:.0f} GiB); use fewer bins"
        )
    how = _quantization(c.quantization)
    lo, hi, f = c.lo, c.hi, c.f
    A = K.matrix_from_callable(lambda u, v: f(lo + u * (hi - lo), lo + v * (hi - lo)), k, how)
    return A, K.quantize(c.xs, (lo, hi), k), {"bins": k, "quantization": how}


@unit("ustatistic", "local", "ustat-quantized", "quantized", USTAT_OPTIONS, _plan_ustat_local)
def ustatistic_quantized(c: Call) -> Release:
    if c.A is None:
        A, cells, params = _callable_matrix(c)
    else:
        A, cells, params = c.A, c.xs, {"bins": c.A.shape[0]}
    orc = _pick_kernel_oracle(c.oracle, c.n, c.epsilon, A)
    proto, value, var, _ = _run_quantized(A, cells, c.epsilon, orc, c.rng)
    return Release(value, var, {**params, "oracle": orc}, bits=proto.bits_per_user)
