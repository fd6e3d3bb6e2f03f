"""The party supervisor (`privstats serve party`) stops on SIGTERM or SIGINT, with its worker.

Its handler used to wait() for the worker while the main thread was already inside wait(), holding the
Popen's wait lock: `kill` left the supervisor running and the worker a zombie (README Deploy's SPU flow).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

SCRIPT = """
import sys
from privstats.services.party.serve import supervise
worker = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"
sys.exit(supervise([], command=[sys.executable, "-c", worker, sys.argv[1]]))
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_supervisor_and_worker_exit_on_a_signal(tmp_path, sig):
    pidfile = tmp_path / "worker.pid"
    sup = subprocess.Popen([sys.executable, "-c", SCRIPT, str(pidfile)])
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        worker = int(pidfile.read_text())  # the worker runs
        sup.send_signal(sig)
        assert sup.wait(timeout=20) == 0
        with pytest.raises(ProcessLookupError):  # reaped, not left a zombie: the pid is gone
            os.kill(worker, 0)
    finally:
        if sup.poll() is None:
            sup.kill()
            sup.wait()
