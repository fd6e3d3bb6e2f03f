"""Compiled (numba) Field128 kernels for batch preparation: the closed-form verifier of :mod:`.batch`.

Optional: this module needs numba (the ``serve`` extra installs it); :mod:`.batch` falls back to its
numpy limb arithmetic, with identical bytes, when numba is missing or ``PRIVSTATS_VDAF_JIT=0``.
Kernels are compiled with ``cache=True`` (the first import on a machine compiles them, later ones
load the cache) and are called once per chunk of reports, so all per-report work runs in machine code.

Elements are pairs of little-endian 64-bit words ``(lo, hi)`` in ``[0, p)``, i.e. the VDAF encoding
viewed as ``<u8``, with p = 2^128 - 28 * 2^64 + 1. A product is four 64x64 -> 128-bit multiplies
(an LLVM ``i128`` intrinsic); a reduction folds 2^128 = 28 * 2^64 - 1, 2^192 = 783 * 2^64 - 28 and
2^256 = 21896 * 2^64 - 783 (mod p). Sums of many products (dot products, the wire values'
matrix-vector products) accumulate 32x32-bit partial products unreduced in eight 32-bit columns,
vectorized, and are reduced once. The Lagrange values of all reports in a call share one field
inversion (Montgomery's trick).

Example:
    >>> import numpy as np
    >>> from privstats.secure.vdaf.field import Field128
    >>> a = np.array([[5, 0], [1, 2]], dtype=np.uint64)  # 5 and 1 + 2 * 2^64
    >>> out = mul_vec(a, a)
    >>> [int(lo) | int(hi) << 64 for lo, hi in out] == [25, (1 + 2 * 2**64) ** 2 % Field128.MODULUS]
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["combine_kernel", "mul_vec", "prep_kernel"]

U = np.uint64
M32 = U(0xFFFFFFFF)
S32 = U(32)
ONES = U(0xFFFFFFFFFFFFFFFF)
ZERO = U(0)
ONE = U(1)
P_HI = U(2**64 - 28)  # p = P_HI * 2^64 + 1
C27 = U(27)  # 2^128 - p = 28 * 2^64 - 1 = 27 * 2^64 + (2^64 - 1)
K28, K783, K21896 = U(28), U(783), U(21896)


@njit(cache=True)
def _add2(a0: Any, a1: Any, b0: Any, b1: Any) -> Any:
    """(a0 + a1 2^64) + (b0 + b1 2^64) mod 2^128."""
    s0 = a0 + b0
    return s0, a1 + b1 + U(s0 < a0)


def _mul64_typing(typingctx: Any, x: Any, y: Any) -> Any:
    """Full 128-bit product of two 64-bit words, as (lo, hi): one 64x64 -> 128-bit multiply (LLVM i128)."""
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i64, i128 = ir.IntType(64), ir.IntType(128)
        prod = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        lo = builder.trunc(prod, i64)
        hi = builder.trunc(builder.lshr(prod, ir.Constant(i128, 64)), i64)
        return context.make_tuple(builder, signature.return_type, (lo, hi))

    return sig, codegen


_mul64: Any = intrinsic(_mul64_typing)


@njit(cache=True)
def _canon(r0: Any, r1: Any) -> Any:
    """r mod p for r < 2^128 (one conditional subtraction: r + 2^128 - p overflows iff r >= p)."""
    t0 = r0 + ONES
    t1 = r1 + C27 + U(r0 != ZERO)
    over = t1 < r1
    return (t0 if over else r0), (t1 if over else r1)


@njit(cache=True)
def _reduce5(w0: Any, w1: Any, w2: Any, w3: Any, w4: Any) -> Any:
    """w0 + w1 2^64 + w2 2^128 + w3 2^192 + w4 2^256 mod p, for w4 < 2^32."""
    # x = w0 - N + 2^64 B with N = w2 + 28 w3 + 783 w4 (< 2^75) and B = w1 + 28 w2 + 783 w3 + 21896 w4.
    n0, n1 = _mul64(w3, K28)
    a0, a1 = _mul64(w4, K783)
    n0, n1 = _add2(n0, n1, a0, a1)
    n0, n1 = _add2(n0, n1, w2, ZERO)
    b0, b1 = _mul64(w2, K28)
    a0, a1 = _mul64(w3, K783)
    b0, b1 = _add2(b0, b1, a0, a1)
    a0, a1 = _mul64(w4, K21896)
    b0, b1 = _add2(b0, b1, a0, a1)
    b0, b1 = _add2(b0, b1, w1, ZERO)
    # y = w0 + 2^64 B + p - N >= 0 (N < p), as three words with y2 < 2^22.
    y0 = w0 + ONE
    c = U(y0 == ZERO)
    s = b0 + P_HI
    c1 = U(s < b0)
    y1 = s + c
    c1 += U(y1 < s)
    y2 = b1 + c1
    borrow = U(y0 < n0)
    y0 = y0 - n0
    d = y1 - n1
    borrow2 = U(y1 < n1) + U(d < borrow)
    y1 = d - borrow
    y2 = y2 - borrow2
    # z = y0 - y2 + 2^64 (y1 + 28 y2) >= 0 (< 2^128 + 2^91): z2 is 0 or 1.
    z0 = y0 - y2
    borrow = U(y0 < y2)
    s = y1 + y2 * K28
    c = U(s < y1)
    z1 = s - borrow
    z2 = c - U(s < borrow)
    # fold z2 2^128 = z2 (28 * 2^64 - 1); no overflow since z < 2^91 when z2 = 1.
    r0 = z0 + (ZERO - z2)
    r1 = z1 + C27 * z2 + U(r0 < z0)
    return _canon(r0, r1)


@njit(cache=True)
def _mul(a0: Any, a1: Any, b0: Any, b1: Any) -> Any:
    """a * b mod p."""
    l00, h00 = _mul64(a0, b0)
    l01, h01 = _mul64(a0, b1)
    l10, h10 = _mul64(a1, b0)
    l11, h11 = _mul64(a1, b1)
    w1 = h00 + l01
    k = U(w1 < h00)
    t = w1 + l10
    k += U(t < w1)
    w1 = t
    w2 = h01 + h10
    k2 = U(w2 < h01)
    t = w2 + l11
    k2 += U(t < w2)
    w2 = t + k
    k2 += U(w2 < t)
    return _reduce5(l00, w1, w2, h11 + k2, ZERO)


@njit(cache=True)
def _add(a0: Any, a1: Any, b0: Any, b1: Any) -> Any:
    """a + b mod p."""
    s0 = a0 + b0
    c = U(s0 < a0)
    t = a1 + b1
    top = t < a1
    s1 = t + c
    top = top or s1 < t
    if top:  # a + b - p = a + b + (2^128 - p) - 2^128 < p: no further reduction
        t0 = s0 + ONES
        return t0, s1 + C27 + U(s0 != ZERO)
    return _canon(s0, s1)


@njit(cache=True)
def _sub(a0: Any, a1: Any, b0: Any, b1: Any) -> Any:
    """a - b mod p."""
    d0 = a0 - b0
    borrow = U(a0 < b0)
    d1 = a1 - b1 - borrow
    neg = (a1 < b1) or (a1 - b1 < borrow)
    if neg:  # add p = P_HI * 2^64 + 1 (mod 2^128)
        e0 = d0 + ONE
        return e0, d1 + P_HI + U(e0 == ZERO)
    return d0, d1


@njit(cache=True)
def _acc(acc: Any, a0: Any, a1: Any, b0: Any, b1: Any) -> None:
    """acc[0:8] += the 16 partial products of a * b, split at 32 bits (unreduced)."""
    x0, x1, x2, x3 = a0 & M32, a0 >> S32, a1 & M32, a1 >> S32
    y0, y1, y2, y3 = b0 & M32, b0 >> S32, b1 & M32, b1 >> S32
    _acc_row(acc, 0, x0 * y0, x0 * y1, x0 * y2, x0 * y3)
    _acc_row(acc, 1, x1 * y0, x1 * y1, x1 * y2, x1 * y3)
    _acc_row(acc, 2, x2 * y0, x2 * y1, x2 * y2, x2 * y3)
    _acc_row(acc, 3, x3 * y0, x3 * y1, x3 * y2, x3 * y3)


@njit(cache=True)
def _acc_row(acc: Any, i: int, p0: Any, p1: Any, p2: Any, p3: Any) -> None:
    """acc[i:i+5] += p0 + p1 2^32 + p2 2^64 + p3 2^96, split at 32 bits (each p < 2^64)."""
    acc[i] += p0 & M32
    acc[i + 1] += (p0 >> S32) + (p1 & M32)
    acc[i + 2] += (p1 >> S32) + (p2 & M32)
    acc[i + 3] += (p2 >> S32) + (p3 & M32)
    acc[i + 4] += p3 >> S32


@njit(cache=True)
def _settle(col: Any) -> Any:
    """sum_c col[c] 2^(32 c) mod p (col: 8 columns, each < 2^62)."""
    t = col[0]
    d0 = t & M32
    t = col[1] + (t >> S32)
    d1 = t & M32
    t = col[2] + (t >> S32)
    d2 = t & M32
    t = col[3] + (t >> S32)
    d3 = t & M32
    t = col[4] + (t >> S32)
    d4 = t & M32
    t = col[5] + (t >> S32)
    d5 = t & M32
    t = col[6] + (t >> S32)
    d6 = t & M32
    t = col[7] + (t >> S32)
    return _reduce5(d0 | (d1 << S32), d2 | (d3 << S32), d4 | (d5 << S32), d6 | (t << S32), t >> S32)


@njit(cache=True)
def _matvec(left: Any, right: Any, acc: Any, out: Any) -> None:
    """out[j] = sum_k left[k] * right[k, :, j] mod p; left (K, 2) words, right (K, 4, J) 32-bit limbs.

    The partial products accumulate unreduced in acc (8, J) (fine for K < 2^24), the loop over j
    innermost and contiguous (vectorized), then each column is reduced once.
    """
    acc[...] = ZERO
    n_j = right.shape[2]
    for k in range(left.shape[0]):
        w0, w1, w2, w3 = left[k, 0] & M32, left[k, 0] >> S32, left[k, 1] & M32, left[k, 1] >> S32
        for limb in range(4):
            row = right[k, limb]
            a0, a1, a2, a3, a4 = acc[limb], acc[limb + 1], acc[limb + 2], acc[limb + 3], acc[limb + 4]
            for j in range(n_j):
                m = row[j]
                p0, p1, p2, p3 = w0 * m, w1 * m, w2 * m, w3 * m
                a0[j] += p0 & M32
                a1[j] += (p0 >> S32) + (p1 & M32)
                a2[j] += (p1 >> S32) + (p2 & M32)
                a3[j] += (p2 >> S32) + (p3 & M32)
                a4[j] += p3 >> S32
    for j in range(n_j):
        out[j, 0], out[j, 1] = _settle(acc[:, j])


@njit(cache=True)
def mul_vec(a: Any, b: Any) -> Any:
    """Element-wise products mod p of two (n, 2) uint64 arrays (for tests and the docstring)."""
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i, 0], out[i, 1] = _mul(a[i, 0], a[i, 1], b[i, 0], b[i, 1])
    return out


@njit(cache=True)
def _in_range(x: Any) -> bool:
    """Every element of an (m, 2) array is < p."""
    bad = False
    for i in range(x.shape[0]):  # a loop, not all(generator): numba compiles loops
        bad = bad or x[i, 1] > P_HI or (x[i, 1] == P_HI and x[i, 0] != ZERO)
    return not bad


@njit(cache=True)
def _dot(a: Any, b: Any, acc: Any) -> Any:
    """sum_i a[i] * b[i] mod p over the rows of two (m, 2) arrays (acc: scratch of 8 words).

    The eight columns are local sums (not stores), so the loop vectorizes as reductions.
    """
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = ZERO
    for i in range(a.shape[0]):
        x0, x1, x2, x3 = a[i, 0] & M32, a[i, 0] >> S32, a[i, 1] & M32, a[i, 1] >> S32
        y0, y1, y2, y3 = b[i, 0] & M32, b[i, 0] >> S32, b[i, 1] & M32, b[i, 1] >> S32
        p00, p01, p02, p03 = x0 * y0, x0 * y1, x0 * y2, x0 * y3
        p10, p11, p12, p13 = x1 * y0, x1 * y1, x1 * y2, x1 * y3
        p20, p21, p22, p23 = x2 * y0, x2 * y1, x2 * y2, x2 * y3
        p30, p31, p32, p33 = x3 * y0, x3 * y1, x3 * y2, x3 * y3
        c0 += p00 & M32
        c1 += (p00 >> S32) + (p01 & M32) + (p10 & M32)
        c2 += (p01 >> S32) + (p10 >> S32) + (p02 & M32) + (p11 & M32) + (p20 & M32)
        c3 += (
            (p02 >> S32) + (p11 >> S32) + (p20 >> S32) + (p03 & M32) + (p12 & M32) + (p21 & M32) + (p30 & M32)
        )
        c4 += (
            (p03 >> S32)
            + (p12 >> S32)
            + (p21 >> S32)
            + (p30 >> S32)
            + (p13 & M32)
            + (p22 & M32)
            + (p31 & M32)
        )
        c5 += (p13 >> S32) + (p22 >> S32) + (p31 >> S32) + (p23 & M32) + (p32 & M32)
        c6 += (p23 >> S32) + (p32 >> S32) + (p33 & M32)
        c7 += p33 >> S32
    acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7] = c0, c1, c2, c3, c4, c5, c6, c7
    return _settle(acc)


@njit(cache=True)
def _powers(x0: Any, x1: Any, out: Any) -> None:
    """out[i] = x^i (two interleaved chains with step x^2: independent multiplies overlap)."""
    out[0, 0], out[0, 1] = ONE, ZERO
    if out.shape[0] > 1:
        out[1, 0], out[1, 1] = x0, x1
        sq0, sq1 = _mul(x0, x1, x0, x1)
        for i in range(2, out.shape[0]):
            out[i, 0], out[i, 1] = _mul(out[i - 2, 0], out[i - 2, 1], sq0, sq1)


@njit(cache=True)
def _wire_products(meas: Any, weights: Any, chunk: int, m32: Any, acc: Any, prods: Any) -> None:
    """prods[v, j] = sum_k weights[k, v] * meas[k * chunk + j] (meas zero padded to calls * chunk)."""
    n_meas, calls = meas.shape[0], m32.shape[0]
    for k in range(calls):
        for j in range(chunk):
            idx = k * chunk + j
            lo, hi = (meas[idx, 0], meas[idx, 1]) if idx < n_meas else (ZERO, ZERO)
            m32[k, 0, j], m32[k, 1, j], m32[k, 2, j], m32[k, 3, j] = lo & M32, lo >> S32, hi & M32, hi >> S32
    for v in range(2):
        _matvec(weights[:, v], m32, acc, prods[v])


@njit(cache=True)
def _weights(lag: Any, r0: Any, r1: Any, rp: Any, weights: Any) -> None:
    """weights[k - 1] = (L_k r^(chunk (k-1)), L_k) for k = 1..calls and rp[i] = r^i (i <= chunk)."""
    calls, chunk = weights.shape[0], rp.shape[0] - 1
    _powers(r0, r1, rp)
    step0, step1 = ONE, ZERO
    for k in range(calls):
        weights[k, 0, 0], weights[k, 0, 1] = _mul(lag[k + 1, 0], lag[k + 1, 1], step0, step1)
        weights[k, 1, 0], weights[k, 1, 1] = lag[k + 1, 0], lag[k + 1, 1]
        step0, step1 = _mul(step0, step1, rp[chunk, 0], rp[chunk, 1])


@njit(cache=True)
def _inverse(x0: Any, x1: Any) -> Any:
    """x^(p - 2) = 1/x (x != 0); p - 2 = (2^64 - 29) 2^64 + (2^64 - 1)."""
    r0, r1 = ONE, ZERO
    for word in (P_HI - ONE, ONES):
        for b in range(63, -1, -1):
            r0, r1 = _mul(r0, r1, r0, r1)
            if (word >> U(b)) & ONE:
                r0, r1 = _mul(r0, r1, x0, x1)
    return r0, r1


@njit(cache=True)
def _lagrange(tp: Any, status: Any, zeta_pows: Any, size_inv: Any, den: Any, pre: Any, lag: Any) -> None:
    """lag[n, k] = L_k(t_n) = (t^P - 1) / (P (t zeta^k - 1)) for every report n with status 0.

    tp[n] holds t^0..t^P. One field inversion serves all reports and all k (Montgomery's trick);
    t zeta^k - 1 is nonzero because t is not a P-th root of unity (status 2 otherwise).
    """
    n_rep, kk, size = tp.shape[0], zeta_pows.shape[0], tp.shape[1] - 1
    cum = np.empty((n_rep, 2), dtype=np.uint64)  # product of the earlier reports' D_n
    dprod = np.empty((n_rep, 2), dtype=np.uint64)  # D_n = prod_k (t zeta^k - 1)
    c0, c1 = ONE, ZERO
    for n in range(n_rep):
        cum[n, 0], cum[n, 1] = c0, c1
        if status[n]:
            continue
        a0, a1 = ONE, ZERO
        for k in range(kk):
            d0, d1 = _mul(tp[n, 1, 0], tp[n, 1, 1], zeta_pows[k, 0], zeta_pows[k, 1])
            d0, d1 = _sub(d0, d1, ONE, ZERO)
            den[n, k, 0], den[n, k, 1] = d0, d1
            pre[n, k, 0], pre[n, k, 1] = a0, a1
            a0, a1 = _mul(a0, a1, d0, d1)
        dprod[n, 0], dprod[n, 1] = a0, a1
        c0, c1 = _mul(c0, c1, a0, a1)
    inv0, inv1 = _inverse(c0, c1)
    for n in range(n_rep - 1, -1, -1):
        if status[n]:
            continue
        i0, i1 = _mul(inv0, inv1, cum[n, 0], cum[n, 1])  # 1 / D_n
        inv0, inv1 = _mul(inv0, inv1, dprod[n, 0], dprod[n, 1])
        s0, s1 = _sub(tp[n, size, 0], tp[n, size, 1], ONE, ZERO)
        s0, s1 = _mul(s0, s1, size_inv[0], size_inv[1])
        for k in range(kk - 1, -1, -1):
            e0, e1 = _mul(i0, i1, pre[n, k, 0], pre[n, k, 1])  # 1 / (t zeta^k - 1)
            i0, i1 = _mul(i0, i1, den[n, k, 0], den[n, k, 1])
            lag[n, k, 0], lag[n, k, 1] = _mul(s0, s1, e0, e1)


@njit(cache=True)
def prep_kernel(
    meas: Any,
    proof: Any,
    rnd: Any,
    zeta_pows: Any,
    s_weights: Any,
    inverses: Any,
    chunk: int,
    histogram: bool,
    check_range: bool,
    ver: Any,
    status: Any,
) -> None:
    """Verifier shares of n reports of a ParallelSum(Mul) circuit (SumVec, Histogram), one proof.

    meas (n, MEAS_LEN, 2), proof (n, PROOF_LEN, 2), rnd (n, 3, 2) = (r, u, t) per report (u unused
    without ``histogram``); zeta_pows (calls + 1, 2): zeta^k for zeta = 1 / alpha, alpha the P-th
    root of unity; s_weights (2P - 1, 2); inverses (2, 2): 1/SHARES and 1/P. Writes ver
    (n, 2 chunk + 2, 2) and status (n,): 0 done, 1 an element >= p (input or randomness: the caller
    redoes that report by the draft's algorithm), 2 t^P == 1.
    """
    n_rep, calls, size = meas.shape[0], zeta_pows.shape[0] - 1, (s_weights.shape[0] + 1) // 2
    shares_inv = inverses[0]
    m32 = np.empty((calls, 4, chunk), dtype=np.uint64)
    acc_w = np.empty((8, chunk), dtype=np.uint64)
    acc = np.empty(8, dtype=np.uint64)
    prods = np.empty((2, chunk, 2), dtype=np.uint64)
    tp = np.empty((n_rep, size + 1, 2), dtype=np.uint64)
    den = np.empty((n_rep, calls + 1, 2), dtype=np.uint64)
    pre = np.empty((n_rep, calls + 1, 2), dtype=np.uint64)
    lag = np.empty((n_rep, calls + 1, 2), dtype=np.uint64)
    rp = np.empty((chunk + 1, 2), dtype=np.uint64)
    weights = np.empty((calls, 2, 2), dtype=np.uint64)
    for n in range(n_rep):
        status[n] = 0
        if not _in_range(rnd[n]) or (check_range and not (_in_range(meas[n]) and _in_range(proof[n]))):
            status[n] = 1
            continue
        _powers(rnd[n, 2, 0], rnd[n, 2, 1], tp[n])
        if tp[n, size, 0] == ONE and tp[n, size, 1] == ZERO:
            status[n] = 2
    _lagrange(tp, status, zeta_pows, inverses[1], den, pre, lag)
    for n in range(n_rep):
        if status[n]:
            continue
        _weights(lag[n], rnd[n, 0, 0], rnd[n, 0, 1], rp, weights)
        _wire_products(meas[n], weights, chunk, m32, acc_w, prods)
        _verifier(
            n, meas[n], proof[n], rnd[n], lag[n], rp, prods, tp[n], s_weights, shares_inv, histogram, acc, ver
        )


@njit(cache=True)
def _verifier(
    n: int,
    meas: Any,
    proof: Any,
    rnd: Any,
    lag: Any,
    rp: Any,
    prods: Any,
    tp: Any,
    s_weights: Any,
    shares_inv: Any,
    histogram: bool,
    acc: Any,
    ver: Any,
) -> None:
    """ver[n] = (circuit output, wire values at t, gadget polynomial at t) from the products."""
    chunk, size = prods.shape[1], tp.shape[0] - 1
    l0, l1 = lag[0, 0], lag[0, 1]
    corr0, corr1 = ZERO, ZERO
    for k in range(1, lag.shape[0]):
        corr0, corr1 = _add(corr0, corr1, lag[k, 0], lag[k, 1])
    corr0, corr1 = _mul(corr0, corr1, shares_inv[0], shares_inv[1])
    for j in range(chunk):
        a0, a1 = _mul(rp[j + 1, 0], rp[j + 1, 1], prods[0, j, 0], prods[0, j, 1])
        b0, b1 = _mul(l0, l1, proof[2 * j, 0], proof[2 * j, 1])
        ver[n, 1 + 2 * j, 0], ver[n, 1 + 2 * j, 1] = _add(a0, a1, b0, b1)
        b0, b1 = _mul(l0, l1, proof[2 * j + 1, 0], proof[2 * j + 1, 1])
        a0, a1 = _add(prods[1, j, 0], prods[1, j, 1], b0, b1)
        ver[n, 2 + 2 * j, 0], ver[n, 2 + 2 * j, 1] = _sub(a0, a1, corr0, corr1)
    coefs = proof[2 * chunk :]
    d0, d1 = _dot(coefs, s_weights, acc)
    g0, g1 = _dot(coefs[:size], tp[:size], acc)
    h0, h1 = _dot(coefs[size:], tp[: coefs.shape[0] - size], acc)
    h0, h1 = _mul(h0, h1, tp[size, 0], tp[size, 1])
    ver[n, 2 * chunk + 1, 0], ver[n, 2 * chunk + 1, 1] = _add(g0, g1, h0, h1)
    if histogram:
        acc[:] = ZERO
        for i in range(meas.shape[0]):
            acc[0] += meas[i, 0] & M32
            acc[1] += meas[i, 0] >> S32
            acc[2] += meas[i, 1] & M32
            acc[3] += meas[i, 1] >> S32
        s0, s1 = _settle(acc)
        s0, s1 = _sub(s0, s1, shares_inv[0], shares_inv[1])
        u0, u1 = rnd[1, 0], rnd[1, 1]
        uu0, uu1 = _mul(u0, u1, u0, u1)
        s0, s1 = _mul(uu0, uu1, s0, s1)
        d0, d1 = _mul(u0, u1, d0, d1)
        d0, d1 = _add(d0, d1, s0, s1)
    ver[n, 0, 0], ver[n, 0, 1] = d0, d1


@njit(cache=True)
def combine_kernel(ver: Any, status: Any) -> None:
    """Decide n reports from their verifier shares ver (n, SHARES, 2 chunk + 2, 2).

    status (n,): 0 accept, 1 an element >= p, 2 the proof check fails (circuit output != 0 or
    sum_j x_2j x_2j+1 != y for the combined verifier).
    """
    n_ver = ver.shape[2]
    chunk = (n_ver - 2) // 2
    tot = np.empty((n_ver, 2), dtype=np.uint64)
    acc = np.empty(8, dtype=np.uint64)
    for n in range(ver.shape[0]):
        ok = True
        for s in range(ver.shape[1]):
            ok = ok and _in_range(ver[n, s])
        if not ok:
            status[n] = 1
            continue
        tot[:] = ver[n, 0]
        for s in range(1, ver.shape[1]):
            for i in range(n_ver):
                tot[i, 0], tot[i, 1] = _add(tot[i, 0], tot[i, 1], ver[n, s, i, 0], ver[n, s, i, 1])
        acc[:] = ZERO
        for j in range(chunk):
            _acc(acc, tot[1 + 2 * j, 0], tot[1 + 2 * j, 1], tot[2 + 2 * j, 0], tot[2 + 2 * j, 1])
        g0, g1 = _settle(acc)
        zero_out = tot[0, 0] == ZERO and tot[0, 1] == ZERO
        status[n] = 0 if zero_out and g0 == tot[n_ver - 1, 0] and g1 == tot[n_ver - 1, 1] else 2
