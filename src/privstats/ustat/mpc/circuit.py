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

Noisy outputs (``rr``, ``laplace``) run bit-sliced (:mod:`.packed`: 64 pairs per word): the coins,
the comparisons' top-bit fixes, the ties kernels' equality trees and the kernel-plus-noise adder
are ANDs of words, and the release is
a boolean-shared word (the aggregator XORs the two shares): randomized response ``kernel ⊕ flip``,
Laplace the J + 1 bits of ``(kernel + noise) mod 2^(J+1)`` in the top bits, with no
boolean-to-arithmetic conversion.

>>> job = JobSpec.from_header({"outputs": [{"kernel": "greater", "mechanism": "rr", "pair_epsilon": 1.0}]})
>>> job.columns, job.width, job.n_random, job.n_bits
(1, 2, 1, 11)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privstats.validation import check_choice, check_epsilon

from .bits import Circuit, Node, add_small, less_than
from .kernels import SPECS, KernelSpec, _Order, kernel_spec, kernel_units
from .noise import MECHANISMS, NoisePlan, make_plan
from .packed import PackedOrder, kernel_nodes, order_needs, unpack, words

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
        """(shape, dtype) of the program inputs ``w`` (int64), ``t`` (bool), ``u`` (int64), ``r`` (int64
        words of random bits, 64 pairs per word), ``x`` (int64 full words, boolean sharing)."""
        return [
            ((m, 2, self.columns), np.int64),
            ((m, 2, self.columns), np.bool_),
            ((m, self.n_random), np.int64),
            ((self.n_bits, words(m)), np.int64),
            ((2, self.columns, 64, words(m)), np.int64),
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


def _coins(c: Circuit, rows, plan: NoisePlan) -> tuple[list[Node], int]:
    """The plan's coins as circuit nodes on the random rows ``rows`` (and the next unused row)."""
    out, j = [], 0
    for T, k in plan.coins:
        n = k - ((T & -T).bit_length() - 1)
        out.append(less_than(c, [c.leaf(rows[j + i]) for i in range(n)], T, k))
        j += n
    return out, j


def laplace_terms(c: Circuit, rows, plan: NoisePlan) -> list[tuple[int, Node | None]]:
    """The plan's noise from the random rows (its coins, then the sign bit): :func:`assemble`."""
    coins, j = _coins(c, rows, plan)
    return assemble(c, coins, c.leaf(rows[j]), plan.variant)


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


def _plain_output(jnp, spec: KernelSpec, a, b, order, u, plan: NoisePlan):
    """``none`` / ``laplace-shares``: the kernel (pair by pair), plus the parties' noise shares."""
    v = kernel_units(spec, a, b, jnp, order)
    return v + u[:, 0] if plan.mechanism == "laplace-shares" else v  # shares: u = z_left + z_right


def released_bits(
    c: Circuit, kernel: tuple[Node, Node | None], noise: list[tuple[int, Node | None]], variant: str
):
    """The bits of ``(K + noise) mod 2^(J+1)`` (lowest first) for the kernel in binary ``K = low + 2·high``
    and the noise terms of :func:`assemble` (their weights ±2^0..±2^J are its binary digits mod
    2^(J+1); the zero variant's last term adds 1 more): a small adder (:func:`.bits.add_small`), so
    the release needs no boolean-to-arithmetic conversion."""
    low, high = kernel
    if variant == "zero":  # K + c0 = l + 2h with one AND (c0 and the low bit: their carry)
        c0 = noise[-1][1]
        carry = c.and_(low, c0)
        low, high = c.xor(low, c0), (carry if high is None else c.xor(high, carry))  # type: ignore[assignment]
        noise = noise[:-1]
    return add_small(c, [x for _, x in noise], low, high)  # type: ignore[misc]  # never public


def _packed_output(jnp, c: Circuit, o: Output, porder, a, b, rows, m: int):
    """An ``rr`` / ``laplace`` output on packed words: (its circuit nodes, finish(values) → released)."""
    spec, plan = o.spec, o.plan
    if plan.mechanism == "rr":  # the kernel bit XOR the flip coin: the release is boolean
        flip = less_than(c, [c.leaf(rows[i]) for i in range(plan.n_bits)], *plan.coins[0])
        return [c.xor(kernel_nodes(spec, porder)[0], flip)], lambda vals: unpack(jnp, vals[0][None, :], m)[0]
    noise = laplace_terms(c, rows, plan)
    shift = 64 - plan.wrap_bits
    if porder is not None:  # (K + Z) mod 2^(J+1) in binary, in the top bits of a boolean word
        bits = released_bits(c, kernel_nodes(spec, porder), noise, plan.variant)

        def finish(vals):
            rows = unpack(jnp, jnp.stack(vals), m)
            out = rows[0] << shift
            for i in range(1, len(vals)):
                out = out ^ (rows[i] << (shift + i))
            return out

        return bits, finish

    def finish_grid(vals):  # grid kernels are arithmetic: the noise bits converted in one call
        keep = [(k, v) for (k, _), v in zip(noise, vals, strict=True) if v is not None]
        coefs = np.array([k for k, _ in keep], dtype=np.int64)[:, None]
        z = jnp.sum(unpack(jnp, jnp.stack([v for _, v in keep]), m) * coefs, axis=0)
        return (z + kernel_units(spec, a, b, jnp)) << shift  # mod 2^(J+1), in the top bits: shares wrap

    return [x for _, x in noise], finish_grid


def noisy_program(job: JobSpec, m: int):
    """f(w, t, u, r, x) → (m, kernels) released integers, compiled to SPU.

    ``w``: (m, 2, columns) int64 low 63-bit words (sortable) or grid values; ``t``: (m, 2, columns) top
    bits (bool); ``u``: (m, n_random) random words / noise shares; ``r``: (n_bits, words(m)) random
    bits, 64 pairs per int64 word (:mod:`.packed`); ``x``: (2, columns, 64, words(m)) the bit rows of
    the full order-preserving words ``w + 2^63·t`` (:func:`.packed.bit_rows`), 64-bit boolean sharing
    (the packed top bits and equality trees).  Each party's share of each input is its own
    contribution (see the module docstring).  The ``rr`` / ``laplace`` outputs of a job share one
    bit-sliced circuit (their coins and the comparisons' fixes, one AND call per level).
    """
    import jax.numpy as jnp  # type: ignore[import-not-found, unused-ignore]

    packed = [o for o in job.outputs if o.plan.mechanism in ("rr", "laplace")]
    sortable = job.spec.encoding == "sortable"
    needs = sorted({n for o in packed for n in order_needs(o.spec)}) if sortable else []

    def program(w, t, u, r, x):
        a, b = w[:, 0], w[:, 1]
        c = Circuit(jnp)
        porder = PackedOrder(c, jnp, w, x, m, needs) if needs else None
        order = None
        if sortable and len(packed) < len(job.outputs):
            order = _Order(a, t[:, 0], b, t[:, 1], jnp)
        outs: list = []
        nodes: list = []
        i, j = 0, 0
        for o in job.outputs:
            if o.plan.mechanism in ("rr", "laplace"):
                ns, finish = _packed_output(jnp, c, o, porder, a, b, r[j : j + o.plan.n_bits], m)
                outs.append((len(nodes), len(ns), finish))
                nodes += ns
            else:
                outs.append(_plain_output(jnp, o.spec, a, b, order, u[:, i : i + o.plan.n_random], o.plan))
            i, j = i + o.plan.n_random, j + o.plan.n_bits
        vals = c.run(nodes) if nodes else []
        res = [x if not isinstance(x, tuple) else x[2](vals[x[0] : x[0] + x[1]]) for x in outs]
        return jnp.stack(res, axis=1)

    return program


def rr_variance(width: float, keep: float) -> float:
    """Variance of one debiased randomized-response release on a kernel range of ``width``."""
    return width**2 * keep * (1 - keep) / (2 * keep - 1) ** 2 if keep > 0.5 else math.inf
