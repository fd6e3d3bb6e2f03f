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

from .bits import Circuit, Node, less_than
from .kernels import SPECS, KernelSpec, _Order, kernel_bool, kernel_spec, kernel_terms, kernel_units
from .noise import MECHANISMS, NoisePlan, make_plan

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
        parts = [(o.spec.name, o.spec.grid_bits, o.plan.mechanism, o.plan.coins) for o in self.outputs]
        return repr(parts)


def _chain_less(bits, T: int, k: int):
    """[u < T] for the k-bit u whose bits from T's lowest set bit up are the columns of ``bits``
    (boolean shares), by :func:`.bits.less_than`: one vectorised AND per tree level."""
    c = Circuit(_array_module(bits))
    rows = bits.T
    return c.run([less_than(c, [c.leaf(rows[i]) for i in range(rows.shape[0])], T, k)])[0]


def _array_module(x):
    if isinstance(x, np.ndarray):
        return np
    import jax.numpy as jnp  # type: ignore[import-not-found, unused-ignore]

    return jnp


def _coins(c: Circuit, r, plan: NoisePlan) -> tuple[list[Node], int]:
    """The plan's coins as circuit nodes on the columns of ``r`` (and the next unused column)."""
    rows = r.T
    out, j = [], 0
    for T, k in plan.coins:
        n = k - ((T & -T).bit_length() - 1)
        out.append(less_than(c, [c.leaf(rows[j + i]) for i in range(n)], T, k))
        j += n
    return out, j


def laplace_terms(c: Circuit, r, plan: NoisePlan) -> list[tuple[int, Node | None]]:
    """The plan's noise from the random bits ``r`` (its coins, then the sign bit): :func:`assemble`."""
    coins, j = _coins(c, r, plan)
    return assemble(c, coins, c.leaf(r.T[j]), plan.variant)


def assemble(c: Circuit, coins: list[Node], sign: Node, variant: str) -> list[tuple[int, Node | None]]:
    """The noise as Σ coef·bit over boolean nodes (one b2a for all of them), mod 2^(J+1).

    ``zero`` (coins nz, g_0..g_{J−1}): Z = S·nz·(1+G) = Σ_j 2^j·(nz ∧ (g_j ⊕ S)) − 2^J·(nz ∧ S) +
    (nz ∧ ¬S) (for S = 1 the two's complement −(1+G) = ¬G); ``half`` (coins g_0..g_{J−1}):
    Y = G ⊕ S = Σ_j 2^j·(g_j ⊕ S) − 2^J·S.
    """
    if variant == "half":
        J = len(coins)
        return [(1 << i, c.xor(g, sign)) for i, g in enumerate(coins)] + [(-(1 << J), sign)]
    nz, digits = coins[0], coins[1:]
    J = len(digits)
    neg = c.and_(nz, sign)
    terms = [(1 << i, c.and_(nz, c.xor(g, sign))) for i, g in enumerate(digits)]
    return [*terms, (-(1 << J), neg), (1, c.xor(nz, neg))]


def _weighted(jnp, const: int, terms: list[tuple[int, object]]):
    """const + Σ coef·bit, all bits converted to arithmetic shares in one call."""
    coefs = np.array([t[0] for t in terms], dtype=np.int64)
    ints = jnp.stack([t[1] for t in terms]).astype(jnp.int64)
    return const + jnp.sum(ints * coefs[:, None], axis=0)


def _noise(jnp, spec: KernelSpec, a, b, order, r, u, plan: NoisePlan):
    """The released integers of one output: the kernel (grid units) plus its noise."""
    if plan.mechanism == "rr":
        vbool = kernel_bool(spec, order) if order is not None else None
        flip = _chain_less(r, plan.coins[0][0], plan.coins[0][1])
        if vbool is not None:  # XOR in the boolean domain: free
            return (vbool ^ flip).astype(jnp.int64)
        v, f = kernel_units(spec, a, b, jnp, order), flip.astype(jnp.int64)
        return v + f - 2 * v * f
    if plan.mechanism != "laplace":
        v = kernel_units(spec, a, b, jnp, order)
        return v + u[:, 0] if plan.mechanism == "laplace-shares" else v  # shares: u = z_left + z_right
    c = Circuit(jnp)
    noise = laplace_terms(c, r, plan)
    const, kterms = kernel_terms(spec, order) if order is not None else (0, [])
    coefs = [k for k, _ in kterms] + [k for k, _ in noise]
    bits = c.run([c.leaf(x) for _, x in kterms] + [x for _, x in noise])
    terms = [(k, x) for k, x in zip(coefs, bits, strict=True) if x is not None]
    out = _weighted(jnp, const, terms)
    if order is None:
        out = out + kernel_units(spec, a, b, jnp, order)
    return out * (1 << (64 - plan.wrap_bits))  # mod 2^(J+1), in the top bits: the shares wrap too


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
            ui, rj = u[:, i : i + o.plan.n_random], r[:, j : j + o.plan.n_bits]
            outs.append(_noise(jnp, o.spec, a, b, order, rj, ui, o.plan))
            i, j = i + o.plan.n_random, j + o.plan.n_bits
        return jnp.stack(outs, axis=1)

    return program


def rr_variance(width: float, keep: float) -> float:
    """Variance of one debiased randomized-response release on a kernel range of ``width``."""
    return width**2 * keep * (1 - keep) / (2 * keep - 1) ** 2 if keep > 0.5 else math.inf
