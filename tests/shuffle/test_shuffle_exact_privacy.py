"""Exact privacy on tiny instances: the distribution of the shuffled multiset is computed by
enumeration for neighbouring inputs, and its hockey-stick divergence is compared with the
accountant's δ at the same ε.  Each test also shows that an under-noised instance is caught."""

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest

from privstats.privacy.amplification import krr_blanket_delta, shuffled_epsilon
from privstats.shuffle.calibrate import countmin_delta, hadamard_swap_delta
from privstats.shuffle.hadamard import kernels_from_tuples


def multiset_distribution(per_message):
    """Law of the histogram of independent messages, each given as {message: probability}."""
    dist = {(): 1.0}
    for law in per_message:
        nxt = defaultdict(float)
        for hist, p in dist.items():
            for m, q in law.items():
                if q:
                    nxt[tuple(sorted((*hist, m)))] += p * q
        dist = nxt
    return dist


def hockey(P, Q, eps):
    e = math.exp(eps)
    return max(
        sum(max(p - e * Q.get(o, 0.0), 0.0) for o, p in P.items()),
        sum(max(q - e * P.get(o, 0.0), 0.0) for o, q in Q.items()),
    )


# ---------------------------------------------------------------- Hadamard (Algorithm 1) -----


def hadamard_message_laws(items, rho, m=2):
    """τ = 1: a real message for j is uniform on C_j; a blanket one uniform on [0, 2^m).
    Messages are the released null-space rows (as tuples), computed by the library."""
    values = np.arange(2**m, dtype=np.uint32)
    kern = [tuple(r) for r in kernels_from_tuples(values[:, None], m).tolist()]
    laws = []
    for j in items:
        members = [v for v in values if bin(int(v) & j).count("1") % 2 == 0]
        laws.append({kern[v]: 1.0 / len(members) for v in members})
        laws.extend({kern[v]: 1.0 / 2**m for v in values} for _ in range(rho))
    return laws


@pytest.mark.parametrize("rho", [1, 3])
def test_hadamard_exact_divergence_below_accountant(rho):
    # B = 2 items (Hadamard indices 1, 2), k = 1, B' = 4, τ = 1, n = 2 users
    P = multiset_distribution(hadamard_message_laws([1, 1], rho))
    Q = multiset_distribution(hadamard_message_laws([2, 1], rho))
    for eps in (0.25, 0.5, 1.0, 2.0):
        exact = hockey(P, Q, eps)
        claimed = hadamard_swap_delta(eps, 2 * rho, 1)
        assert exact <= claimed + 1e-12
        assert exact > 0 or claimed >= 0  # sanity


def test_hadamard_under_noised_is_caught():
    # the accountant's δ for ρ = 6 does not cover the protocol run with ρ = 1
    P = multiset_distribution(hadamard_message_laws([1, 1], 1))
    Q = multiset_distribution(hadamard_message_laws([2, 1], 1))
    eps = 0.5
    assert hockey(P, Q, eps) > hadamard_swap_delta(eps, 2 * 6, 1)


# ---------------------------------------------------------------- Count-Min (Algorithm 2) ----


def binom_pmf(n, p):
    return {y: math.comb(n, y) * p**y * (1 - p) ** (n - y) for y in range(n + 1)}


def cm_table_law(n, gamma, shift):
    """Two cells (τ = 1, b = 2); ``shift`` = true counts; each cell adds Bin(n, γ)."""
    pmf = binom_pmf(n, gamma)
    return {(shift[0] + a, shift[1] + b): pa * pb for a, pa in pmf.items() for b, pb in pmf.items()}


@pytest.mark.parametrize("gamma", [0.2, 0.45])
def test_countmin_exact_divergence_below_accountant(gamma):
    n = 4
    P = cm_table_law(n, gamma, (2, 2))  # user 1 in cell 0
    Q = cm_table_law(n, gamma, (1, 3))  # user 1 in cell 1
    for eps in (0.5, 1.0, 2.0, 3.0):
        assert hockey(P, Q, eps) <= countmin_delta(eps, n, gamma, 1, grid=1e-4) + 1e-12


def test_countmin_under_noised_is_caught():
    n, eps = 4, 1.0
    P = cm_table_law(n, 0.05, (2, 2))
    Q = cm_table_law(n, 0.05, (1, 3))
    assert hockey(P, Q, eps) > countmin_delta(eps, n, 0.45, 1, grid=1e-4)


# ---------------------------------------------------------------- single-message k-RR --------


def krr_laws(values, k, gamma):
    return [{y: (1 - gamma) * (y == x) + gamma / k for y in range(k)} for x in values]


@pytest.mark.parametrize("gamma", [0.3, 0.7])
def test_krr_exact_divergence_below_tight_blanket(gamma):
    k, others = 3, [0, 1, 2, 1]
    P = multiset_distribution(krr_laws([0, *others], k, gamma))
    Q = multiset_distribution(krr_laws([1, *others], k, gamma))
    n = len(others) + 1
    for eps in (0.25, 0.5, 1.0, 2.0):
        assert hockey(P, Q, eps) <= krr_blanket_delta(eps, gamma, k, n) + 1e-12


def test_krr_under_noised_is_caught():
    k, others = 3, [0, 1, 2, 1]
    P = multiset_distribution(krr_laws([0, *others], k, 0.1))
    Q = multiset_distribution(krr_laws([1, *others], k, 0.1))
    assert hockey(P, Q, 0.5) > krr_blanket_delta(0.5, 0.9, k, 5)


# ---------------------------------------------------------------- single-message RAPPOR ------


def rappor_laws(values, B, p):
    laws = []
    for x in values:
        law = {}
        for bits in itertools.product((0, 1), repeat=B):
            flips = sum(b != (i == x) for i, b in enumerate(bits))
            law[bits] = p**flips * (1 - p) ** (B - flips)
        laws.append(law)
    return laws


def test_rappor_exact_divergence_below_amplification_bound():
    B, n, delta = 2, 4, 0.05
    p = 0.2
    eps0 = 2 * math.log((1 - p) / p)  # RAPPOR's replace-one local epsilon
    P = multiset_distribution(rappor_laws([0, 1, 0, 1], B, p))
    Q = multiset_distribution(rappor_laws([1, 1, 0, 1], B, p))
    eps = shuffled_epsilon(eps0, n, delta, method="fmt-numeric")
    assert eps < eps0  # amplification happened at all
    assert hockey(P, Q, eps) <= delta
    # too small an epsilon for this delta is caught
    assert hockey(P, Q, 0.2 * eps) > delta


# ---------------------------------------------------------------- summation --------------------


def test_summation_exact_divergence_below_accountant():
    n_blank, gamma = 6, 0.3
    pmf = binom_pmf(n_blank, gamma)
    P = {y + 1: p for y, p in pmf.items()}  # user 1's bit = 1
    Q = dict(pmf)  # user 1's bit = 0
    for eps in (0.5, 1.0, 2.0):
        claimed = max(
            countmin_delta(eps, n_blank, gamma, 1, up_only=True, grid=1e-4),
            countmin_delta(eps, n_blank, gamma, 1, down_only=True, grid=1e-4),
        )
        assert hockey(P, Q, eps) <= claimed + 1e-12
