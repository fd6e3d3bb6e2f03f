"""The leader's aggregation-job driver in its own OS process (``privstats dap serve leader``'s default).

In one process the uploads (HTTP, HPKE open, group commits) and the driver (the leader's Prio3
preparation, the job exchange with the helper, the jobs' commits) share one GIL, so little is
aggregated while uploads arrive.  Here the driver runs in a child process (``spawn``: a fresh
interpreter, no copied threads or connections) over the same database (SQLite WAL or PostgreSQL);
the server process keeps only the uploads and the collector's routes.

The two talk over one pipe: the server sends ``wake`` (a full job's worth of reports was stored,
or a collection was asked for) and ``stop`` (SIGTERM's drain: the child finishes its current job
and exits).  The child exits at once when the pipe reaches end of file, i.e. when the server
process is gone, kill -9 included, so no driver outlives its leader; a job it had leased is
retried after the lease by the next driver, and the helper answers a retried job from its
database, so nothing is counted twice (as when the driver was a thread of a killed leader).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from typing import Any

__all__ = ["DriverProcess"]

log = logging.getLogger("privstats.dap.leader")


class _Wake:
    """``set()`` sends ``wake`` to the driver process (the collection routes call ``wake.set()``)."""

    def __init__(self, owner: DriverProcess):
        self.owner = owner

    def set(self) -> None:
        self.owner.send("wake")


class DriverProcess:
    """The :class:`~privstats.services.dap.leader.Driver` of a leader, run in a child process.

    Same surface as the driver thread for the server's side: ``uploaded``, ``wake.set()``,
    ``start`` and ``stop``."""

    def __init__(self, driver_cls: type, task: Any, secrets: Any, storage: Any, options: dict):
        # the driver class travels to the child by reference (spawn pickles it by its module and name),
        # so this module does not import the leader's, which imports this one
        self.job_size = int(options.get("job_size", 1024))
        self.args = (driver_cls, task, secrets, storage.url, storage.key, dict(options))
        self.pending = 0
        self.wake = _Wake(self)
        self.lock = threading.Lock()
        self.conn: Any = None
        self.proc: Any = None

    def send(self, what: str) -> None:
        with self.lock:
            if self.conn is None:
                return
            try:
                self.conn.send(what)
            except OSError:  # the child is gone; the next leader start drives the jobs
                log.warning("the driver process is gone")

    def uploaded(self, n: int) -> None:
        self.pending += n
        if self.pending >= self.job_size:
            self.pending = 0
            self.send("wake")

    def start(self) -> None:
        mp = multiprocessing.get_context("spawn")
        mine, theirs = mp.Pipe(duplex=False)  # (read end, write end)
        self.proc = mp.Process(target=_child, args=(mine, *self.args), name="dap-leader-driver")
        self.proc.start()
        mine.close()  # the child holds the only read end: its end of file means this process died
        self.conn = theirs

    def stop(self, timeout: float = 120.0) -> None:
        if self.proc is None:
            return
        self.send("stop")
        self.proc.join(timeout)
        if self.proc.is_alive():  # its job is retried after the lease by the next driver
            log.warning("the driver process did not stop in %.0f s; killed", timeout)
            self.proc.kill()
            self.proc.join()
        with self.lock:
            self.conn.close()
            self.conn = None


def _child(
    conn: Any, Driver: type, task: Any, secrets: Any, url: str, key: bytes | None, options: dict
) -> None:
    """The driver process: build the leader's context on its own connections, drive until ``stop``."""
    from privstats.services.dap.common import build_context, freeze_startup_heap, single_threaded_blas
    from privstats.services.storage import Storage

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group: the server stops us
    single_threaded_blas()
    ctx = build_context("leader", task, secrets, Storage(url, key=key))
    driver = Driver(ctx, **options)
    freeze_startup_heap()

    def listen() -> None:
        while True:
            try:
                what = conn.recv()
            except (EOFError, OSError):  # the server process is gone: stop now, leases recover
                os._exit(0)
            if what == "stop":
                stop()
                return
            driver.wake.set()  # the driver takes a wake as a full job waiting

    def stop(*_: Any) -> None:  # SIGTERM sent to this process itself: finish the job and exit
        driver.stop_event.set()
        driver.wake.set()

    signal.signal(signal.SIGTERM, stop)
    threading.Thread(target=listen, name="dap-driver-pipe", daemon=True).start()
    driver._run()
    driver.stop()
