"""Exact enumeration of shuffled single-message randomizers, independent of the library.

The view of the analyzer is the multiset of the n reports.  For a victim holding value 0 or 1 and every
dataset of the other n − 1 users, the exact law of that multiset is computed term by term; the worst
case over the datasets is the true privacy curve δ(ε) an audit would check an accountant against.
"""

import itertools
import math

import numpy as np


def multiset_law(values, out_probs):
    """{sorted tuple of reports: probability} for users holding ``values``."""
    law = {(): 1.0}
    for x in values:
        new: dict = {}
        for h, p in law.items():
            for y, py in enumerate(out_probs(x)):
                hh = tuple(sorted((*h, y)))
                new[hh] = new.get(hh, 0.0) + p * py
        law = new
    return law


def divergence(P, Q, eps):
    """max of the two hockey-stick divergences between two laws given as dicts."""
    e = math.exp(eps)
    keys = set(P) | set(Q)
    return max(
        sum(max(P.get(h, 0.0) - e * Q.get(h, 0.0), 0.0) for h in keys),
        sum(max(Q.get(h, 0.0) - e * P.get(h, 0.0), 0.0) for h in keys),
    )


def exact_worst(eps, n, k, out_probs):
    """max over the other users' values of δ(ε) between victim value 0 and victim value 1."""
    return max(
        divergence(multiset_law((0, *o), out_probs), multiset_law((1, *o), out_probs), eps)
        for o in itertools.combinations_with_replacement(range(k), n - 1)
    )


def krr(k, e0):
    hi, lo = math.exp(e0) / (math.exp(e0) + k - 1), 1 / (math.exp(e0) + k - 1)
    return lambda x: [hi if y == x else lo for y in range(k)]


def rappor(bits, e0):
    f = 1 / (1 + math.exp(e0 / 2))
    return lambda x: [
        math.prod((1 - f) if ((y >> j) & 1) == (j == x) else f for j in range(bits)) for y in range(2**bits)
    ]


class ExactCurve:
    """The exact δ(ε) of shuffled k-RR, worst case over the other users, as arrays: fast in ε."""

    def __init__(self, n, k, e0):
        out = krr(k, e0)
        ps, qs = [], []
        for o in itertools.combinations_with_replacement(range(k), n - 1):
            P, Q = multiset_law((0, *o), out), multiset_law((1, *o), out)
            keys = sorted(set(P) | set(Q))
            ps.append(np.array([P.get(h, 0.0) for h in keys]))
            qs.append(np.array([Q.get(h, 0.0) for h in keys]))
        self.P, self.Q = np.array(ps), np.array(qs)  # every dataset has the same support

    def delta(self, eps):
        e = math.exp(eps)
        a = np.maximum(self.P - e * self.Q, 0).sum(axis=1)
        b = np.maximum(self.Q - e * self.P, 0).sum(axis=1)
        return float(max(a.max(), b.max()))

    def epsilon(self, delta, hi):
        return smallest_eps(self.delta, delta, hi)


def smallest_eps(delta_of_eps, delta, hi, iters=60):
    """Bisection: smallest ε in [0, hi] with δ(ε) <= delta."""
    if delta_of_eps(0.0) <= delta:
        return 0.0
    lo = 0.0
    for _ in range(iters):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if delta_of_eps(mid) <= delta else (mid, hi)
    return hi
