"""Secure model, Protocol C (Bell et al. 2020): P random permutations pair the users; each pair
evaluates the kernel in two-party computation and adds its noise there (simulated pairs, or the
SPU backend of :mod:`privstats.ustat.mpc` with ``backend="spu"``).

One unit per statistic, each with its predictor (from public parameters) and its run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privstats.plan import Option
from privstats.privacy.randomness import as_generator
from privstats.stats.pairwise.plumbing import (
    _backend_info,
    _classes,
    _pair_backend,
    _pairs_option,
    _resolve_P,
    _run_pairs,
    _simulating,
    _ustat_range,
)
from privstats.stats.units import Call, Release, unit
from privstats.ustat.pairs import PairsProtocol, combination_variance
from privstats.validation import as_float_array, check_choice

OPTIONS = ("P", "zeta", "backend")


# ----------------------------------------------------------------------------- AUC
def _plan_auc_pairs(*, n, epsilon, n_pos=None, zeta=None, P=None, **_):
    """Protocol C (bipartite pairs, Laplace in 2PC); ζ₂ = 1/4 (the kernel's worst-case variance)."""
    cls = _classes(n, n_pos)
    if cls is None:
        return None
    n_pos, n_neg = cls
    P = _resolve_P(P, epsilon, min(cls) * 2, (0.0, 1.0), "laplace", zeta)
    proto = PairsProtocol(
        lambda a_, b_: a_, epsilon=epsilon, P=P, kernel_range=(0.0, 1.0), mechanism="laplace"
    )
    z2 = 0.25 if zeta is None else float(zeta[1])
    var = proto.two_sample_variance(n_pos, n_neg, 0.0, 0.0, z2)
    return _pairs_option(P, math.sqrt(var), note="pairs of users run 2PC; ζ worst case")


@unit("auc", "secure", "ustat-pairs", "pairs", (*OPTIONS, "ties"), _plan_auc_pairs)
def auc_pairs(c: Call) -> Release:
    """Bipartite pairs (one positive, one negative); ties ``"zero"`` use randomized response."""
    t = c.ties or "half"
    mech = "rr" if t == "zero" else "laplace"
    P = _resolve_P(c.P, c.epsilon, min(c.n_pos, c.n_neg) * 2, (0.0, 1.0), mech, c.zeta)
    kernel = (
        (lambda a_, b_: (a_ > b_) + 0.5 * (a_ == b_)) if t == "half" else (lambda a_, b_: (a_ > b_) * 1.0)
    )
    be = _pair_backend(c.backend, "greater_half" if t == "half" else "greater", c.epsilon, P, mech)
    proto: Any = PairsProtocol(
        kernel, epsilon=c.epsilon, P=P, kernel_range=(0.0, 1.0), mechanism=mech, backend=be
    )
    g = as_generator(c.rng) if _simulating(c.rng) else None
    pairs = proto.make_bipartite_pairs(c.n_pos, c.n_neg, g)
    outputs = proto.backend.compute(c.pos[pairs[:, 0]], c.neg[pairs[:, 1]], g)
    value, var, info = proto.estimate_two_sample(outputs, pairs, n_pos=c.n_pos, n_neg=c.n_neg)
    d_be, det_be = _backend_info([be], P)
    return Release(value, var, {"ties": t, **proto.params}, float(P), delta=d_be, details={**info, **det_be})


# ----------------------------------------------------------------------------- Kendall's tau
def _plan_tau_pairs(*, n, epsilon, variant="b", P=None, zeta=None, **_):
    eps = epsilon if variant == "a" else epsilon / 2
    P = _resolve_P(P, eps, n, (-1.0, 1.0), "laplace", zeta)
    proto = PairsProtocol(lambda a_, b_: a_, epsilon=eps, P=P, kernel_range=(-1.0, 1.0))
    z1, z2 = (0.0, 1.0) if zeta is None else (float(zeta[0]), float(zeta[1]))
    return Option(
        "secure",
        "ustat-pairs",
        {"variant": variant, "P": P},
        math.sqrt(proto.variance(n, z1, z2)),
        messages_per_user=float(P),
        bits_per_user=math.nan,
    )


def _sign(u, v):
    return np.sign(u[..., 0] - v[..., 0]) * np.sign(u[..., 1] - v[..., 1])


def _tau_a_pairs(c: Call, xy: np.ndarray) -> Release:
    P = _resolve_P(c.P, c.epsilon, c.n, (-1.0, 1.0), "laplace", c.zeta)
    be = _pair_backend(c.backend, "sign_product", c.epsilon, P, "laplace")
    proto, value, var, info = _run_pairs(_sign, xy, c.epsilon, P, (-1.0, 1.0), "laplace", c.rng, be)
    d_be, det_be = _backend_info([be], P)
    return Release(
        value, var, {"variant": "a", **proto.params}, float(P), delta=d_be, details={**info, **det_be}
    )


def _tau_b_pairs(c: Call, xy: np.ndarray) -> Release:
    """tau-a with ε/2 and the two non-tie fractions with ε/4 each, on the same pairs."""
    n, epsilon = c.n, c.epsilon
    P = _resolve_P(c.P, epsilon / 2, n, (-1.0, 1.0), "laplace", c.zeta)
    g = as_generator(c.rng) if _simulating(c.rng) else None
    bes = [
        _pair_backend(c.backend, k, e, P, mech)
        for k, e, mech in (
            ("sign_product", epsilon / 2, "laplace"),
            ("not_equal_0", epsilon / 4, "rr"),
            ("not_equal_1", epsilon / 4, "rr"),
        )
    ]
    proto = PairsProtocol(_sign, epsilon=epsilon / 2, P=P, kernel_range=(-1.0, 1.0), backend=bes[0])
    ties = [
        PairsProtocol(
            lambda u, v, j=j: (u[..., j] != v[..., j]) * 1.0,
            epsilon=epsilon / 4,
            P=P,
            kernel_range=(0.0, 1.0),
            mechanism="rr",
            backend=bes[1 + j],
        )
        for j in (0, 1)
    ]
    pairs = proto.make_pairs(n, g)
    left, right = xy[pairs[:, 0]], xy[pairs[:, 1]]
    protos = (proto, *ties)
    outputs = [p.backend.compute(left, right, g) for p in protos]
    ta, _, info = proto.estimate(outputs[0], pairs, n=n)
    ny, nz = ties[0].estimate(outputs[1], pairs, n=n)[0], ties[1].estimate(outputs[2], pairs, n=n)[0]
    noise = [p.backend.noise_variance for p in protos]
    cov = _pairs_covariance(outputs, noise, pairs, n, P)
    value, var, guards = _tau_b_guarded_draws(np.array([ta, ny, nz]), cov, g)
    d_be, det_be = _backend_info(bes, P)
    params = {"variant": "b", **proto.params, "budget_split": [0.5, 0.25, 0.25]}
    details = {**info, **det_be, "tau_a": ta, "nontie_x": ny, "nontie_y": nz, "nontie_guards": guards}
    return Release(value, var, params, float(P), delta=d_be, details=details)


TAU_DRAWS = 4000  # Gaussian draws behind the secure tau-b's stderr


def _pairs_covariance(outputs, noise, pairs, n: int, P: int) -> np.ndarray:
    """Plug-in covariance of the three pair means (tau-a, non-tie x, non-tie y): they share the pairs
    (correlated subsampling), their noises are independent; Var(a + b) − Var a − Var b gives each pair."""
    e = np.eye(3)

    def v(c):
        return combination_variance(outputs, c, noise, pairs, n=n, P=P)

    d = np.array([v(e[i]) for i in range(3)])
    cov = np.diag(d)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        cov[i, j] = cov[j, i] = (v(e[i] + e[j]) - d[i] - d[j]) / 2
    return cov


def _tau_b_guarded_draws(m: np.ndarray, cov: np.ndarray, g) -> tuple[float, float, list[float]]:
    """tau-b from the noisy (tau-a, ν_x, ν_y), each non-tie fraction ν guarded at one noise sd (public:
    from the plug-in covariance), and the variance of that ratio over Gaussian draws of the three.
    The delta method with ν floored at 1e-3 reported stderr 0.5-900 where the spread was 1.4 at
    n = 300, ε = 0.5 (issue 26), as the local tau-b did before it was guarded the same way."""
    guards = [max(math.sqrt(max(float(cov[i, i]), 0.0)), 1e-3) for i in (1, 2)]

    def f(t):
        return t[..., 0] / np.sqrt(np.maximum(t[..., 1], guards[0]) * np.maximum(t[..., 2], guards[1]))

    w, V = np.linalg.eigh(cov)
    gen = np.random.default_rng(None if g is None else g.integers(2**62))
    draws = m + (gen.standard_normal((TAU_DRAWS, 3)) * np.sqrt(np.maximum(w, 0.0))) @ V.T
    return float(f(m)), float(np.var(f(draws), ddof=1)), guards


@unit("kendall_tau", "secure", "ustat-pairs", "pairs", (*OPTIONS, "variant"), _plan_tau_pairs)
def kendall_tau_pairs(c: Call) -> Release:
    xy = np.stack([c.xs, c.ys], axis=1)
    return _tau_a_pairs(c, xy) if c.variant == "a" else _tau_b_pairs(c, xy)


# ----------------------------------------------------------------------------- Gini mean difference
def _plan_gmd_pairs(*, n, epsilon, bounds=None, P=None, zeta=None, **_):
    w = 1.0 if bounds is None else float(bounds[1]) - float(bounds[0])
    P = _resolve_P(P, epsilon, n, (0.0, 1.0), "laplace", zeta)
    proto = PairsProtocol(lambda a_, b_: a_, epsilon=epsilon, P=P, kernel_range=(0.0, 1.0))
    z1, z2 = (0.0, 0.25) if zeta is None else (float(zeta[0]), float(zeta[1]))
    return _pairs_option(P, w * math.sqrt(proto.variance(n, z1, z2)))


@unit("gini_mean_difference", "secure", "ustat-pairs", "pairs", (*OPTIONS, "grid_bits"), _plan_gmd_pairs)
def gini_mean_difference_pairs(c: Call) -> Release:
    """|u_i − u_j| on values scaled to [0, 1]; ``backend="spu"`` rounds them to a 2^-grid_bits grid."""
    P = _resolve_P(c.P, c.epsilon, c.n, (0.0, 1.0), "laplace", c.zeta)
    be = _pair_backend(c.backend, "absdiff", c.epsilon, P, "laplace", grid_bits=c.grid_bits)
    proto, value, var, info = _run_pairs(
        lambda a_, b_: np.abs(a_ - b_), c.u, c.epsilon, P, (0.0, 1.0), "laplace", c.rng, be
    )
    d_be, det_be = _backend_info([be], P)
    w = c.w
    return Release(w * value, w * w * var, proto.params, float(P), delta=d_be, details={**info, **det_be})


# ----------------------------------------------------------------------------- collision probability
def _plan_collision_pairs(*, n, epsilon, P=None, zeta=None, domain_size=None, **_):
    P = _resolve_P(P, epsilon, n, (0.0, 1.0), "rr", zeta)
    proto = PairsProtocol(lambda a_, b_: a_, epsilon=epsilon, P=P, kernel_range=(0.0, 1.0), mechanism="rr")
    c = 1.0 / domain_size if domain_size else 0.5
    z1, z2 = (0.0, c * (1 - c)) if zeta is None else (float(zeta[0]), float(zeta[1]))
    return _pairs_option(P, math.sqrt(proto.variance(n, z1, z2)))


@unit("collision_probability", "secure", "ustat-pairs", "pairs", OPTIONS, _plan_collision_pairs)
def collision_probability_pairs(c: Call) -> Release:
    """I[x_i = x_j] with randomized response in 2PC (the backend's δ is reported in details only)."""
    P = _resolve_P(c.P, c.epsilon, c.n, (0.0, 1.0), "rr", c.zeta)
    be = _pair_backend(c.backend, "equal", c.epsilon, P, "rr")
    proto, value, var, info = _run_pairs(
        lambda a_, b_: (a_ == b_) * 1.0, c.xs, c.epsilon, P, (0.0, 1.0), "rr", c.rng, be
    )
    return Release(value, var, proto.params, float(P), details={**info, **_backend_info([be], P)[1]})


# ----------------------------------------------------------------------------- any kernel
def _plan_ustat_pairs(*, n, epsilon, kernel_range=None, kernel=None, P=None, zeta=None, **_):
    """Protocol C with the worst case of any kernel with range w (the kernel is the user's): ζ₂ = w²/4
    (largest variance of a value in an interval of width w) and ζ₁ = ζ₂/2 (its largest share; it
    only matters for P > 1), unless ``zeta`` is given."""
    kr = _ustat_range(kernel_range, kernel)
    if kr is None:
        return None
    P = _resolve_P(P, epsilon, n, kr, "laplace", zeta)
    proto = PairsProtocol(lambda a_, b_: a_, epsilon=epsilon, P=P, kernel_range=kr)
    z2 = (kr[1] - kr[0]) ** 2 / 4
    z1, z2 = (z2 / 2, z2) if zeta is None else (float(zeta[0]), float(zeta[1]))
    return _pairs_option(
        P,
        math.sqrt(proto.variance(n, z1, z2)),
        note="worst case over kernels with this range" if zeta is None else "",
    )


@unit("ustatistic", "secure", "ustat-pairs", "pairs", (*OPTIONS, "kernel_range"), _plan_ustat_pairs)
def ustatistic_pairs(c: Call) -> Release:
    P = _resolve_P(c.P, c.epsilon, c.n, c.kr, "laplace", c.zeta)
    be = _pair_backend(c.backend, None, c.epsilon, P, "laplace")
    proto, value, var, info = _run_pairs(c.f, c.xs, c.epsilon, P, c.kr, "laplace", c.rng, be)
    return Release(value, var, proto.params, float(P), details=info)


def ustatistic_named_kernel(
    x, name, epsilon, backend, P, zeta, rng
) -> tuple[Release, int, tuple[float, float]]:
    """ustatistic with a named two-party kernel (backend='spu'): inputs as the kernel expects them;
    returns the release, n and the kernel's range."""
    if backend != "spu":
        raise ValueError(
            "a kernel given by name needs backend='spu' (model='secure'); pass a callable or a matrix"
        )
    from privstats.ustat.mpc import SPECS, SpuTwoParty

    check_choice(name, "kernel", SPECS)
    be0 = SpuTwoParty(name, pair_epsilon=epsilon, mechanism="laplace")
    xs = as_float_array(x, "x", bounds=(0.0, 1.0)) if name == "absdiff" else np.asarray(x, dtype=np.float64)
    if be0.spec.columns > 1 and (xs.ndim != 2 or xs.shape[1] != be0.spec.columns):
        raise ValueError(f"x must have shape (n, {be0.spec.columns}) for kernel {name!r}")
    n = len(xs)
    if n < 2:
        raise ValueError("x must hold at least two users")
    kr = (be0.lo, be0.hi)
    mech = "rr" if be0.spec.units == 1 else "laplace"
    P = _resolve_P(P, epsilon, n, kr, mech, zeta)
    be = SpuTwoParty(name, pair_epsilon=epsilon / P, mechanism=mech)
    proto, value, var, info = _run_pairs(be.spec.reference, xs, epsilon, P, kr, mech, rng, be)
    d_be, det_be = _backend_info([be], P)
    release = Release(
        value, var, {**proto.params, "kernel": name}, float(P), delta=d_be, details={**info, **det_be}
    )
    return release, n, kr
