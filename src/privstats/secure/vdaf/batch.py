"""Batch preparation for Prio3 over many reports: same bytes as :meth:`Prio3.prep_init`, much faster.

For the ParallelSum(Mul) circuits (Prio3SumVec, Prio3Histogram) the verifier share is computed in
closed form. With A_k = L_k(t) r^((k-1)c), the wire polynomials at the query point t are

    x_2j   = L_0 s_2j   + r^(j+1) * sum_k A_k m[k, j]
    x_2j+1 = L_0 s_2j+1 + sum_k L_k m[k, j] - (1/SHARES) sum_k L_k

(k = 1..M gadget calls, j < chunk_length, L the Lagrange basis over the P-th roots of unity), so the
measurement share enters only through two matrix-vector products per report. These run as float64
matrix products on 16-bit limbs (:mod:`privstats.secure.vdaf.limbs`), with the measurement share
never converted to Python ints. The L_k(t) themselves are one product of the powers of t with the
constant inverse-DFT matrix, for all reports at once. The circuit output is v = sum_k G(alpha^k) =
<g, S> with the constant S_c = sum_k alpha^(k c) (times u, plus u^2 (sum m - 1/SHARES), for the
histogram). Other circuits
(Count, Sum) fall back to the per-report algorithm.

Two implementations give the same bytes: compiled kernels (:mod:`.jit`, when numba is installed,
as with the ``serve`` extra; all per-report arithmetic in machine code, about 13 us a report for
Prio3Histogram(1024, 32)) and numpy limb arithmetic (``PRIVSTATS_VDAF_JIT=0`` or without numba).

Example:
    >>> import os
    >>> from privstats.secure.vdaf import Prio3Histogram
    >>> vdaf = Prio3Histogram(8, 3)
    >>> key, nonce = bytes(16), bytes(range(16))
    >>> public, shares = vdaf.shard(5, nonce, bytes(vdaf.RAND_SIZE))
    >>> enc = vdaf.encode_input_share(shares[1])
    >>> [(state, share)] = prep_init_batch(vdaf, key, 1, None, [nonce], [vdaf.encode_public_share(public)], [enc])
    >>> single = vdaf.prep_init(key, 1, None, nonce, public, shares[1])
    >>> share == vdaf.encode_prep_share(single[1])
    True
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privstats.secure.vdaf import limbs
from privstats.secure.vdaf.circuits import Histogram, SumVec, check_int
from privstats.secure.vdaf.errors import VdafError
from privstats.secure.vdaf.xof import SEED_SIZE, XofTurboShake128, squeeze

# a Prio3 instance, typed loosely: prio3.py imports this module, so importing Prio3 here would be a loop
Prio3 = Any

__all__ = ["aggregate_encoded", "jit_enabled", "prep_init_batch", "prep_shares_to_prep_batch", "warm_up"]


@dataclass
class _Consts:
    """Per-instance constants of the closed-form verifier."""

    calls: int
    chunk: int
    size: int
    s_weights: list[int]
    shares_inv: int
    s_split: np.ndarray
    idft32: np.ndarray
    shares_inv_limbs: np.ndarray
    jit: dict[str, Any] = field(default_factory=dict)  # the same constants for :mod:`.jit`


def _consts(vdaf: Prio3) -> _Consts:
    cached = getattr(vdaf, "_batch_consts", None)
    if cached is not None:
        return cached
    valid: Any = vdaf.valid
    field, p = vdaf.field, vdaf.field.MODULUS
    calls, chunk = valid.GADGET_CALLS[0], valid.chunk_length
    size = 1 << calls.bit_length()  # next power of two >= calls + 1
    alpha = field.root(size)
    alpha_pows = [pow(alpha, k, p) for k in range(size)]
    n_coef = 2 * (size - 1) + 1
    s_weights = [sum(alpha_pows[(k * c) % size] for k in range(1, calls + 1)) % p for c in range(n_coef)]
    size_inv, shares_inv = pow(size, p - 2, p), pow(vdaf.SHARES, p - 2, p)
    zeta = pow(alpha, p - 2, p)
    idft = [pow(zeta, k * i, p) * size_inv % p for i in range(size) for k in range(calls + 1)]
    consts = _Consts(
        calls,
        chunk,
        size,
        s_weights,
        shares_inv,
        limbs.from_ints([*s_weights, 0]).reshape(2, size, limbs.NLIMB).transpose(1, 0, 2),
        limbs.to_limbs32(limbs.from_ints(idft).reshape(size, calls + 1, limbs.NLIMB)),
        limbs.from_ints([shares_inv]),
    )
    consts.jit = {
        "zeta_pows": _words([pow(zeta, k, p) for k in range(calls + 1)]),
        "s_weights": _words(s_weights),
        "inverses": _words([shares_inv, size_inv]),
        "prefix": {u: bytes([len(d)]) + d for u, d in vdaf._dst.items()},
    }
    vdaf._batch_consts = consts
    return consts


def _words(values: list[int]) -> np.ndarray:
    """(len, 2) uint64 (lo, hi) words of Field128 ints."""
    return np.array([(x & (2**64 - 1), x >> 64) for x in values], dtype=np.uint64).reshape(-1, 2)


_JIT: Any = None
log = logging.getLogger("privstats.vdaf")


class _KernelFailed(Exception):
    """A compiled kernel raised (did not compile or run here); the cause is chained."""


def _jit_failed(exc: BaseException | None) -> None:
    """A kernel that does not compile or run on this machine: the numpy path from now on."""
    global _JIT
    _JIT = False
    log.warning("compiled VDAF kernels failed (%r); using the numpy path", exc)


def jit_enabled() -> bool:
    """True when the compiled kernels (:mod:`.jit`, numba) run the batch paths.

    numba is optional (the ``serve`` extra); ``PRIVSTATS_VDAF_JIT=0`` selects the numpy limb path,
    which gives the same bytes.
    """
    global _JIT
    if os.environ.get("PRIVSTATS_VDAF_JIT", "1") == "0":
        return False
    if _JIT is None:
        try:
            from privstats.secure.vdaf import jit

            _JIT = jit
        except ImportError:
            _JIT = False
    return _JIT is not False


def warm_up(vdaf: Prio3) -> None:
    """Build the cached tables and compile (or load from numba's cache) the kernels, e.g. when a
    server starts: one report sharded, prepared by the leader and a helper, and combined."""
    nonce, key = bytes(vdaf.NONCE_SIZE), bytes(vdaf.VERIFY_KEY_SIZE)
    try:
        public, shares = vdaf.shard_encoded(0, nonce, bytes(vdaf.RAND_SIZE))
    except Exception:  # a measurement 0 that this VDAF does not take: skip the warm-up
        return
    preps = [
        prep_init_batch(vdaf, key, j, None, [nonce], [public], [shares[j]])[0] for j in range(vdaf.SHARES)
    ]
    if not any(isinstance(res, VdafError) for res in preps):
        prep_shares_to_prep_batch(vdaf, None, [[res[1] for res in preps]])


def _fast_path(vdaf: Prio3) -> bool:
    return isinstance(vdaf.valid, (Histogram, SumVec)) and vdaf.PROOFS == 1


def prep_init_batch(
    vdaf: Prio3,
    verify_key: bytes,
    agg_id: int,
    agg_param: None,
    nonces: list[bytes],
    public_shares: list[bytes],
    input_shares: list[bytes],
) -> list[Any]:
    """``prep_init`` for many reports given their *encoded* public and input shares.

    Returns, per report, ``(prep_state, encoded_prep_share)`` or the :class:`VdafError` that report
    raised (a malformed share rejects only its own report). ``prep_state``'s output share is the encoded
    output share (bytes); :meth:`Prio3.prep_next`, :meth:`Prio3.aggregate` and
    :meth:`Prio3.encode_prep_state` accept it.
    """
    if not (len(nonces) == len(public_shares) == len(input_shares)):
        raise ValueError("nonces, public_shares and input_shares must have the same length")
    vdaf._check_bytes("verify_key", verify_key, vdaf.VERIFY_KEY_SIZE)
    check_int("agg_id", agg_id, 0, vdaf.SHARES - 1)
    if not _fast_path(vdaf):
        return [
            _single(vdaf, verify_key, agg_id, n, ps, ins)
            for n, ps, ins in zip(nonces, public_shares, input_shares, strict=True)
        ]
    if jit_enabled():
        try:
            return [
                res
                for start in range(0, len(nonces), 256)
                for res in _prep_jit(
                    vdaf,
                    verify_key,
                    agg_id,
                    nonces[start : start + 256],
                    public_shares[start : start + 256],
                    input_shares[start : start + 256],
                )
            ]
        except _KernelFailed as exc:  # an optional accelerator must not take the server down
            _jit_failed(exc.__cause__)
    results: list[Any] = [None] * len(nonces)
    todo = []
    for i, (nonce, ps, ins) in enumerate(zip(nonces, public_shares, input_shares, strict=True)):
        try:
            todo.append((i, *_unpack(vdaf, verify_key, agg_id, nonce, ps, ins)))
        except VdafError as exc:
            results[i] = exc
    for start in range(0, len(todo), 128):
        for i, res in _closed_form(vdaf, todo[start : start + 128]):
            results[i] = res
    return results


def _prep_jit(
    vdaf: Prio3, key: bytes, agg_id: int, nonces: list[bytes], publics: list[bytes], inputs: list[bytes]
) -> list[Any]:
    """:func:`prep_init_batch` on the compiled kernel: per report only hashing and slicing run in
    Python; a report the kernel flags (an element >= p, a degenerate query point) or a malformed one
    is redone by :func:`_single`, the draft's algorithm, which raises or rejection-samples."""
    c = _consts(vdaf)
    pre, n_meas, n_proof = c.jit["prefix"], vdaf.flp.MEAS_LEN, vdaf.flp.PROOF_LEN
    hist, shares = isinstance(vdaf.valid, Histogram), vdaf.SHARES
    aid, proofs_b = bytes([agg_id]), bytes([vdaf.PROOFS])
    want = (n_meas + n_proof) * 16 + SEED_SIZE if agg_id == 0 else 3 * SEED_SIZE
    results: list[Any] = [None] * len(nonces)
    rows, metas, proofs, rands = [], [], [], []
    for i, (nonce, ps, ins) in enumerate(zip(nonces, publics, inputs, strict=True)):
        if not (isinstance(nonce, bytes) and isinstance(ps, bytes) and isinstance(ins, bytes)) or (
            len(nonce) != vdaf.NONCE_SIZE or len(ps) != SEED_SIZE * shares or len(ins) != want
        ):
            results[i] = _single(vdaf, key, agg_id, nonce, ps, ins)
            continue
        if agg_id == 0:
            meas, proof = ins[: n_meas * 16], ins[n_meas * 16 : -SEED_SIZE]
        else:
            meas = squeeze(pre[1] + ins[:SEED_SIZE] + aid, n_meas * 16)
            proof = squeeze(pre[2] + ins[SEED_SIZE : 2 * SEED_SIZE] + proofs_b + aid, n_proof * 16)
        part = squeeze(pre[7] + ins[-SEED_SIZE:] + aid + nonce + meas, SEED_SIZE)
        lo, hi = SEED_SIZE * agg_id, SEED_SIZE * (agg_id + 1)
        corrected = squeeze(pre[6] + bytes(SEED_SIZE) + ps[:lo] + part + ps[hi:], SEED_SIZE)
        joint = squeeze(pre[3] + corrected + proofs_b, 32 if hist else 16)
        rands.append(joint + bytes(32 - len(joint)) + squeeze(pre[5] + key + proofs_b + nonce, 16))
        rows.append((i, part, corrected))
        metas.append(meas)
        proofs.append(proof)
    if not rows:
        return results
    n, n_ver = len(rows), vdaf.flp.VERIFIER_LEN
    meas_raw = b"".join(metas)
    ver, status = np.empty((n, n_ver, 2), dtype=np.uint64), np.empty(n, dtype=np.uint8)
    try:
        _JIT.prep_kernel(
            np.frombuffer(meas_raw, dtype="<u8").reshape(n, n_meas, 2),
            np.frombuffer(b"".join(proofs), dtype="<u8").reshape(n, n_proof, 2),
            np.frombuffer(b"".join(rands), dtype="<u8").reshape(n, 3, 2),
            c.jit["zeta_pows"],
            c.jit["s_weights"],
            c.jit["inverses"],
            c.chunk,
            hist,
            agg_id == 0,
            ver,
            status,
        )
    except Exception as exc:
        raise _KernelFailed from exc
    if not hist:
        metas = _truncate(vdaf, np.frombuffer(meas_raw, dtype="<u2").reshape(n, n_meas, limbs.NLIMB), metas)
    ver_raw, stride = ver.tobytes(), n_ver * 16
    for k, (i, part, corrected) in enumerate(rows):
        if status[k]:
            results[i] = _single(vdaf, key, agg_id, nonces[i], publics[i], inputs[i])
        else:
            results[i] = ((metas[k], corrected), ver_raw[k * stride : (k + 1) * stride] + part)
    return results


def _single(vdaf: Prio3, key: bytes, agg_id: int, nonce: bytes, ps: bytes, ins: bytes) -> Any:
    if not isinstance(nonce, bytes) or len(nonce) != vdaf.NONCE_SIZE:
        return VdafError(f"nonce must be {vdaf.NONCE_SIZE} bytes")
    try:
        public = vdaf.decode_public_share(ps)
        (out, seed), share = vdaf.prep_init(
            key, agg_id, None, nonce, public, vdaf.decode_input_share(agg_id, ins)
        )
        return (vdaf.encode_agg_share(out), seed), vdaf.encode_prep_share(share)
    except VdafError as exc:
        return exc


def _unpack(vdaf: Prio3, key: bytes, agg_id: int, nonce: bytes, ps: bytes, ins: bytes) -> tuple[Any, ...]:
    """Decode one report: measurement/proof share bytes, joint randomness and query randomness."""
    if not isinstance(nonce, bytes) or len(nonce) != vdaf.NONCE_SIZE:
        raise VdafError(f"nonce must be {vdaf.NONCE_SIZE} bytes")
    parts = vdaf.decode_public_share(ps)
    size = vdaf.field.ENCODED_SIZE
    n_meas, n_proof = vdaf.flp.MEAS_LEN, vdaf.flp.PROOF_LEN
    if agg_id == 0:
        if len(ins) != (n_meas + n_proof) * size + SEED_SIZE:
            raise VdafError("leader input share has the wrong length")
        meas_raw, proof_raw = ins[: n_meas * size], ins[n_meas * size : (n_meas + n_proof) * size]
        if not limbs.all_in_range(ins[: (n_meas + n_proof) * size]):
            raise VdafError("Field128 element out of range (>= modulus)")
    else:
        if len(ins) != 3 * SEED_SIZE:
            raise VdafError("helper input share has the wrong length")
        meas_raw = _expand_raw(vdaf, ins[:SEED_SIZE], 1, bytes([agg_id]), n_meas)
        proof_raw = _expand_raw(
            vdaf, ins[SEED_SIZE : 2 * SEED_SIZE], 2, bytes([vdaf.PROOFS, agg_id]), n_proof
        )
    blind = ins[-SEED_SIZE:]
    part = vdaf.joint_rand_part(agg_id, blind, meas_raw, nonce)
    assert parts is not None
    parts = list(parts)
    parts[agg_id] = part
    corrected = vdaf.joint_rand_seed(parts)
    joint_rand = vdaf.joint_rands(corrected)
    (t,) = vdaf.query_rands(key, nonce)
    return meas_raw, proof_raw, part, corrected, joint_rand, t


def _expand_raw(vdaf: Prio3, seed: bytes, usage: int, binder: bytes, length: int) -> bytes:
    """Encoded XOF expansion of ``length`` elements (rejection sampling only when needed)."""
    xof = XofTurboShake128(seed, vdaf._dst[usage], binder)
    raw = xof.next(length * vdaf.field.ENCODED_SIZE)
    if limbs.all_in_range(raw):
        return raw
    return XofTurboShake128(seed, vdaf._dst[usage], binder).next_vec_bytes(vdaf.field, length)[1]


def _powers(x: int, count: int, p: int) -> list[int]:
    out = [1] * count
    for i in range(1, count):
        out[i] = out[i - 1] * x % p
    return out


def _report_powers(vdaf: Prio3, t: int, r: int) -> tuple[list[int], list[int], list[int]] | None:
    """t^0..t^P, r^1..r^c and r^(c (k-1)) for k = 1..M; None if t is a P-th root of unity."""
    c = _consts(vdaf)
    p = vdaf.field.MODULUS
    t_pows = _powers(t, c.size + 1, p)
    if t_pows[c.size] == 1:
        return None
    r_pows = _powers(r, c.chunk + 1, p)[1:]
    return t_pows, r_pows, _powers(r_pows[-1], c.calls, p)


def _verifier_parts(vdaf: Prio3, pows: list[tuple[list[int], list[int], list[int]]]) -> dict[str, np.ndarray]:
    """Limb arrays of the per-report weights: Lagrange values L_k(t) come from one product of the
    powers of t with the constant inverse-DFT matrix (L_k(t) = sum_c t^c alpha^(-k c) / P)."""
    c = _consts(vdaf)
    n = len(pows)
    t_pows = limbs.from_ints([x for tp, _, _ in pows for x in tp]).reshape(n, -1, limbs.NLIMB)
    lag = limbs.matmul_const(t_pows[:, : c.size], c.idft32)  # (n, M + 1, 8)
    r_step = limbs.from_ints([x for _, _, rs in pows for x in rs]).reshape(n, c.calls, limbs.NLIMB)
    weights = np.stack([limbs.mul(lag[:, 1:], r_step), lag[:, 1:]], axis=2)  # (n, M, 2, 8)
    lag_sum = limbs.reduce_cols(lag[:, 1:].sum(axis=1))
    return {
        "t_pows": t_pows,
        "weights": weights,
        "r_pows": limbs.from_ints([x for _, rp, _ in pows for x in rp]).reshape(n, c.chunk, limbs.NLIMB),
        "lag0": lag[:, :1],
        "corr": limbs.mul(lag_sum, c.shares_inv_limbs).reshape(n, 1, limbs.NLIMB),
    }


def _gadget_terms(vdaf: Prio3, proofs: list[bytes], t_pows: np.ndarray) -> tuple[list[int], np.ndarray]:
    """Per report <g, S> (as ints) and g(t) (as limbs) for the gadget polynomials g of proof shares.

    g has 2P - 1 coefficients; with g = g_lo + x^P g_hi, g(t) = g_lo(t) + t^P g_hi(t) needs only
    t^0..t^P. Both halves and both vectors (powers of t, S) go through one batched product.
    """
    c = _consts(vdaf)
    n, size, nl = len(proofs), c.size, limbs.NLIMB
    start = 2 * c.chunk * 16
    coefs = np.zeros((n, 2 * size, nl), dtype=np.uint16)
    coefs[:, : 2 * size - 1] = np.frombuffer(b"".join(pr[start:] for pr in proofs), dtype="<u2").reshape(
        n, 2 * size - 1, nl
    )
    halves = coefs.reshape(n, 2, size, nl).transpose(0, 2, 1, 3)  # (n, P, 2, 8)
    vecs = np.empty((n, size, 3, nl), dtype=np.int64)
    vecs[:, :, 0] = t_pows[:, :size]
    vecs[:, :, 1:] = c.s_split
    res = limbs.matvec(halves, vecs)  # (n, 2 halves, 3, 8)
    dots = limbs.add(res[:, 0, 1], res[:, 1, 2])
    ys = limbs.add(res[:, 0, 0], limbs.mul(t_pows[:, size], res[:, 1, 0]))
    return limbs.to_ints(dots), ys


def _closed_form(vdaf: Prio3, todo: list[tuple[Any, ...]]) -> list[tuple[int, Any]]:
    """Prep results for a chunk of decoded reports (see the module docstring)."""
    c = _consts(vdaf)
    out: list[tuple[int, Any]] = []
    good, pows = [], []
    for row in todo:
        pw = _report_powers(vdaf, row[6], row[5][0])
        if pw is None:
            out.append((row[0], VdafError("degenerate query point (t^P == 1)")))
        else:
            good.append(row)
            pows.append(pw)
    if not good:
        return out
    n, n_meas, nl = len(good), vdaf.flp.MEAS_LEN, limbs.NLIMB
    meas = np.zeros((n, c.calls * c.chunk, nl), dtype=np.uint16)
    meas[:, :n_meas] = np.frombuffer(b"".join(r[1] for r in good), dtype="<u2").reshape(n, n_meas, nl)
    seeds = np.frombuffer(b"".join(r[2][: 2 * c.chunk * 16] for r in good), dtype="<u2")
    seeds = seeds.reshape(n, c.chunk, 2, nl).astype(np.int64)
    parts = _verifier_parts(vdaf, pows)
    prods = limbs.matvec(meas.reshape(n, c.calls, c.chunk, nl), parts["weights"])  # (n, chunk, 2, 8)
    lag0 = parts["lag0"]
    x_even = limbs.add(limbs.mul(parts["r_pows"], prods[:, :, 0]), limbs.mul(lag0, seeds[:, :, 0]))
    x_odd = limbs.sub(limbs.add(prods[:, :, 1], limbs.mul(lag0, seeds[:, :, 1])), parts["corr"])
    dots, ys = _gadget_terms(vdaf, [r[2] for r in good], parts["t_pows"])
    v = limbs.from_ints(_circuit_outputs(vdaf, meas, dots, [r[5] for r in good])).reshape(n, 1, nl)
    ver = np.concatenate([v, np.stack([x_even, x_odd], axis=2).reshape(n, -1, nl), ys[:, None]], axis=1)
    ver_raw = limbs.encode(ver)
    stride = len(ver_raw) // n
    out_raw = _truncate(vdaf, meas[:, :n_meas], [r[1] for r in good])
    for idx, row in enumerate(good):
        state = (out_raw[idx], row[4])
        out.append((row[0], (state, ver_raw[idx * stride : (idx + 1) * stride] + row[3])))
    return out


def _circuit_outputs(
    vdaf: Prio3, meas: np.ndarray, dots: list[int], joint_rands: list[list[int]]
) -> list[int]:
    """Share of the circuit output: <g, S> (SumVec) or u <g, S> + u^2 (sum m - 1/SHARES) (Histogram)."""
    if not isinstance(vdaf.valid, Histogram):
        return dots
    p, h = vdaf.field.MODULUS, _consts(vdaf).shares_inv
    # Limb sums over all entries (< 2^16 * MEAS_LEN, exact in float64) as one product with ones.
    limb_sums = np.ones(meas.shape[1]) @ meas.astype(np.float64)
    sums = limbs.to_ints(limbs.reduce_cols(limb_sums.astype(np.int64)))
    return [(u * d + u * u % p * (m - h)) % p for (_r, u), d, m in zip(joint_rands, dots, sums, strict=True)]


def _truncate(vdaf: Prio3, meas: np.ndarray, raws: list[bytes]) -> list[bytes]:
    """Encoded output shares: the measurement share itself (Histogram) or its bits decoded (SumVec)."""
    valid: Any = vdaf.valid
    if not isinstance(valid, SumVec):
        return raws
    n, bits = meas.shape[0], valid.bits
    grouped = meas.astype(np.int64).reshape(n, valid.length, bits, limbs.NLIMB)
    cols = np.zeros((n, valid.length, limbs.NLIMB + 5), dtype=np.int64)
    for b in range(bits):
        q, rem = divmod(b, 16)
        cols[..., q : q + limbs.NLIMB] += grouped[:, :, b] << rem
    raw = limbs.encode(limbs.reduce_cols(cols))
    step = len(raw) // n
    return [raw[i * step : (i + 1) * step] for i in range(n)]


def aggregate_encoded(vdaf: Prio3, out_shares: list[bytes]) -> list[int]:
    """Sum of encoded output shares (Field128 in numpy limbs; Field64 via Python ints)."""
    n_out = vdaf.flp.OUTPUT_LEN
    if vdaf.field.ENCODED_SIZE != 16:
        acc = [0] * n_out
        for raw in out_shares:
            acc = [a + x for a, x in zip(acc, vdaf.field.decode_vec(raw), strict=True)]
        return [a % vdaf.field.MODULUS for a in acc]
    total = np.zeros((n_out, limbs.NLIMB), dtype=np.int64)
    # 64 shares (1 MB for Histogram(1024)) at a time: a cache-sized buffer, ~4 us a report against
    # ~14 when a whole 1,024-report job (16 MB) was joined and summed at once
    for start in range(0, len(out_shares), 64):
        chunk = out_shares[start : start + 64]
        arr = np.frombuffer(b"".join(chunk), dtype="<u2").reshape(len(chunk), n_out, limbs.NLIMB)
        total += arr.sum(axis=0, dtype=np.int64)
    return limbs.to_ints(limbs.reduce_cols(total))


def prep_shares_to_prep_batch(vdaf: Prio3, agg_param: None, prep_shares: list[list[bytes]]) -> list[Any]:
    """``prep_shares_to_prep`` for many reports from their *encoded* prep shares.

    Returns per report the prep message (the joint randomness seed, or None) or the VdafError that
    report raised (malformed share or failed proof check).
    """
    if not _fast_path(vdaf):
        return [_combine_single(vdaf, shares) for shares in prep_shares]
    c = _consts(vdaf)
    n_ver = vdaf.flp.VERIFIER_LEN
    width = n_ver * 16 + SEED_SIZE
    results: list[Any] = [None] * len(prep_shares)
    ok_idx = []
    jit = jit_enabled()
    for i, shares in enumerate(prep_shares):
        if len(shares) != vdaf.SHARES or any(len(s) != width for s in shares):
            results[i] = VdafError("prep share has the wrong length")
        elif jit:
            ok_idx.append(i)
        elif not all(limbs.all_in_range(s[: n_ver * 16]) for s in shares):
            results[i] = VdafError("Field128 element out of range (>= modulus)")
        else:
            ok_idx.append(i)
    if not ok_idx:
        return results
    raw = b"".join(s[: n_ver * 16] for i in ok_idx for s in prep_shares[i])
    if jit:
        try:
            return _combine_jit(vdaf, raw, prep_shares, ok_idx, results)
        except _KernelFailed as exc:  # as in prep_init_batch
            _jit_failed(exc.__cause__)
            return prep_shares_to_prep_batch(vdaf, agg_param, prep_shares)
    ver = np.frombuffer(raw, dtype="<u2").reshape(len(ok_idx), vdaf.SHARES, n_ver, limbs.NLIMB)
    total = limbs.reduce_cols(ver.sum(axis=1, dtype=np.int64))  # (n, n_ver, 8)
    x = total[:, 1 : 1 + 2 * c.chunk].reshape(len(ok_idx), c.chunk, 2, limbs.NLIMB)
    gadget = limbs.reduce_cols(limbs.mul(x[:, :, 0], x[:, :, 1]).sum(axis=1))
    accept = ~np.any(total[:, 0], axis=-1) & np.all(gadget == total[:, -1], axis=-1)
    for row, i in enumerate(ok_idx):
        if not accept[row]:
            results[i] = VdafError("proof verifier check failed")
        else:
            results[i] = vdaf.joint_rand_seed([s[n_ver * 16 :] for s in prep_shares[i]])
    return results


def _combine_jit(
    vdaf: Prio3, raw: bytes, prep_shares: list[list[bytes]], ok_idx: list[int], results: list[Any]
) -> list[Any]:
    """The decision of :func:`prep_shares_to_prep_batch` on the compiled kernel."""
    n_ver, n = vdaf.flp.VERIFIER_LEN, len(ok_idx)
    status = np.empty(n, dtype=np.uint8)
    try:
        _JIT.combine_kernel(np.frombuffer(raw, dtype="<u8").reshape(n, vdaf.SHARES, n_ver, 2), status)
    except Exception as exc:
        raise _KernelFailed from exc
    prefix = _consts(vdaf).jit["prefix"][6] + bytes(SEED_SIZE)
    for row, i in enumerate(ok_idx):
        if status[row] == 1:
            results[i] = VdafError("Field128 element out of range (>= modulus)")
        elif status[row]:
            results[i] = VdafError("proof verifier check failed")
        else:
            results[i] = squeeze(prefix + b"".join(s[n_ver * 16 :] for s in prep_shares[i]), SEED_SIZE)
    return results


def _combine_single(vdaf: Prio3, shares: list[bytes]) -> Any:
    try:
        return vdaf.prep_shares_to_prep(None, [vdaf.decode_prep_share(None, s) for s in shares])
    except VdafError as exc:
        return exc
