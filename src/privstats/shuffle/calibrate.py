"""Numerical privacy accounting for the multi-message protocols (Ghazi et al., §4).

* Hadamard (Algorithm 1).  For one swap j → j' of user 1, reveal every real tuple
  except user 1's swapped one.  The likelihood ratio of the rest is exactly
  (1 + X)/(X' + W), where X, X' count the n·ρ blanket tuples inside C_j^τ and
  C_j'^τ (jointly multinomial: a uniform tuple is in both with probability 4^−τ)
  and W ~ Bern(2^−τ) says whether user 1's hidden tuple also lies in C_j'^τ.
  :func:`hadamard_swap_delta` sums E[(1 − e^ε (X'+W)/(1+X))_+] over that joint
  law; truncated mass is added, so it is an upper bound on δ.  k-element sets use
  group privacy over k swaps.
* Count-Min (Algorithm 2).  A swap moves τ cells by +1 and τ by −1, each with
  independent Bin(n, γ) noise.  :func:`countmin_delta` composes the 2τ cell
  privacy-loss distributions by FFT, rounding every loss *up* onto a grid and
  counting infinite-loss mass, so it is an upper bound on δ.
* The paper's own Chernoff / smoothness conditions (the research note's derived
  constants) are kept as ``method="chernoff"`` / ``"paper"`` for comparison.

>>> rho, _ = hadamard_blanket(n=2**20, epsilon=1.0, delta=1e-6)
>>> 35 <= rho <= 50
True
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import stats
from scipy.special import gammaln

__all__ = [
    "countmin_delta",
    "countmin_gamma",
    "countmin_paper_gamma_n",
    "group_delta_factor",
    "hadamard_blanket",
    "hadamard_chernoff_rho",
    "hadamard_swap_delta",
]


# Guard (issue 18): one evaluation of hadamard_swap_delta costs about (#values of D) x (window of A + 300)
# scipy binomial terms, ~5 µs each on a CI core, and the search for ρ runs ~2 log2(ρ) evaluations.
# Tiny ε with few users needs millions of blanket tuples (ε = 0.01, n = 40: > 300 s; shuffle quantiles
# at n = 2^20, ε = 1: 280 s).  The search's cost is predicted from the Gaussian limit of the counts
# before anything runs, and refused when above HADAMARD_SEARCH_WORK_MAX (~30 s); a single evaluation
# above HADAMARD_WORK_MAX (~5 s) is refused as a backstop.
HADAMARD_WORK_MAX = 1_000_000
HADAMARD_SEARCH_WORK_MAX = 6_000_000


def _swap_work(n_blanket: float, tau: int) -> float:
    """Predicted number of binomial terms of one :func:`hadamard_swap_delta` evaluation."""
    p = 2.0**-tau
    n_d = 20 * math.sqrt(n_blanket * p * p + 1) + 41
    return n_d * (26 * math.sqrt(n_blanket * (p - p * p) + 1) + 361)


def _gaussian_mu(epsilon: float, delta: float) -> float:
    """μ at which the Gaussian limit of the blanket counts (N(μ, μ), shifts (1,0) vs (0,1)) gives δ(ε) = δ."""

    def gdelta(mu: float) -> float:
        s = math.sqrt(2 / mu)
        return float(
            stats.norm.cdf(-epsilon / s + s / 2)
            - math.exp(min(epsilon, 700.0)) * stats.norm.cdf(-epsilon / s - s / 2)
        )

    lo, hi = 1e-3, 1e18
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if gdelta(mid) <= delta else (mid, hi)
    return hi


def _predicted_search_work(n: int, epsilon0: float, delta0: float, tau: int) -> tuple[float, float]:
    """(predicted ρ, predicted binomial terms of the doubling + bisection search of :func:`hadamard_blanket`)."""
    if delta0 <= 0:
        return math.inf, math.inf
    rho = max(1.0, _gaussian_mu(epsilon0, delta0) * 2.0**tau / n)
    doubling = sum(_swap_work(n * 2.0**i, tau) for i in range(int(math.log2(rho)) + 2))
    bisection = (math.log2(rho) + 1) * _swap_work(n * 1.5 * rho, tau)
    return rho, doubling + bisection


class CalibrationTooCostly(ValueError):
    """The exact accountant would run for minutes; raised before it starts."""


def group_delta_factor(k: int, epsilon0: float) -> float:
    """Σ_{i<k} e^{iε0}: a k-swap neighbour of an (ε0, δ0) mechanism is (kε0, factor·δ0)-DP (inf on overflow)."""
    return float(sum(math.exp(i * epsilon0) if i * epsilon0 < 709 else math.inf for i in range(k)))


@lru_cache(maxsize=4096)
def hadamard_swap_delta(epsilon0: float, n_blanket: int, tau: int) -> float:
    """Upper bound on δ(ε0) for one swap in the Hadamard protocol with ``n_blanket`` uniform tuples.

    Exact in the joint law of (X, X', W) up to truncation mass, which is added.  With D
    the blanket tuples in both sets and A (A') those only in C_j^τ (C_j'^τ), X = A + D,
    X' = A' + D, and A' | (D, A) ~ Bin(N − D − A, q/(1 − p² − q)); the inner expectation
    E[(1 − e^ε0 (A' + D + W)/(1 + A + D))_+] is a partial binomial mean, so the cost is
    O(window) per value of D instead of a double sum (fast even for μ = N 2^−τ ~ 10^6).
    """
    p = 2.0**-tau
    pb = p * p  # tuple in both sets
    q = p - pb  # in exactly one of them
    N = int(n_blanket)
    e0 = math.exp(min(epsilon0, 700.0))  # δ(ε) decreases in ε: δ(700) bounds δ(ε) for larger ε
    if N == 0:
        return min(1.0, 1.0 - p)  # X = X' = 0: the ratio is 1/W, infinite unless W = 1
    mu_d = N * pb
    dmin = max(0, int(mu_d - 10 * math.sqrt(mu_d + 1) - 20))
    dmax = 0 if mu_d < 1e-300 else min(N, int(mu_d + 10 * math.sqrt(mu_d + 1) + 20))
    work = (dmax - dmin + 1) * (26 * math.sqrt(N * q + 1) + 61)
    if work > HADAMARD_WORK_MAX:
        raise CalibrationTooCostly(
            f"exact Hadamard accounting with {N} blanket tuples (tau={tau}) needs ~{work:.2g} "
            f"binomial terms, more than the {HADAMARD_WORK_MAX} budget"
        )
    d_all = np.arange(dmin, dmax + 1)
    pd_all = stats.binom.pmf(d_all, N, pb)
    q_a = q / (1.0 - pb)  # A | D = d ~ Bin(N − d, q_a)
    q_ap = q / (1.0 - pb - q)  # A' | D = d, A = a ~ Bin(N − d − a, q_ap)
    live = pd_all != 0.0
    d_col, pd_col = d_all[live][:, None], pd_all[live][:, None]
    # per d a window of a around its mean (the rest is added to δ), all rows in one padded array
    mu = (N - d_col) * q_a
    half = 13 * np.sqrt(mu + 1) + 30
    a_lo = np.maximum(0, (mu - half).astype(np.int64))
    a_len = np.minimum(N - d_col, (mu + half).astype(np.int64)) + 1 - a_lo
    a = np.minimum(a_lo + np.arange(max(int(a_len.max(initial=1)), 1))[None, :], N - d_col)  # pad: repeat
    pa = pd_col * stats.binom.pmf(a, N - d_col, q_a)
    M = N - d_col - a
    c = e0 / (1.0 + a + d_col)
    gains = []
    for w in (0, 1):
        # gain 1 − c (a' + d + w) > 0  iff  a' <= t
        t = np.floor((1.0 + a + d_col) / e0 - d_col - w - 1e-12)
        F = stats.binom.cdf(t, M, q_ap)
        F1 = np.where(M > 0, stats.binom.cdf(t - 1, np.maximum(M - 1, 0), q_ap), 0.0)
        partial_mean = M * q_ap * F1  # E[A' 1{A' <= t}]
        gains.append(np.maximum(F * (1.0 - c * (d_col + w)) - c * partial_mean, 0.0))
    total_mass = 0.0
    delta = 0.0
    for row, length in enumerate(a_len[:, 0].tolist()):  # summed row by row, in the order of d
        pa_row = pa[row, :length]
        total_mass += float(pa_row.sum())
        for gain, pw in zip(gains, (1 - p, p), strict=True):
            delta += pw * float(np.sum(pa_row * gain[row, :length]))
    return min(1.0, delta + max(0.0, 1.0 - total_mass))


def _tau_for(n: int) -> int:
    return max(1, math.floor(math.log2(n)))


def hadamard_chernoff_rho(n: int, k: int, epsilon: float, delta: float, tau: int) -> int:
    """ρ from the paper's Chernoff argument (research note §3.5): n ρ 2^−τ ≥ 48 k² ln(4k e^{(k−1)ε/k}/δ)/ε²."""
    mu = 48 * k * k * math.log(4 * k * math.exp((k - 1) * epsilon / k) / delta) / epsilon**2
    return math.ceil(mu * 2**tau / n)


def hadamard_blanket(
    n: int, epsilon: float, delta: float, *, k: int = 1, tau: int | None = None, method: str = "exact"
) -> tuple[int, dict]:
    """Smallest number ρ of blanket messages per user giving (ε, δ)-DP, and the accounting details.

    ``method="exact"`` uses :func:`hadamard_swap_delta` with group privacy over k
    swaps; ``"chernoff"`` the paper's sufficient condition.
    """
    tau = _tau_for(n) if tau is None else int(tau)
    eps0 = epsilon / k
    delta0 = delta / group_delta_factor(k, eps0)
    if method == "chernoff":
        rho = hadamard_chernoff_rho(n, k, epsilon, delta, tau)
        return rho, {"tau": tau, "calibration": "chernoff", "epsilon0": eps0, "delta0": delta0}
    if method != "exact":
        raise ValueError(f"method must be 'exact' or 'chernoff', got {method!r}")

    rho_pred, work = _predicted_search_work(n, eps0, delta0, tau)
    if work > HADAMARD_SEARCH_WORK_MAX:
        raise CalibrationTooCostly(
            f"epsilon={epsilon} (delta={delta}) is too small for n={n} in the Hadamard protocol: it needs about "
            f"{rho_pred:.3g} blanket messages per user, and certifying that with the exact accountant would take "
            f"~{work:.2g} binomial terms (minutes; the limit is {HADAMARD_SEARCH_WORK_MAX:.0e}); use a larger "
            "epsilon or delta, more users, or calibration='chernoff'"
        )

    def ok(rho: int) -> bool:
        try:
            return hadamard_swap_delta(eps0, n * rho, tau) <= delta0
        except CalibrationTooCostly as exc:
            raise CalibrationTooCostly(
                f"epsilon={epsilon} (delta={delta}) is too small for n={n}: certifying it would need more than "
                f"{rho // 2} blanket messages per user, and the exact accountant would run for minutes ({exc}); "
                "use a larger epsilon or delta, more users, or calibration='chernoff'"
            ) from None

    hi = 1
    while not ok(hi):
        hi *= 2
        if hi > 1 << 30:
            raise ValueError(
                f"epsilon={epsilon}, delta={delta}: no blanket size up to 2^30 messages per user "
                "reaches the requested guarantee"
            )
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    rho = hi
    return rho, {
        "tau": tau,
        "calibration": "exact",
        "epsilon0": eps0,
        "delta0": delta0,
        "swap_delta": hadamard_swap_delta(eps0, n * rho, tau),
    }


# ---------------------------------------------------------------- Count-Min ----------------------------------


CELL_WINDOW = 1 << 16
"""Up to this many values of a cell's Bin(n, γ) noise are all enumerated; beyond, only its bulk."""
_LOG_TINY = math.log(1e-300)  # probabilities below this are dropped from the loss distribution anyway


def _binomial_support(n: int, gamma: float) -> np.ndarray:
    """The values y of N ~ Bin(n, γ) whose probability can exceed 1e-300 (float64).

    All of 0..n up to :data:`CELL_WINDOW` values; for larger n a window around the mean, grown
    until the probabilities at both of its ends are below 1e-300, so a huge n (10^12 users)
    costs a few thousand values instead of n floats.
    """
    if n + 1 <= CELL_WINDOW:
        return np.arange(n + 1, dtype=np.float64)
    mu, sd = n * gamma, math.sqrt(n * gamma * (1 - gamma))
    half = 40 * sd + 700.0
    while True:
        lo, hi = max(0, math.floor(mu - half)), min(n, math.ceil(mu + half))
        ends = _binomial_logpmf(n, gamma, np.array([lo, hi], dtype=np.float64))
        if (lo == 0 or ends[0] < _LOG_TINY) and (hi == n or ends[1] < _LOG_TINY):
            return np.arange(lo, hi + 1, dtype=np.float64)
        half *= 2


def _binomial_logpmf(n: int, gamma: float, y: np.ndarray) -> np.ndarray:
    return (
        gammaln(n + 1)
        - gammaln(y + 1)
        - gammaln(n - y + 1)
        + y * math.log(gamma)
        + (n - y) * math.log1p(-gamma)
    )


def _cell_losses(n: int, gamma: float, sign: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Loss values and their probabilities under P for a cell shifted by ``sign`` (±1), and the ∞-loss mass."""
    y = _binomial_support(n, gamma)  # the noise N ~ Bin(n, γ), where its probability can exceed 1e-300
    pmf = np.exp(_binomial_logpmf(n, gamma, y))
    lg = math.log(gamma) - math.log1p(-gamma)
    with np.errstate(divide="ignore"):
        if sign > 0:  # P outputs N+1, Q outputs N: loss ln P(N=y)/P(N=y+1) at output y+1
            loss = np.log(y + 1) - np.log(n - y) - lg
            inf = y == n
        else:  # P outputs N, Q outputs N+1: loss ln P(N=y)/P(N=y−1)
            loss = np.log(n - y + 1) - np.log(y) + lg
            inf = y == 0
    keep = ~inf & (pmf > 1e-300)
    return loss[keep], pmf[keep], float(pmf[inf].sum())


def countmin_delta(
    epsilon: float,
    n: int,
    gamma: float,
    cells: int,
    *,
    up_only: bool = False,
    down_only: bool = False,
    grid: float | None = None,
) -> float:
    """Upper bound on δ(ε) for a swap that moves ``cells`` cells up and ``cells`` down (Bin(n, γ) noise each).

    ``up_only`` / ``down_only`` keep only the cells moved up / down (a single-cell count).
    """
    ups = 0 if down_only else cells
    downs = 0 if up_only else cells
    if not 0 < gamma <= 0.5:
        raise ValueError(f"gamma must be in (0, 1/2], got {gamma}")
    lp, pp, infp = _cell_losses(n, gamma, +1)
    lm, pm, infm = _cell_losses(n, gamma, -1)
    # keep the bulk; mass outside [lo, hi] goes to lo (rounding up, pessimistic) or to ∞ (pessimistic)
    sd = 1.0 / math.sqrt(max(gamma * n * (1 - gamma), 1e-12))
    hi_l, lo_l = 40 * sd + 1.0, -(40 * sd + 1.0)
    h = grid if grid is not None else (hi_l - lo_l) / 4096
    inf_mass = 1.0 - (1.0 - infp) ** ups * (1.0 - infm) ** downs

    def to_grid(loss, pmf):
        over = loss > hi_l
        extra_inf = float(pmf[over].sum())
        idx = np.ceil((np.maximum(loss[~over], lo_l) - lo_l) / h).astype(np.int64)
        g = np.bincount(idx, weights=pmf[~over], minlength=math.ceil((hi_l - lo_l) / h) + 1)
        return g, extra_inf

    gp, xp = to_grid(lp, pp)
    gm, xm = to_grid(lm, pm)
    inf_mass = 1.0 - (1.0 - inf_mass) * (1.0 - xp) ** ups * (1.0 - xm) ** downs
    factors = ups + downs
    size = factors * (gp.size - 1) + 1
    nfft = 1 << math.ceil(math.log2(size))
    spec = np.fft.rfft(gp, nfft) ** ups * np.fft.rfft(gm, nfft) ** downs
    dist = np.maximum(np.fft.irfft(spec, nfft)[:size], 0.0)
    losses = factors * lo_l + h * np.arange(size)
    gain = np.maximum(1.0 - np.exp(np.minimum(epsilon - losses, 700.0)), 0.0)
    return min(1.0, float(np.sum(dist * gain)) + inf_mass + 1e-15 * size)


def countmin_paper_gamma_n(epsilon: float, delta: float, k: int, tau: int) -> float:
    """γn from Lemmas 4.11–4.12 (research note §4.4): γn ≥ 10 ln(4kτ/δ)/tanh²(ε/(4kτ))."""
    return 10 * math.log(4 * k * tau / delta) / math.tanh(epsilon / (4 * k * tau)) ** 2


def countmin_gamma(
    n: int, epsilon: float, delta: float, *, tau: int, k: int = 1, method: str = "numeric"
) -> tuple[float, dict]:
    """Smallest per-cell blanket probability γ giving (ε, δ)-DP, with details.

    ``"numeric"`` composes the exact cell privacy losses (one swap, group privacy over k);
    ``"paper"`` uses the smoothness lemmas.  Raises ValueError when γ would exceed 1/2.
    """
    eps0 = epsilon / k
    delta0 = delta / group_delta_factor(k, eps0)
    if method == "paper":
        gn = countmin_paper_gamma_n(epsilon, delta, k, tau)
    elif method == "numeric":

        def ok(gn: float) -> bool:
            return gn / n <= 0.5 and countmin_delta(eps0, n, gn / n, tau) <= delta0

        lo, hi = 1.0, 16.0
        while not ok(hi):
            lo, hi = hi, hi * 2
            if hi / n > 0.5:
                if not ok(0.5 * n):
                    raise ValueError(
                        f"Count-Min cannot reach (epsilon={epsilon}, delta={delta}) with n={n}, "
                        f"tau={tau}: even gamma=1/2 is not enough"
                    )
                hi = 0.5 * n
                break
        while hi - lo > 0.005 * hi:
            mid = 0.5 * (lo + hi)
            if ok(mid):
                hi = mid
            else:
                lo = mid
        gn = hi
    else:
        raise ValueError(f"method must be 'numeric' or 'paper', got {method!r}")
    gamma = gn / n
    if gamma > 0.5:
        raise ValueError(
            f"Count-Min calibration ({method}) needs gamma = {gamma:.3g} > 1/2 at n={n}: the protocol "
            f"is not valid here (use more users or method='numeric')"
        )
    return gamma, {"calibration": method, "gamma_n": gn, "epsilon0": eps0, "delta0": delta0}
