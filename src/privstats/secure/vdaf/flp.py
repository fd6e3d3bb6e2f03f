"""The generic fully linear proof (FLP) of VDAF-08 (BBCGGI19, Theorem 4.3) and its gadgets.

A validity circuit calls its gadgets through callables handed to ``Valid.eval``. The prover records the
wire values of every gadget call, interpolates one polynomial per wire over the P-th roots of unity
(the first point carries a random wire seed) and sends the coefficients of the gadget polynomial
G(wire polynomials). The verifier replaces each gadget call by the gadget polynomial evaluated at
``alpha**k`` and then tests the polynomial identity at the random point ``t`` of the query randomness.

Example:
    >>> from privstats.secure.vdaf.flp import FlpGeneric
    >>> from privstats.secure.vdaf.circuits import Count
    >>> flp = FlpGeneric(Count())
    >>> proof = flp.prove([1], [5, 7], [])
    >>> flp.decide(flp.query([1], proof, [11], [], 1))
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from privstats.secure.vdaf.errors import VdafError
from privstats.secure.vdaf.field import Field, batch_inv, inv_ntt, next_power_of_2, ntt, poly_eval

__all__ = ["FlpGeneric", "Gadget", "Mul", "ParallelSum", "PolyEval", "Range2", "Valid"]

GadgetCall = Callable[[list[int]], int]


class Gadget:
    """A (possibly non-affine) sub-circuit with ARITY inputs and arithmetic DEGREE."""

    ARITY: int
    DEGREE: int

    def eval(self, p: int, inp: Sequence[int]) -> int:
        """Output on field elements ``inp`` (mod p)."""
        raise NotImplementedError


class Mul(Gadget):
    """inp[0] * inp[1]."""

    ARITY = 2
    DEGREE = 2

    def eval(self, p: int, inp: Sequence[int]) -> int:
        return inp[0] * inp[1] % p


class PolyEval(Gadget):
    """A univariate polynomial (coefficients lowest degree first, as ints mod p)."""

    ARITY = 1

    def __init__(self, coeffs: Sequence[int]) -> None:
        coeffs = list(coeffs)
        while coeffs and coeffs[-1] == 0:
            coeffs.pop()
        if not coeffs:
            raise ValueError("coeffs must contain a nonzero coefficient")
        self.coeffs = coeffs
        self.DEGREE = len(coeffs) - 1

    def eval(self, p: int, inp: Sequence[int]) -> int:
        return poly_eval([c % p for c in self.coeffs], inp[0], p)


class Range2(PolyEval):
    """x^2 - x (the range check of Prio3Sum)."""

    def __init__(self) -> None:
        super().__init__([0, -1, 1])


class ParallelSum(Gadget):
    """Sum of ``count`` copies of ``subcircuit`` on consecutive slices of the input."""

    def __init__(self, subcircuit: Gadget, count: int) -> None:
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        self.subcircuit = subcircuit
        self.count = count
        self.ARITY = subcircuit.ARITY * count
        self.DEGREE = subcircuit.DEGREE

    def eval(self, p: int, inp: Sequence[int]) -> int:
        a = self.subcircuit.ARITY
        if isinstance(self.subcircuit, Mul):
            return sum(x * y for x, y in zip(inp[0::2], inp[1::2], strict=False)) % p
        return sum(self.subcircuit.eval(p, inp[i * a : (i + 1) * a]) for i in range(self.count)) % p


class Valid:
    """A validity circuit: parameters of VDAF-08 and ``eval`` over gadget callables."""

    FIELD: type[Field]
    GADGETS: list[Gadget]
    GADGET_CALLS: list[int]
    MEAS_LEN: int
    OUTPUT_LEN: int
    JOINT_RAND_LEN: int

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int, gadgets: list[GadgetCall]) -> int:
        """Circuit output (zero iff valid), calling ``gadgets[i]`` for each call of GADGETS[i]."""
        raise NotImplementedError

    def encode(self, measurement: Any) -> list[int]:
        """Encoded measurement of length MEAS_LEN."""
        raise NotImplementedError

    def truncate(self, meas: list[int]) -> list[int]:
        """Aggregatable output of length OUTPUT_LEN."""
        raise NotImplementedError

    def decode(self, output: list[int], num_measurements: int) -> Any:
        """Aggregate result from the sum of output shares."""
        raise NotImplementedError


def _wire_points(calls: int) -> int:
    return next_power_of_2(1 + calls)


class _Recorder:
    """Records the wires of each call to one gadget; returns either the true or the proven output."""

    def __init__(self, gadget: Gadget, calls: int, seeds: list[int], p: int, outputs: list[int] | None):
        self.gadget, self.p, self.outputs = gadget, p, outputs
        size = _wire_points(calls)
        self.wires = [[s] + [0] * (size - 1) for s in seeds]
        self.k = 0

    def __call__(self, inp: list[int]) -> int:
        self.k += 1
        k = self.k
        for wire, x in zip(self.wires, inp, strict=False):
            wire[k] = x
        if self.outputs is None:
            return self.gadget.eval(self.p, inp)
        return self.outputs[k]


def lagrange_at(t: int, size: int, field: type[Field]) -> list[int]:
    """L_k(t) for the Lagrange basis over the ``size``-th roots of unity (t not a root)."""
    p = field.MODULUS
    alpha = field.root(size)
    pts = [1] * size
    for k in range(1, size):
        pts[k] = pts[k - 1] * alpha % p
    scale = (pow(t, size, p) - 1) * pow(size, p - 2, p) % p
    invs = batch_inv([(t - a) % p for a in pts], p)
    return [scale * a % p * i % p for a, i in zip(pts, invs, strict=False)]


def gadget_outputs(gpoly: list[int], size: int, field: type[Field]) -> list[int]:
    """The gadget polynomial at alpha**k, k < size (alpha a primitive size-th root of unity)."""
    p = field.MODULUS
    folded = [0] * size
    for i, c in enumerate(gpoly):
        folded[i % size] += c
    return ntt([c % p for c in folded], field.root(size), p)


class FlpGeneric:
    """FLP for a validity circuit (VDAF-08 section 7.3); lengths follow the draft's derived methods."""

    def __init__(self, valid: Valid) -> None:
        self.valid = valid
        self.field = valid.FIELD
        self.PROVE_RAND_LEN = sum(g.ARITY for g in valid.GADGETS)
        self.QUERY_RAND_LEN = len(valid.GADGETS)
        self.JOINT_RAND_LEN = valid.JOINT_RAND_LEN
        self.MEAS_LEN = valid.MEAS_LEN
        self.OUTPUT_LEN = valid.OUTPUT_LEN
        self.PROOF_LEN = sum(
            g.ARITY + g.DEGREE * (_wire_points(c) - 1) + 1
            for g, c in zip(valid.GADGETS, valid.GADGET_CALLS, strict=False)
        )
        self.VERIFIER_LEN = 1 + sum(g.ARITY + 1 for g in valid.GADGETS)

    def _gadget_poly(self, gadget: Gadget, wires: list[list[int]]) -> list[int]:
        p = self.field.MODULUS
        size = len(wires[0])
        n_coef = gadget.DEGREE * (size - 1) + 1
        big = next_power_of_2(n_coef)
        root, big_root = self.field.root(size), self.field.root(big)
        evals = []
        for w in wires:
            coeffs = inv_ntt(w, root, p)
            evals.append(ntt(coeffs + [0] * (big - size), big_root, p))
        if isinstance(gadget, ParallelSum) and isinstance(gadget.subcircuit, Mul):
            vals = [0] * big
            for a, b in zip(evals[0::2], evals[1::2], strict=False):
                vals = [v + x * y for v, x, y in zip(vals, a, b, strict=False)]
            vals = [v % p for v in vals]
        else:
            vals = [gadget.eval(p, [e[s] for e in evals]) for s in range(big)]
        return inv_ntt(vals, big_root, p)[:n_coef]

    def prove(self, meas: list[int], prove_rand: list[int], joint_rand: list[int]) -> list[int]:
        """Proof of validity of ``meas`` (seeds then gadget-polynomial coefficients, per gadget)."""
        if len(prove_rand) != self.PROVE_RAND_LEN or len(joint_rand) != self.JOINT_RAND_LEN:
            raise ValueError("prove_rand/joint_rand have the wrong length")
        p = self.field.MODULUS
        recs, off = [], 0
        for g, calls in zip(self.valid.GADGETS, self.valid.GADGET_CALLS, strict=False):
            recs.append(_Recorder(g, calls, prove_rand[off : off + g.ARITY], p, None))
            off += g.ARITY
        self.valid.eval(meas, joint_rand, 1, list(recs))
        proof: list[int] = []
        for rec in recs:
            proof += [w[0] for w in rec.wires] + self._gadget_poly(rec.gadget, rec.wires)
        return proof

    def query(
        self, meas: list[int], proof: list[int], query_rand: list[int], joint_rand: list[int], num_shares: int
    ) -> list[int]:
        """Share of the verifier message for a share of the measurement and of the proof."""
        if len(proof) != self.PROOF_LEN or len(query_rand) != self.QUERY_RAND_LEN:
            raise VdafError("proof or query randomness has the wrong length")
        field, p = self.field, self.field.MODULUS
        recs, polys, off = [], [], 0
        for g, calls in zip(self.valid.GADGETS, self.valid.GADGET_CALLS, strict=False):
            size = _wire_points(calls)
            n_coef = g.DEGREE * (size - 1) + 1
            seeds, gpoly = proof[off : off + g.ARITY], proof[off + g.ARITY : off + g.ARITY + n_coef]
            off += g.ARITY + n_coef
            recs.append(_Recorder(g, calls, seeds, p, gadget_outputs(gpoly, size, field)))
            polys.append(gpoly)
        verifier = [self.valid.eval(meas, joint_rand, num_shares, list(recs))]
        for rec, gpoly, t in zip(recs, polys, query_rand, strict=False):
            size = len(rec.wires[0])
            if pow(t, size, p) == 1:
                raise VdafError("degenerate query point (t^P == 1)")
            lag = lagrange_at(t, size, field)
            verifier += [sum(w * c for w, c in zip(wire, lag, strict=False)) % p for wire in rec.wires]
            verifier.append(poly_eval(gpoly, t, p))
        return verifier

    def decide(self, verifier: list[int]) -> bool:
        """True iff the (combined) verifier message accepts."""
        if len(verifier) != self.VERIFIER_LEN:
            raise VdafError("verifier message has the wrong length")
        if verifier[0] != 0:
            return False
        off, p = 1, self.field.MODULUS
        for g in self.valid.GADGETS:
            x, y = verifier[off : off + g.ARITY], verifier[off + g.ARITY]
            off += g.ARITY + 1
            if g.eval(p, x) != y:
                return False
        return True
