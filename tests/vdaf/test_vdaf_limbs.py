"""Field128 limb arithmetic (numpy) against Python integers, including values next to p and 2^128."""

from __future__ import annotations

import random

import numpy as np
import pytest

from privstats.secure.vdaf import limbs
from privstats.secure.vdaf.field import Field128

P = Field128.MODULUS
EDGE = [0, 1, 2, P - 1, P - 2, 2**64, 2**64 - 1, 2**128 - 28 * 2**64, P - 2**64, 28 * 2**64 - 1]


def _values(rng: random.Random, n: int) -> list[int]:
    return EDGE + [rng.randrange(P) for _ in range(n - len(EDGE))]


def test_elementwise_operations_match_python_ints() -> None:
    rng = random.Random(0)
    a, b = _values(rng, 500), list(reversed(_values(rng, 500)))
    la, lb = limbs.from_ints(a), limbs.from_ints(b)
    assert limbs.to_ints(la) == a
    assert limbs.to_ints(limbs.mul(la, lb)) == [x * y % P for x, y in zip(a, b, strict=True)]
    assert limbs.to_ints(limbs.add(la, lb)) == [(x + y) % P for x, y in zip(a, b, strict=True)]
    assert limbs.to_ints(limbs.sub(la, lb)) == [(x - y) % P for x, y in zip(a, b, strict=True)]
    outer = limbs.mul(la[:, None], lb[None, :3])
    assert limbs.to_ints(outer) == [x * y % P for x in a for y in b[:3]]
    assert limbs.encode(la) == Field128.encode_vec(a)


def test_reduce_cols_handles_signed_and_wide_columns() -> None:
    rng = np.random.default_rng(1)
    cols = rng.integers(-(2**50), 2**50, size=(200, 19))
    expected = [sum(int(c) << (16 * s) for s, c in enumerate(row)) % P for row in cols]
    assert limbs.to_ints(limbs.reduce_cols(cols)) == expected


@pytest.mark.parametrize(("n", "k", "j", "v"), [(3, 32, 5, 2), (2, 70, 3, 1), (1, 1, 1, 1)])
def test_batched_and_constant_matrix_products(n: int, k: int, j: int, v: int) -> None:
    rng = random.Random(2)
    mat = [[[rng.choice([P - 1, rng.randrange(P)]) for _ in range(j)] for _ in range(k)] for _ in range(n)]
    vec = [[[rng.choice([P - 1, rng.randrange(P)]) for _ in range(v)] for _ in range(k)] for _ in range(n)]
    lm = limbs.from_ints([x for a in mat for b in a for x in b]).reshape(n, k, j, 8)
    lv = limbs.from_ints([x for a in vec for b in a for x in b]).reshape(n, k, v, 8)
    expected = [
        sum(mat[a][c][b] * vec[a][c][d] for c in range(k)) % P
        for a in range(n)
        for b in range(j)
        for d in range(v)
    ]
    assert limbs.to_ints(limbs.matvec(lm, lv)) == expected
    const = [[rng.randrange(P) for _ in range(j)] for _ in range(k)]
    left = [[rng.randrange(P) for _ in range(k)] for _ in range(n)]
    right32 = limbs.to_limbs32(limbs.from_ints([x for r in const for x in r]).reshape(k, j, 8))
    got = limbs.matmul_const(limbs.from_ints([x for r in left for x in r]).reshape(n, k, 8), right32)
    assert limbs.to_ints(got) == [
        sum(left[a][c] * const[c][b] for c in range(k)) % P for a in range(n) for b in range(j)
    ]


def test_range_checks() -> None:
    words = [P - 1, P, P + 1, 2**128 - 1, 0, (P >> 64) << 64]
    raw = b"".join(w.to_bytes(16, "little") for w in words)
    assert [limbs.all_in_range(w.to_bytes(16, "little")) for w in words] == [w < P for w in words]
    assert list(limbs.in_range(limbs.decode(raw, len(words)))) == [w < P for w in words]
