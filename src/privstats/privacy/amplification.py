"""Privacy amplification by shuffling: the central (ε, δ) of n shuffled ε0-LDP reports.

Six methods, all for replace-one neighbours with n public (``"tightest"`` is the default):

* ``"tightest"`` — the smallest ε certified by any of the valid bounds below that apply
  (``"fmt-numeric"`` and ``"variation-ratio"`` for the generic and, when ``randomizer`` is
  named, the randomizer-specific parameters, and ``"krr-blanket"`` for ``randomizer="krr"``):
  δ(ε) is the minimum of their δ(ε).
* ``"krr-blanket"`` — shuffled k-ary randomized response only (``randomizer="krr"``, ``k``): the
  accountant of :mod:`privstats.privacy.krr_shuffle`, never below the exact privacy curve: the exact
  curve itself for small n (enumerated; for k = 2 up to n = 5000), else the blanket pair (within 6%
  in ε for k ≥ 3) or, for k = 2 up to n = 10^6, the minority-coins bound (within 3%).
* ``"variation-ratio"`` — the randomizer-aware clone bound after Wang et al. (CCS 2024), see
  :mod:`privstats.privacy.variation_ratio` (``randomizer`` = "generic", "krr", "rappor",
  "oue", "olh" or "hadamard", with ``k`` the domain size or number of hash buckets).

* ``"fmt"`` — the closed form of Feldman, McMillan and Talwar, *Hiding Among the
  Clones* (FOCS 2021): the minimum of their Thm 3.1 and the form implemented in
  apple/ml-shuffling-amplification (both valid bounds), for ε0 ≤ ln(n / (16 ln(4/δ))).
* ``"fmt-numeric"`` — the same paper's clone reduction (their Thm 3.2): the shuffled
  output is a post-processing of the pair (P, Q) with C ~ Bin(n−1, e^−ε0),
  A ~ Bin(C, ½) and P = A + Bern(1/(e^ε0+1)), Q = A + Bern(e^ε0/(e^ε0+1)).  Here its
  hockey-stick divergence is computed as a sum over C with a closed-form binomial-CDF cutoff
  per C (exact for small n; for large n the values of C are grouped into bins charged at their
  smallest C, an upper bound within ~1% in δ), not by their step-wise discretisation.  Valid for
  all ε0.
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

from privstats.privacy.clone_pairs import pair_delta as _pair_delta
from privstats.privacy.clone_pairs import smallest_eps
from privstats.privacy.krr_shuffle import krr_shuffle_delta
from privstats.privacy.variation_ratio import variation_ratio_delta, variation_ratio_parameters
from privstats.validation import check_delta, check_epsilon, check_positive_int

__all__ = [
    "AMPLIFICATION_METHODS",
    "blanket_hoeffding_delta",
    "clone_delta",
    "krr_blanket_delta",
    "krr_revealed_delta",
    "local_epsilon_for",
    "shuffled_epsilon",
    "tightest_delta",
]

AMPLIFICATION_METHODS = ("balle", "fmt", "fmt-numeric", "krr-blanket", "tightest", "variation-ratio")


def clone_delta(eps: float, epsilon0: float, n: int) -> float:
    """Exact δ(ε) of the FMT clone pair for n shuffled ε0-LDP reports (an upper bound on the protocol's δ)."""
    alpha = math.exp(epsilon0) / (math.exp(epsilon0) + 1)
    return _pair_delta(eps, alpha, n - 1, math.exp(-epsilon0))


def krr_revealed_delta(eps: float, gamma: float, k: int, n: int) -> float:
    """δ(ε) of shuffled k-RR (blanket probability γ) by the clone pair with the victim's residual revealed.

    R(x) = x w.p. 1−γ, else uniform on [k].  For neighbours x1 = a vs b, every other
    user's report is a mixture: w.p. 2γ/k uniform on {a, b} (a "clone"), else a
    residual that is revealed.  Given user 1 lands in {a, b} (probability
    1−γ+2γ/k), the view is the FMT pair with α = (1−γ+γ/k)/(1−γ+2γ/k) and
    C ~ Bin(n−1, 2γ/k); otherwise both hypotheses give the same view.  Valid, but it reveals
    more than :func:`krr_blanket_delta` (1.2–4x looser in ε for k ≥ 3).
    """
    p_hi, q = 1 - gamma + gamma / k, gamma / k
    return (p_hi + q) * _pair_delta(eps, p_hi / (p_hi + q), n - 1, 2 * q)


def krr_blanket_delta(eps: float, gamma: float, k: int, n: int) -> float:
    """Upper bound on δ(ε) of shuffled k-ary randomized response with blanket probability γ.

    The accountant of :mod:`privstats.privacy.krr_shuffle` (never below the exact curve; exact for
    small n, within 6% of it in ε otherwise for k ≥ 3), or the revealed clone pair :func:`krr_revealed_delta` if that
    is smaller.  γ = k/(e^ε0 + k − 1) for local ε0.

    >>> krr_blanket_delta(0.3, 0.5, 8, 10_000) <= krr_revealed_delta(0.3, 0.5, 8, 10_000)
    True
    """
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma!r}")
    if gamma == 1:
        return 0.0  # the reports do not depend on the data
    epsilon0 = math.log(k / gamma - k + 1)
    return min(krr_shuffle_delta(eps, epsilon0, n, k), krr_revealed_delta(eps, gamma, k, n))


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
    return smallest_eps(delta_of_eps, delta, hi, tol)


def tightest_delta(
    eps: float, epsilon0: float, n: int, randomizer: str = "generic", k: int | None = None
) -> float:
    """The smallest valid upper bound on δ(ε): FMT's clone pair, the variation-ratio bounds and, for
    ``randomizer="krr"``, the k-RR blanket pair (:func:`~privstats.privacy.krr_shuffle.krr_shuffle_delta`)."""
    d = 1.0
    if randomizer == "krr" and k is not None:
        d = krr_shuffle_delta(eps, epsilon0, n, k)
    if d > 0:
        d = min(d, clone_delta(eps, epsilon0, n), variation_ratio_delta(eps, epsilon0, n, "generic"))
    if randomizer != "generic" and d > 0:
        d = min(d, variation_ratio_delta(eps, epsilon0, n, randomizer, k))
    return d


def _delta_function(
    method: str, epsilon0: float, n: int, randomizer: str, k: int | None
) -> Callable[[float], float]:
    """δ(ε) of a numerical method (one whose δ is computed, so ε is found by a root search)."""
    if method == "tightest":
        return lambda e: tightest_delta(e, epsilon0, n, randomizer, k)
    if method == "variation-ratio":
        return lambda e: variation_ratio_delta(e, epsilon0, n, randomizer, k)
    if method == "krr-blanket":
        kk = _krr_k(randomizer, k)
        return lambda e: krr_shuffle_delta(e, epsilon0, n, kk)
    return lambda e: clone_delta(e, epsilon0, n)


def _krr_k(randomizer: str, k: int | None) -> int:
    if randomizer != "krr":
        raise ValueError(
            f"method='krr-blanket' applies to randomizer='krr' only, got randomizer={randomizer!r}"
        )
    variation_ratio_parameters(1.0, randomizer, k)  # validates k
    assert k is not None
    return int(k)


def _checked(
    eps: float, eps_name: str, n: int, delta: float, method: str, randomizer: str, k: int | None
) -> tuple[float, int, float]:
    """The checks :func:`shuffled_epsilon` and :func:`local_epsilon_for` share: (ε or ε0, n, δ) validated,
    ``method`` known and, for the randomizer-aware methods, ``randomizer`` and ``k`` consistent."""
    eps = check_epsilon(eps, eps_name)
    n = check_positive_int(n, "n")
    delta = check_delta(delta)
    if method not in AMPLIFICATION_METHODS:
        raise ValueError(f"method must be one of {AMPLIFICATION_METHODS}, got {method!r}")
    if method in ("tightest", "variation-ratio", "krr-blanket"):
        variation_ratio_parameters(1.0, randomizer, k)  # validates randomizer and k
        if method == "krr-blanket":
            _krr_k(randomizer, k)
    return eps, n, delta


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
    ``"variation-ratio"`` (randomizer-aware clones, ``randomizer`` and ``k``), ``"krr-blanket"``
    (k-ary randomized response: ``randomizer="krr"`` and ``k``), ``"fmt"``
    (closed form), ``"fmt-numeric"`` (exact clone divergence) or ``"balle"`` (privacy
    blanket: Thm 3.1 for k-ary RR when ``k`` is given, else the generic ε0-LDP Hoeffding
    bound).  Raises ValueError when ε0 is outside the chosen bound's validity range.

    >>> e = shuffled_epsilon(2.0, 10_000, 1e-6)
    >>> 0 < e < 2.0
    True
    """
    epsilon0, n, delta = _checked(epsilon0, "epsilon0", n, delta, method, randomizer, k)
    if method == "fmt":
        return min(epsilon0, _fmt_closed(epsilon0, n, delta))
    if method == "balle":
        return _balle_generic(epsilon0, n, delta) if k is None else _balle(epsilon0, n, delta, k)
    if n == 1:
        return epsilon0
    hi = epsilon0
    if method == "tightest" and randomizer == "krr":
        # the variation-ratio bound is one of the minimum's terms and cheap: its ε brackets the search
        hi = smallest_eps(_delta_function("variation-ratio", epsilon0, n, randomizer, k), delta, hi, 1e-9)
    return smallest_eps(_delta_function(method, epsilon0, n, randomizer, k), delta, hi, 1e-7)


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
    epsilon, n, delta = _checked(epsilon, "epsilon", n, delta, method, randomizer, k)
    numeric = method in ("tightest", "variation-ratio", "krr-blanket", "fmt-numeric")

    def ok(e0: float) -> bool:
        if numeric:  # one δ(ε) evaluation certifies (ε, δ) directly
            return (
                e0 <= epsilon if n == 1 else _delta_function(method, e0, n, randomizer, k)(epsilon) <= delta
            )
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
        return _balle_local_epsilon(epsilon, n, delta, k, ok)
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


def _balle_local_epsilon(epsilon: float, n: int, delta: float, k: int, ok: Callable[[float], bool]) -> float:
    """Largest ε0 by Balle et al.'s Thm 3.1 for k-RR (closed form, stepped down until ``ok`` accepts it)."""
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


def _raise_small(epsilon: float, n: int, k: int, delta: float) -> NoReturn:
    raise ValueError(
        f"no epsilon0 > 0 reaches epsilon={epsilon} with the Balle et al. bound for n={n}, k={k}, "
        f"delta={delta}"
    )
