"""The compiled batch kernels (privstats.secure.vdaf.jit, numba) against Python ints and against the
numpy limb path: same bytes on honest reports, the same rejections on invalid ones."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privstats.secure.vdaf import Prio3, Prio3Histogram, Prio3SumVec, VdafError, batch
from privstats.secure.vdaf.field import Field128

from .test_vdaf_prio3 import _bytes, _shard_raw

numba = pytest.importorskip("numba")
jit = pytest.importorskip("privstats.secure.vdaf.jit")

P = Field128.MODULUS
KEY = bytes(range(16))
EDGE = [
    0,
    1,
    2,
    P - 1,
    P - 2,
    2**64 - 1,
    2**64,
    2**127,
    P - 2**64,
    28 * 2**64 - 1,
    (P - 1) // 2,
    P - 1 - 27 * 2**64,
    2**64 + 27,
]


def _words(xs: list[int]) -> np.ndarray:
    return np.array([[x & (2**64 - 1), x >> 64] for x in xs], dtype=np.uint64).reshape(-1, 2)


def _ints(a: np.ndarray) -> list[int]:
    return [int(lo) | int(hi) << 64 for lo, hi in a.reshape(-1, 2)]


@numba.njit
def _apply(op: int, a: Any, b: Any) -> Any:
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        if op == 0:
            out[i, 0], out[i, 1] = jit._add(a[i, 0], a[i, 1], b[i, 0], b[i, 1])
        elif op == 1:
            out[i, 0], out[i, 1] = jit._sub(a[i, 0], a[i, 1], b[i, 0], b[i, 1])
        else:
            out[i, 0], out[i, 1] = jit._mul(a[i, 0], a[i, 1], b[i, 0], b[i, 1])
    return out


@numba.njit
def _dot_settle(a: Any, b: Any) -> Any:
    return jit._dot(a, b, np.empty(8, dtype=np.uint64))


def test_field128_arithmetic_matches_python_ints() -> None:
    rng = np.random.default_rng(21)
    rand = [int.from_bytes(_bytes(rng, 16), "little") % P for _ in range(3000)]
    xs = [a for a in EDGE for _ in EDGE] + rand
    ys = [b for _ in EDGE for b in EDGE] + rand[::-1]
    a, b = _words(xs), _words(ys)
    assert _ints(_apply(0, a, b)) == [(x + y) % P for x, y in zip(xs, ys, strict=True)]
    assert _ints(_apply(1, a, b)) == [(x - y) % P for x, y in zip(xs, ys, strict=True)]
    assert _ints(_apply(2, a, b)) == [x * y % P for x, y in zip(xs, ys, strict=True)]
    assert _ints(jit.mul_vec(a, b)) == [x * y % P for x, y in zip(xs, ys, strict=True)]
    # unreduced dot products: many near-p terms push every column and the 2^256 word up
    for vec in ([P - 1] * 200, EDGE * 10, rand[:127]):
        want = sum(x * x for x in vec) % P
        assert _ints(np.array(_dot_settle(_words(vec), _words(vec)), dtype=np.uint64)) == [want]


def _reports(vdaf: Prio3, rng: np.random.Generator, n: int) -> list[tuple[bytes, bytes, list[bytes]]]:
    """Honest reports mixed with invalid ones of every kind the batch paths must reject."""
    valid: Any = vdaf.valid
    out = []
    for i in range(n):
        nonce = _bytes(rng, 16)
        kind = i % 8
        if kind == 1:  # not one-hot / bits out of {0, 1}
            enc = [int(x) for x in rng.integers(0, 3, size=vdaf.flp.MEAS_LEN)]
            enc[int(rng.integers(0, len(enc)))] = 2  # never 0/1 valued
            public, shares = _shard_raw(vdaf, enc, nonce, _bytes(rng, vdaf.RAND_SIZE))
        elif vdaf.ID == 3:
            public, shares = vdaf.shard(
                int(rng.integers(0, valid.length)), nonce, _bytes(rng, vdaf.RAND_SIZE)
            )
        else:
            m = [int(x) for x in rng.integers(0, 2**valid.bits, valid.length)]
            public, shares = vdaf.shard(m, nonce, _bytes(rng, vdaf.RAND_SIZE))
        enc_public = vdaf.encode_public_share(public)
        enc = [vdaf.encode_input_share(s) for s in shares]
        if kind == 2:  # random leader share, every element in range
            raw = bytearray(_bytes(rng, len(enc[0]) - 16))
            raw[15::16] = bytes([0x7F]) * (len(raw) // 16)
            enc[0] = bytes(raw) + enc[0][-16:]
        elif kind == 3:  # one leader element >= p
            pos = 16 * int(rng.integers(0, (len(enc[0]) - 16) // 16))
            enc[0] = (
                enc[0][:pos] + (P + int(rng.integers(0, 2**60))).to_bytes(16, "little") + enc[0][pos + 16 :]
            )
        elif kind == 4:  # a tampered joint randomness part
            enc_public = bytes([enc_public[0] ^ 1]) + enc_public[1:]
        elif kind == 5:  # malformed lengths
            enc[int(rng.integers(0, vdaf.SHARES))] += b"\0"
        elif kind == 6:
            enc_public = enc_public[:-1]
        elif i == 8:  # honest, as bytearrays (the per-report path takes any bytes-like share)
            enc = [bytearray(e) for e in enc]
        out.append((nonce, enc_public, enc))
    return out


def _prepare(vdaf: Prio3, reports: list[tuple[bytes, bytes, list[bytes]]]) -> tuple[list[Any], list[Any]]:
    preps = [
        vdaf.prep_init_batch(
            KEY, j, None, [r[0] for r in reports], [r[1] for r in reports], [r[2][j] for r in reports]
        )
        for j in range(vdaf.SHARES)
    ]
    pairs, idx = [], []
    for i in range(len(reports)):
        if not any(isinstance(p[i], VdafError) for p in preps):
            shares = [p[i][1] for p in preps]
            if i % 16 == 7:  # altered verifier share
                shares[0] = bytes([shares[0][0] ^ 1]) + shares[0][1:]
            if i % 16 == 15:  # a verifier element >= p
                shares[-1] = b"\xff" * 16 + shares[-1][16:]
            pairs.append(shares)
            idx.append(i)
    return preps, [idx, vdaf.prep_shares_to_prep_batch(None, pairs)]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, VdafError) or isinstance(b, VdafError):
        return isinstance(a, VdafError) and isinstance(b, VdafError)
    return a == b


@pytest.mark.parametrize(
    "vdaf",
    [
        Prio3Histogram(64, 8),
        Prio3Histogram(33, 5),
        Prio3Histogram(7, 3, shares=3),
        Prio3Histogram(1, 1),
        Prio3Histogram(5, 9),
        Prio3SumVec(3, 5, 4),
        Prio3SumVec(1, 1, 1),
    ],
)
def test_compiled_and_numpy_paths_agree(vdaf: Prio3, monkeypatch: pytest.MonkeyPatch) -> None:
    reports = _reports(vdaf, np.random.default_rng(vdaf.flp.MEAS_LEN), 48)
    results = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("PRIVSTATS_VDAF_JIT", flag)
        assert batch.jit_enabled() is (flag == "1")
        results[flag] = _prepare(vdaf, reports)
    (preps_jit, (idx_jit, msgs_jit)), (preps_np, (idx_np, msgs_np)) = results["1"], results["0"]
    for j in range(vdaf.SHARES):
        for a, b in zip(preps_jit[j], preps_np[j], strict=True):
            if isinstance(a, VdafError) or isinstance(b, VdafError):
                assert _same(a, b)
            else:
                assert a[1] == b[1] and a[0][1] == b[0][1] and bytes(a[0][0]) == bytes(b[0][0])
    assert idx_jit == idx_np
    assert all(_same(a, b) for a, b in zip(msgs_jit, msgs_np, strict=True))
    accepted = [i for i, m in zip(idx_jit, msgs_jit, strict=True) if isinstance(m, bytes)]
    # honest reports (kinds 0 and 7, untouched verifier shares) pass; every invalid kind is rejected
    assert accepted == [i for i in idx_jit if i % 8 in (0, 7) and i % 16 not in (7, 15)]
    assert len(accepted) >= 6


def test_kernel_flags_degenerate_query_points_and_out_of_range_randomness() -> None:
    vdaf = Prio3Histogram(16, 4)
    c = batch._consts(vdaf)
    n = 5
    meas = np.zeros((n, vdaf.flp.MEAS_LEN, 2), dtype=np.uint64)
    proof = np.zeros((n, vdaf.flp.PROOF_LEN, 2), dtype=np.uint64)
    root = Field128.root(8)  # 4 gadget calls: P = 8
    # t = 3 and t = 4 fine, t = 1 and t = another 8th root of unity degenerate, u >= p
    rnd = _words([5, 7, 3, 5, 7, 1, 5, 7, root**3 % P, 5, P, 3, 5, 7, 4]).reshape(n, 3, 2)
    ver = np.empty((n, vdaf.flp.VERIFIER_LEN, 2), dtype=np.uint64)
    status = np.empty(n, dtype=np.uint8)
    args = (c.jit["zeta_pows"], c.jit["s_weights"], c.jit["inverses"], c.chunk, True, True, ver, status)
    jit.prep_kernel(meas, proof, rnd, *args)
    assert status.tolist() == [0, 2, 2, 1, 0]
    # the flagged reports do not disturb the others (one inversion serves the whole batch)
    alone = np.empty_like(ver[:1])
    jit.prep_kernel(meas[4:], proof[4:], rnd[4:], *args[:-2], alone, status[:1])
    assert status[0] == 0 and np.array_equal(alone[0], ver[4])


def _norm(results: list[Any]) -> list[Any]:
    """Comparable form of per-report results: ("error",) for a VdafError."""
    out = []
    for r in results:
        if isinstance(r, VdafError):
            out.append(("error",))
        elif isinstance(r, tuple):
            out.append((r[1], r[0][1], bytes(r[0][0])))
        else:
            out.append(r)
    return out


def test_a_failing_kernel_falls_back_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """numba is optional: a kernel that cannot compile or run here switches to the numpy path."""
    vdaf = Prio3Histogram(16, 4)
    reports = _reports(vdaf, np.random.default_rng(5), 16)
    monkeypatch.setenv("PRIVSTATS_VDAF_JIT", "0")
    want = _prepare(vdaf, reports)

    def boom(*_args: Any) -> None:
        raise RuntimeError("no kernel here")

    for name in ("prep_kernel", "combine_kernel"):
        with monkeypatch.context() as m:
            m.setenv("PRIVSTATS_VDAF_JIT", "1")
            m.setattr(batch, "_JIT", jit)
            m.setattr(jit, name, boom)
            got = _prepare(vdaf, reports)
            assert batch._JIT is False
        assert [_norm(p) for p in got[0]] == [_norm(p) for p in want[0]]
        assert got[1][0] == want[1][0] and _norm(got[1][1]) == _norm(want[1][1])
