"""The Gini coefficient GMD·(n−1)/(2n·mean): a Gini-mean-difference unit plus a private mean.

One unit per trust model (the mean's protocol follows the model: discrete Laplace for the central
model, randomized rounding and binary randomized response otherwise), each with its predictor.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from privstats.local import BinaryRR
from privstats.plan import Option
from privstats.privacy.randomness import as_generator
from privstats.stats.pairwise.central import _plan_gmd_central
from privstats.stats.pairwise.local_quantized import _plan_gmd_local
from privstats.stats.pairwise.plumbing import _central_std, _gini_parts, _simulating
from privstats.stats.pairwise.secure_pairs import _plan_gmd_pairs
from privstats.stats.units import Call, Release, unit
from privstats.ustat import central as C
from privstats.ustat.quantized import MECHANISM_EPSILON_MAX


def _plan_gini(model, gmd_predictor, *, n, epsilon, bounds=None, mean_fraction=0.5, **options):
    """Delta method for G = GMD·(n−1)/(2n·mean) at uniform values on ``bounds`` (the planner's public
    assumption: GMD = w/3, mean = lo + w/2): the GMD predictor at ε(1 − f) and the mean's variance at εf
    (central: discrete Laplace of sensitivity w/n; local and secure: randomized rounding, exactly
    w²/(6n) at uniform values, plus binary RR); the ratio's bias G·Var(mean)/mean² is included."""
    parts = _gini_parts(n, epsilon, bounds, mean_fraction)
    if parts is None:
        return None
    lo, w, eps_gmd, eps_mean = parts
    gmd_opt = gmd_predictor(n=n, epsilon=eps_gmd, bounds=bounds, **options)
    if gmd_opt is None:
        return None
    gmd, mean = w / 3, lo + w / 2
    if model == "central":
        var_mean = _central_std(w / n, eps_mean) ** 2
    else:
        rr = BinaryRR(min(eps_mean, MECHANISM_EPSILON_MAX))
        var_count = float(rr.variance(n, np.array([n / 2, n / 2]))[1]) + n / 6
        var_mean = w * w * var_count / n**2
    g = gmd * (n - 1) / (2 * n * mean)
    # the GMD's quantisation bias (local: the worst case over densities linear within bins, 0 at the
    # best case) scales into G; its noise alone is √(stderr² − bias²)
    sd_gmd = gmd_opt.stderr if gmd_opt.best_case is None else gmd_opt.best_case
    var = g * g * (sd_gmd**2 / gmd**2 + var_mean / mean**2)
    bias = g * var_mean / mean**2
    q = g * gmd_opt.bias / gmd if gmd_opt.best_case is not None else 0.0
    return Option(
        model,
        gmd_opt.protocol + "+mean",
        {**gmd_opt.params, "mean_fraction": mean_fraction},
        math.sqrt(var + (bias + q) ** 2),
        bias=bias + q,
        best_case=None if gmd_opt.best_case is None else math.sqrt(var + bias**2),
        note=gmd_opt.note and f"the GMD's {gmd_opt.note}",
        messages_per_user=gmd_opt.messages_per_user + (0.0 if model == "central" else 1.0),
        bits_per_user=gmd_opt.bits_per_user + (0.0 if model == "central" else 1.0),
    )


def _local_mean(xs, lo, hi, epsilon, rng, g):
    """Unbiased LDP mean: randomized rounding to {lo, hi}, then binary randomized response."""
    u = (xs - lo) / (hi - lo)
    rr = BinaryRR(min(epsilon, MECHANISM_EPSILON_MAX))
    if _simulating(rng):
        bits = (g.random(u.size) < u).astype(np.int64)
        state = rr.simulate(bits, g)
    else:
        from privstats.privacy.randomness import as_source

        bits = (as_source(None).random(u.size) < u).astype(np.int64)
        state = rr.aggregate(rr.encode_batch(bits))
    est = rr.estimate(state)
    n = xs.size
    frac = float(est.value[1]) / n
    # Var = RR noise given the bits + the rounding's Σ u(1−u), bounded by n·f(1−f) (conservative)
    f = min(max(frac, 0.0), 1.0)
    var_count = float(est.stderr[1]) ** 2 + n * f * (1 - f)
    return lo + (hi - lo) * frac, (hi - lo) ** 2 * var_count / n**2


def gini_coefficient_run(c: Call) -> Release:
    """The GMD with ε(1 − f) under the call's model and method, the mean with εf, and their ratio."""
    from privstats.stats.pairwise.functions import gini_mean_difference

    xs, lo, hi, n, w = c.xs, c.lo, c.hi, c.n, c.hi - c.lo
    eps_mean, eps_gmd = c.epsilon * c.mean_fraction, c.epsilon * (1 - c.mean_fraction)
    g = as_generator(c.rng) if _simulating(c.rng) else None
    gmd = gini_mean_difference(
        xs, epsilon=eps_gmd, bounds=(lo, hi), model=c.model, method=c.method, rng=g, **c.kwargs
    )
    if c.model == "central":
        mean, std = C.central_release(float(xs.mean()), epsilon=eps_mean, sensitivity=w / n, rng=g)
        var_mean = std**2
    else:
        mean, var_mean = _local_mean(xs, lo, hi, eps_mean, c.rng, g)
    # the raw GMD (its clipped value is 0 whenever the noise took it below 0, which gave G = 0 with
    # stderr 0: zero-width intervals, coverage 0.64 at n = 300, ε = 0.5, issue 26); the mean is at least
    # lo and is guarded at one noise sd (a noisy mean near 0 gave stderr 2e5)
    raw = float(gmd.unclipped)
    mean_c = max(mean, lo, math.sqrt(var_mean), w * 1e-6)
    scale = (n - 1) / (2 * n * mean_c)
    value = raw * scale
    # the ratio's delta method needs G², and E[value²] = G² + Var(value): at n = 300, ε = 0.5 the GMD's
    # noise alone made value² several times G² and the stderr 1.6x the spread (issue 26), so G² is
    # estimated unbiasedly (floored at 0), which is post-processing of the released values
    var_gmd = (scale * (gmd.stderr or 0)) ** 2
    g2 = max(value**2 - var_gmd, 0.0)
    cv2 = var_mean / mean_c**2
    # both terms divide by the noisy mean squared, and E[1/m̂²] ≈ (1 + 3cv²)/m² (second order): at
    # n = 300, ε = 0.5 the mean's cv is 0.38 and the plug-in stderr's RMS was 1.5x the spread
    var = (var_gmd + g2 * cv2) / (1 + 3 * cv2)
    extra = 0 if c.model == "central" else 1
    law: dict[str, object] = {}
    if c.model == "central":
        # both noises are Laplace, the GMD's dominant: its Laplace law plus the mean's part as a normal
        # one (±1.96σ covers a Laplace ~0.937; 0.91-0.92 in 100-seed cells of issue 26's table)
        law = {
            "ci_law": {
                "laplace_scale": math.sqrt(var_gmd / (1 + 3 * cv2) / 2),
                "normal_sd": math.sqrt(g2 * cv2 / (1 + 3 * cv2)),
            }
        }
    else:
        gmd_b = gmd.details.get("bias_bound", 0.0) if gmd.details.get("bias_rule") == "quadrature" else 0.0
        # the ratio's interval is Fieller's (the GMD over the noisy mean), not ±z·stderr around it
        a = (n - 1) / (2 * n)
        law = {
            "ci_fn": functools.partial(
                fieller_interval, a * raw, a * (gmd.stderr or 0.0), a * gmd_b, mean, var_mean
            )
        }
    return Release(
        value,
        var,
        {**gmd.params, "mean_fraction": c.mean_fraction},
        (gmd.messages_per_user or 0) + extra,
        None if gmd.bits_per_user is None else gmd.bits_per_user + extra,
        delta=gmd.delta,
        # the GMD's quantisation bias bound (local model) scales with it into the interval
        details={
            "gini_mean_difference": raw,
            "mean": mean,
            "bias_bound": scale * gmd.details.get("bias_bound", 0.0),
            **({"bias_rule": gmd.details["bias_rule"]} if "bias_rule" in gmd.details else {}),
            **law,
        },
        protocol=gmd.protocol + "+mean",
    )


def fieller_interval(num: float, num_sd: float, num_bias: float, den: float, den_var: float, level: float):
    """Fieller's ``level`` interval for a ratio G = N/D from independent noisy N and D, within [0, 1]:
    the G whose residual N − G·D fits its noise, |N − G·D| ≤ h(√(sd_N² + G²·var_D)) (h the normal
    quantile, or :func:`~privstats.estimate.bias_aware_halfwidth` for a bias up to ``num_bias``).

    The delta method's ±z·stderr grows with the estimate where D is noisy: a small noisy mean gives a
    large G and a large stderr together, and at n = 300, ε = 0.5 (local, mean cv 0.38) it covered
    0.998-1.000 on issue 26's real data; Fieller's does not divide by the noisy D.

    >>> lo, hi = fieller_interval(0.3, 0.01, 0.0, 1.0, 1e-4, 0.95)
    >>> round(lo, 2), round(hi, 2)
    (0.28, 0.32)
    """
    from privstats.estimate import bias_aware_halfwidth

    g = np.linspace(0.0, 1.0, 2001)
    sd = np.sqrt(num_sd**2 + g**2 * den_var)
    excess = np.abs(num - g * den) - bias_aware_halfwidth(level, sd, num_bias)
    # nothing in [0, 1] fits (the noise took N or D far off): the G that comes closest
    idx = np.flatnonzero(excess <= 0) if np.any(excess <= 0) else np.array([np.argmin(excess)])
    return float(g[max(idx[0] - 1, 0)]), float(g[min(idx[-1] + 1, g.size - 1)])


for _model, _protocol, _gmd_predictor in (
    ("central", "central-exact+mean", _plan_gmd_central),
    ("secure", "ustat-pairs+mean", _plan_gmd_pairs),
    ("local", "ustat-quantized+mean", _plan_gmd_local),
):
    unit(
        "gini_coefficient",
        _model,
        _protocol,
        method="auto",
        options=("mean_fraction",),
        predictor=functools.partial(_plan_gini, _model, _gmd_predictor),
    )(gini_coefficient_run)
