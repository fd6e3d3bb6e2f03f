"""The shuffle calibrations behind ``privstats.plan('frequencies', ...)`` (issue 26: 28 s at n = 10^7).

Before: k-RR's γ search computed k-RR's own blanket bound (up to seconds at n = 10^7) at every one
of its ~27 bisection steps, and the Hadamard accountant called scipy once per value of D.  Now the
cheap generic clone bound decides first (the blanket bound only where the clone bound does not
reach δ), and the accountant is vectorised over D.  The answers must be exactly the old ones; the
cost is checked by counting the expensive calls, not by a clock.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import privstats.shuffle.single as single
from privstats.privacy.amplification import krr_blanket_delta
from privstats.shuffle.calibrate import hadamard_swap_delta


def _plain_krr_gamma(k, n, epsilon, delta):
    """The bisection as it was: krr_exact_delta at every step."""
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        if single.krr_exact_delta(epsilon, mid, k, n) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


@pytest.mark.parametrize(("k", "n", "epsilon"), [(4, 10_000, 1.0), (8, 2000, 2.0), (16, 50_000, 0.5)])
def test_krr_gamma_is_the_plain_bisection(k, n, epsilon):
    assert single.krr_gamma(k, n, epsilon, 1e-6) == _plain_krr_gamma(k, n, epsilon, 1e-6)


def test_krr_gamma_computes_the_blanket_bound_only_where_it_decides(monkeypatch):
    calls = []

    def spy(eps, gamma, k, n):
        calls.append(gamma)
        return krr_blanket_delta(eps, gamma, k, n)

    monkeypatch.setattr(single, "krr_blanket_delta", spy)
    gamma = single.krr_gamma(64, 10**7, 1.0, 1e-6)
    assert 0 < gamma < 1
    # the bisection takes ~27 steps; before, every one computed the blanket bound
    assert len(calls) <= 14, len(calls)


def _loop_swap_delta(epsilon0, N, tau):
    """hadamard_swap_delta's sum as it was written before: one scipy call per value of D."""
    p = 2.0**-tau
    pb, q = p * p, p - p * p
    e0 = math.exp(min(epsilon0, 700.0))
    mu_d = N * pb
    dmin = max(0, int(mu_d - 10 * math.sqrt(mu_d + 1) - 20))
    dmax = 0 if mu_d < 1e-300 else min(N, int(mu_d + 10 * math.sqrt(mu_d + 1) + 20))
    d_all = np.arange(dmin, dmax + 1)
    pd_all = stats.binom.pmf(d_all, N, pb)
    q_a, q_ap = q / (1.0 - pb), q / (1.0 - pb - q)
    total_mass = delta = 0.0
    for d_raw, pd in zip(d_all, pd_all, strict=False):
        if pd == 0.0:
            continue
        d = int(d_raw)
        mu = (N - d) * q_a
        half = 13 * math.sqrt(mu + 1) + 30
        a = np.arange(max(0, int(mu - half)), min(N - d, int(mu + half)) + 1)
        pa = pd * stats.binom.pmf(a, N - d, q_a)
        total_mass += float(pa.sum())
        M, c = N - d - a, e0 / (1.0 + a + d)
        for w, pw in ((0, 1 - p), (1, p)):
            t = np.floor((1.0 + a + d) / e0 - d - w - 1e-12)
            F = stats.binom.cdf(t, M, q_ap)
            F1 = np.where(M > 0, stats.binom.cdf(t - 1, np.maximum(M - 1, 0), q_ap), 0.0)
            partial_mean = M * q_ap * F1
            gain = np.maximum(F * (1.0 - c * (d + w)) - c * partial_mean, 0.0)
            delta += pw * float(np.sum(pa * gain))
    return min(1.0, delta + max(0.0, 1.0 - total_mass))


@pytest.mark.parametrize(
    ("epsilon0", "N", "tau"), [(1.0, 4 * 10**8, 23), (0.5, 10**6, 10), (2.0, 5000, 5), (0.1, 300_000, 6)]
)
def test_vectorised_hadamard_accountant_is_the_loop(epsilon0, N, tau):
    assert hadamard_swap_delta(epsilon0, N, tau) == _loop_swap_delta(epsilon0, N, tau)
