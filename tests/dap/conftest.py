"""Fixtures for the DAP tests: real ``privstats dap serve`` processes, the npm client, PostgreSQL.

* ``node_modules`` (session): the unmodified ``@divviup/dap`` 0.9.1, installed with ``npm install``
  into ``$PRIVSTATS_NODE_MODULES`` (what ``.ci/run`` sets) or a cache folder outside the repository.
  A machine without ``node``/``npm`` *fails* these tests (the interop test must not be skipped).
* :class:`DapServer` starts ``python -m privstats dap serve ROLE`` and waits for ``/healthz``.
* ``postgres_server`` / ``postgres_url`` come from ``tests/services/conftest.py`` (same cluster logic).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")

DAP_CLIENT = "@divviup/dap@0.9.1"

_spec = importlib.util.spec_from_file_location(
    "privstats_services_conftest", Path(__file__).parent.parent / "services" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_services = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_services)
postgres_server = _services.postgres_server
postgres_url = _services.postgres_url


from dap_support import DapServer  # noqa: E402


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """``node_modules`` holding @divviup/dap 0.9.1 (installed on first use)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are required for the @divviup/dap interop test (Node 20)")
    root = Path(
        os.environ.get("PRIVSTATS_NODE_MODULES")
        or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "privstats-tests"
        / "divviup-dap-0.9.1"
    )
    pkg = root / "node_modules" / "@divviup" / "dap" / "package.json"
    if not pkg.exists():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--prefix", str(root), "--no-audit", "--no-fund", DAP_CLIENT],
            check=True,
            capture_output=True,
            timeout=600,
        )
    import json

    assert json.loads(pkg.read_text())["version"] == "0.9.1"
    return root / "node_modules"


@pytest.fixture
def dap_servers():
    """``start(role, task, db, port, extra=())``; every server is SIGTERMed (exit 0 asserted) at teardown."""
    started: list[DapServer] = []

    def start(role: str, task: Path, db: str, port: int, extra: tuple[str, ...] = ()) -> DapServer:
        s = DapServer(role, task, db, port, extra).start()
        started.append(s)
        return s

    yield start
    codes = {s.role: s.stop() for s in started if s.proc is not None and s.proc.poll() is None}
    assert all(c == 0 for c in codes.values()), f"servers did not exit 0 on SIGTERM: {codes}"
