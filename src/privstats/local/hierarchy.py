"""Hierarchical histograms: a b-ary tree of frequency oracles answering range queries.

The domain ``[0, d)`` is padded to ``b^h`` leaves (h = ceil(log_b d)).  Level l
(1..h) has b^l nodes; node u at level l counts the values whose level-l prefix
``x // b^(h−l)`` is u.  The root (level 0) is the number of users, known exactly.
One frequency oracle runs per level:

* ``split="users"``: each user is assigned to one level uniformly at random and
  reports it with the full ε; level-l counts are scaled by ``n / n_l`` (exact
  group sizes).  ε-LDP, one message per user.
* ``split="budget"``: each user reports every level with ε/h (basic composition,
  still ε-LDP), h messages per user.

Report batches have one row per message: column ``level`` (1..h) and the union of
the level oracles' columns (zeros where a level's oracle does not use a column;
OUE bits are padded to the widest level).

Consistency (Hay et al. 2010, generalised to per-level variances σ_l²): bottom-up,
each node's estimate is the inverse-variance combination of its own noisy count
and the sum of its children's combined estimates; top-down, starting from the
exact root, each node's discrepancy with its children's sum is split among the
children in proportion to their variances (equal within a level).  This equals
generalised least squares with the root constrained to n (tested against the
dense solution).  The σ_l² used as weights are public (they depend on n and the
group sizes only), so consistent answers are linear, unbiased, and their exact
variance is computed from the coefficients that the adjoint of the two passes
puts on every node (O(number of nodes)), with all oracle covariances and the
covariance from the random split of users across levels.

>>> import numpy as np
>>> from privstats.local import HierarchicalHistogram
>>> hh = HierarchicalHistogram(64, epsilon=1.0, oracle="grr")
>>> values = np.random.default_rng(0).integers(0, 64, size=50_000)
>>> answer = hh.range_query(hh.simulate(values, rng=1), 10, 40)
>>> bool(abs(answer.value - np.sum((values >= 10) & (values <= 40))) < 6 * answer.stderr)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privstats.estimate import Estimate
from privstats.local.base import CountState, FrequencyOracle, local_estimate, pack_versioned, unpack_versioned
from privstats.local.choose import linear_variance, make_oracle
from privstats.local.unary import OUE
from privstats.privacy.guarantees import PureDP
from privstats.privacy.randomness import RNGLike, as_generator, as_source
from privstats.validation import (
    as_domain_values,
    check_choice,
    check_domain_size,
    check_epsilon,
    check_positive_int,
)

__all__ = ["HierarchicalHistogram", "HierarchyState"]

_MAGIC = b"PSHH"
_STATE_VERSION = 1


@dataclass
class HierarchyState:
    """Aggregator state of a hierarchical histogram: one :class:`CountState` per level 1..h."""

    protocol: str
    params: dict
    levels: list[CountState] = field(default_factory=list)

    @property
    def level_sizes(self) -> np.ndarray:
        """Number of reports received per level."""
        return np.array([s.n for s in self.levels], dtype=np.int64)

    @property
    def n(self) -> int:
        """Number of users: the sum over levels (user split) or the largest level (budget split)."""
        sizes = self.level_sizes
        if not sizes.size:
            return 0
        return int(sizes.sum() if self.params.get("split") == "users" else sizes.max())

    def merge(self, other: HierarchyState) -> HierarchyState:
        """A new state holding the reports of both (neither input is changed)."""
        if not isinstance(other, HierarchyState):
            raise TypeError(f"can only merge a HierarchyState, not {type(other).__name__}")
        if (
            other.protocol != self.protocol
            or other.params != self.params
            or len(other.levels) != len(self.levels)
        ):
            raise ValueError("cannot merge hierarchy states with different parameters")
        return HierarchyState(
            self.protocol,
            dict(self.params),
            [a.merge(b) for a, b in zip(self.levels, other.levels, strict=False)],
        )

    __add__ = merge

    def to_bytes(self) -> bytes:
        """Versioned binary form: magic, version, JSON header, then each level's CountState bytes."""
        blobs = [s.to_bytes() for s in self.levels]
        header = {"protocol": self.protocol, "params": self.params, "lengths": [len(b) for b in blobs]}
        return pack_versioned(_MAGIC, _STATE_VERSION, header, b"".join(blobs))

    @classmethod
    def from_bytes(cls, data: bytes) -> HierarchyState:
        """Inverse of :meth:`to_bytes`; raises ValueError on a corrupted or foreign blob."""
        header, body = unpack_versioned(data, _MAGIC, _STATE_VERSION, "HierarchyState")
        pos, levels = 0, []
        if sum(header["lengths"]) != len(body):
            raise ValueError("data is truncated or has trailing bytes")
        for length in header["lengths"]:
            levels.append(CountState.from_bytes(body[pos : pos + length]))
            pos += length
        return cls(header["protocol"], header["params"], levels)


class HierarchicalHistogram:
    """A b-ary tree of ε-LDP frequency oracles over ``[0, domain_size)`` for range queries."""

    name = "hierarchical-histogram"

    def __init__(
        self, domain_size: int, epsilon: float, branching: int = 2, oracle: str = "auto", split: str = "users"
    ):
        self.domain_size = check_domain_size(domain_size)
        self.epsilon = check_epsilon(epsilon)
        self.branching = check_positive_int(branching, "branching", minimum=2)
        self.oracle = check_choice(oracle, "oracle", {"auto", "grr", "oue", "olh", "hr"})
        self.split = check_choice(split, "split", {"users", "budget"})
        b = self.branching
        self.height = max(1, math.ceil(math.log(self.domain_size) / math.log(b) - 1e-12))
        while b**self.height < self.domain_size:
            self.height += 1
        self.padded_size = b**self.height
        level_eps = self.epsilon if self.split == "users" else self.epsilon / self.height
        self.oracles: list[FrequencyOracle] = [
            make_oracle(self.oracle, b**l, level_eps) for l in range(1, self.height + 1)
        ]
        widths = [o.width for o in self.oracles if isinstance(o, OUE)]
        self._bits_width = max(widths) if widths else 0

    # ---- description ------------------------------------------------------------------
    @property
    def params(self) -> dict:
        named = ("domain_size", "epsilon", "branching", "oracle", "split")  # the constructor's arguments
        return {**{k: getattr(self, k) for k in named}, "level_oracles": [o.name for o in self.oracles]}

    @property
    def guarantee(self) -> PureDP:
        """ε-LDP per user (user split: one report at ε; budget split: h reports at ε/h)."""
        return PureDP(self.epsilon)

    @property
    def messages_per_user(self) -> int:
        return 1 if self.split == "users" else self.height

    @property
    def bits_per_user(self) -> float:
        bits = [o.bits_per_user for o in self.oracles]
        return float(np.mean(bits) if self.split == "users" else np.sum(bits))

    @property
    def report_fields(self) -> dict[str, str]:
        fields = {"level": "int64"}
        for o in self.oracles:
            fields.update(o.report_fields)
        return fields

    def __repr__(self) -> str:
        return (
            f"HierarchicalHistogram(domain_size={self.domain_size}, epsilon={self.epsilon}, "
            f"branching={self.branching}, oracle={self.oracle!r}, split={self.split!r})"
        )

    def _prefix(self, values: np.ndarray, level: int) -> np.ndarray:
        return values // self.branching ** (self.height - level)

    # ---- client ---------------------------------------------------------------------------
    def encode(self, value: int, rng: RNGLike = None) -> dict[str, np.ndarray]:
        """One user's message(s), drawn from the OS CSPRNG by default."""
        return self.encode_batch(np.asarray([value]), rng)

    def encode_batch(self, values, rng: RNGLike = None) -> dict[str, np.ndarray]:
        """Messages of many users (one row per message, column ``level`` in 1..h)."""
        values = as_domain_values(values, self.domain_size)
        src = as_source(rng)
        n, h = values.size, self.height
        if self.split == "users":
            levels = src.integers(h, size=n).astype(np.int64) + 1
            users = np.arange(n)
        else:
            levels = np.repeat(np.arange(1, h + 1, dtype=np.int64), n)
            users = np.tile(np.arange(n), h)
        cols = self._empty_columns(levels.size)
        cols["level"] = levels
        for l, oracle in enumerate(self.oracles, start=1):
            rows = np.flatnonzero(levels == l)
            if rows.size == 0:
                continue
            reports = oracle.encode_batch(self._prefix(values[users[rows]], l), src)
            for key, col in reports.items():
                if key == "bits":
                    cols[key][rows, : col.shape[1]] = col
                else:
                    cols[key][rows] = col
        return cols

    def _empty_columns(self, m: int) -> dict[str, np.ndarray]:
        cols = {}
        for key, dtype in self.report_fields.items():
            shape = (m, self._bits_width) if key == "bits" else (m,)
            cols[key] = np.zeros(shape, dtype=dtype)
        return cols

    # ---- aggregator -----------------------------------------------------------------------
    def new_state(self) -> HierarchyState:
        return HierarchyState(self.name, self.params, [o.new_state() for o in self.oracles])

    def aggregate(self, reports, state: HierarchyState | None = None) -> HierarchyState:
        """Fold a batch of messages into ``state`` (new state if None); a bad batch changes nothing."""
        state = self.new_state() if state is None else state
        if (
            not isinstance(state, HierarchyState)
            or state.protocol != self.name
            or state.params != self.params
        ):
            raise ValueError("state belongs to a different protocol or parameters")
        missing = set(self.report_fields) - set(reports)
        if missing:
            raise ValueError(f"reports is missing column(s) {sorted(missing)} for {self.name}")
        cols = {k: np.asarray(reports[k]) for k in self.report_fields}
        if len({len(v) for v in cols.values()}) != 1:
            raise ValueError("reports columns have different lengths")
        level = cols["level"]
        if level.ndim != 1 or (
            level.size and (level.dtype.kind not in "iu" or level.min() < 1 or level.max() > self.height)
        ):
            raise ValueError(f"reports['level'] must be integers in [1, {self.height}]")
        if "bits" in cols and (cols["bits"].ndim != 2 or cols["bits"].shape[1] != self._bits_width):
            raise ValueError(f"reports['bits'] must have shape (m, {self._bits_width})")
        new_levels = []
        for l, (oracle, old) in enumerate(zip(self.oracles, state.levels, strict=False), start=1):
            rows = level == l
            for key in set(cols) - set(oracle.report_fields) - {"level"}:
                if np.any(cols[key][rows]):
                    raise ValueError(
                        f"reports['{key}'] must be zero in rows of level {l} (its oracle does not use it)"
                    )
            sub = {}
            for key in oracle.report_fields:
                col = cols[key][rows]
                if key == "bits":
                    if np.any(col[:, oracle.width :]):  # type: ignore[attr-defined]  # "bits" oracles have a width
                        raise ValueError(f"reports['bits'] has non-zero bytes beyond level {l}'s width")
                    col = col[:, : oracle.width]  # type: ignore[attr-defined]
                sub[key] = col
            new_levels.append(oracle.aggregate(sub, old))  # validates; old states are not changed
        return HierarchyState(self.name, self.params, new_levels)

    # ---- simulation -------------------------------------------------------------------------
    def simulate(self, values, rng: RNGLike = None) -> HierarchyState:
        """The aggregator state drawn directly from the users' values (vectorized)."""
        values = as_domain_values(values, self.domain_size)
        return self.simulate_counts(np.bincount(values, minlength=self.domain_size), rng)

    def simulate_counts(self, true_counts, rng: RNGLike = None) -> HierarchyState:
        """As :meth:`simulate`, from the histogram of the values (length ``domain_size``)."""
        c = np.asarray(true_counts)
        if c.shape != (self.domain_size,) or c.dtype.kind not in "iu" or (c.size and c.min() < 0):
            raise ValueError(f"true_counts must be {self.domain_size} non-negative integers")
        gen = as_generator(rng)
        leaves = np.zeros(self.padded_size, dtype=np.int64)
        leaves[: self.domain_size] = c
        h = self.height
        if self.split == "users":  # each user picks a level uniformly: a multinomial per value
            per_level = gen.multinomial(leaves, np.full(h, 1.0 / h))
        else:
            per_level = np.repeat(leaves[:, None], h, axis=1)
        levels = []
        for l, oracle in enumerate(self.oracles, start=1):
            node_counts = per_level[:, l - 1].reshape(self.branching**l, -1).sum(axis=1)
            levels.append(oracle.simulate_counts(node_counts, gen))
        return HierarchyState(self.name, self.params, levels)

    # ---- analyst ----------------------------------------------------------------------------
    def _check_state(self, state: HierarchyState) -> None:
        if (
            not isinstance(state, HierarchyState)
            or state.protocol != self.name
            or state.params != self.params
        ):
            raise ValueError(f"state must be a HierarchyState of {self.name} with parameters {self.params}")
        if np.any(state.level_sizes == 0):
            raise ValueError(f"state has levels without reports: sizes {state.level_sizes.tolist()}")

    def _scales(self, state: HierarchyState) -> np.ndarray:
        return state.n / state.level_sizes

    def node_estimates(self, state: HierarchyState) -> list[np.ndarray]:
        """Unbiased count of every node, level by level (1..h), scaled to all users."""
        self._check_state(state)
        return [
            o.estimate(s).value * k
            for o, s, k in zip(self.oracles, state.levels, self._scales(state), strict=False)
        ]

    def level_variances(self, n: float, level_sizes) -> np.ndarray:
        """Public per-level variance σ_l² of a node with the average count (the consistency weights)."""
        sizes = np.asarray(level_sizes, dtype=float)
        out = np.empty(self.height)
        for l, (oracle, m) in enumerate(zip(self.oracles, sizes, strict=False), start=1):
            k = self.branching**l
            oracle_var = float(oracle.variance(m, np.array([m / k]))[0])
            sampling = m * (1 / k) * (1 - 1 / k) * (n - m) / (n - 1) if n > 1 else 0.0
            out[l - 1] = (n / m) ** 2 * (oracle_var + sampling)
        return out

    def _consistency_passes(self, n: float, sigma2: np.ndarray):
        """Coefficients of the two passes: z_l = α_l y_l + β_l S z_{l+1}."""
        b, h = self.branching, self.height
        alpha, beta = np.ones(h), np.zeros(h)
        V = np.empty(h)
        V[h - 1] = sigma2[h - 1]
        for l in range(h - 2, -1, -1):
            vc = b * V[l + 1]
            V[l] = 1.0 / (1.0 / sigma2[l] + 1.0 / vc)
            alpha[l], beta[l] = V[l] / sigma2[l], V[l] / vc
        return alpha, beta

    def consistent_leaves(self, n: int, y: list[np.ndarray], sigma2: np.ndarray) -> list[np.ndarray]:
        """Consistent node counts (levels 1..h) from noisy ones ``y`` and the root ``n``."""
        b, h = self.branching, self.height
        alpha, beta = self._consistency_passes(n, sigma2)
        z: list[Any] = [None] * h
        z[h - 1] = np.asarray(y[h - 1], dtype=float)
        for l in range(h - 2, -1, -1):
            z[l] = alpha[l] * y[l] + beta[l] * z[l + 1].reshape(-1, b).sum(axis=1)
        out, parent = [], np.array([float(n)])
        for l in range(h):
            child_sum = z[l].reshape(-1, b).sum(axis=1)
            parent = z[l] + np.repeat((parent - child_sum) / b, b)
            out.append(parent)
        return out

    def _adjoint(self, n: int, r: np.ndarray, sigma2: np.ndarray) -> list[np.ndarray]:
        """Coefficients on every noisy node count of ``r · (consistent leaves)`` (reverse of the passes)."""
        b, h = self.branching, self.height
        alpha, beta = self._consistency_passes(n, sigma2)
        gz: list[Any] = [None] * h
        g = np.asarray(r, dtype=float)
        for l in range(h - 1, -1, -1):
            sib = np.repeat(g.reshape(-1, b).sum(axis=1), b)
            gz[l] = g - sib / b
            g = g.reshape(-1, b).sum(axis=1) / b
        gy: list[Any] = [None] * h
        for l in range(h - 1):
            gy[l] = alpha[l] * gz[l]
            gz[l + 1] = gz[l + 1] + beta[l] * np.repeat(gz[l], b)
        gy[h - 1] = gz[h - 1]
        return gy

    def _canonical(self, lo: int, hi: int) -> tuple[list[np.ndarray], float]:
        """Coefficients of the minimal set of nodes covering [lo, hi]; second item: root coefficient."""
        b, h = self.branching, self.height
        coef = [np.zeros(b**l) for l in range(1, h + 1)]
        L, R, l = lo, hi + 1, h
        while L < R and l > 0:
            while L < R and L % b:
                coef[l - 1][L] += 1
                L += 1
            while L < R and R % b:
                R -= 1
                coef[l - 1][R] += 1
            L, R, l = L // b, R // b, l - 1
        return coef, float(L < R)

    def linear_variance(self, true_counts, coefficients: list[np.ndarray], level_sizes) -> float:
        """Exact variance of ``Σ_l coefficients[l] · (scaled level-l node estimates)``.

        ``true_counts`` has one entry per value; with ``split="users"`` the variance is
        conditional on the observed group sizes ``level_sizes`` and includes the random split.
        """
        c = np.zeros(self.padded_size)
        c[: self.domain_size] = np.asarray(true_counts, dtype=float)
        n = c.sum()
        sizes = np.asarray(level_sizes, dtype=float)
        scales = n / sizes
        total = 0.0
        alphas = []
        for l, (oracle, a, m, k) in enumerate(
            zip(self.oracles, coefficients, sizes, scales, strict=False), start=1
        ):
            node_counts = c.reshape(self.branching**l, -1).sum(axis=1)
            total += k**2 * linear_variance(oracle, node_counts * (m / n), a)
            alphas.append(np.repeat(a * k, self.branching ** (self.height - l)))
        if self.split == "users" and n > 1:
            A = np.array(alphas)  # (h, padded leaves): α_v^l
            pi = sizes / n
            Kmat = np.diag(pi) - np.outer(pi, pi)
            second = (A * c) @ A.T
            first = A @ c
            total += float(np.sum(Kmat * (n * second - np.outer(first, first)))) / (n - 1)
        return float(total)

    def estimate(self, state: HierarchyState, consistent: bool = False) -> Estimate:
        """Per-node count estimates, levels 1..h concatenated (``details["levels"]`` has them split).

        Raw estimates come with exact standard errors at the plug-in counts; for consistent
        estimates use :meth:`range_query` to get exact standard errors (stderr is None here).
        """
        y = self.node_estimates(state)
        details = {}
        if consistent:
            sigma2 = self.level_variances(state.n, state.level_sizes)
            values = self.consistent_leaves(state.n, y, sigma2)
            stderr: Any = None
        else:
            values = y
            c = self._plug_in_counts(state, y)
            stderr = []
            for l, (oracle, m, k) in enumerate(
                zip(self.oracles, state.level_sizes, self._scales(state), strict=False), start=1
            ):
                node_counts = c.reshape(self.branching**l, -1).sum(axis=1)
                var = k**2 * oracle.variance(m, node_counts * m / state.n)
                if self.split == "users" and state.n > 1:
                    f = node_counts / state.n
                    var = var + k**2 * m * f * (1 - f) * (state.n - m) / (state.n - 1)
                stderr.append(np.sqrt(np.maximum(var, 0)))
            details["stderr_levels"] = stderr
            stderr = np.concatenate(stderr)
        details["levels"] = values
        return local_estimate(self, np.concatenate(values), stderr, state.n, details=details)

    def _plug_in_counts(self, state: HierarchyState, y: list[np.ndarray]) -> np.ndarray:
        sigma2 = self.level_variances(state.n, state.level_sizes)
        leaves = np.clip(self.consistent_leaves(state.n, y, sigma2)[-1], 0, None)
        leaves[self.domain_size :] = 0
        total = leaves.sum()
        return (
            leaves * (state.n / total) if total > 0 else np.full(self.padded_size, state.n / self.domain_size)
        )

    def range_coefficients(self, n: int, lo: int, hi: int, level_sizes, consistent: bool = True):
        """Coefficients on the scaled node estimates and on the root count n of the answer for [lo, hi]."""
        if consistent:
            r = np.zeros(self.padded_size)
            r[lo : hi + 1] = 1
            return self._adjoint(n, r, self.level_variances(n, level_sizes)), None
        return self._canonical(lo, hi)

    def range_query(self, state: HierarchyState, lo: int, hi: int, consistent: bool = True) -> Estimate:
        """Estimated number of users with a value in ``[lo, hi]`` (inclusive), with its exact stderr."""
        lo = int(as_domain_values([lo], self.domain_size, name="lo")[0])
        hi = int(as_domain_values([hi], self.domain_size, name="hi")[0])
        if lo > hi:
            raise ValueError(f"lo must be <= hi, got lo={lo}, hi={hi}")
        y = self.node_estimates(state)
        n, sizes = state.n, state.level_sizes
        if consistent:
            value = float(self.consistent_leaves(n, y, self.level_variances(n, sizes))[-1][lo : hi + 1].sum())
            coef, _ = self.range_coefficients(n, lo, hi, sizes, consistent=True)
        else:
            coef, root = self._canonical(lo, hi)
            value = float(root * n + sum(np.dot(a, v) for a, v in zip(coef, y, strict=False)))
        var = self.linear_variance(self._plug_in_counts(state, y)[: self.domain_size], coef, sizes)
        return Estimate(
            value=value,
            stderr=math.sqrt(max(var, 0.0)),
            guarantee=self.guarantee,
            model="local",
            protocol=self.name,
            params={**self.params, "range": (lo, hi), "consistent": consistent},
            n=n,
            messages_per_user=self.messages_per_user,
            bits_per_user=self.bits_per_user,
        )

    # ---- all prefixes [0, i] at once (ECDFs) ------------------------------------------------
    def prefix_variances(self, true_counts, level_sizes, *, at=None) -> np.ndarray:
        """Exact variance of every consistent prefix count (values <= i, i = 0..domain_size-1).

        Equals ``linear_variance(true_counts, range_coefficients(n, 0, i, level_sizes)[0],
        level_sizes)`` for every i, in O(d h^3) arithmetic instead of O(d^2): the adjoint
        coefficients of a prefix are constant on the subtrees of the path's siblings, so every
        sum the variance needs is a sum over O(h) groups (GRR, OUE and OLH levels).  ``at``: only
        the prefixes i in ``at`` (O(|at| h^3) after an O(d) cumulative sum).
        """
        return _prefix_variances(self, true_counts, level_sizes, at)

    def prefix_covariance(self, true_counts, level_sizes) -> np.ndarray:
        """Exact covariance matrix (d x d) of the consistent prefix counts (dense: d <= 4096)."""
        if self.domain_size > 4096:
            raise ValueError(f"prefix_covariance is dense; domain_size {self.domain_size} > 4096")
        return _prefix_covariance(self, true_counts, level_sizes)

    def consistent_prefix(self, state: HierarchyState, y: list[np.ndarray] | None = None) -> np.ndarray:
        """Consistent estimates of #{value <= i}, i = 0..domain_size-1 (``y``: the state's node
        estimates, computed when not given)."""
        y = self.node_estimates(state) if y is None else y
        n = state.n
        return np.cumsum(self.consistent_leaves(n, y, self.level_variances(n, state.level_sizes))[-1])[
            : self.domain_size
        ]

    def prefix_counts(self, state: HierarchyState) -> Estimate:
        """Consistent estimates of #{value <= i} for every i, with exact stderr at the plug-in counts."""
        y = self.node_estimates(state)
        n, sizes = state.n, state.level_sizes
        var = self.prefix_variances(self._plug_in_counts(state, y)[: self.domain_size], sizes)
        return Estimate(
            value=self.consistent_prefix(state, y),
            stderr=np.sqrt(np.maximum(var, 0.0)),
            guarantee=self.guarantee,
            model="local",
            protocol=self.name,
            params={**self.params, "consistent": True},
            n=n,
            messages_per_user=self.messages_per_user,
            bits_per_user=self.bits_per_user,
        )


def _oracle_quadratic(oracle: FrequencyOracle) -> tuple[float, float, float, float]:
    """(a1, a2, a3, a4): Var(Σ_u w_u n̂_u) = a1 C S2 + a2 T2 + a3 C S1² + a4 S1 T1.

    S1 = Σ w, S2 = Σ w², T1 = Σ c_u w_u, T2 = Σ c_u w_u², C = Σ c_u (users reporting to the
    oracle, c_u of them holding u).  Closed forms of :func:`linear_variance` for GRR, OUE, OLH.
    """
    from privstats.local.grr import GRR
    from privstats.local.olh import OLH

    if isinstance(oracle, GRR):
        p, q = oracle.p, oracle.q
        d2 = (p - q) ** 2
        return q / d2, ((p - q) - d2) / d2, -q * q / d2, -2 * q * (p - q) / d2
    if isinstance(oracle, (OUE, OLH)):
        p, q = oracle.p, (oracle.q if isinstance(oracle, OUE) else 1.0 / oracle.g)
        d2 = (p - q) ** 2
        return q * (1 - q) / d2, (p * (1 - p) - q * (1 - q)) / d2, 0.0, 0.0
    raise ValueError(
        f"all-prefix variances support GRR, OUE and OLH levels, not {type(oracle).__name__} "
        "(use oracle='grr', 'oue' or 'olh')"
    )


def _prefix_variances(hh: HierarchicalHistogram, true_counts, level_sizes, at=None) -> np.ndarray:
    """See :meth:`HierarchicalHistogram.prefix_variances`; ``at``: only the prefixes [0, i], i in ``at``."""
    b, H, d = hh.branching, hh.height, hh.domain_size
    c = np.zeros(hh.padded_size)
    c[:d] = np.asarray(true_counts, dtype=float)
    n = float(c.sum())
    sizes = np.asarray(level_sizes, dtype=float)
    scales = n / sizes
    alpha, beta = hh._consistency_passes(n, hh.level_variances(n, sizes))
    cum = np.concatenate([[0.0], np.cumsum(c)])
    i = np.arange(d) if at is None else np.asarray(at, dtype=np.int64)
    m_i = i.size
    # Adjoint of the consistency passes for the prefix [0, i]: at level index l (b^(l+1) nodes) the path
    # node p_l, its λ_l left siblings (fully covered) and b-1-λ_l right siblings get the coefficients
    # P, L, R; a node whose first off-path ancestor is a sibling at level k gets that sibling's
    # coefficient times β_k ⋯ β_(l-1); every coefficient at level l is finally multiplied by α_l.
    P, L, R, nL, cL, cR, cP = (np.empty((H, m_i)) for _ in range(7))
    inherited = np.zeros(m_i)
    for l in range(H):
        s = b ** (H - 1 - l)
        p = i // s
        first_sibling = (p // b) * b
        lam = p - first_sibling
        f = (i % s + 1) / s
        mu = (lam + f) / b
        L[l], R[l], P[l] = 1 - mu + inherited, -mu + inherited, f - mu + inherited
        nL[l] = lam
        cL[l] = cum[p * s] - cum[first_sibling * s]
        cR[l] = cum[(first_sibling + b) * s] - cum[(p + 1) * s]
        cP[l] = cum[(p + 1) * s] - cum[p * s]
        inherited = beta[l] * P[l]
    nR = (b - 1) - nL
    B = np.zeros((H, H))  # B[k, l] = β_k ⋯ β_(l-1) for k <= l
    for k in range(H):
        B[k, k] = 1.0
        for l in range(k + 1, H):
            B[k, l] = B[k, l - 1] * beta[l - 1]
    G = np.array([[float(b ** (l - k)) if k <= l else 0.0 for l in range(H)] for k in range(H)])
    S1 = alpha[:, None] * ((G * B).T @ (nL * L + nR * R) + P)
    S2 = alpha[:, None] ** 2 * ((G * B * B).T @ (nL * L * L + nR * R * R) + P * P)
    Y, Q = cL * L + cR * R, cL * L * L + cR * R * R
    U1 = alpha[:, None] * (B.T @ Y + cP * P)
    U2 = alpha[:, None] ** 2 * ((B * B).T @ Q + cP * P * P)
    total = np.zeros(m_i)
    for l, oracle in enumerate(hh.oracles):
        a1, a2, a3, a4 = _oracle_quadratic(oracle)
        m = sizes[l]
        T1, T2 = U1[l] * (m / n), U2[l] * (m / n)
        total += scales[l] ** 2 * (a1 * m * S2[l] + a2 * T2 + a3 * m * S1[l] ** 2 + a4 * S1[l] * T1)
    if hh.split == "users" and n > 1:
        # Σ_{l,l'} K_{ll'} (n W_{ll'} − U1_l U1_l') k_l k_l' / (n − 1), K = diag(π) − ππᵀ, W_{ll'} = Σ_leaf c a_l a_l'
        pi = sizes / n
        # cross = Σ_leaf c (Σ_l π_l k_l a_l)² = Σ_{l<=l'} w_ll' W_ll' with W_ll' = α_l α_l' (Σ_k Q_k B_kl B_kl'
        # + P_l (Σ_{k>l} Y_k B_kl' + c_P,l' P_l')) and w = (π k α)_l (π k α)_l' (twice off the diagonal):
        # each part contracts over the levels first, O(h^2 N) instead of h^3 N with (h, h, N) arrays
        kva = scales * pi * alpha
        w = np.triu(2.0 * np.outer(kva, kva), 1) + np.diag(kva**2)
        cross = (
            np.einsum("kl,lm,km->k", B, w, B) @ Q
            + np.sum(P * (np.triu(w @ B.T, 1) @ Y), axis=0)
            + np.sum(P * (w @ (cP * P)), axis=0)
        )
        diag = np.einsum("l,ln->n", pi * scales**2, U2)
        f = scales[:, None] * U1
        total += (n * (diag - cross) - (np.einsum("l,ln->n", pi, f * f) - (pi @ f) ** 2)) / (n - 1)
    return total


def _prefix_covariance(hh: HierarchicalHistogram, true_counts, level_sizes) -> np.ndarray:
    """See :meth:`HierarchicalHistogram.prefix_covariance`."""
    b, H, d, D = hh.branching, hh.height, hh.domain_size, hh.padded_size
    c = np.zeros(D)
    c[:d] = np.asarray(true_counts, dtype=float)
    n = float(c.sum())
    sizes = np.asarray(level_sizes, dtype=float)
    scales = n / sizes
    alpha, beta = hh._consistency_passes(n, hh.level_variances(n, sizes))
    # the adjoint of the consistency passes, one row per prefix (batched _adjoint)
    g = np.tri(d, D)
    gz: list[Any] = [None] * H
    for l in range(H - 1, -1, -1):
        block = g.reshape(d, -1, b).sum(axis=2)
        gz[l] = g - np.repeat(block / b, b, axis=1)
        g = block / b
    gy: list[Any] = [None] * H
    for l in range(H - 1):
        gy[l] = alpha[l] * gz[l]
        gz[l + 1] = gz[l + 1] + beta[l] * np.repeat(gz[l], b, axis=1)
    gy[H - 1] = gz[H - 1]
    users = hh.split == "users" and n > 1
    pi = sizes / n
    cov = np.zeros((d, d))
    first = np.zeros((H, d))
    combined: Any = np.zeros((d, D)) if users else None
    for l, oracle in enumerate(hh.oracles):
        a1, a2, a3, a4 = _oracle_quadratic(oracle)
        m = sizes[l]
        node_counts = c.reshape(b ** (l + 1), -1).sum(axis=1)
        cl = node_counts * (m / n)
        Wl = gy[l] * scales[l]
        diag = a1 * m + a2 * cl
        if users:
            diag = diag + n / (n - 1) * pi[l] * node_counts
            first[l] = Wl @ node_counts
            combined += pi[l] * np.repeat(Wl, b ** (H - 1 - l), axis=1)
        cov += (Wl * diag) @ Wl.T
        s1, t1 = Wl.sum(axis=1), Wl @ cl
        cov += a3 * m * np.outer(s1, s1) + a4 / 2 * (np.outer(s1, t1) + np.outer(t1, s1))
    if users:
        support = c > 0
        E = combined[:, support]
        cov -= n / (n - 1) * (E * c[support]) @ E.T
        mean_first = pi @ first
        cov -= ((first.T * pi) @ first - np.outer(mean_first, mean_first)) / (n - 1)
    return cov
