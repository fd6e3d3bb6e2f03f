"""Helpers of the DAP tests: real ``privstats dap serve`` processes, the npm client, a task maker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from privstats.ustat.mpc.wire import free_port

NODE_SCRIPT = Path(__file__).with_name("node_upload.mjs")


def node_upload(node_modules: Path, task: Path, cells: list[int], tmp: Path) -> int:
    """Upload ``cells`` (Prio3Histogram measurements) with the npm client; returns how many were sent."""
    import json

    cells_path = tmp / f"cells-{os.getpid()}-{time.monotonic_ns()}.json"
    cells_path.write_text(json.dumps([int(c) for c in cells]))
    out = subprocess.run(
        ["node", str(NODE_SCRIPT), str(node_modules), str(task), str(cells_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return int(json.loads(out.stdout.strip().splitlines()[-1])["sent"])


class DapServer:
    """One ``privstats dap serve ROLE`` process."""

    def __init__(self, role: str, task: Path, db: str, port: int, extra: tuple[str, ...] = ()):
        self.role, self.task, self.db, self.port, self.extra = role, Path(task), db, port, extra
        self.url = f"http://127.0.0.1:{port}"
        self.log = self.task.parent / f"dap-{role}-{port}.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 90.0) -> DapServer:
        import httpx

        sub = (
            ["serve"] if "--generic" in self.extra else ["dap", "serve"]
        )  # privstats serve ROLE dispatches too
        extra = [a for a in self.extra if a != "--generic"]
        cmd = [sys.executable, "-m", "privstats", *sub, self.role, "--task", str(self.task)]
        cmd += ["--db", self.db, "--host", "127.0.0.1", "--port", str(self.port), *extra]
        self.fh = open(self.log, "ab")  # noqa: SIM115 - closed in stop()/kill()
        self.proc = subprocess.Popen(cmd, stdout=self.fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.role} exited {self.proc.returncode}: {self.log.read_text()[-3000:]}"
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
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
        self.fh.close()
        return int(self.proc.returncode)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        if getattr(self, "fh", None) is not None:
            self.fh.close()


def make_dap_task(
    tmp: Path, *, min_batch: int = 10, grid: int = 63, epsilon: float = 1.0, **kw
) -> tuple[Path, dict]:
    """A DAP task with free ports for leader and helper; returns (task path, ports)."""
    from privstats.services.dap.task import new_dap_task
    from privstats.services.tasks import write_task

    ports = {"leader": free_port(), "helper": free_port()}
    urls = {r: f"http://127.0.0.1:{p}" for r, p in ports.items()}
    task, secrets = new_dap_task(
        "ecdf", bounds=(0, 1), grid=grid, epsilon=epsilon, min_batch=min_batch, urls=urls, **kw
    )
    path = tmp / "task.json"
    write_task(task, secrets, path)
    return path, ports


def db_counts(db: str, role: str, task_id: bytes) -> tuple[int, dict]:
    """Exact report count in a role's buckets (and the leader's report states), read from its database."""
    from privstats.services.dap.store import DapStore
    from privstats.services.storage import Storage

    st = Storage(db)
    try:
        store = DapStore(st, task_id, role, 2**128 - 7 * 2**66 + 1)
        with st.read() as conn:
            n = store.batch(conn, 0, 2**62, 64)[1]
        return n, store.report_states() if role == "leader" else {}
    finally:
        st.close()
