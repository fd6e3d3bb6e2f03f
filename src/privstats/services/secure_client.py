"""Client SDK of a secure (leader/helper) task: the device role and the analyst role.

>>> import numpy as np
>>> from privstats.services.secure_tasks import new_secure_task
>>> pub, sec = new_secure_task("ecdf", epsilon=1.0, bounds=(0, 1), grid=8, min_batch=10)
>>> reps = SecureClient(pub).encode([0.2, 0.7])
>>> len(reps), len(reps[0].report_id), len(reps[0].helper_ct)
(2, 16, 64)
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import Any

from privstats.privacy.randomness import RNGLike
from privstats.secure.leader_helper import encode as encode_shares
from privstats.secure.leader_helper import open_result
from privstats.services.secure_tasks import hpke_info, load_secure_task, open_sealed, seal, spec_of

__all__ = ["SealedReport", "SecureClient", "CollectionError"]


@dataclass(frozen=True)
class SealedReport:
    """What a device uploads: report id, the leader's share and the helper's seed, each HPKE-sealed."""

    report_id: bytes
    leader_ct: bytes
    helper_ct: bytes


class CollectionError(RuntimeError):
    """The leader refused a collection (batch too small, helper refused, budget)."""


class SecureClient:
    """Device and analyst roles of a secure task.

    ``task``: the public task (dict or JSON path).  ``url``: the leader (default: the
    task's ``leader_url``).  ``token``: the upload token (default: the task's).
    ``secret``: the collector's secret (dict or path; needed by :meth:`collect`).
    """

    def __init__(self, task, url: str | None = None, token: str | None = None, secret=None):
        self.task = load_secure_task(task)
        self.spec = spec_of(self.task)
        self.url = (url or self.task["leader_url"]).rstrip("/")
        self.token = token or self.task["upload_token"]
        self._secret = secret
        self._http: Any = None

    @property
    def task_id(self) -> str:
        return self.task["task_id"]

    def _client(self):
        import httpx

        if self._http is None:
            self._http = httpx.Client(timeout=300.0)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    # ------------------------------------------------------------------ device role
    def encode(self, values, labels=None, rng: RNGLike = None) -> list[SealedReport]:
        """Encode values (and labels for ROC) into sealed reports; OS CSPRNG unless ``rng`` simulates."""
        reps = encode_shares(self.spec, values, labels, rng=rng)
        pk_l, pk_h = self.task["hpke"]["leader"], self.task["hpke"]["helper"]
        tid = self.task_id
        return [SealedReport(r.report_id, seal(pk_l, r.leader_share, hpke_info("leader", tid, r.report_id)),
                             seal(pk_h, r.helper_seed, hpke_info("helper", tid, r.report_id))) for r in reps]

    def upload(self, reports: list[SealedReport], *, batch_size: int = 1000, retries: int = 30,
               backoff: float = 0.1) -> int:
        """Upload in requests of ``batch_size``; retries (same report ids) on network errors and 5xx.

        Returns the number of reports the leader acknowledged (re-uploads count once on the
        server).  A 4xx answer raises ValueError with the server's message.
        """
        import httpx

        from privstats.services.aggregators import pack_reports

        acked = 0
        for start in range(0, len(reports), batch_size):
            body = pack_reports([(r.report_id, r.leader_ct, r.helper_ct) for r in reports[start:start + batch_size]])
            delay = backoff
            for attempt in range(retries + 1):
                try:
                    resp = self._client().post(f"{self.url}/tasks/{self.task_id}/reports", content=body,
                                               headers={"authorization": f"Bearer {self.token}",
                                                        "content-type": "application/octet-stream"})
                except httpx.HTTPError:
                    resp = None
                if resp is not None and resp.status_code < 500:
                    break
                if attempt == retries:
                    raise ConnectionError(f"upload to {self.url} failed after {retries} retries")
                time.sleep(delay)
                delay = min(2 * delay, 2.0)
            assert resp is not None
            if resp.status_code >= 400:
                raise ValueError(f"upload refused ({resp.status_code}): {resp.text[:300]}")
            acked += int(resp.json()["acknowledged"])
        return acked

    def submit(self, values, labels=None) -> int:
        """encode + upload."""
        return self.upload(self.encode(values, labels))

    # ----------------------------------------------------------------- analyst role
    def _collector_secret(self) -> dict:
        import json
        from pathlib import Path

        sec = self._secret
        if sec is None:
            raise ValueError("secret: the collector's secret (collect token, HPKE key) is needed to collect")
        data = sec if isinstance(sec, dict) else json.loads(Path(sec).read_text())
        if data.get("role") != "collector":
            raise ValueError("secret: not the collector's secret")
        return data

    def collect_raw(self, batch_id: int | None = None) -> dict:
        """Close the current batch (or fetch a collected one) and decrypt both partials."""
        sec = self._collector_secret()
        headers = {"authorization": f"Bearer {sec['collect_token']}"}
        if batch_id is None:
            resp = self._client().post(f"{self.url}/tasks/{self.task_id}/collect", headers=headers)
        else:
            resp = self._client().get(f"{self.url}/tasks/{self.task_id}/collections/{int(batch_id)}",
                                      headers=headers)
        if resp.status_code >= 400:
            raise CollectionError(f"collection refused ({resp.status_code}): {resp.text[:300]}")
        data = resp.json()
        b = int(data["batch_id"]).to_bytes(8, "little", signed=True)
        parts = {}
        for role in ("leader", "helper"):
            ct = base64.b64decode(data[role])
            parts[role] = open_sealed(sec["hpke_private"], ct, hpke_info(f"collector-from-{role}", self.task_id, b))
        return {**data, "leader": parts["leader"], "helper": parts["helper"]}

    def open(self, raw: dict, *, q=None, statistic: str | None = None):
        """Open decrypted partials into the result (``statistic`` may re-read an ECDF batch as quantiles)."""
        spec = self.spec
        if statistic is not None and statistic != spec.statistic:
            if {statistic, spec.statistic} != {"ecdf", "quantiles"}:
                raise ValueError(f"a {spec.statistic!r} batch cannot be opened as {statistic!r}")
            from dataclasses import replace

            spec = replace(spec, statistic=statistic, smoothing=None)
        return open_result(spec, raw["leader"], raw["helper"], int(raw["n_valid"]), q=q,
                           n_invalid=int(raw["n_invalid"]))

    def collect(self, *, q=None, batch_id: int | None = None, statistic: str | None = None):
        """Collect a batch and open it: PrivateECDF (ecdf), Estimate (quantiles, ``q``) or
        ``(fpr, tpr, thresholds, Estimate)`` (roc)."""
        return self.open(self.collect_raw(batch_id), q=q, statistic=statistic)
