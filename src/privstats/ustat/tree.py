"""Protocol B (Bell et al. 2020, §4): LDP AUC from hierarchical histograms.

Scores are quantised to ``[0, d)`` with ``d = 2^α``.  Each class (labels are public)
runs a Hadamard level oracle (Algorithms 2/3 with ±1 entries, erratum P-B2): a user
with level-l prefix ``q = s >> (α − l)`` draws ``j`` uniform in ``[0, 2^l)`` and sends
``(j, z)`` with ``z = ±(−1)^{popcount(j & q)}``, kept with probability e^ε/(1+e^ε).
The server's ``c_ε Σ_i (−1)^{popcount(j_i & q)} z_i`` with ``c_ε = (e^ε+1)/(e^ε−1)`` is
unbiased for the count of q, with exact variance ``n_l c_ε² − count(q)`` (Lemma 5
corrected, P-B3).

The analyst walks the tree breadth first (Figure 2), querying only the children of
recursed (and, in the main variant, discarded) nodes: a fast Walsh–Hadamard
transform of ``Z[j] = Σ_{j_i=j} z_i`` for dense levels, parity sums for deep ones.
Floors ``max(ĥ, √(a v)/2)`` and the threshold ``τ = a√(v⁺v⁻)`` decide recursion;
a discarded node contributes ``½(ĥ_{p0}+ĥ_{p1})⁺(ĥ_{p0}+ĥ_{p1})⁻`` (P-B4) or 0 in the
``discard="zero"`` variant.  The paper counts ties (same leaf) as 0; ``ties="half"`` adds
½ĥ⁺ĥ⁻ for the leaves under recursed nodes, which matches the ½ of discarded intervals
(P-B9) and scikit-learn's convention.  ``a = 0`` recurses everywhere (unbiased; used in tests).

Splitting strategies (Table 1): ``users`` (each user in one level, full ε, pure),
``budget`` (all levels, ε/α each, pure), ``advanced`` (all levels, per-level ε from
advanced composition, (ε, δ)).

>>> import numpy as np
>>> proto = TreeAUC(depth=4, epsilon=1.0)
>>> g = np.random.default_rng(0)
>>> pos, neg = proto.simulate(g.integers(8, 16, 20000), rng=1), proto.simulate(g.integers(0, 8, 20000), rng=2)
>>> value, var, details = proto.estimate(pos, neg)
>>> bool(abs(value - 1.0) < 5 * var ** 0.5)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privstats.privacy.randomness import RNGLike, as_generator, as_source
from privstats.validation import check_choice, check_delta, check_epsilon, check_positive_int

__all__ = ["DISCARDS", "SPLITTINGS", "TreeAUC", "TreeState", "fwht", "hierarchical_histogram", "uauc"]

SPLITTINGS = ("users", "budget", "advanced")
DISCARDS = ("half", "zero")
DENSE_MAX_LEVEL = 20  # levels with 2^l <= 2^20 are aggregated densely (Z[j]); deeper levels keep reports


def fwht(a: np.ndarray) -> np.ndarray:
    """Unnormalised Walsh–Hadamard transform: ``out[q] = Σ_j a[j]·(−1)^{popcount(j & q)}``."""
    out = np.array(a, dtype=np.float64)
    n, h = out.size, 1
    while h < n:
        v = out.reshape(-1, 2, h)
        out = np.stack([v[:, 0] + v[:, 1], v[:, 0] - v[:, 1]], axis=1).reshape(-1)
        h *= 2
    return out


def _parity(x: np.ndarray) -> np.ndarray:
    return (np.bitwise_count(x) & 1).astype(np.int64)


def hierarchical_histogram(values, depth: int) -> list[np.ndarray]:
    """Exact counts per node: element l (0..depth) has the 2^l counts of the level-l prefixes."""
    v = np.asarray(values, dtype=np.int64)
    return [np.bincount(v >> (depth - l), minlength=2**l) for l in range(depth + 1)]


def uauc(pos, neg, depth: int) -> int:
    """Exact unnormalised AUC by the tree recursion (pairs with s⁺ > s⁻; ties count 0)."""
    hp, hn = hierarchical_histogram(pos, depth), hierarchical_histogram(neg, depth)
    return int(sum(int(hp[m][1::2] @ hn[m][0::2]) for m in range(1, depth + 1)))


def _c(eps: float) -> float:
    return 1.0 / math.tanh(eps / 2)  # (e^ε + 1)/(e^ε − 1), overflow-free


def _keep(eps: float) -> float:
    """e^ε/(1 + e^ε), overflow-free."""
    return 1.0 / (1.0 + math.exp(-eps))


def advanced_level_epsilon(epsilon: float, levels: int, delta: float) -> float:
    """Largest per-level ε̃ whose ``levels``-fold advanced composition (DRV) is (ε, δ); at least ε/levels."""

    def total(e):
        return e * math.sqrt(2 * levels * math.log(1 / delta)) + levels * e * math.expm1(min(e, 700.0))

    lo, hi = 0.0, epsilon
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) <= epsilon else (lo, mid)
    return max(lo, epsilon / levels)


@dataclass
class TreeState:
    """One class's aggregated level reports: per level the count of reports, dense ``Z`` sums or raw reports."""

    depth: int
    epsilon_level: float
    n_levels: np.ndarray = None  # type: ignore[assignment]  # reports per level 1..depth (index 0 unused)
    dense: dict = field(default_factory=dict)  # level -> Z[j]
    raw: dict = field(default_factory=dict)  # level -> (j array, z array)
    n: int = 0  # users

    def merge(self, other: TreeState) -> TreeState:
        if (other.depth, other.epsilon_level) != (self.depth, self.epsilon_level):
            raise ValueError("cannot merge tree states with different depth or level epsilon")
        dense = {l: self.dense[l] + other.dense[l] for l in self.dense}
        raw = {
            l: (
                np.concatenate([self.raw[l][0], other.raw[l][0]]),
                np.concatenate([self.raw[l][1], other.raw[l][1]]),
            )
            for l in self.raw
        }
        return TreeState(
            self.depth, self.epsilon_level, self.n_levels + other.n_levels, dense, raw, self.n + other.n
        )


class TreeAUC:
    """Protocol B for scores already quantised to ``[0, 2^depth)``."""

    def __init__(
        self,
        depth: int,
        epsilon: float,
        *,
        delta: float = 0.0,
        splitting: str = "users",
        discard: str = "half",
        a: float | None = None,
        ties: str = "zero",
    ):
        self.depth = check_positive_int(depth, "depth")
        self.epsilon = check_epsilon(epsilon)
        self.splitting = check_choice(splitting, "splitting", SPLITTINGS)
        self.discard = check_choice(discard, "discard", DISCARDS)
        self.ties = check_choice(ties, "ties", ("zero", "half"))
        if splitting == "advanced":
            self.delta = check_delta(delta)
            self.epsilon_level = advanced_level_epsilon(self.epsilon, self.depth, self.delta)
        else:
            self.delta = 0.0
            self.epsilon_level = self.epsilon if splitting == "users" else self.epsilon / self.depth
        if a is not None and not (isinstance(a, (int, float)) and a >= 0):
            raise ValueError(f"a must be a number >= 0 (0 recurses everywhere), got {a!r}")
        self.a = a

    # ---- public parameters ----------------------------------------------------------------
    @property
    def C(self) -> float:
        """Constant of v = C·n·α for this splitting (P-B3; exact oracle variance bound)."""
        c2 = _c(self.epsilon_level) ** 2
        return c2 if self.splitting == "users" else c2 / self.depth

    def choose_a(self, n_pos: int, n_neg: int) -> float:
        """Corollary 4 (main) or Corollary 5 (zero-on-discard variant), with this splitting's C."""
        if self.a is not None:
            return float(self.a)
        n, nmin, C, al = n_pos + n_neg, min(n_pos, n_neg), self.C, self.depth
        if self.discard == "half":
            return (1 + math.sqrt(21 / 8) * (2 * C * n * al / nmin**2) ** 0.25) ** 2
        return (1 + math.sqrt(math.sqrt(2 * C * al * n) / (16 * nmin))) ** 2

    @property
    def bits_per_user(self) -> float:
        """z (1 bit) plus j (l bits) per level report; j could come from shared randomness instead."""
        per_level = [1 + l for l in range(1, self.depth + 1)]
        return float(np.mean(per_level)) if self.splitting == "users" else float(np.sum(per_level))

    @property
    def messages_per_user(self) -> int:
        return 1 if self.splitting == "users" else self.depth

    # ---- client ------------------------------------------------------------------------------
    def assign_levels(self, n: int, rng: RNGLike = None) -> np.ndarray:
        """Public balanced random split of n users over levels 1..depth (``users`` splitting)."""
        sizes = np.full(self.depth, n // self.depth)
        sizes[: n % self.depth] += 1
        return np.repeat(np.arange(1, self.depth + 1), sizes)[as_source(rng).permutation(n)]

    def _encode(self, prefixes: np.ndarray, levels: np.ndarray, src) -> tuple[np.ndarray, np.ndarray]:
        j = np.asarray(src.integers(np.left_shift(1, levels).astype(np.int64)), dtype=np.int64).reshape(
            levels.shape
        )
        y = 1 - 2 * _parity(j & prefixes)
        keep = np.asarray(src.random(levels.size)).reshape(levels.shape) < _keep(self.epsilon_level)
        return j, np.where(keep, y, -y).astype(np.int8)

    def encode_batch(self, bins, levels=None, rng: RNGLike = None) -> dict[str, np.ndarray]:
        """Reports of users with quantised scores ``bins``; ``levels`` from :meth:`assign_levels` for ``users``."""
        s = np.asarray(bins, dtype=np.int64)
        if s.size and (s.min() < 0 or s.max() >= 2**self.depth):
            raise ValueError(f"bins must be integers in [0, {2**self.depth})")
        src = as_source(rng)
        if self.splitting == "users":
            if levels is None:
                raise ValueError("levels is required for the 'users' splitting (see assign_levels)")
            lv = np.asarray(levels, dtype=np.int64)
            if lv.shape != s.shape or (lv.size and (lv.min() < 1 or lv.max() > self.depth)):
                raise ValueError(f"levels must have one level in [1, {self.depth}] per user")
            j, z = self._encode(s >> (self.depth - lv), lv, src)
            return {"level": lv, "j": j, "z": z}
        lv = np.broadcast_to(np.arange(1, self.depth + 1), (s.size, self.depth))
        j, z = self._encode(s[:, None] >> (self.depth - lv), lv, src)
        return {"j": j, "z": z}

    def level_output_probabilities(self, prefix: int, level: int) -> np.ndarray:
        """Exact probabilities of the reports ``(j, z)`` (shape ``(2^l, 2)``, z = −1, +1) of one level."""
        j = np.arange(2**level)
        y = 1 - 2 * _parity(j & prefix)
        p = _keep(self.epsilon_level)
        out = np.empty((j.size, 2))
        out[:, 1] = np.where(y == 1, p, 1 - p) / j.size
        out[:, 0] = np.where(y == -1, p, 1 - p) / j.size
        return out

    # ---- aggregator ----------------------------------------------------------------------------
    def new_state(self) -> TreeState:
        dense = {l: np.zeros(2**l) for l in range(1, min(self.depth, DENSE_MAX_LEVEL) + 1)}
        raw = {
            l: (np.zeros(0, np.int64), np.zeros(0, np.int8))
            for l in range(DENSE_MAX_LEVEL + 1, self.depth + 1)
        }
        return TreeState(self.depth, self.epsilon_level, np.zeros(self.depth + 1, np.int64), dense, raw, 0)

    def aggregate(self, reports, state: TreeState | None = None) -> TreeState:
        """Fold a batch of reports into a (new) state."""
        state = self.new_state() if state is None else state
        j, z = np.asarray(reports["j"], dtype=np.int64), np.asarray(reports["z"])
        if self.splitting == "users":
            lv = np.asarray(reports["level"], dtype=np.int64)
            n_users = lv.size
        else:
            if j.ndim != 2 or j.shape[1] != self.depth:
                raise ValueError(
                    f"reports['j'] must have shape (n, {self.depth}) for the '{self.splitting}' splitting"
                )
            n_users = j.shape[0]
            lv = np.broadcast_to(np.arange(1, self.depth + 1), j.shape).ravel()
            j, z = j.ravel(), z.ravel()
        if not (lv.shape == j.shape == z.shape) or (z.size and not np.all(np.abs(z) == 1)):
            raise ValueError("reports must have matching level, j and z columns with z in {-1, +1}")
        if j.size and (
            lv.min() < 1 or lv.max() > self.depth or j.min() < 0 or np.any(j >= np.left_shift(1, lv))
        ):
            raise ValueError("reports contain a level or index j outside the tree")
        n_levels = state.n_levels + np.bincount(lv, minlength=self.depth + 1)
        dense = dict(state.dense)
        dmax = min(self.depth, DENSE_MAX_LEVEL)
        if dmax:
            m = lv <= dmax
            offsets = (np.left_shift(1, lv[m]) - 2) + j[m]
            flat = np.bincount(offsets, weights=z[m].astype(np.float64), minlength=2 ** (dmax + 1) - 2)
            for l in range(1, dmax + 1):
                dense[l] = dense[l] + flat[2**l - 2 : 2 ** (l + 1) - 2]
        raw = dict(state.raw)
        for l in raw:
            m = lv == l
            raw[l] = (np.concatenate([raw[l][0], j[m]]), np.concatenate([raw[l][1], z[m].astype(np.int8)]))
        return TreeState(self.depth, self.epsilon_level, n_levels, dense, raw, state.n + n_users)

    def simulate(self, bins, rng: RNGLike = None) -> TreeState:
        """State of one class drawn with a numpy Generator, with the distribution of encoding every user.

        Per user (vectorized) in general; when the data has few distinct values (m·2d small next to
        n) the dense level sums are drawn from the histogram instead: level groups by a multivariate
        hypergeometric split, indices j by a multinomial, kept signs by a binomial per (value, j).
        """
        g = as_generator(rng)
        s = np.asarray(bins, dtype=np.int64)
        values, counts = np.unique(s, return_counts=True)
        if self.depth <= DENSE_MAX_LEVEL and 8 * values.size * 2**self.depth <= s.size:
            return self._simulate_histogram(values, counts, g)
        levels = self.assign_levels(s.size, g) if self.splitting == "users" else None
        return self.aggregate(self.encode_batch(s, levels, g))

    def _simulate_histogram(
        self, values: np.ndarray, counts: np.ndarray, g: np.random.Generator
    ) -> TreeState:
        n = int(counts.sum())
        state = self.new_state()
        p_keep = _keep(self.epsilon_level)
        if self.splitting == "users":
            sizes = np.full(self.depth, n // self.depth)
            sizes[: n % self.depth] += 1
            remaining = counts.astype(np.int64).copy()
            per_level = []
            for size in sizes[:-1]:  # a uniformly random partition into groups of these sizes
                take = (
                    g.multivariate_hypergeometric(remaining, int(size)) if size else np.zeros_like(remaining)
                )
                per_level.append(take)
                remaining = remaining - take
            per_level.append(remaining)
        else:
            per_level = [counts.astype(np.int64)] * self.depth
        for l in range(1, self.depth + 1):
            c = per_level[l - 1]
            q = values >> (self.depth - l)
            j = np.arange(2**l)
            n_vj = g.multinomial(c, np.full(2**l, 1.0 / 2**l))  # (values, 2^l)
            kept = g.binomial(n_vj, p_keep)
            sign = 1 - 2 * _parity(q[:, None] & j[None, :])
            state.dense[l] = (sign * (2 * kept - n_vj)).sum(axis=0).astype(np.float64)
            state.n_levels[l] = int(c.sum())
        state.n = n
        return state

    # ---- analyst ---------------------------------------------------------------------------------
    def _level_estimates(self, state: TreeState, level: int, queries: np.ndarray, cache: dict) -> np.ndarray:
        n_l = state.n_levels[level]
        if n_l == 0:
            raise ValueError(f"level {level} received no reports (need at least depth users per class)")
        scale = _c(self.epsilon_level) * (state.n / n_l if self.splitting == "users" else 1.0)
        if level in state.dense:
            if level not in cache:
                cache[level] = fwht(state.dense[level])
            return scale * cache[level][queries]
        j, z = state.raw[level]
        out = np.empty(queries.size)
        for start in range(0, queries.size, 64):
            q = queries[start : start + 64]
            out[start : start + 64] = ((1 - 2 * _parity(j[None, :] & q[:, None])) * z[None, :]).sum(axis=1)
        return scale * out

    def estimate(self, pos: TreeState, neg: TreeState) -> tuple[float, float, dict]:
        """AUC estimate (ties count 0 or ½), its approximate variance and details (a, τ, explored nodes)."""
        n_pos, n_neg, al = pos.n, neg.n, self.depth
        a = self.choose_a(n_pos, n_neg)
        vp, vn = self.C * n_pos * al, self.C * n_neg * al
        tau = a * math.sqrt(vp * vn)
        fp, fn = math.sqrt(a * vp) / 2, math.sqrt(a * vn) / 2
        cache_p: dict[Any, Any] = {}
        cache_n: dict[Any, Any] = {}
        recursed, discarded = np.zeros(1, np.int64), np.zeros(0, np.int64)
        total, var, explored = 0.0, 0.0, 0
        cp2 = _c(self.epsilon_level) ** 2
        sp = (n_pos * al if self.splitting == "users" else n_pos) * cp2
        sn = (n_neg * al if self.splitting == "users" else n_neg) * cp2
        for m in range(1, al + 1):
            parents = recursed if self.discard == "zero" else np.concatenate([recursed, discarded])
            queries = np.stack([2 * parents, 2 * parents + 1], axis=1).ravel()
            explored += queries.size
            hp = self._level_estimates(pos, m, queries, cache_p).reshape(-1, 2)
            hn = self._level_estimates(neg, m, queries, cache_n).reshape(-1, 2)
            r = recursed.size
            total += float(hp[:r, 1] @ hn[:r, 0])
            # plug-in variance of the recursion terms (counts clipped at 0): σ⁺²σ⁻² + σ⁺²h⁻² + σ⁻²h⁺²
            h1, h0 = np.clip(hp[:r, 1], 0, None), np.clip(hn[:r, 0], 0, None)
            var += float(np.sum(sp * sn + sp * h0**2 + sn * h1**2))
            if self.discard == "half" and discarded.size:
                sp_sum, sn_sum = hp[r:].sum(axis=1), hn[r:].sum(axis=1)
                total += 0.5 * float(sp_sum @ sn_sum)
                var += float(
                    np.sum(
                        0.25
                        * (
                            4 * sp * sn
                            + 2 * sp * np.clip(sn_sum, 0, None) ** 2
                            + 2 * sn * np.clip(sp_sum, 0, None) ** 2
                        )
                    )
                )
            if m == al and self.ties == "half":
                # pairs tied in a leaf count ½: ½ Σ ĥ⁺_q ĥ⁻_q over the leaves of recursed nodes (discarded
                # intervals already give ½ to every pair inside them)
                lp, ln = np.clip(hp[:r].ravel(), 0, None), np.clip(hn[:r].ravel(), 0, None)
                total += 0.5 * float(hp[:r].ravel() @ hn[:r].ravel())
                var += 0.25 * float(np.sum(sp * sn + sp * ln**2 + sn * lp**2))
            if m < al:
                children = queries[: 2 * r]
                keep = np.maximum(hp[:r].ravel(), fp) * np.maximum(hn[:r].ravel(), fn) >= tau
                recursed, discarded = children[keep], children[~keep]
        details = {
            "a": a,
            "tau": tau,
            "v_pos": vp,
            "v_neg": vn,
            "C": self.C,
            "explored_nodes": explored,
            "epsilon_level": self.epsilon_level,
        }
        return total / (n_pos * n_neg), var / (n_pos * n_neg) ** 2, details

    # ---- exact variance of the full recursion (a = 0), for checks ------------------------------
    def full_recursion_variance(self, pos_bins, neg_bins) -> float:
        """Exact Var(ÂUC | data) when every node is recursed (a = 0); O(d²) memory, small d only."""
        hp = hierarchical_histogram(pos_bins, self.depth)
        hn = hierarchical_histogram(neg_bins, self.depth)
        pairs = [(m, p) for m in range(1, self.depth + 1) for p in range(2 ** (m - 1))]
        a_nodes = [(m, 2 * p + 1) for m, p in pairs]
        b_nodes = [(m, 2 * p) for m, p in pairs]
        CX, mX = self._node_cov(hp, a_nodes)
        CY, mY = self._node_cov(hn, b_nodes)
        EX, EY = CX + np.outer(mX, mX), CY + np.outer(mY, mY)
        var = np.sum(EX * EY) - (mX @ mY) ** 2
        return float(var / (hp[0][0] * hn[0][0]) ** 2)

    def _node_cov(self, hist, nodes):
        n, al = int(hist[0][0]), self.depth
        c2 = _c(self.epsilon_level) ** 2
        h = np.array([hist[m][q] for m, q in nodes], dtype=np.float64)
        lv = np.array([m for m, _ in nodes])
        q = np.array([qq for _, qq in nodes])
        if self.splitting != "users":
            return np.diag(n * c2 - h), h
        sizes = np.full(al, n // al)
        sizes[: n % al] += 1
        nl = sizes[lv - 1].astype(np.float64)
        # different levels: (h_a h_b − n·overlap)/(n − 1); overlap = count of the deeper node if nested
        shallow_is_a = lv[:, None] <= lv[None, :]
        shift_b = q[None, :] >> np.maximum(lv[None, :] - lv[:, None], 0)  # b's prefix at a's level
        shift_a = q[:, None] >> np.maximum(lv[:, None] - lv[None, :], 0)
        qa_shift = np.where(shallow_is_a, shift_b, shift_a)
        nested = np.where(shallow_is_a, qa_shift == q[:, None], qa_shift == q[None, :])
        h_deep = np.where(lv[:, None] >= lv[None, :], h[:, None], h[None, :])
        overlap = np.where(nested, h_deep, 0.0)
        cov = (np.outer(h, h) - n * overlap) / (n - 1)
        same = lv[:, None] == lv[None, :]
        f = n / nl
        cov_same = -(f[:, None] ** 2) * nl[:, None] * np.outer(h, h) * (n - nl[:, None]) / (n**2 * (n - 1))
        cov = np.where(same, cov_same, cov)
        var_diag = f**2 * (nl * c2 - nl * h / n + nl * (h / n) * (1 - h / n) * (n - nl) / (n - 1))
        np.fill_diagonal(cov, var_diag)
        return cov, h
