"""Fast client side for Prio3Histogram: the proof in closed form and sharding straight to bytes.

For a one-hot measurement at index idx* = (k* - 1) c + j* the wire polynomials of the ParallelSum(Mul)
gadget are W_2j = s_2j L_0 + [j = j*] rho L_k* and W_2j+1 = s_2j+1 L_0 - L_sum + [j = j*] L_k*, with
rho = r^(idx* + 1), L_k the Lagrange basis over the P-th roots of unity and L_sum = L_1 + ... + L_M.
Hence the gadget polynomial G = sum_j W_2j W_2j+1 is a combination of five fixed polynomials:

    G = a L_0^2 - b L_0 L_sum + (s_2j* + rho s_2j*+1) L_0 L_k* - rho L_sum L_k* + rho L_k*^2

with a = sum_j s_2j s_2j+1 and b = sum_j s_2j. Their coefficients are tabulated once per shape, so a
proof costs a few hundred multiplications instead of 2c NTTs. The result equals the generic prover's.

Example:
    >>> from privstats.secure.vdaf import Prio3Histogram
    >>> vdaf = Prio3Histogram(16, 4)
    >>> nonce, rand = bytes(16), bytes(range(vdaf.RAND_SIZE))
    >>> public, shares = shard_encoded(vdaf, 3, nonce, rand)
    >>> ref_public, ref_shares = vdaf.shard(3, nonce, rand)
    >>> shares == [vdaf.encode_input_share(s) for s in ref_shares]
    True
"""

from __future__ import annotations

import operator
from functools import lru_cache
from typing import Any

import numpy as np

from privstats.secure.vdaf import limbs
from privstats.secure.vdaf.batch import _expand_raw
from privstats.secure.vdaf.circuits import Histogram
from privstats.secure.vdaf.field import Field, next_power_of_2
from privstats.secure.vdaf.xof import SEED_SIZE

# a Prio3 instance, typed loosely: prio3.py imports this module, so importing Prio3 here would be a loop
Prio3 = Any

__all__ = ["histogram_proof", "shard_encoded"]


def _poly_mul(a: list[int], b: list[int], p: int) -> list[int]:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return [v % p for v in out]


@lru_cache(maxsize=16)
def _tables(field: type[Field], calls: int) -> dict[str, Any]:
    """Coefficients of L_0^2, L_0 L_sum and, per call k, L_0 L_k, L_sum L_k, L_k^2."""
    p = field.MODULUS
    size = next_power_of_2(calls + 1)
    zeta = pow(field.root(size), p - 2, p)
    size_inv = pow(size, p - 2, p)
    basis = [[pow(zeta, k * i, p) * size_inv % p for i in range(size)] for k in range(calls + 1)]
    l_sum = [sum(col) % p for col in zip(*basis[1:], strict=True)]
    l0 = basis[0]
    return {
        "l00": _poly_mul(l0, l0, p),
        "l0s": _poly_mul(l0, l_sum, p),
        "l0k": [_poly_mul(l0, basis[k], p) for k in range(calls + 1)],
        "lsk": [_poly_mul(l_sum, basis[k], p) for k in range(calls + 1)],
        "lkk": [_poly_mul(basis[k], basis[k], p) for k in range(calls + 1)],
    }


def histogram_proof(valid: Histogram, index: int, prove_rand: list[int], joint_rand: list[int]) -> list[int]:
    """Proof for the one-hot measurement at ``index`` (same as ``FlpGeneric(valid).prove``)."""
    p = valid.FIELD.MODULUS
    c, calls = valid.chunk_length, valid.GADGET_CALLS[0]
    tab = _tables(valid.FIELD, calls)
    seeds = prove_rand
    k_star, j_star = index // c + 1, index % c
    rho = pow(joint_rand[0], index + 1, p)
    a = sum(map(operator.mul, seeds[0::2], seeds[1::2])) % p
    b = sum(seeds[0::2]) % p
    beta = (seeds[2 * j_star] + rho * seeds[2 * j_star + 1]) % p
    rows = (tab["l00"], tab["l0s"], tab["l0k"][k_star], tab["lsk"][k_star], tab["lkk"][k_star])
    coefs = (a, p - b, beta, p - rho, rho)
    gadget = [sum(map(operator.mul, coefs, col)) % p for col in zip(*rows, strict=True)]
    return list(seeds) + gadget


def shard_encoded(vdaf: Prio3, measurement: Any, nonce: bytes, rand: bytes) -> tuple[bytes, list[bytes]]:
    """``shard`` returning the encoded public share and input shares (fast for Prio3Histogram).

    Other instances use :meth:`Prio3.shard` and encode its result.
    """
    if not isinstance(vdaf.valid, Histogram) or vdaf.field.ENCODED_SIZE != 16:
        public, shares = vdaf.shard(measurement, nonce, rand)
        return vdaf.encode_public_share(public), [vdaf.encode_input_share(s) for s in shares]
    vdaf._check_bytes("nonce", nonce, vdaf.NONCE_SIZE)
    vdaf._check_bytes("rand", rand, vdaf.RAND_SIZE)
    valid = vdaf.valid
    index = valid.encode(measurement).index(1)
    p, n = vdaf.field.MODULUS, valid.MEAS_LEN
    seeds = [rand[i : i + SEED_SIZE] for i in range(0, vdaf.RAND_SIZE, SEED_SIZE)]
    helpers = [seeds[3 * j : 3 * j + 3] for j in range(vdaf.SHARES - 1)]
    leader_blind, prove_seed = seeds[-2], seeds[-1]
    meas = np.zeros((n, limbs.NLIMB), dtype=np.int64)
    meas[index, 0] = 1
    parts = []
    for j, hs in enumerate(helpers):
        raw = _expand_raw(vdaf, hs[0], 1, bytes([j + 1]), n)
        meas = meas - limbs.decode(raw, n)
        parts.append(vdaf.joint_rand_part(j + 1, hs[2], raw, nonce))
    leader_raw = limbs.encode(limbs.reduce_cols(meas))
    parts.insert(0, vdaf.joint_rand_part(0, leader_blind, leader_raw, nonce))
    joint_rand = vdaf.joint_rands(vdaf.joint_rand_seed(parts))
    proof = histogram_proof(valid, index, vdaf.prove_rands(prove_seed), joint_rand)
    for j, hs in enumerate(helpers):
        proof = [(x - y) % p for x, y in zip(proof, vdaf.helper_proofs_share(j + 1, hs[1]), strict=True)]
    leader = leader_raw + vdaf.field.encode_vec(proof) + leader_blind
    return b"".join(parts), [leader] + [hs[0] + hs[1] + hs[2] for hs in helpers]
