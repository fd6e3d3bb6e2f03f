"""One role (left / right) of the pairs' 2PC: holds its own values and random words, talks to its peer.

A job is served in two phases so that no party is left waiting on the link: **prepare** (parse and
check the job against the party's policy, encode its own values, draw its random words; no link
traffic) and, once both parties are ready, **run** (set its own contributions as its shares of the
program's inputs — nothing is sent —, run the SPU program, return this party's output share).
A :class:`~privstats.ustat.mpc.policy.PartyPolicy` (deployment mode) refuses jobs that differ from
the party's own task and pairs beyond the plan.

>>> _rows_of({"rows": [[0, -1], [2, -1]]}, 2).tolist()
[[0, -1], [2, -1]]
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from typing import Any

import numpy as np

from privstats.privacy.samplers import discrete_laplace
from privstats.validation import check_choice

from .circuit import JobSpec, noisy_program, require_spu, runtime_config
from .kernels import encode
from .packed import bit_rows, words
from .wire import BOOL, INT64, WORDS, addr, own_share, pack_share, recv_msg, send_msg

__all__ = ["Party", "program_inputs", "run_party"]

INPUTS = ["w", "t", "u", "r", "x"]  # the program inputs (see circuit.noisy_program)


def _rows_of(header: dict, m: int) -> np.ndarray:
    rows = np.asarray(header["rows"], dtype=np.int64).reshape(-1, 2)
    if rows.shape != (m, 2):
        raise ValueError(f"rows must be {m} pairs of (slot 0, slot 1) user indices")
    return rows


def _own_randomness(job: JobSpec, m: int) -> tuple[np.ndarray, np.ndarray]:
    """This party's contributions to the joint randomness: (m, n_random) int64 words from the OS CSPRNG
    (or its own exact discrete Laplace noise for ``laplace-shares`` outputs) and (n_bits, words(m))
    int64 words of random bits, 64 pairs per word (the coins: the XOR of both parties' bits is uniform
    if either is honest)."""
    u = np.frombuffer(os.urandom(8 * m * job.n_random), dtype=np.int64).reshape(m, job.n_random).copy()
    r = 0
    for o in job.outputs:
        if o.plan.scale is not None:
            u[:, r] = discrete_laplace(o.plan.scale, size=m)  # rng=None: OS CSPRNG, exact sampler
        r += o.plan.n_random
    nw = job.n_bits * words(m)
    return u, np.frombuffer(os.urandom(8 * nw), dtype=np.int64).reshape(job.n_bits, words(m)).copy()


def program_inputs(job: JobSpec, x: np.ndarray, u: np.ndarray, bits: np.ndarray) -> tuple:
    """This party's own shares of the program inputs (``INPUTS``), with their sharing kinds, from its
    encoded entries ``x`` (m, 2, columns, width) (the other party's entries 0) and its random words:
    the low words (arithmetic), the top bits (boolean), the random words, the random bits and the bit
    rows of the full words ``w + 2^63·t`` (64-bit boolean sharing: the XOR of the two contributions'
    rows is the value's, since the transpose only moves bits)."""
    m = x.shape[0]
    t = x[..., 1] != 0 if job.width == 2 else np.zeros((m, 2, job.columns), dtype=bool)
    full = x[..., 0] | (t.astype(np.int64) << np.int64(63))
    rows = np.stack([np.stack([bit_rows(np, full[:, s, k], m) for k in range(job.columns)]) for s in (0, 1)])
    return ((x[..., 0], INT64), (t, BOOL), (u, INT64), (bits, WORDS), (rows, WORDS))


class Party:
    """One role of the 2PC.  ``data``: (n, columns) values this party holds (deployment / ``--data``);
    ``columns``: which columns it owns (vertical split), default all; ``policy``: enforce a task."""

    def __init__(
        self,
        role: str,
        self_addr: str,
        peer_addr: str,
        data: np.ndarray | None = None,
        *,
        columns: tuple[int, ...] | None = None,
        policy: Any = None,
        link_timeout_s: float = 300.0,
        restart_on_link_failure: int = 0,
    ):
        self.rank = 0 if role == "left" else 1
        self.self_addr, self.peer_addr = self_addr, peer_addr
        self.data = None if data is None else np.asarray(data, dtype=np.float64).reshape(len(data), -1)
        self.columns = columns
        self.policy = policy
        self.link_timeout_ms = int(link_timeout_s * 1000)
        self.restart_on_link_failure = restart_on_link_failure  # exit status for a supervisor
        self.spu, self.libspu = require_spu()
        self.cfg = runtime_config(self.libspu)
        self.io = self.spu.Io(2, self.cfg)
        self.lctx: Any = None
        self.rt: Any = None
        self.programs: dict[str, Any] = {}

    def _link(self):
        if self.lctx is None:
            L = self.libspu.link
            desc = L.Desc()
            desc.id = "privstats-pairs"
            desc.recv_timeout_ms = self.link_timeout_ms
            desc.connect_retry_times = 120
            desc.connect_retry_interval_ms = 500
            addrs = [self.self_addr, self.peer_addr] if self.rank == 0 else [self.peer_addr, self.self_addr]
            desc.add_party("left", addrs[0])
            desc.add_party("right", addrs[1])
            self.lctx = L.create_brpc(desc, self.rank)
            self.rt = self.spu.Runtime(self.lctx, self.cfg)
        return self.lctx

    def _program(self, job: JobSpec, m: int):
        key = json.dumps([job.key(), m])
        if key not in self.programs:
            import jax  # type: ignore[import-not-found, unused-ignore]

            jax.config.update("jax_enable_x64", True)
            from spu.utils import frontend as fe  # type: ignore[import-not-found, unused-ignore]

            vis = [self.libspu.Visibility.VIS_SECRET] * len(INPUTS)
            args: list[np.ndarray] = [np.zeros(shape, dtype) for shape, dtype in job.input_shapes(m)]
            exe, _ = fe.compile(fe.Kind.JAX, noisy_program(job, m), args, {}, INPUTS, vis, lambda o: ["out"])
            if len(self.programs) >= 8:  # keep a few shapes (the last batch of a run is shorter)
                self.programs.pop(next(iter(self.programs)))
            self.programs[key] = exe
        return self.programs[key]

    def _own_values(self, header: dict, blobs: list[bytes], job: JobSpec, m: int):
        """(m, 2, columns) float64 values and ownership mask: this party's entries of each pair row."""
        vals = np.zeros((m, 2, job.columns))
        own = np.zeros((m, 2, job.columns), dtype=bool)
        if "rows" in header:  # deployment: local user indices per slot (−1: not this party's)
            if self.data is None:
                raise ValueError("this party holds no data; send values instead of indices")
            rows = _rows_of(header, m)
            if np.any(rows < -1) or np.any(rows >= len(self.data)):
                raise ValueError(f"rows must hold user indices in [0, {len(self.data)}) or -1")
            cols = list(self.columns if self.columns is not None else range(job.columns))
            if self.data.shape[1] != len(cols) or max(cols) >= job.columns:
                raise ValueError("this party's data columns do not match the job's kernel")
            for slot in (0, 1):
                mine = rows[:, slot] >= 0
                vals[np.ix_(mine, np.array([slot]), np.array(cols))] = self.data[rows[mine, slot]][:, None, :]
                own[np.ix_(mine, np.array([slot]), np.array(cols))] = True
            return vals, own
        own[:, self.rank] = True
        if "indices" in header:  # the runner's --data: this party's users fill its own slot
            if self.data is None:
                raise ValueError("this party holds no data (--data); send values instead of indices")
            idx = np.asarray(header["indices"], dtype=np.int64)
            if idx.shape != (m,) or np.any(idx < 0) or np.any(idx >= len(self.data)):
                raise ValueError(f"indices must be {m} user indices in [0, {len(self.data)})")
            vals[:, self.rank] = self.data[idx].reshape(m, job.columns)
            return vals, own
        vals[:, self.rank] = np.frombuffer(blobs[0], dtype=np.float64).reshape(m, job.columns)
        return vals, own

    def prepare(self, header: dict, blobs: list[bytes]):
        """Phase 1 (no link traffic): check the job, encode own values, draw own random words and bits."""
        job = JobSpec.from_header(header)
        m = int(header["m"])
        if m < 1:
            raise ValueError("a job needs at least one pair")
        if self.policy is not None:
            cached = self.policy.check(header, job, m)
            if cached is not None:
                return ("cached", cached)
        vals, own = self._own_values(header, blobs, job, m)
        x = encode(job.spec, vals.reshape(2 * m, job.columns)).reshape(m, 2, job.columns, job.width)
        x = np.where(own[..., None], x, 0)  # the other party's entries: contribution 0
        inputs = program_inputs(job, x, *_own_randomness(job, m))
        return ("run", (header, inputs, self._program(job, m)))

    def run_job(self, header: dict, inputs, exe) -> list[bytes]:
        """Phase 2: run the 2PC on this party's own input shares (nothing else is sent), return this
        party's output share."""
        if self.policy is not None:
            self.policy.reserve(header)  # durable before any output can exist
        self._link()
        rt = self.rt
        for name, (value, dtype) in zip(INPUTS, inputs, strict=True):
            rt.set_var(name, own_share(self.libspu, value, dtype))
        rt.run(exe)
        out = pack_share(rt.get_var("out"))
        for name in (*INPUTS, "out"):
            rt.del_var(name)
        if self.policy is not None:
            self.policy.done(header, out)
        return out

    def _one_job(self, conn: socket.socket, header: dict, blobs: list[bytes]) -> None:
        try:  # both parties check the job before either touches the link (no one-sided hang)
            kind, job = self.prepare(header, blobs)
            send_msg(conn, {"ok": True, "phase": "ready"})
        except Exception as exc:  # report to the aggregator, keep serving
            send_msg(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
            return
        go, _ = recv_msg(conn)
        if go.get("op") != "go":
            send_msg(conn, {"ok": True, "phase": "aborted"})
            return
        try:
            reply: tuple[dict, Any] = ({"ok": True}, job if kind == "cached" else self.run_job(*job))
        except Exception as exc:  # e.g. the peer died mid-run: a fresh link for the next job
            reply = ({"ok": False, "error": f"{type(exc).__name__}: {exc}"}, [])
            if self.restart_on_link_failure:
                with contextlib.suppress(OSError):
                    send_msg(conn, *reply)
                os._exit(self.restart_on_link_failure)  # SPU's link cannot be reopened in-process
            self._drop_link()
        send_msg(conn, *reply)

    def _drop_link(self) -> None:
        if self.lctx is not None:
            with contextlib.suppress(Exception):  # the link is already broken
                self.lctx.stop_link()
        self.lctx = self.rt = None

    def serve(self, listen: str, announce=None, hello: dict | None = None) -> None:
        """Serve aggregator connections one after another (each until it disconnects or shuts down)."""
        host, port = addr(listen)
        srv = socket.create_server((host, port))
        if announce is not None:
            announce(srv.getsockname()[1])
        with srv:
            while True:
                conn, _ = srv.accept()
                with conn:
                    try:
                        if self._session(conn, hello) == "shutdown":
                            return
                    except OSError:  # the aggregator went away mid-job: serve the next one
                        continue

    def _session(self, conn: socket.socket, hello: dict | None) -> str:
        while True:
            try:
                header, blobs = recv_msg(conn)
            except (ConnectionError, OSError):  # the library's parties end with their aggregator
                return "closed" if self.policy is not None else "shutdown"
            if self.policy is not None and not self.policy.authenticate(header):
                send_msg(conn, {"ok": False, "error": "PermissionError: bad or missing job token"})
                return "closed"
            op = header.get("op")
            if op == "shutdown":
                send_msg(conn, {"ok": True})
                return "shutdown"
            if op == "hello":
                try:
                    reply = self.policy.hello(header) if self.policy is not None else dict(hello or {})
                    send_msg(conn, {"ok": True, **reply})
                except Exception as exc:
                    send_msg(conn, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
                continue
            self._one_job(conn, header, blobs)


def run_party(role: str, listen: str, self_addr: str, peer_addr: str, data: str | None = None) -> None:
    """Serve one role (``left`` / ``right``) until the aggregator disconnects (the runner's entry point)."""
    check_choice(role, "role", ("left", "right"))
    arr = None if data is None else np.load(data)
    party = Party(role, self_addr, peer_addr, arr)
    party.serve(listen, announce=lambda p: print(f"PORT {p}", flush=True))
