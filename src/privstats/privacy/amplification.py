"""Privacy amplification by shuffling: the central (ε, δ) of n shuffled ε0-LDP reports.

Five methods, all for replace-one neighbours with n public (``"tightest"`` is the default):

* ``"tightest"`` — the smallest ε certified by any of the valid bounds below that apply
  (``"fmt-numeric"`` and ``"variation-ratio"`` for the generic and, when ``randomizer`` is
  named, the randomizer-specific parameters): δ(ε) is the minimum of their δ(ε).
* ``"variation-ratio"`` — the randomizer-aware clone bound after Wang et al. (CCS 2024), see
  :mod:`privstats.privacy.variation_ratio` (``randomizer`` = "generic", "krr", "rappor",
  "oue", "olh" or "hadamard", with ``k`` the domain size or number of hash buckets).

* ``"fmt"`` — the closed form of Feldman, McMillan and Talwar, *Hiding Among the
  Clones* (FOCS 2021): the minimum of their Thm 3.1 and the form implemented in
  apple/ml-shuffling-amplification (both valid bounds), for ε0 ≤ ln(n / (16 ln(4/δ))).
* ``"fmt-numeric"`` — the same paper's clone reduction (their Thm 3.2): the shuffled
  output is a post-processing of the pair (P, Q) with C ~ Bin(n−1, e^−ε0),
  A ~ Bin(C, ½) and P = A + Bern(1/(e^ε0+1)), Q = A + Bern(e^ε0/(e^ε0+1)).  Here its
  hockey-stick divergence is computed *exactly* (a sum over C with a closed-form
  binomial-CDF cutoff per C), not by their step-wise discretisation.  Valid for all ε0.
* ``"balle"`` — Balle, Bell, Gascón and Nissim, *The Privacy Blanket of the Shuffle
  Model* (CRYPTO 2019; arXiv:1903.02837).  With ``k`` (k-ary randomized response): their
  Thm 3.1, ε = max(√(14 ln(2/δ)(e^ε0+k−1)/(n−1)), 27(e^ε0+k−1)/(n−1)), valid when that
  ε ≤ 1.  Without ``k`` (any ε0-LDP randomizer): their Hoeffding privacy-blanket bound
  (:func:`blanket_hoeffding_delta`) with the generic blanket mass γ = e^−ε0 and privacy
  amplification variable range (e^ε+1)(e^ε0−e^−ε0), the parameters of the authors' code
  (BorjaBalle/amplification-by-shuffling, ``LDPMechanism``); ε is the smallest value
  whose δ(ε) ≤ δ.  It raises when the bound certifies no ε < ε0 (it needs roughly
  ε0 ≲ ½ ln(n / ln(1/δ)), cf. their Cor. 5.3.1).

>>> round(shuffled_epsilon(4.0, 100_000, 1e-6, method="fmt"), 4)   # the README's code form gives 0.5378
0.5346
>>> 0.1675 <= shuffled_epsilon(4.0, 100_000, 1e-6, method="fmt-numeric") <= 0.1728
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NoReturn

import numpy as np

from privstats.validation import check_delta, check_epsilon, check_positive_int

__all__ = [
    "AMPLIFICATION_METHODS",
    "blanket_hoeffding_delta",
    "clone_delta",
    "krr_blanket_delta",
    "local_epsilon_for",
    "shuffled_epsilon",
    "tightest_delta",
]

AMPLIFICATION_METHODS = ("balle", "fmt", "fmt-numeric", "tightest", "variation-ratio")


def _pair_delta(eps: float, alpha: float, n_clones: int, clone_prob: float) -> float:
    """δ(ε) between P = A + Bern(1−α) and Q = A + Bern(α), A ~ Bin(C, ½), C ~ Bin(n_clones, clone_prob).

    P/Q at A = a is (α + (1−α)r)/((1−α) + αr) with r = a/(C+1−a), decreasing in a for
    α > ½, so {P > e^ε Q} = {a < β(C+1)} and each conditional divergence is a difference
    of two binomial CDFs.  The reverse direction is the same by the symmetry a ↦ C+1−a.
    """
    from scipy import stats  # imported here: scipy.stats is slow to import and `import privstats` is not

    if alpha <= 0.5:
        return 0.0
    e = math.exp(eps)
    num = alpha - e * (1 - alpha)
    if num <= 0:
        return 0.0
    r_star = num / (e * alpha - (1 - alpha))
    beta = r_star / (1 + r_star)
    if n_clones == 0 or clone_prob == 0:
        c = np.zeros(1, dtype=np.int64)
        w = np.ones(1)
        missing = 0.0
    else:
        mean = n_clones * clone_prob
        half = 14.0 * math.sqrt(mean * (1 - clone_prob)) + 40.0  # binomial tails beyond this are < 1e-40
        lo, hi = max(0, int(mean - half)), min(n_clones, math.ceil(mean + half))
        c = np.arange(lo, hi + 1, dtype=np.int64)
        w = stats.binom.pmf(c, n_clones, clone_prob)
        missing = float(
            stats.binom.cdf(lo - 1, n_clones, clone_prob) + stats.binom.sf(hi, n_clones, clone_prob)
        )
    a_max = np.ceil(beta * (c + 1)).astype(np.int64) - 1  # largest a with a < β(C+1)
    f1 = stats.binom.cdf(a_max, c, 0.5)
    f0 = np.where(a_max >= 1, stats.binom.cdf(a_max - 1, c, 0.5), 0.0)
    d = alpha * f1 + (1 - alpha) * f0 - e * ((1 - alpha) * f1 + alpha * f0)
    return float(np.sum(w * np.maximum(d, 0.0)) + missing)


def clone_delta(eps: float, epsilon0: float, n: int) -> float:
    """Exact δ(ε) of the FMT clone pair for n shuffled ε0-LDP reports (an upper bound on the protocol's δ)."""
    alpha = math.exp(epsilon0) / (math.exp(epsilon0) + 1)
    return _pair_delta(eps, alpha, n - 1, math.exp(-epsilon0))


def krr_blanket_delta(eps: float, gamma: float, k: int, n: int) -> float:
    """Tight δ(ε) of shuffled k-ary randomized response with blanket probability γ.

    R(x) = x w.p. 1−γ, else uniform on [k].  For neighbours x1 = a vs b, every other
    user's report is a mixture: w.p. 2γ/k uniform on {a, b} (a "clone"), else a
    residual that is revealed.  Given user 1 lands in {a, b} (probability
    1−γ+2γ/k), the view is the FMT pair with α = (1−γ+γ/k)/(1−γ+2γ/k) and
    C ~ Bin(n−1, 2γ/k); otherwise both hypotheses give the same view.
    """
    p_hi, q = 1 - gamma + gamma / k, gamma / k
    return (p_hi + q) * _pair_delta(eps, p_hi / (p_hi + q), n - 1, 2 * q)


def _fmt_closed(epsilon0: float, n: int, delta: float) -> float:
    limit = math.log(n / (16 * math.log(4 / delta)))
    if epsilon0 > limit:
        raise ValueError(
            f"epsilon0={epsilon0:.4g} is outside the validity range of the FMT closed form "
            f"(needs epsilon0 <= ln(n/(16 ln(4/delta))) = {limit:.4g} for n={n}); use method='fmt-numeric'"
        )
    a = 8 * math.sqrt(math.exp(epsilon0) * math.log(4 / delta)) / math.sqrt(n)
    c = 8 * math.exp(epsilon0) / n
    e = math.log(1 + a + c)
    b = 1 - math.exp(-epsilon0)
    d = 1 + math.exp(-epsilon0 - e)
    code_form = math.log1p((b / d) * (a + c))  # the authors' released code
    # FMT21 Thm 3.1: log(1 + (e^ε0 - 1)/(e^ε0 + 1) (a + c)); both are valid bounds: take the tighter
    thm_form = math.log1p(math.tanh(epsilon0 / 2) * (a + c))
    return min(code_form, thm_form)


def _balle(epsilon0: float, n: int, delta: float, k: int) -> float:
    k = check_positive_int(k, "k", minimum=2)
    if n < 2:
        raise ValueError("n must be >= 2 for method='balle'")
    m = (math.exp(epsilon0) + k - 1) / (n - 1)  # = k / ((n−1)γ) with γ = k/(e^ε0+k−1)
    eps = max(math.sqrt(14 * math.log(2 / delta) * m), 27 * m)
    if eps > 1:
        raise ValueError(
            f"epsilon0={epsilon0:.4g} is outside the validity range of the Balle et al. bound: it gives "
            f"epsilon={eps:.4g} > 1 for n={n}, k={k} (Thm 3.1 needs epsilon <= 1)"
        )
    return eps


def blanket_hoeffding_delta(eps: float, n: int, gamma: float, spread: float) -> float:
    """Balle et al.'s Hoeffding privacy-blanket bound on δ(ε) for n shuffled reports.

    ``gamma`` is (a lower bound on) the blanket mass of the local randomizer and
    ``spread`` (an upper bound on) the range of its privacy amplification variable L_ε:
    δ ≤ spread²/(4(e^ε−1)γn) · (1 − γ(1 − exp(−2(e^ε−1)²/spread²)))^n.
    Generic ε0-LDP randomizer: γ = e^−ε0, spread = (e^ε+1)(e^ε0−e^−ε0); k-ary RR:
    γ = k/(e^ε0+k−1), spread = (1−γ)k(e^ε+1).  Larger spread or smaller γ give a larger δ.
    """
    if eps <= 0:
        return 1.0
    a = math.expm1(eps)
    log_delta = (
        2 * math.log(spread)
        - math.log(4 * a)
        - math.log(gamma * n)
        + n * math.log1p(-gamma * -math.expm1(-2 * a * a / (spread * spread)))
    )
    return math.exp(min(log_delta, 0.0))


def _generic_blanket_delta(eps: float, epsilon0: float, n: int) -> float:
    if eps >= epsilon0:
        return 0.0  # ε0-LDP reports are ε0-DP after any post-processing
    spread = (math.exp(eps) + 1) * 2 * math.sinh(epsilon0)
    return blanket_hoeffding_delta(eps, n, math.exp(-epsilon0), spread)


def _krr_hoeffding_delta(eps: float, epsilon0: float, n: int, k: int) -> float:
    """The same Hoeffding bound with k-RR's exact blanket mass and range (never larger than the generic one)."""
    if eps >= epsilon0:
        return 0.0
    gamma = k / (math.exp(epsilon0) + k - 1)
    return blanket_hoeffding_delta(eps, n, gamma, (1 - gamma) * k * (math.exp(eps) + 1))


def _balle_generic(epsilon0: float, n: int, delta: float) -> float:
    if n < 2 or _generic_blanket_delta(epsilon0 * (1 - 1e-9), epsilon0, n) > delta:
        raise ValueError(
            f"epsilon0={epsilon0:.4g} is outside the validity range of the Balle et al. generic blanket bound: "
            f"it certifies no epsilon below epsilon0 for n={n}, delta={delta} (it needs e^(2 epsilon0) well "
            "below n/ln(1/delta), cf. their Cor. 5.3.1); use method='fmt-numeric'"
        )
    return _bisect_eps(lambda e: _generic_blanket_delta(e, epsilon0, n), delta, epsilon0, tol=1e-7)


def _bisect_eps(delta_of_eps: Callable[[float], float], delta: float, hi: float, tol: float = 1e-6) -> float:
    """Smallest ε in [0, hi] with delta_of_eps(ε) ≤ δ (delta_of_eps is non-increasing); hi if none smaller."""
    if delta_of_eps(0.0) <= delta:
        return 0.0
    lo = 0.0
    while hi - lo > tol * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if delta_of_eps(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def tightest_delta(
    eps: float, epsilon0: float, n: int, randomizer: str = "generic", k: int | None = None
) -> float:
    """The smallest valid upper bound on δ(ε): FMT's clone pair and the variation-ratio bounds."""
    from privstats.privacy.variation_ratio import variation_ratio_delta

    d = min(clone_delta(eps, epsilon0, n), variation_ratio_delta(eps, epsilon0, n, "generic"))
    if randomizer != "generic" and d > 0:
        d = min(d, variation_ratio_delta(eps, epsilon0, n, randomizer, k))
    return d


def shuffled_epsilon(
    epsilon0: float,
    n: int,
    delta: float,
    method: str = "tightest",
    *,
    k: int | None = None,
    randomizer: str = "generic",
) -> float:
    """Central ε of the shuffled output of n ε0-LDP reports at the given δ.

    ``method`` is ``"tightest"`` (default: the minimum over the valid bounds),
    ``"variation-ratio"`` (randomizer-aware clones, ``randomizer`` and ``k``), ``"fmt"``
    (closed form), ``"fmt-numeric"`` (exact clone divergence) or ``"balle"`` (privacy
    blanket: Thm 3.1 for k-ary RR when ``k`` is given, else the generic ε0-LDP Hoeffding
    bound).  Raises ValueError when ε0 is outside the chosen bound's validity range.

    >>> e = shuffled_epsilon(2.0, 10_000, 1e-6)
    >>> 0 < e < 2.0
    True
    """
    epsilon0 = check_epsilon(epsilon0, "epsilon0")
    n = check_positive_int(n, "n")
    delta = check_delta(delta)
    if method not in AMPLIFICATION_METHODS:
        raise ValueError(f"method must be one of {AMPLIFICATION_METHODS}, got {method!r}")
    if method in ("tightest", "variation-ratio"):
        from privstats.privacy.variation_ratio import variation_ratio_delta, variation_ratio_parameters

        variation_ratio_parameters(epsilon0, randomizer, k)  # validates randomizer and k
        if n == 1:
            return epsilon0
        if method == "tightest":
            return _bisect_eps(lambda e: tightest_delta(e, epsilon0, n, randomizer, k), delta, epsilon0, 1e-7)
        return _bisect_eps(
            lambda e: variation_ratio_delta(e, epsilon0, n, randomizer, k), delta, epsilon0, 1e-7
        )
    if method == "fmt":
        return min(epsilon0, _fmt_closed(epsilon0, n, delta))
    if method == "balle":
        return _balle_generic(epsilon0, n, delta) if k is None else _balle(epsilon0, n, delta, k)
    if n == 1:
        return epsilon0
    return _bisect_eps(lambda e: clone_delta(e, epsilon0, n), delta, epsilon0)


def local_epsilon_for(
    epsilon: float,
    n: int,
    delta: float,
    method: str = "tightest",
    *,
    k: int | None = None,
    randomizer: str = "generic",
) -> float:
    """Largest local ε0 whose shuffled output is (ε, δ)-DP by ``method`` (inverse of :func:`shuffled_epsilon`).

    >>> e0 = local_epsilon_for(1.0, 100_000, 1e-6)
    >>> bool(shuffled_epsilon(e0, 100_000, 1e-6) <= 1.0 + 1e-6)
    True
    """
    epsilon = check_epsilon(epsilon)
    n = check_positive_int(n, "n")
    delta = check_delta(delta)
    if method not in AMPLIFICATION_METHODS:
        raise ValueError(f"method must be one of {AMPLIFICATION_METHODS}, got {method!r}")

    def ok(e0: float) -> bool:
        try:
            return shuffled_epsilon(e0, n, delta, method, k=k, randomizer=randomizer) <= epsilon
        except ValueError:
            return False

    if method == "fmt":
        hi = math.log(n / (16 * math.log(4 / delta)))
        if hi <= 0:
            raise ValueError(
                f"n={n} is too small for the FMT closed form at delta={delta} "
                f"(needs n > 16 ln(4/delta) = {16 * math.log(4 / delta):.1f})"
            )
    elif method == "balle" and k is None:
        # the generic bound is vacuous beyond ε0 ≈ ½ ln(n / ln(1/δ)) and its ε grows with ε0 below that
        hi = max(epsilon, 0.5 * math.log(n)) + 1.0
    elif method == "balle":
        assert k is not None
        # ε ≤ 1 and ε grows with ε0: the largest valid ε0 solves 14 ln(2/δ)(e^ε0+k−1)/(n−1) = min(ε,1)^2
        _balle(1e-9, n, delta, k)  # raises for a bad k or hopeless n
        target = min(epsilon, 1.0)
        m = min(target**2 / (14 * math.log(2 / delta)), target / 27)
        val = m * (n - 1) - (k - 1)
        if val <= 0:
            raise ValueError(
                f"no epsilon0 > 0 reaches epsilon={epsilon} with the Balle et al. bound for "
                f"n={n}, k={k}, delta={delta}"
            )
        if math.log(val) <= 0:
            _raise_small(epsilon, n, k, delta)
        # the closed form can land a rounding error above the target (or above Thm 3.1's ε <= 1):
        # step down until shuffled_epsilon accepts it, so the pair is consistent
        e0 = math.log(val)
        for _ in range(200):
            if ok(e0):
                return e0
            e0 -= max(abs(e0) * 1e-12, 1e-300)
        _raise_small(epsilon, n, k, delta)
    else:
        hi = max(epsilon, math.log(n) + 2.0)
    lo = epsilon if ok(epsilon) else 0.0
    if lo == 0.0:
        lo_try = epsilon
        while lo_try > 1e-9 and not ok(lo_try):
            lo_try /= 2
        if lo_try <= 1e-9:
            raise ValueError(f"no epsilon0 reaches epsilon={epsilon} with method={method!r} for n={n}")
        lo = lo_try
    if ok(hi):
        return hi
    while hi - lo > 1e-5 * max(1.0, lo):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _raise_small(epsilon: float, n: int, k: int, delta: float) -> NoReturn:
    raise ValueError(
        f"no epsilon0 > 0 reaches epsilon={epsilon} with the Balle et al. bound for n={n}, k={k}, "
        f"delta={delta}"
    )
