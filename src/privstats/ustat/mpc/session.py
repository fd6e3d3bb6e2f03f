"""Aggregator-side connections to a left and a right party (spawned locally or remote).

>>> sess = SpuSession()        # doctest: +SKIP
>>> sess.close()               # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import threading

from .circuit import require_spu
from .wire import addr, free_port, recv_msg, send_msg

__all__ = ["SpuSession", "default_session"]


class SpuSession:
    """Connections to a left and a right party: spawned locally (two processes on 127.0.0.1) or remote.

    ``link_addrs`` overrides the two link addresses each party dials (used by the tests to put a
    capturing proxy between them): ``((left_listen, left_dials_right), (right_listen, right_dials_left))``.
    """

    def __init__(
        self,
        parties: tuple[str, str] | None = None,
        *,
        link_addrs=None,
        env: dict | None = None,
        tokens: tuple[str, str] | None = None,
    ):
        self.tokens = tokens
        self.procs: list[subprocess.Popen] = []
        self.lock = threading.Lock()
        if parties is None:
            if link_addrs is None:
                pl, pr = free_port(), free_port()
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
        self.socks = [socket.create_connection(addr(a), timeout=None) for a in parties]

    def run(
        self, header: dict | tuple[dict, dict], left: bytes | None, right: bytes | None
    ) -> tuple[list[bytes], list[bytes]]:
        """Send one job to both parties (each gets only its own values) and collect the output shares."""
        headers = self._sign(header if isinstance(header, tuple) else (header, header))
        with self.lock:
            for sock, h, blob in zip(self.socks, headers, (left, right), strict=True):
                send_msg(sock, h, [] if blob is None else [blob])
            ready = [recv_msg(s)[0] for s in self.socks]
            go = all(r.get("ok") for r in ready)
            for sock, r in zip(self.socks, ready, strict=True):
                if r.get("ok"):
                    send_msg(sock, {"op": "go" if go else "abort"})
            replies = [recv_msg(s) for s, r in zip(self.socks, ready, strict=True) if r.get("ok")]
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

    def _sign(self, headers):
        if self.tokens is None:
            return headers
        return tuple({**h, "token": t} for h, t in zip(headers, self.tokens, strict=True))

    def hello(self, header: dict) -> tuple[dict, dict]:
        """Ask both parties for their public state (deployment: task id, users, remaining budget)."""
        with self.lock:
            for sock, h in zip(self.socks, self._sign((header, header)), strict=True):
                send_msg(sock, {**h, "op": "hello"})
            replies = [recv_msg(s)[0] for s in self.socks]
        for role, r in zip(("left", "right"), replies, strict=True):
            if not r.get("ok"):
                raise RuntimeError(f"{role} party refused: {r.get('error')}")
        return replies[0], replies[1]

    def close(self) -> None:
        for s in getattr(self, "socks", []):
            try:
                if self.tokens is None:  # the library's parties; a deployment's parties keep serving
                    send_msg(s, {"op": "shutdown"})
                    recv_msg(s)
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
        require_spu()
        _DEFAULT = SpuSession()
        atexit.register(_DEFAULT.close)
    return _DEFAULT
