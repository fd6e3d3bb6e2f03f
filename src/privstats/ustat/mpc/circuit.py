"""The public computation of one job: which kernels, with which noise, compiled to one SPU program.

A job computes one or more noisy kernels on the same pairs (Kendall's tau-b: the sign product and its
two tie kernels) in one program, sharing the secure comparisons.  Each pair row has two slots (the two
users) with ``columns`` values each; every (slot, column) entry is owned by one party.  Each party's
*own share* of every program input is its own contribution (its encodings where it owns the entry,
zeros elsewhere; its own random words and bits): the input's value is the sum (arithmetic ``w``, ``u``)
or XOR (boolean ``t``, ``r``) of the two contributions, so no input is sent anywhere and every data
layout is served: two samples (AUC: slot 0 left, slot 1 right), a vertical split (Kendall: column 0
left, column 1 right) or users anywhere.  The secure operations (comparison, AND, conversions) take
arbitrary private shares, as two-party protocols do for their parties' inputs.  Every released value
includes a secure operation's fresh output sharing (the comparison, an AND, a boolean-to-arithmetic
conversion or a product), so each party's output share is uniform apart from the released sum.

>>> job = JobSpec.from_header({"outputs": [{"kernel": "greater", "mechanism": "rr", "pair_epsilon": 1.0}]})
>>> job.columns, job.width, job.n_random, job.n_bits
(1, 2, 1, 11)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privstats.validation import check_choice, check_epsilon

from .kernels import SPECS, KernelSpec, _Order, kernel_bool, kernel_spec, kernel_units
from .noise import HALF, MECHANISMS, NoisePlan, make_plan

__all__ = ["JobSpec", "Output", "noisy_program", "require_spu", "runtime_config"]

SUPPORTED_PYTHON = "Python 3.10 or 3.11"


def require_spu():
    """(spu, spu.libspu), or an ImportError naming the extra and the Python versions SPU supports."""
    import sys

    if sys.version_info[:2] >= (3, 12) or sys.version_info[:2] < (3, 10):
        raise ImportError(
            f"backend='spu' (the 'mpc' extra, SecretFlow SPU) needs {SUPPORTED_PYTHON}; this is Python "
            f"{sys.version_info[0]}.{sys.version_info[1]}, where pip install 'privstats[mpc]' installs no "
            "SPU (the extra is marked python_version < '3.12'). Create a Python 3.11 virtualenv: "
            "python3.11 -m venv mpc-venv && mpc-venv/bin/pip install 'privstats[mpc]'"
        )
    try:
        import spu  # type: ignore[import-not-found, unused-ignore]
        import spu.libspu as libspu  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"backend='spu' needs the optional 'mpc' extra (SecretFlow SPU, {SUPPORTED_PYTHON}, "
            "numpy < 2): pip install 'privstats[mpc]' in a separate virtualenv"
        ) from exc
    return spu, libspu


def runtime_config(libspu):
    cfg = libspu.RuntimeConfig(protocol=libspu.ProtocolKind.CHEETAH, field=libspu.FieldType.FM64)
    cfg.fxp_fraction_bits = 18
    return cfg


@dataclass(frozen=True)
class Output:
    """One released kernel of a job: the kernel, its mechanism, its ε per pair."""

    spec: KernelSpec
    mechanism: str
    pair_epsilon: float
    plan: NoisePlan

    def header(self) -> dict:
        return {"kernel": self.spec.name, "mechanism": self.mechanism, "pair_epsilon": self.pair_epsilon}


@dataclass(frozen=True)
class JobSpec:
    """The public parameters of a job (identical at the aggregator and both parties)."""

    outputs: tuple[Output, ...]
    grid_bits: int = 10

    @classmethod
    def build(cls, kernels: list[tuple[str, str, float]], grid_bits: int = 10) -> JobSpec:
        """From ``[(kernel, mechanism, pair_epsilon), ...]``; the kernels must share one input layout."""
        outs = []
        for name, mech, eps in kernels:
            spec = kernel_spec(check_choice(name, "kernel", (*SPECS, "raw_less")), grid_bits)
            mech = check_choice(mech, "mechanism", MECHANISMS)
            eps = check_epsilon(float(eps))
            outs.append(Output(spec, mech, eps, make_plan(mech, eps, spec)))
        if not outs:
            raise ValueError("a job needs at least one kernel")
        if len({(o.spec.columns, o.spec.encoding) for o in outs}) != 1:
            raise ValueError("the kernels of one job must take the same inputs")
        return cls(tuple(outs), int(grid_bits))

    @classmethod
    def from_header(cls, header: dict) -> JobSpec:
        outs = header.get("outputs")
        if not isinstance(outs, list):
            raise ValueError("job header: 'outputs' must be a list of kernels")
        triples = [(o["kernel"], o["mechanism"], o["pair_epsilon"]) for o in outs]
        return cls.build(triples, int(header.get("grid_bits", 10)))

    def header(self) -> dict:
        return {"outputs": [o.header() for o in self.outputs], "grid_bits": self.grid_bits}

    @property
    def spec(self) -> KernelSpec:
        return self.outputs[0].spec

    @property
    def columns(self) -> int:
        return self.spec.columns

    @property
    def width(self) -> int:
        return self.spec.width

    @property
    def n_random(self) -> int:
        """Random (or noise) int64 words per pair each party inputs (at least 1: a fixed signature)."""
        return max(1, sum(o.plan.n_random for o in self.outputs))

    @property
    def n_bits(self) -> int:
        """Random bits per pair each party inputs in boolean sharing (randomized-response coins)."""
        return max(1, sum(o.plan.n_bits for o in self.outputs))

    def input_shapes(self, m: int) -> list[tuple[tuple[int, ...], type]]:
        """(shape, dtype) of the program inputs ``w`` (int64), ``t`` (bool), ``u`` (int64), ``r`` (bool)."""
        return [
            ((m, 2, self.columns), np.int64),
            ((m, 2, self.columns), np.bool_),
            ((m, self.n_random), np.int64),
            ((m, self.n_bits), np.bool_),
        ]

    def key(self) -> str:
        parts = [(o.spec.name, o.spec.grid_bits, o.plan.mechanism, o.plan.thresholds) for o in self.outputs]
        return repr(parts)


def _bern(u, T: int, comp: bool):
    """Bernoulli(T/2^64) (or its complement) as a boolean from a jointly uniform 64-bit word u.

    ``msb(u) ⊕ msb(u − T/2)`` is 1 exactly on [−2^63, T/2 − 2^63) ∪ [0, T/2): mass T/2^64 (T even);
    ``u − T/2`` wraps like the ring, and ``x < 0`` is SPU's sign-bit comparison, so numpy and SPU agree.
    """
    b = u < 0
    if T < HALF:
        b = b ^ ((u - (T // 2)) < 0)
    return ~b if comp else b


def _chain_less(bits, T: int, k: int):
    """[u < T] for the k-bit u whose bits from T's lowest set bit up are the columns of ``bits``
    (boolean shares; u's lower bits cannot change the answer since T has zeros there).

    A comparison tree against the public T: each bit gives ``lt = ¬u_i ∧ T_i`` and ``eq = ¬(u_i ⊕ T_i)``
    (free), and a (high, low) pair of blocks combines as ``lt = lt_H ⊕ (eq_H ∧ lt_L)`` (the two terms
    are exclusive), ``eq = eq_H ∧ eq_L``.  ANDs are skipped where public: ``lt_L`` is 0 when T has no set
    bit in the low block, and the lowest block's eq is never used.  All ANDs of one tree level, for all
    pairs, go in one vectorised AND: ⌈log2 n⌉ rounds for n bits, and 13 ANDs for T = 551, k = 11 (ε = 1).
    Any circuit needs at least n − 1 ANDs (the lowest set bit's term has degree n); the sequential chain
    meets that bound with n − 1 rounds instead of ⌈log2 n⌉.
    """
    low = (T & -T).bit_length() - 1
    xp = _array_module(bits)
    rows = bits.T  # (n, m): one contiguous row per bit of u
    n = rows.shape[0]
    lt = [~rows[i] if (T >> (low + i)) & 1 else None for i in range(n)]  # None: public 0
    eq = [rows[i] if (T >> (low + i)) & 1 else ~rows[i] for i in range(n)]
    while len(lt) > 1:
        n, p = len(lt), len(lt) // 2
        left, right, slots = [], [], []
        for j in range(p):
            lo, hi = 2 * j, 2 * j + 1
            if lt[lo] is not None:
                left.append(eq[hi])
                right.append(lt[lo])
                slots.append((j, "lt"))
            if j > 0:
                left.append(eq[hi])
                right.append(eq[lo])
                slots.append((j, "eq"))
        prod = xp.stack(left) & xp.stack(right)  # one AND call for the level
        new_lt = [lt[2 * j + 1] for j in range(p)]
        new_eq = [eq[0]] + [None] * (p - 1)  # block 0's eq: unused placeholder
        for (j, kind), row in zip(slots, prod, strict=True):
            if kind == "lt":
                hi_lt = new_lt[j]
                new_lt[j] = row if hi_lt is None else hi_lt ^ row
            else:
                new_eq[j] = row
        if n % 2:  # the highest block has no partner at this level: carried up
            new_lt.append(lt[n - 1])
            new_eq.append(eq[n - 1])
        lt, eq = new_lt, new_eq
    if lt[0] is None:  # pragma: no cover - T ≥ 1 has a set bit
        raise AssertionError
    return lt[0]


def _array_module(x):
    if isinstance(x, np.ndarray):
        return np
    import jax.numpy as jnp  # type: ignore[import-not-found, unused-ignore]

    return jnp


def _noise(jnp, v, vbool, u, r, plan: NoisePlan):
    """Released integers: the kernel ``v`` (grid units; ``vbool`` its boolean form or None) plus noise."""
    if plan.mechanism == "none":
        return v
    if plan.mechanism == "laplace-shares":  # u = z_left + z_right: the parties' own noise shares
        return v + u[:, 0]
    if plan.mechanism == "rr":
        flip = _chain_less(r, plan.thresholds[0], plan.coin_bits)
        if vbool is not None:  # XOR in the boolean domain: free
            return (vbool ^ flip).astype(jnp.int64)
        f = flip.astype(jnp.int64)
        return v + f - 2 * v * f
    b0 = _bern(u[:, 0], plan.thresholds[0], plan.complement[0]).astype(jnp.int64)
    sign = 2 * _bern(u[:, 1], plan.thresholds[1], False).astype(jnp.int64) - 1
    geo = jnp.zeros_like(v)
    for j, (T, c) in enumerate(zip(plan.thresholds[2:], plan.complement[2:], strict=True)):
        geo = geo + _bern(u[:, 2 + j], T, c).astype(jnp.int64) * (1 << j)
    return v + sign * (1 - b0) * (1 + geo)


def noisy_program(job: JobSpec, m: int):
    """f(w, t, u, r) → (m, kernels) released integers, compiled to SPU.

    ``w``: (m, 2, columns) int64 low 63-bit words (sortable) or grid values; ``t``: (m, 2, columns) top
    bits (bool); ``u``: (m, n_random) random words / noise shares; ``r``: (m, n_bits) random bits.  Each
    party's share of each input is its own contribution (see the module docstring).
    """
    import jax.numpy as jnp  # type: ignore[import-not-found, unused-ignore]

    def program(w, t, u, r):
        a, b = w[:, 0], w[:, 1]
        order = _Order(a, t[:, 0], b, t[:, 1], jnp) if job.spec.encoding == "sortable" else None
        outs, i, j = [], 0, 0
        for o in job.outputs:
            vbool = kernel_bool(o.spec, order) if order is not None and o.mechanism == "rr" else None
            v = None if vbool is not None else kernel_units(o.spec, a, b, jnp, order)
            outs.append(
                _noise(jnp, v, vbool, u[:, i : i + o.plan.n_random], r[:, j : j + o.plan.n_bits], o.plan)
            )
            i, j = i + o.plan.n_random, j + o.plan.n_bits
        return jnp.stack(outs, axis=1)

    return program


def rr_variance(width: float, keep: float) -> float:
    """Variance of one debiased randomized-response release on a kernel range of ``width``."""
    return width**2 * keep * (1 - keep) / (2 * keep - 1) ** 2 if keep > 0.5 else math.inf
