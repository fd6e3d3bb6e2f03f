"""Choosing a frequency oracle, and exact variances of linear combinations of its estimates.

>>> from privstats.local import best_oracle
>>> best_oracle(4, epsilon=2.0)          # small domain: k-ary randomized response
GRR(domain_size=4, epsilon=2.0)
>>> type(best_oracle(1024, epsilon=1.0)).__name__
'OUE'
"""

from __future__ import annotations

import numpy as np

from privstats.local.base import FrequencyOracle
from privstats.local.grr import GRR
from privstats.local.hadamard import HadamardResponse
from privstats.local.olh import OLH
from privstats.local.unary import OUE
from privstats.validation import check_choice, check_domain_size, check_epsilon

__all__ = ["ORACLES", "best_oracle", "linear_variance", "make_oracle", "worst_case_variance"]

ORACLES: dict[str, type[FrequencyOracle]] = {"grr": GRR, "oue": OUE, "olh": OLH, "hr": HadamardResponse}


def make_oracle(kind: str, domain_size: int, epsilon: float) -> FrequencyOracle:
    """An oracle by name (``"grr"``, ``"oue"``, ``"olh"``, ``"hr"``, or ``"auto"`` for :func:`best_oracle`)."""
    check_choice(kind, "oracle", {"auto", *ORACLES})
    if kind == "auto":
        return best_oracle(domain_size, epsilon)
    return ORACLES[kind](domain_size, epsilon)


def worst_case_variance(oracle: FrequencyOracle) -> float:
    """Variance contributed per user to an item nobody holds (n = 1, n_v = 0): the worst case."""
    return float(oracle.variance(1, np.zeros(oracle.domain_size))[0])


def best_oracle(domain_size: int, epsilon: float) -> FrequencyOracle:
    """The oracle with the lowest worst-case variance for (d, ε); ties go to fewer bits per user.

    Candidates: GRR, OUE, OLH (g = round(e^ε) + 1) and Hadamard response.  OUE is the
    continuous optimum of OLH's variance, so OLH never wins strictly on variance.
    """
    d = check_domain_size(domain_size)
    eps = check_epsilon(epsilon)
    candidates = [cls(d, eps) for cls in ORACLES.values()]
    scored = [(worst_case_variance(o), o.bits_per_user, i) for i, o in enumerate(candidates)]
    best_var = min(s[0] for s in scored)
    tied = [s for s in scored if s[0] <= best_var * (1 + 1e-12)]
    return candidates[min(tied, key=lambda s: (s[1], s[2]))[2]]


def _grr_user_linear_variance(oracle: GRR, weights: np.ndarray) -> np.ndarray:
    q, gap = oracle.q, oracle.gap
    total, total_sq = weights.sum(), np.sum(weights**2)
    mean = q * total + gap * weights
    second = q * total_sq + gap * weights**2
    return (second - mean**2) / gap**2


def linear_variance(oracle: FrequencyOracle, true_counts, weights) -> float:
    """Exact variance of ``Σ_v weights[v] · n̂_v`` when ``true_counts[x]`` users hold x.

    Users contribute independently, so this is ``Σ_x n_x · Var(one user's contribution | x)``;
    covariances between items (GRR's multinomial, HR's structured pairs) are included.
    """
    w = np.asarray(weights, dtype=float)
    c = np.asarray(true_counts, dtype=float)
    if w.shape != (oracle.domain_size,) or c.shape != (oracle.domain_size,):
        raise ValueError(f"weights and true_counts must have length {oracle.domain_size}")
    if isinstance(oracle, GRR):
        per_user = _grr_user_linear_variance(oracle, w)
    elif hasattr(oracle, "user_linear_variance"):
        per_user = oracle.user_linear_variance(w)
    else:
        raise TypeError(f"no linear variance for {type(oracle).__name__}")
    return float(np.dot(c, per_user))
