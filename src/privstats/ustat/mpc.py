"""Protocol C pairs as a real two-party computation (SPU, Cheetah), noise drawn inside the computation.

:class:`SpuTwoParty` implements :class:`~privstats.ustat.pairs.TwoPartyBackend`.  Each batch of pairs
runs as one SPU program between two OS processes, the **left** and the **right** party, connected over
TCP (SPU's brpc link).  The aggregator (the calling process) only schedules the pairs, sends each party
its own side's values, and receives the two parties' *shares* of the released noisy outputs, which it
reconstructs.  It never sees the noise; neither party sees the other's values, the noise, or the output.

Inside the computation (all arithmetic in the ring Z_{2^64}):

* **kernel** on exact integer encodings: comparisons on order-preserving int64 images of the float64
  values (AUC, Kendall's sign product, tie indicators: exact, ties included), or ``|a − b|`` on a
  public grid of ``2^-grid_bits`` (Gini mean difference: each party rounds its own value to the grid);
* **joint randomness**: every random bit comes from ``u = u_left + u_right mod 2^64`` where each party
  draws its 64-bit ``u`` from the OS CSPRNG; ``u`` is uniform if either party is honest, and unknown
  to both.  ``Bernoulli(T / 2^64)`` is ``0 ≤ u < T`` (two secret comparisons and an AND);
* **randomized response** (binary kernels): the flip coin has probability ``⌈2^64/(1+e^ε)⌉ / 2^64``
  (rounded up, so the realised ε' ≤ ε exactly; the aggregator debiases with the realised value);
* **discrete Laplace** (bounded kernels, noise on the kernel grid): ``Z = S·(1−B₀)·(1+G)`` with a fair
  sign S, ``B₀ ~ Bernoulli((1−q)/(1+q))`` and ``G`` geometric(q) built from its *independent binary
  digits* ``P(bit_j) = q^{2^j}/(1+q^{2^j})``, ``q = e^{-1/t}``.  The probabilities are rounded to
  multiples of 2^-64 and the digits stop at the last one whose probability is ≥ 2^-44; the realised
  distribution is accounted exactly (:func:`laplace_plan`): the scale is inflated by 10^-6 so the
  realised per-step privacy loss stays ≤ ε/Δ, and the truncation costs δ (≈ 1e-13 per pair),
  reported in ``Estimate.guarantee`` (ApproxDP(ε, P·δ)).

Security model: semi-honest (passive) adversary corrupting one of the two parties, computational
security (SPU Cheetah: OT and lattice-HE based 2PC with no trusted dealer); the aggregator is a third
party that only learns the noisy outputs.  The released value is ε-DP (ε', δ for Laplace) per pair for
each input; a user in P pairs gets εP by basic composition (``PairsProtocol`` divides ε by P).

Install with the ``mpc`` extra (``pip install 'privstats[mpc]'``; SPU needs Python < 3.12 and
numpy < 2, so use a separate virtual environment).  Run the two roles on two machines with::

    python -m privstats.ustat.mpc party --role left  --listen 0.0.0.0:7001 \
        --self-addr hostA:7101 --peer-addr hostB:7102
    python -m privstats.ustat.mpc party --role right --listen 0.0.0.0:7002 \
        --self-addr hostB:7102 --peer-addr hostA:7101

and point the aggregator at them with ``SpuTwoParty(..., parties=("hostA:7001", "hostB:7002"))``.

>>> import numpy as np
>>> be = SpuTwoParty("greater", pair_epsilon=1.0, mechanism="rr")    # doctest: +SKIP
>>> out = be.compute(np.array([0.3, 0.9]), np.array([0.5, 0.1]))      # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import atexit
import json
import math
import os
import socket
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privstats.privacy.randomness import RNGLike
from privstats.validation import check_choice, check_epsilon, check_positive_int

__all__ = [
    "SECURITY",
    "SPECS",
    "KernelSpec",
    "SpuSession",
    "SpuTwoParty",
    "default_session",
    "encode_sortable",
    "laplace_plan",
    "rr_plan",
    "run_party",
    "spu_available",
]

SECURITY = (
    "two-party computation with SPU (SecretFlow) Cheetah between two processes over TCP: "
    "semi-honest adversary corrupting one party, computational security, no trusted dealer; "
    "kernel and noise computed inside the 2PC from both parties' random bits; the aggregator "
    "receives only output shares and learns only the noisy outputs"
)
RING = 2**64
HALF = 2**63
MIN_BIT_THRESHOLD = 2**20  # keep geometric digits with P(bit) ≥ 2^20/2^64 = 2^-44
SCALE_INFLATION = 1e-6  # realised Laplace scale = t·(1 + 1e-6): margin for the 2^-64 rounding
MECHANISMS = ("rr", "laplace", "none")


def spu_available() -> bool:
    """True if SPU (the ``mpc`` extra) can be imported here."""
    try:
        import spu  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def _require_spu():
    try:
        import spu  # type: ignore[import-not-found, unused-ignore]
        import spu.libspu as libspu  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "backend='spu' needs the optional 'mpc' extra (SecretFlow SPU, Python < 3.12, "
            "numpy < 2): "
            "pip install 'privstats[mpc]' in a separate virtualenv"
        ) from exc
    return spu, libspu


# ---------------------------------------------------------------------------------------------
# kernels: public specs, party-side encodings, in-circuit programs
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelSpec:
    """A kernel the parties compile themselves: values ``lo + unit·v`` with integer v in [0, units]."""

    name: str
    columns: int  # input columns per party (Kendall: 2)
    lo: float
    unit: float
    units: int  # kernel range width Δ in grid units
    encoding: str  # "sortable" (exact order/equality) or "grid"
    grid_bits: int = 0

    @property
    def hi(self) -> float:
        return self.lo + self.unit * self.units

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The plain computation of the kernel on the parties' encoded values (grid units, int64)."""
        ea, eb = encode(self, a), encode(self, b)
        return np.asarray(_kernel_units(self, ea, eb, np), dtype=np.int64)


def _spec(name: str, grid_bits: int = 10) -> KernelSpec:
    if name == "greater":
        return KernelSpec(name, 1, 0.0, 1.0, 1, "sortable")
    if name == "greater_half":
        return KernelSpec(name, 1, 0.0, 0.5, 2, "sortable")
    if name == "sign_product":
        return KernelSpec(name, 2, -1.0, 1.0, 2, "sortable")
    if name in ("not_equal_0", "not_equal_1"):
        return KernelSpec(name, 2, 0.0, 1.0, 1, "sortable")
    if name == "equal":
        return KernelSpec(name, 1, 0.0, 1.0, 1, "sortable")
    if name == "absdiff":
        g = check_positive_int(grid_bits, "grid_bits")
        if g > 30:
            raise ValueError(f"grid_bits must be at most 30, got {g}")
        return KernelSpec(name, 1, 0.0, 2.0**-g, 2**g, "grid", g)
    raise ValueError(f"unknown SPU kernel {name!r}; choose from {sorted(SPECS)}")


SPECS = ("greater", "greater_half", "sign_product", "not_equal_0", "not_equal_1", "equal", "absdiff")


def encode_sortable(x: np.ndarray) -> np.ndarray:
    """Order-preserving int64 image of float64 values (−0.0 = 0.0): ``a < b ⟺ enc(a) < enc(b)``.

    >>> v = encode_sortable(np.array([-2.5, -0.0, 0.0, 1e-300, 3.0]))
    >>> bool(np.all(np.diff(v) >= 0) and v[1] == v[2])
    True
    """
    bits = (np.asarray(x, dtype=np.float64) + 0.0).view(np.int64)
    return np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)


def encode(spec: KernelSpec, x: np.ndarray) -> np.ndarray:
    """Party-side encoding of its own values (m, columns) → int64."""
    a = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    if a.shape[1] != spec.columns:
        raise ValueError(f"kernel {spec.name!r} takes {spec.columns} value(s) per user, got {a.shape[1]}")
    if not np.all(np.isfinite(a)):
        raise ValueError("values must be finite")
    if spec.encoding == "grid":
        return np.rint(np.clip(a, 0.0, 1.0) * 2**spec.grid_bits).astype(np.int64)
    return encode_sortable(a)


def _kernel_units(spec: KernelSpec, a, b, xp):
    """Kernel in grid units on encoded inputs; ``xp`` is numpy or jax.numpy (the same code runs in SPU)."""
    i64 = xp.int64
    if spec.name == "greater":
        return (a[:, 0] > b[:, 0]).astype(i64)
    if spec.name == "greater_half":
        return (a[:, 0] > b[:, 0]).astype(i64) + (a[:, 0] >= b[:, 0]).astype(i64)
    if spec.name == "sign_product":
        s0 = (a[:, 0] > b[:, 0]).astype(i64) - (a[:, 0] < b[:, 0]).astype(i64)
        s1 = (a[:, 1] > b[:, 1]).astype(i64) - (a[:, 1] < b[:, 1]).astype(i64)
        return s0 * s1 + 1
    if spec.name in ("not_equal_0", "not_equal_1"):
        k = int(spec.name[-1])
        return (a[:, k] != b[:, k]).astype(i64)
    if spec.name == "equal":
        return (a[:, 0] == b[:, 0]).astype(i64)
    if spec.name == "absdiff":
        d = a[:, 0] - b[:, 0]
        return xp.where(d >= 0, d, -d)
    raise ValueError(spec.name)  # pragma: no cover


# ---------------------------------------------------------------------------------------------
# noise plans (public; computed identically by the aggregator and both parties)
# ---------------------------------------------------------------------------------------------
@dataclass
class NoisePlan:
    """Public thresholds of the in-circuit randomness and the realised privacy / variance accounting."""

    mechanism: str
    thresholds: list[int] = field(default_factory=list)  # Bernoulli(T/2^64) as 0 ≤ u < T; T = 2^63: u ≥ 0
    complement: list[bool] = field(default_factory=list)  # the bit is 1 − Bernoulli(T/2^64)
    epsilon: float = 0.0  # realised per-pair ε (≤ requested)
    delta: float = 0.0  # realised per-pair δ (Laplace truncation)
    variance: float = 0.0  # noise variance in grid units² (Laplace) / realised keep probability (rr)
    keep: float = 1.0

    @property
    def n_random(self) -> int:
        return len(self.thresholds)


def _threshold(p: float) -> tuple[int, bool]:
    """(T, complement) with Bernoulli(p) realised as u ∈ [0, T) (or its complement), T ≤ 2^63."""
    if p <= 0.5:
        return round(p * RING), False
    return round((1.0 - p) * RING), True


def rr_plan(epsilon: float) -> NoisePlan:
    """Randomized response: flip with ⌈2^64/(1+e^ε)⌉/2^64 ≥ 1/(1+e^ε), so the realised ε' ≤ ε.

    >>> plan = rr_plan(1.0)
    >>> plan.epsilon <= 1.0, abs(plan.keep - math.e / (1 + math.e)) < 1e-12
    (True, True)
    """
    from fractions import Fraction

    flip = Fraction(1) / (1 + Fraction(math.exp(epsilon) * (1 - 1e-12)))  # margin for exp's rounding
    T = -((-flip.numerator * RING) // flip.denominator)  # ceil
    T = min(max(T, 1), HALF)
    keep = 1.0 - T / RING
    eps_real = math.log(RING - T) - math.log(T)
    return NoisePlan("rr", [T], [False], epsilon=eps_real, keep=keep)


def laplace_plan(epsilon: float, units: int) -> NoisePlan:
    """Discrete Laplace on the kernel grid, scale t = units/ε·(1+10^-6), from thresholded joint bits.

    Accounting of the realised sampler (exact given the thresholds): G has independent digits with
    odds o_j, so log P(g+1) − log P(g) = log q + e_k − Σ_{i<k} e_i with e_j = log o_j − 2^j log q;
    the per-step loss is ≤ 1/t + Σ|e_j| (and the 0 ↔ ±1 step is checked separately); δ is the mass
    of outputs whose neighbour shifted by ≤ units has no support: (p₀'/2)·P(G ≥ 2^J − units).

    >>> plan = laplace_plan(1.0, 2)
    >>> plan.epsilon <= 1.0 and plan.delta < 1e-12
    True
    """
    units = check_positive_int(units, "units")
    t = units / epsilon * (1.0 + SCALE_INFLATION)
    logq = -1.0 / t
    q = math.exp(logq)
    p0 = (1.0 - q) / (1.0 + q)  # P(Z = 0)
    T0, c0 = _threshold(p0)
    thresholds, comp = [T0, HALF], [c0, False]  # B₀ (zero indicator), sign
    probs = []
    j = 0
    while True:
        pj = 1.0 / (1.0 + math.exp(2.0**j / t))  # q^{2^j}/(1+q^{2^j})
        T, c = _threshold(pj)
        if c or T < MIN_BIT_THRESHOLD:
            if c:  # pragma: no cover - pj < 1/2 always
                raise AssertionError
            break
        thresholds.append(T)
        comp.append(False)
        probs.append(T / RING)
        j += 1
        if j > 62:
            raise ValueError(f"Laplace scale {t:.3g} grid units is too large for the 64-bit sampler")
    J = len(probs)
    pr = np.array(probs)
    e = np.log(pr) - np.log1p(-pr) - (2.0 ** np.arange(J)) * logq
    step = -logq + float(np.sum(np.abs(e)))
    p0r = (RING - T0) / RING if c0 else T0 / RING  # realised P(Z = 0)
    pg0 = float(np.prod(1.0 - pr))  # realised P(G = 0)
    step0 = abs(math.log((1.0 - p0r) * pg0 / 2.0) - math.log(p0r))  # log P(Z=±1) − log P(Z=0)
    eps_unit = max(step, step0)
    # P(G ≥ 2^J − units) and E[(1+G)^2], exactly from the independent digits
    g = np.arange(2**J, dtype=np.int64)
    logp = np.zeros(g.size)
    for jj in range(J):
        bit = (g >> jj) & 1
        logp += np.where(bit == 1, math.log(pr[jj]), math.log1p(-pr[jj]))
    pmf = np.exp(logp)
    tail = float(pmf[max(2**J - units, 0) :].sum())
    delta = (1.0 - p0r) / 2.0 * tail
    var = (1.0 - p0r) * float(np.sum(pmf * (1.0 + g) ** 2))
    return NoisePlan("laplace", thresholds, comp, epsilon=eps_unit * units, delta=delta, variance=var)


def make_plan(mechanism: str, pair_epsilon: float, spec: KernelSpec) -> NoisePlan:
    if mechanism == "none":
        return NoisePlan("none")
    if mechanism == "rr":
        if spec.units != 1:
            raise ValueError(
                f"randomized response needs a binary kernel; {spec.name!r} has {spec.units + 1} values"
            )
        return rr_plan(pair_epsilon)
    return laplace_plan(pair_epsilon, spec.units)


def _noisy_program(spec: KernelSpec, plan: NoisePlan):
    """The function compiled to SPU: f(x_left, u_left, x_right, u_right) → released integer units."""
    import jax.numpy as jnp  # type: ignore[import-not-found, unused-ignore]

    def bern(u, T: int, comp: bool):
        b = (u >= 0) if T >= HALF else ((u >= 0) & (u < jnp.int64(T)))
        b = b.astype(jnp.int64)
        return 1 - b if comp else b

    def program(xl, ul, xr, ur):
        v = _kernel_units(spec, xl, xr, jnp)
        if plan.mechanism == "none":
            return v
        u = ul + ur  # uniform in Z_2^64 if either party's u is
        if plan.mechanism == "rr":
            flip = bern(u[:, 0], plan.thresholds[0], plan.complement[0])
            return v + flip - 2 * v * flip
        b0 = bern(u[:, 0], plan.thresholds[0], plan.complement[0])
        sign = 2 * bern(u[:, 1], plan.thresholds[1], False) - 1
        geo = jnp.zeros_like(v)
        for j, (T, c) in enumerate(zip(plan.thresholds[2:], plan.complement[2:], strict=False)):
            geo = geo + bern(u[:, 2 + j], T, c) * (1 << j)
        return v + sign * (1 - b0) * (1 + geo)

    return program


# ---------------------------------------------------------------------------------------------
# wire format between the aggregator and a party (length-prefixed JSON header + binary blobs)
# ---------------------------------------------------------------------------------------------
def _send_msg(sock: socket.socket, header: dict, blobs: list[bytes] = ()) -> None:  # type: ignore[assignment]
    h = json.dumps({**header, "blobs": [len(b) for b in blobs]}).encode()
    sock.sendall(struct.pack("!I", len(h)) + h)
    for b in blobs:
        sock.sendall(b)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("peer closed the connection")
        buf += chunk
    return bytes(buf)


def _recv_msg(sock: socket.socket) -> tuple[dict, list[bytes]]:
    (hl,) = struct.unpack("!I", _recv_exact(sock, 4))
    header = json.loads(_recv_exact(sock, hl))
    return header, [_recv_exact(sock, n) for n in header.pop("blobs")]


def _pack_share(share) -> list[bytes]:
    return [bytes(share.meta), *[bytes(c) for c in share.share_chunks]]


def _unpack_share(libspu, blobs: list[bytes]):
    s = libspu.Share()
    s.meta = blobs[0]
    s.share_chunks = list(blobs[1:])
    return s


def _frame(blobs: list[bytes]) -> bytes:
    return struct.pack(f"!I{len(blobs)}Q", len(blobs), *[len(b) for b in blobs]) + b"".join(blobs)


def _unframe(data: bytes) -> list[bytes]:
    (k,) = struct.unpack_from("!I", data)
    lens = struct.unpack_from(f"!{k}Q", data, 4)
    out, pos = [], 4 + 8 * k
    for n in lens:
        out.append(data[pos : pos + n])
        pos += n
    return out


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"address must be HOST:PORT, got {text!r}")
    return host, int(port)


# ---------------------------------------------------------------------------------------------
# party process
# ---------------------------------------------------------------------------------------------
def _runtime_config(libspu):
    cfg = libspu.RuntimeConfig(protocol=libspu.ProtocolKind.CHEETAH, field=libspu.FieldType.FM64)
    cfg.fxp_fraction_bits = 18
    return cfg


class _Party:
    """One role of the 2PC: holds its own values and random bits, talks to its peer over SPU's link."""

    def __init__(self, role: str, self_addr: str, peer_addr: str, data: np.ndarray | None = None):
        self.rank = 0 if role == "left" else 1
        self.self_addr, self.peer_addr = self_addr, peer_addr
        self.data = data
        self.spu, self.libspu = _require_spu()
        self.cfg = _runtime_config(self.libspu)
        self.io = self.spu.Io(2, self.cfg)
        self.lctx: Any = None
        self.rt: Any = None
        self.programs: dict[str, Any] = {}

    def _link(self):
        if self.lctx is None:
            L = self.libspu.link
            desc = L.Desc()
            desc.id = "privstats-pairs"
            desc.recv_timeout_ms = 300_000
            desc.connect_retry_times = 120
            desc.connect_retry_interval_ms = 500
            addrs = [self.self_addr, self.peer_addr] if self.rank == 0 else [self.peer_addr, self.self_addr]
            desc.add_party("left", addrs[0])
            desc.add_party("right", addrs[1])
            self.lctx = L.create_brpc(desc, self.rank)
            self.rt = self.spu.Runtime(self.lctx, self.cfg)
        return self.lctx

    def _program(self, spec: KernelSpec, plan: NoisePlan, m: int):
        key = json.dumps([spec.name, spec.grid_bits, plan.mechanism, plan.thresholds, plan.complement, m])
        if key not in self.programs:
            import jax  # type: ignore[import-not-found, unused-ignore]

            jax.config.update("jax_enable_x64", True)
            from spu.utils import frontend as fe  # type: ignore[import-not-found, unused-ignore]

            vis = [self.libspu.Visibility.VIS_SECRET] * 4
            args = [np.zeros((m, spec.columns), np.int64), np.zeros((m, max(plan.n_random, 1)), np.int64)] * 2
            exe, _ = fe.compile(
                fe.Kind.JAX,
                _noisy_program(spec, plan),
                args,
                {},
                ["xl", "ul", "xr", "ur"],
                vis,
                lambda out: ["out"],
            )
            self.programs = {key: exe}  # keep only the latest shape
        return self.programs[key]

    def prepare(self, header: dict, blobs: list[bytes]):
        """Phase 1 (no link traffic): parse and check the job, encode own values, draw own random words."""
        spec = _spec(header["kernel"], header.get("grid_bits", 10))
        plan = make_plan(header["mechanism"], header["pair_epsilon"], spec)
        m = int(header["m"])
        if "indices" in header:  # values held by this party (runner with --data)
            if self.data is None:
                raise ValueError("this party holds no data (--data); send values instead of indices")
            idx = np.asarray(header["indices"], dtype=np.int64)
            if idx.shape != (m,) or np.any(idx < 0) or np.any(idx >= len(self.data)):
                raise ValueError(f"indices must be {m} user indices in [0, {len(self.data)})")
            own = self.data[idx]
        else:
            own = np.frombuffer(blobs[0], dtype=np.float64).reshape(m, spec.columns)
        x = encode(spec, own)
        nr = max(plan.n_random, 1)
        u = np.frombuffer(os.urandom(8 * m * nr), dtype=np.int64).reshape(m, nr)  # this party's secret bits
        return x, u, self._program(spec, plan, m)

    def run_job(self, x: np.ndarray, u: np.ndarray, exe) -> list[bytes]:
        """Phase 2: exchange input shares with the peer, run the 2PC, return this party's output share."""
        lctx = self._link()
        rt = self.rt
        mine, theirs = (["xl", "ul"], ["xr", "ur"]) if self.rank == 0 else (["xr", "ur"], ["xl", "ul"])
        peer = 1 - self.rank
        for name, value in zip(mine, (x, u), strict=False):
            shares = self.io.make_shares(value, self.libspu.Visibility.VIS_SECRET)
            rt.set_var(name, shares[self.rank])
            lctx.send(peer, _frame(_pack_share(shares[peer])))  # the peer's share: uniformly random
        for name in theirs:
            rt.set_var(name, _unpack_share(self.libspu, _unframe(bytes(lctx.recv(peer)))))
        rt.run(exe)
        out = rt.get_var("out")
        for name in ("xl", "ul", "xr", "ur", "out"):
            rt.del_var(name)
        return _pack_share(out)

    def serve(self, listen: str, announce=None) -> None:
        host, port = _addr(listen)
        srv = socket.create_server((host, port))
        if announce is not None:
            announce(srv.getsockname()[1])
        conn, _ = srv.accept()
        srv.close()
        with conn:
            while True:
                try:
                    header, blobs = _recv_msg(conn)
                except ConnectionError:
                    return
                if header.get("op") == "shutdown":
                    _send_msg(conn, {"ok": True})
                    return
                try:  # both parties check the job before either touches the link (no one-sided hang)
                    job = self.prepare(header, blobs)
                    _send_msg(conn, {"ok": True, "phase": "ready"})
                except Exception as exc:  # report to the aggregator, keep serving
                    _send_msg(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
                    continue
                go, _ = _recv_msg(conn)
                if go.get("op") != "go":
                    _send_msg(conn, {"ok": True, "phase": "aborted"})
                    continue
                try:
                    _send_msg(conn, {"ok": True}, self.run_job(*job))
                except Exception as exc:
                    _send_msg(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})


def run_party(role: str, listen: str, self_addr: str, peer_addr: str, data: str | None = None) -> None:
    """Serve one role (``left`` / ``right``) until the aggregator disconnects (the runner's entry point)."""
    check_choice(role, "role", ("left", "right"))
    arr = None if data is None else np.load(data)
    party = _Party(role, self_addr, peer_addr, arr)
    party.serve(listen, announce=lambda p: print(f"PORT {p}", flush=True))


# ---------------------------------------------------------------------------------------------
# aggregator side
# ---------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SpuSession:
    """Connections to a left and a right party: spawned locally (two processes on 127.0.0.1) or remote.

    ``link_addrs`` overrides the two link addresses each party dials (used by the tests to put a
    capturing proxy between them): ``((left_listen, left_dials_right), (right_listen, right_dials_left))``.
    """

    def __init__(self, parties: tuple[str, str] | None = None, *, link_addrs=None, env: dict | None = None):
        self.procs: list[subprocess.Popen] = []
        self.lock = threading.Lock()
        if parties is None:
            if link_addrs is None:
                pl, pr = _free_port(), _free_port()
                link_addrs = ((f"127.0.0.1:{pl}", f"127.0.0.1:{pr}"), (f"127.0.0.1:{pr}", f"127.0.0.1:{pl}"))
            ports = []
            for role, (self_addr, peer_addr) in zip(("left", "right"), link_addrs, strict=False):
                cmd = [
                    sys.executable,
                    "-m",
                    "privstats.ustat.mpc",
                    "party",
                    "--role",
                    role,
                    "--listen",
                    "127.0.0.1:0",
                    "--self-addr",
                    self_addr,
                    "--peer-addr",
                    peer_addr,
                ]
                p = subprocess.Popen(
                    cmd,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    env={**os.environ, **(env or {})},
                )
                self.procs.append(p)
                line = p.stdout.readline() if p.stdout else ""
                if not line.startswith("PORT "):
                    self.close()
                    raise RuntimeError(f"the {role} party process failed to start (exit code {p.poll()})")
                ports.append(f"127.0.0.1:{int(line.split()[1])}")
            parties = (ports[0], ports[1])
        self.socks = [socket.create_connection(_addr(a), timeout=None) for a in parties]

    def run(
        self, header: dict | tuple[dict, dict], left: bytes | None, right: bytes | None
    ) -> tuple[list[bytes], list[bytes]]:
        """Send one job to both parties (each gets only its own values) and collect the output shares."""
        headers = header if isinstance(header, tuple) else (header, header)
        with self.lock:
            for sock, h, blob in zip(self.socks, headers, (left, right), strict=True):
                _send_msg(sock, h, [] if blob is None else [blob])
            ready = [_recv_msg(s)[0] for s in self.socks]
            go = all(r.get("ok") for r in ready)
            for sock, r in zip(self.socks, ready, strict=True):
                if r.get("ok"):
                    _send_msg(sock, {"op": "go" if go else "abort"})
            replies = [_recv_msg(s) for s, r in zip(self.socks, ready, strict=True) if r.get("ok")]
            if not go:
                errors = [
                    f"{role} party failed: {r.get('error')}"
                    for role, r in zip(("left", "right"), ready, strict=True)
                    if not r.get("ok")
                ]
                raise RuntimeError("; ".join(errors))
        for role, (h, _) in zip(("left", "right"), replies, strict=False):
            if not h.get("ok"):
                raise RuntimeError(f"{role} party failed: {h.get('error')}")
        return replies[0][1], replies[1][1]

    def close(self) -> None:
        for s in getattr(self, "socks", []):
            try:
                _send_msg(s, {"op": "shutdown"})
                _recv_msg(s)
            except OSError:
                pass
            s.close()
        self.socks = []
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []


_DEFAULT: SpuSession | None = None


def default_session() -> SpuSession:
    """The module's pair of local party processes, started on first use and closed at exit."""
    global _DEFAULT
    if _DEFAULT is None or any(p.poll() is not None for p in _DEFAULT.procs):
        _require_spu()
        _DEFAULT = SpuSession()
        atexit.register(_DEFAULT.close)
    return _DEFAULT


class SpuTwoParty:
    """Protocol C pair backend running each batch as a Cheetah 2PC (SPU) between two party processes.

    ``kernel``: one of :data:`SPECS` (``greater``/``greater_half`` for AUC with ties 0/½,
    ``sign_product`` and ``not_equal_0/1`` for Kendall tau-b, ``equal`` for collisions, ``absdiff``
    for the Gini mean difference on a ``2^-grid_bits`` grid of [0, 1]).  ``mechanism``: ``"rr"``
    (binary kernels) or ``"laplace"``; ``"none"`` is a test-only mode that releases the exact kernel.
    ``session``: a :class:`SpuSession` (default: two local processes shared by all backends).
    ``rng`` in :meth:`compute` is ignored: the noise always comes from both parties' OS CSPRNGs.

    >>> be = SpuTwoParty("greater_half", pair_epsilon=1.0)         # doctest: +SKIP
    >>> be.compute(np.array([0.2, 0.7]), np.array([0.2, 0.1]))      # doctest: +SKIP
    array([...])
    """

    def __init__(
        self,
        kernel: str,
        *,
        pair_epsilon: float,
        mechanism: str = "laplace",
        grid_bits: int = 10,
        session: SpuSession | None = None,
        parties: tuple[str, str] | None = None,
        batch_size: int = 50_000,
    ):
        check_choice(kernel, "kernel", SPECS)
        self.spec = _spec(kernel, grid_bits)
        self.mechanism = check_choice(mechanism, "mechanism", MECHANISMS)
        self.pair_epsilon = check_epsilon(pair_epsilon)
        self.plan = make_plan(mechanism, self.pair_epsilon, self.spec)
        self.lo, self.hi, self.width = self.spec.lo, self.spec.hi, self.spec.hi - self.spec.lo
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self._session = session
        self._parties = parties
        _require_spu()

    @property
    def session(self) -> SpuSession:
        if self._session is None:
            self._session = SpuSession(self._parties) if self._parties else default_session()
        return self._session

    @property
    def noise_variance(self) -> float:
        """Variance added to each released value on the kernel's scale (realised sampler)."""
        if self.mechanism == "none":
            return 0.0
        if self.mechanism == "rr":
            p = self.plan.keep
            return self.width**2 * p * (1 - p) / (2 * p - 1) ** 2
        return self.plan.variance * self.spec.unit**2

    @property
    def delta(self) -> float:
        """Per-pair δ of the realised sampler (0 for randomized response)."""
        return self.plan.delta

    @property
    def security(self) -> str:
        return SECURITY

    @property
    def details(self) -> dict:
        return {
            "backend": "spu",
            "protocol": "SPU Cheetah (2PC, FM64)",
            "security": SECURITY,
            "kernel": self.spec.name,
            "grid_unit": self.spec.unit,
            "realised_pair_epsilon": self.plan.epsilon,
            "pair_delta": self.plan.delta,
            "random_words_per_pair": self.plan.n_random,
        }

    def raw(self, x_left, x_right) -> np.ndarray:
        """The reconstructed released integers (grid units) for the pairs (x_left[i], x_right[i])."""
        spu, libspu = _require_spu()
        a = np.ascontiguousarray(np.asarray(x_left, dtype=np.float64).reshape(len(x_left), -1))
        b = np.ascontiguousarray(np.asarray(x_right, dtype=np.float64).reshape(len(x_right), -1))
        if a.shape != b.shape or a.shape[1] != self.spec.columns:
            raise ValueError(
                f"x_left and x_right must both have shape (m, {self.spec.columns}), "
                f"got {a.shape} and {b.shape}"
            )
        io = spu.Io(2, _runtime_config(libspu))
        outs = []
        for s in range(0, len(a), self.batch_size):
            la, rb = a[s : s + self.batch_size], b[s : s + self.batch_size]
            header = {
                "op": "job",
                "kernel": self.spec.name,
                "grid_bits": self.spec.grid_bits or 10,
                "mechanism": self.mechanism,
                "pair_epsilon": self.pair_epsilon,
                "m": len(la),
            }
            sl, sr = self.session.run(header, la.tobytes(), rb.tobytes())
            outs.append(
                np.asarray(
                    io.reconstruct([_unpack_share(libspu, sl), _unpack_share(libspu, sr)]), dtype=np.int64
                ).reshape(-1)
            )
        return np.concatenate(outs) if outs else np.zeros(0, np.int64)

    def raw_indexed(self, left_users, right_users) -> np.ndarray:
        """Like :meth:`raw`, for parties that hold their users' values themselves (runner ``--data``):
        only the user indices of each pair are sent, each party gets its own side's indices."""
        spu, libspu = _require_spu()
        li = np.asarray(left_users, dtype=np.int64).reshape(-1)
        ri = np.asarray(right_users, dtype=np.int64).reshape(-1)
        if li.shape != ri.shape or np.any(li < 0) or np.any(ri < 0):
            raise ValueError(
                "left_users and right_users must be non-negative index arrays of the same length"
            )
        io = spu.Io(2, _runtime_config(libspu))
        outs = []
        for s in range(0, li.size, self.batch_size):
            a, b = li[s : s + self.batch_size], ri[s : s + self.batch_size]
            header = {
                "op": "job",
                "kernel": self.spec.name,
                "grid_bits": self.spec.grid_bits or 10,
                "mechanism": self.mechanism,
                "pair_epsilon": self.pair_epsilon,
                "m": int(a.size),
            }
            sl, sr = self.session.run(
                ({**header, "indices": a.tolist()}, {**header, "indices": b.tolist()}), None, None
            )
            outs.append(
                np.asarray(
                    io.reconstruct([_unpack_share(libspu, sl), _unpack_share(libspu, sr)]), dtype=np.int64
                ).reshape(-1)
            )
        return np.concatenate(outs) if outs else np.zeros(0, np.int64)

    def release(self, raw: np.ndarray) -> np.ndarray:
        """Released integers → debiased kernel values on the kernel's scale."""
        out = np.asarray(raw, dtype=np.float64)
        if self.mechanism == "rr":
            p = self.plan.keep
            return self.lo + self.width * (out - (1 - p)) / (2 * p - 1)
        return self.lo + out * self.spec.unit

    def compute(self, x_left, x_right, rng: RNGLike = None) -> np.ndarray:
        """Released (debiased) kernel values for each pair; ``rng`` is ignored (noise from the parties)."""
        out = self.raw(x_left, x_right).astype(np.float64)
        if self.mechanism == "rr":
            p = self.plan.keep
            return self.lo + self.width * (out - (1 - p)) / (2 * p - 1)
        return self.lo + out * self.spec.unit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m privstats.ustat.mpc", description="Protocol C pair roles over SPU (Cheetah 2PC)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("party", help="serve the left or right role of the pairs' 2PC")
    p.add_argument("--role", required=True, choices=("left", "right"))
    p.add_argument("--listen", required=True, help="HOST:PORT for the aggregator's connection (port 0: any)")
    p.add_argument("--self-addr", required=True, help="HOST:PORT this party's SPU link listens on")
    p.add_argument("--peer-addr", required=True, help="HOST:PORT of the other party's SPU link")
    p.add_argument("--data", help=".npy file of this party's users' values (jobs then send indices)")
    args = parser.parse_args(argv)
    run_party(args.role, args.listen, args.self_addr, args.peer_addr, args.data)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
