"""Fixtures for the service tests: real server processes on 127.0.0.1 and a real PostgreSQL.

* :class:`Server` starts ``python -m privstats serve ROLE --task ... --db ... --port ...`` and waits for
  ``/healthz``; ``stop()`` sends SIGTERM and asserts exit status 0; ``kill()`` sends SIGKILL.
* ``postgres_url`` (session scope) runs ``initdb`` + ``pg_ctl`` from the PostgreSQL binaries as the
  ``postgres`` user in a temporary directory, on a free port, and removes the cluster afterwards.
  It skips, loudly, only when the binaries are absent.
* Long variants (10^5 shuffled messages per user count, multi-message Hadamard at 10^5 users)
  run with ``PRIVSTATS_SLOW_SERVICES=1``; the default sizes keep the module within a few minutes.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from privstats.ustat.mpc.wire import free_port

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")

SLOW = os.environ.get("PRIVSTATS_SLOW_SERVICES") == "1"


class Server:
    """One ``privstats serve`` process."""

    def __init__(
        self,
        role: str,
        task: Path,
        db: str,
        port: int | None = None,
        log_dir: Path | None = None,
        extra: tuple[str, ...] = (),
    ):
        self.role, self.task, self.db, self.extra = role, Path(task), db, tuple(extra)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (log_dir or self.task.parent) / f"{role}-{self.port}-{uuid.uuid4().hex[:6]}.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 90.0) -> Server:
        import httpx

        cmd = [
            sys.executable,
            "-m",
            "privstats",
            "serve",
            self.role,
            "--task",
            str(self.task),
            "--db",
            self.db,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *self.extra,
        ]
        self.fh = open(self.log, "ab")  # noqa: SIM115 - closed in stop()/kill()
        self.proc = subprocess.Popen(cmd, stdout=self.fh, stderr=subprocess.STDOUT, env=os.environ.copy())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.role} exited with {self.proc.returncode}: {self.log.read_text()[-3000:]}"
                )
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"{self.role} did not become ready: {self.log.read_text()[-3000:]}")

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, wait; returns the exit status (the tests assert 0)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"{self.role} did not exit within {timeout}s of SIGTERM") from None
        self.fh.close()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL (no chance to flush or clean up)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        if getattr(self, "fh", None) is not None:
            self.fh.close()


@pytest.fixture
def servers():
    """Start servers with ``servers(role, task, db)``; stopped (SIGTERM, exit 0 asserted) at teardown."""
    started: list[Server] = []

    def start(role: str, task: Path, db: str, port: int | None = None, extra: tuple[str, ...] = ()) -> Server:
        s = Server(role, task, db, port, extra=extra).start()
        started.append(s)
        return s

    yield start
    codes = {}
    for s in started:
        if s.proc is not None and s.proc.poll() is None:
            codes[f"{s.role}:{s.port}"] = s.stop()
    assert all(c == 0 for c in codes.values()), f"servers did not exit 0 on SIGTERM: {codes}"


def _pg_bin() -> str | None:
    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(cand, "initdb")) and os.path.exists(os.path.join(cand, "pg_ctl")):
            return cand
    found = shutil.which("initdb")
    return os.path.dirname(found) if found else None


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL cluster on 127.0.0.1; yields ``(base_url, createdb)``."""
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: THE POSTGRESQL TESTS DID NOT RUN")
    pytest.importorskip("psycopg")
    as_pg: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as the postgres user")
        as_pg = ["runuser", "-u", "postgres", "--"]
    root = tempfile.mkdtemp(prefix="privstats-pg-")
    os.chmod(root, 0o755)
    data = os.path.join(root, "data")
    os.mkdir(data)
    if as_pg:
        shutil.chown(data, "postgres", "postgres")
        shutil.chown(root, "postgres", "postgres")
    port = free_port()
    subprocess.run(
        [*as_pg, f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "tester", "--no-sync"],
        check=True,
        capture_output=True,
    )
    log = os.path.join(root, "pg.log")
    subprocess.run(
        [
            *as_pg,
            f"{bindir}/pg_ctl",
            "-D",
            data,
            "-l",
            log,
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    base = f"postgresql+psycopg://tester@127.0.0.1:{port}"

    def createdb() -> str:
        import psycopg

        name = f"db_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(f"host=127.0.0.1 port={port} user=tester dbname=postgres", autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")
        return f"{base}/{name}"

    try:
        yield base, createdb
    finally:
        subprocess.run(
            [*as_pg, f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server):
    """A fresh database in the session's PostgreSQL cluster."""
    return postgres_server[1]()


def make_task(tmp: Path, *args: str, name: str = "task.json") -> Path:
    """``privstats task new ... --out tmp/name`` through the real CLI entry point."""
    from privstats.cli import main

    out = tmp / name
    assert main(["task", "new", *args, "--out", str(out)]) == 0
    return out


def role_storage(db: str, task: Path | str, role: str):
    """The role's database opened as its server opens it: with the task's integrity key (the MAC key
    of its ledger and aggregates), as the operator reads exact counts."""
    from privstats.services.storage import Storage
    from privstats.services.tasks import load_secrets

    return Storage(db, key=load_secrets(str(task), role).integrity_key_bytes)
