"""Parameter helpers: bins k (Protocol A), tree depth α and threshold a (B), permutations P (C).

Each minimises the corrected bound of the paper (``seed-ustat.md`` errata) over integers,
so the choice is visible and reproducible:

* ``choose_bins`` — Theorem 2 with the corrected quantisation terms L²/k² (Lemma 2) or
  4L²D²(1+LD)² (Lemma 3), variance term of Theorem 1 for k-RR (a first-order analogue for OUE);
* ``choose_depth`` — Corollary 4 (or 5) bound plus a quantisation-tie term (1/d)²;
* ``choose_P`` — the exact Theorem 5 MSE (corrected noise term) at given or worst-case ζ.

>>> choose_bins(10**6, 1.0)
41
>>> choose_P(1.0, n=10**5, kernel_range=(0, 1))
1
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["choose_P", "choose_bins", "choose_depth", "grr_variance_bound", "tree_bound"]


def grr_variance_bound(n: int, epsilon: float, k: int) -> float:
    """Theorem 1: 1/(n(1−β)²) + (1+β)²/(2n(n−1)(1−β)⁴), β = k/(k + e^ε − 1)."""
    em = math.exp(-epsilon)  # β = k/(k + e^ε − 1) in a form that cannot overflow at huge ε
    beta = k * em / (k * em - math.expm1(-epsilon))
    return 1 / (n * (1 - beta) ** 2) + (1 + beta) ** 2 / (2 * n * (n - 1) * (1 - beta) ** 4)


def _oue_variance_bound(n: int, epsilon: float, k: int) -> float:
    """Theorem 1's analogue for OUE: the summed coordinate variances c1 + (k − 1)c0 replace 1/(1−β)² − 1
    (the true coordinate is kept with probability ½ at any ε, so c1 = coth²(ε/2) → 1, not 0)."""
    c0 = 4 * math.exp(-epsilon) / math.expm1(-epsilon) ** 2  # 4e^ε/(e^ε − 1)², overflow-free
    c = 1.0 / math.tanh(epsilon / 2) ** 2 + (k - 1) * c0
    return (1 + c) / n + c**2 / (2 * n * (n - 1))


def choose_bins(
    n: int,
    epsilon: float,
    *,
    lipschitz: float = 1.0,
    assumption: str = "kernel",
    oracle: str = "grr",
    k_max: int = 4096,
) -> int:
    """k minimising variance bound + quantisation bound (``assumption``: "kernel" Lipschitz or "density")."""
    ks = np.arange(2, max(3, k_max + 1))
    var = np.array(
        [(grr_variance_bound if oracle == "grr" else _oue_variance_bound)(n, epsilon, int(k)) for k in ks]
    )
    L, D = float(lipschitz), 1.0 / ks
    quant = (L * D) ** 2 if assumption == "kernel" else 4 * (L * D) ** 2 * (1 + L * D) ** 2
    return int(ks[np.argmin(var + quant)])


def _tree_C(epsilon: float, depth: int, splitting: str, delta: float) -> float:
    from privstats.ustat.tree import _c, advanced_level_epsilon

    if splitting == "users":
        return _c(epsilon) ** 2
    eps_l = epsilon / depth if splitting == "budget" else advanced_level_epsilon(epsilon, depth, delta)
    return _c(eps_l) ** 2 / depth


def tree_bound(
    n_pos: int, n_neg: int, epsilon: float, depth: int, *, splitting: str = "users", delta: float = 0.0
) -> float:
    """Corollary 4 bound on MSE(ÂUC) for this depth and splitting (constant 14 as printed)."""
    n, nmin = n_pos + n_neg, min(n_pos, n_neg)
    C = _tree_C(epsilon, depth, splitting, delta)
    a = (1 + math.sqrt(21 / 8) * (2 * C * n * depth / nmin**2) ** 0.25) ** 2
    return (
        C
        / (nmin * (n - nmin))
        * depth**2
        * (2 * n + (4 * a + 1) * nmin + 14 * (C * n * nmin**2 * depth) ** 0.25)
    )


def choose_depth(
    n_pos: int,
    n_neg: int,
    epsilon: float,
    *,
    splitting: str = "users",
    delta: float = 0.0,
    max_depth: int = 20,
) -> int:
    """α in [1, max_depth] (users splitting: at most min class size) minimising Cor. 4 + (2^-α)²."""
    nmin = min(n_pos, n_neg)
    top = max(1, min(max_depth, nmin if splitting == "users" else max_depth))
    alphas = range(1, top + 1)
    scores = [
        tree_bound(n_pos, n_neg, epsilon, al, splitting=splitting, delta=delta) + 4.0**-al for al in alphas
    ]
    return int(alphas[int(np.argmin(scores))])


def choose_P(
    epsilon: float,
    *,
    n: int,
    kernel_range: tuple[float, float],
    zeta1: float | None = None,
    zeta2: float | None = None,
    mechanism: str = "laplace",
    P_max: int = 64,
) -> int:
    """P minimising the exact Theorem 5 MSE; without ζ estimates uses the worst case ζ1 = 0, ζ2 = Δ²/4."""
    from privstats.ustat.pairs import PairsProtocol

    width = kernel_range[1] - kernel_range[0]
    z1 = 0.0 if zeta1 is None else float(zeta1)
    z2 = width**2 / 4 if zeta2 is None else float(zeta2)
    best, best_mse = 1, math.inf
    for P in range(1, P_max + 1):
        proto = PairsProtocol(
            lambda a, b: a, epsilon=epsilon, P=P, kernel_range=kernel_range, mechanism=mechanism
        )
        mse = proto.variance(max(n, 2), z1, z2)
        if mse < best_mse:
            best, best_mse = P, mse
    return best
