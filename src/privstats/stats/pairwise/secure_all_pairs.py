"""Secure model, the all-pairs baseline: every pair adds Laplace noise with a budget from advanced
composition over the pairs each user is in.  A simulated baseline (``method="all-pairs"``, seeded
``rng`` only): its noise is drawn from the exact variance and the pairs are never enumerated.

No predictor: the planner never picks a baseline.
"""

from __future__ import annotations

from privstats.stats.pairwise.plumbing import _all_pairs_noise, _independent_delta, _tau_b
from privstats.stats.units import Call, Release, unit
from privstats.ustat import central as C

OPTIONS = ("delta",)
SIMULATED = {"simulated_noise": "normal (CLT)"}


def _release(
    c: Call, exact: float, width: float, pairs_per_user: int, n_pairs: float, params: dict
) -> Release:
    noise, std, eps0 = _all_pairs_noise(width, c.epsilon, c.delta, pairs_per_user, n_pairs, c.rng)
    return Release(
        exact + noise,
        std**2,
        {**params, "pair_epsilon": eps0},
        float(pairs_per_user),
        delta=c.delta,
        details=dict(SIMULATED),
    )


@unit("auc", "secure", "ustat-all-pairs", "all-pairs", (*OPTIONS, "ties"))
def auc_all_pairs(c: Call) -> Release:
    t = c.ties or "half"
    exact = C.exact_auc(c.pos, c.neg, t)
    return _release(c, exact, 1.0, max(c.n_pos, c.n_neg), c.n_pos * c.n_neg, {"ties": t})


@unit("kendall_tau", "secure", "ustat-all-pairs", "all-pairs", (*OPTIONS, "variant"))
def kendall_tau_all_pairs(c: Call) -> Release:
    """tau-a with the whole budget; tau-b: tau-a and the two non-tie fractions with a third each."""
    ex = C.exact_kendall(c.xs, c.ys)
    n = c.n
    n_pairs = n * (n - 1) / 2
    if c.variant == "a":
        return _release(c, ex["tau_a"], 2.0, n - 1, n_pairs, {"variant": "a"})
    from privstats.privacy.randomness import as_generator

    g = None if c.rng is None else as_generator(c.rng)  # one stream for the three simulated draws
    eps, dlt = c.epsilon / 3, c.delta / 3
    na, sa, eps0 = _all_pairs_noise(2.0, eps, dlt, n - 1, n_pairs, g)
    ny_, sy, _ = _all_pairs_noise(1.0, eps, dlt, n - 1, n_pairs, g)
    nz_, sz, _ = _all_pairs_noise(1.0, eps, dlt, n - 1, n_pairs, g)
    value, grad = _tau_b(ex["tau_a"] + na, ex["nontie_y"] + ny_, ex["nontie_z"] + nz_)
    return Release(
        value,
        _independent_delta(grad, (sa, sy, sz)),
        {"variant": "b", "pair_epsilon": eps0},
        float(n - 1),
        delta=c.delta,
        details=dict(SIMULATED),
    )


@unit("gini_mean_difference", "secure", "ustat-all-pairs", "all-pairs", OPTIONS)
def gini_mean_difference_all_pairs(c: Call) -> Release:
    """Noise on the [0, 1] scale, scaled by the bounds' width w."""
    n, w = c.n, c.w
    noise, std, eps0 = _all_pairs_noise(1.0, c.epsilon, c.delta, n - 1, n * (n - 1) / 2, c.rng)
    exact = C.exact_gini_mean_difference(c.xs)
    return Release(
        exact + w * noise,
        (w * std) ** 2,
        {"pair_epsilon": eps0},
        float(n - 1),
        delta=c.delta,
        details=dict(SIMULATED),
    )


@unit("collision_probability", "secure", "ustat-all-pairs", "all-pairs", OPTIONS)
def collision_probability_all_pairs(c: Call) -> Release:
    n = c.n
    return _release(c, C.exact_collision(c.xs), 1.0, n - 1, n * (n - 1) / 2, {})


@unit("ustatistic", "secure", "ustat-all-pairs", "all-pairs", (*OPTIONS, "kernel_range"))
def ustatistic_all_pairs(c: Call) -> Release:
    exact = C.exact_matrix_ustat(c.xs, c.A) if c.A is not None else C.exact_callable(c.xs, c.f)
    n = c.n
    return _release(c, exact, c.kr[1] - c.kr[0], n - 1, n * (n - 1) / 2, {})
