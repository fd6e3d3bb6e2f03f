"""The client SDK: encode on the device, upload idempotently, collect as the analyst.

:class:`Client` plays two parties of a task:

* the **client** (:meth:`Client.encode`, :meth:`Client.upload`, :meth:`Client.submit`): randomizes
  values with the task's protocol (OS CSPRNG unless ``rng`` is given, which is for simulations),
  gives every report a fresh random 16-byte ``report_id`` and uploads batches with retries and
  exponential backoff.  Retrying is safe: servers count a report id once.  In the shuffle model
  each message is HPKE-encrypted separately to the analyzer (the shuffler cannot read them); a
  secure task speaks DAP-09 (:mod:`privstats.services.dap.client`: one Prio3 report per value);
* the **analyst** (:meth:`Client.collect`): asks the collector (local model) or the analyzer
  (shuffle model) for an :class:`~privstats.Estimate` with the collect token; a secure task's
  leader for a DAP-09 collection, opened into the task's statistic.  A retried
  collection reuses its ``collection_id``, so it is released and charged once.

Tokens: ``token=`` if given; otherwise the upload token from ``task.client.json`` and the collect
token from ``task.analyst.json`` next to the task file, or the environment variables
``PRIVSTATS_UPLOAD_TOKEN`` / ``PRIVSTATS_COLLECT_TOKEN``.

>>> from privstats.services.tasks import new_task
>>> task, _ = new_task("frequencies", model="local", protocol="oue", params={"domain_size": 20},
...                    epsilon=1.0, min_batch=10)
>>> reports = Client(None, task).encode([3, 4, 5], rng=0)
>>> len(reports), len(reports[0].report_id), len(reports[0].payload)     # OUE: ceil(20/8) bytes
(3, 16, 3)
"""

from __future__ import annotations

import os
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privstats.estimate import Estimate
from privstats.privacy.guarantees import guarantee_from_dict
from privstats.privacy.ledger import BudgetExceededError
from privstats.privacy.randomness import RNGLike, as_source
from privstats.services.tasks import Task, load_secrets, load_task, secrets_path

__all__ = ["Client", "Report", "ServiceError", "estimate_from_dict", "shuffle_user_messages"]

RETRY_STATUSES = {408, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Report:
    """One user's upload: a unique random ``report_id`` and the encoded (or encrypted) ``payload``."""

    report_id: bytes
    payload: bytes


class ServiceError(RuntimeError):
    """A server refused a request (4xx) or stayed unavailable after every retry."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code = status, code


def estimate_from_dict(d: dict) -> Estimate:
    """Rebuild an :class:`~privstats.Estimate` from ``Estimate.to_dict()`` (lists become arrays).

    >>> from privstats.privacy import PureDP
    >>> e = Estimate([1.0, 2.0], stderr=[0.1, 0.1], guarantee=PureDP(1.0), protocol="grr", n=5)
    >>> estimate_from_dict(e.to_dict()).value
    array([1., 2.])
    """

    def arr(x: Any) -> Any:
        return np.asarray(x, dtype=float) if isinstance(x, list) else x

    g = d.get("guarantee")
    return Estimate(
        value=arr(d["value"]),
        stderr=arr(d.get("stderr")),
        guarantee=None if g is None else guarantee_from_dict(g),
        model=d.get("model", "local"),
        protocol=d.get("protocol", ""),
        params=d.get("params") or {},
        n=d.get("n"),
        messages_per_user=d.get("messages_per_user"),
        bits_per_user=d.get("bits_per_user"),
        neighbours=d.get("neighbours", "replace"),
    )


def shuffle_user_messages(protocol: Any, values: Any, rng: RNGLike = None) -> np.ndarray:
    """Each user's messages as a ``(n_users, m, ...)`` array of message rows (the client role).

    ``protocol`` is a :class:`privstats.engine.ShuffledMessages` (its ``protocol`` attribute is
    the shuffle protocol); ``m`` is fixed per protocol: 1 (k-RR, RAPPOR), k + ρ (Hadamard),
    blanket + 1 (summation), the public cap τ + blanket bound for Count-Min (padded with dummy
    messages the analyzer drops: the blanket size does not depend on the value, the padding hides it).
    """
    inner = protocol.protocol
    name = inner.name
    src = as_source(rng)
    if name in ("shuffle-krr", "shuffle-rappor"):
        msgs = np.asarray(inner.encode_batch(values, src))
        return msgs[:, None] if msgs.ndim == 1 else msgs[:, None, :]
    if name == "shuffle-hadamard":
        n = len(np.asarray(values))
        rows = np.asarray(inner.encode_batch(values, src))
        width = 1 + inner.m
        if rows.shape[1] < width:
            rows = np.pad(rows, ((0, 0), (0, width - rows.shape[1])))
        k, rho = inner.k, inner.rho
        real = rows[: n * k].reshape(n, k, width)
        blank = rows[n * k :].reshape(n, rho, width)
        return np.concatenate([real, blank], axis=1)
    if name == "shuffle-countmin":
        vals = np.asarray(values)
        if not vals.size:
            return np.zeros((0, inner.message_cap), dtype=np.uint64)
        return np.stack([inner.encode_padded(v, src) for v in vals])
    if name == "shuffle-sum":
        x = np.asarray(values, dtype=float)
        n, b = x.size, inner.blanket
        bits = np.asarray(inner.encode_batch(x, src))
        return np.concatenate([bits[:n, None], bits[n:].reshape(n, b)], axis=1)
    raise ValueError(
        f"protocol {name!r} sends a data-dependent number of messages; the shuffler service "
        "needs a fixed number per user"
    )


class Client:
    """Client and analyst of one task.

    Parameters
    ----------
    url : base URL of the server clients upload to (collector; shuffler in the shuffle model), which
        is also where collections go in the local model; ``None`` takes the URL in the task file.
    collect_url : the analyzer's URL in the shuffle model (``None``: the task's).
    task : path of ``task.json`` (or a :class:`~privstats.services.tasks.Task`).
    token : bearer token for every request; ``None`` reads it as described in the module doc.
    retries, backoff, timeout : up to ``retries`` retries of a failed or 5xx/429 request,
        sleeping ``backoff * 2**i`` seconds (with jitter) before retry i.
    batch_size : reports per upload request.
    """

    def __init__(
        self,
        url: str | None = None,
        task: str | os.PathLike | Task = "task.json",
        token: str | None = None,
        *,
        retries: int = 6,
        backoff: float = 0.2,
        timeout: float = 60.0,
        batch_size: int = 1000,
        collect_url: str | None = None,
    ):
        self.task_path = None if isinstance(task, Task) else Path(task)
        # verified with the analyst's key when it is next to the task; a client holds none (the MAC
        # must still be present; the servers verify theirs)
        self.task = load_task(task if isinstance(task, Task) else str(task), require_key=False)
        self.url = None if url is None else str(url).rstrip("/")
        if collect_url is None and self.task.collect_role() == self.task.upload_role():
            collect_url = self.url
        self.collect_url = None if collect_url is None else str(collect_url).rstrip("/")
        self.token = token
        if not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be a non-negative integer, got {retries!r}")
        if not (isinstance(batch_size, int) and batch_size >= 1):
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.retries, self.backoff, self.timeout, self.batch_size = (
            retries,
            float(backoff),
            float(timeout),
            batch_size,
        )
        self._protocol: Any = None
        self._http: Any = None

    # ---- protocol -------------------------------------------------------------------------------------
    @property
    def protocol(self) -> Any:
        if self._protocol is None:
            from privstats.services.tasks import build_protocol

            self._protocol = build_protocol(self.task)
        return self._protocol

    def encode(self, values: Any, rng: RNGLike = None, *, labels: Any = None) -> list[Report]:
        """One report per value, randomized with the task's protocol (OS CSPRNG by default).

        Local model: the protocol's report, packed.  Shuffle model: the user's messages, each
        HPKE-encrypted to the analyzer, bound to the task id.  A secure (DAP-09) task's reports are
        Prio3 shares sealed per report: use :meth:`submit`.
        """
        from privstats.services.wire import record_layout

        if self.task.model == "secure":
            raise ValueError(
                "Client.encode: a secure task speaks DAP-09 (one sealed Prio3 report per value): "
                "use Client.submit, or privstats.services.dap.client.DapClient"
            )
        if labels is not None:
            raise ValueError("labels: only secure-model ROC tasks take labels")
        src = as_source(rng)
        proto = self.protocol
        layout = record_layout(proto)
        if self.task.model == "local":
            rows = layout.pack(proto.encode_batch(values, src))
            payloads = [r.tobytes() for r in rows]
        elif self.task.model == "shuffle":
            from privstats.services.security import hpke_info, hpke_seal_many

            msgs = shuffle_user_messages(proto, values, src)
            n, m = msgs.shape[:2]
            field = next(iter(proto.report_fields))
            flat = layout.pack({field: msgs.reshape(n * m, *msgs.shape[2:])})
            cts = hpke_seal_many(
                self.task.hpke_public_key("analyzer"),
                (r.tobytes() for r in flat),
                hpke_info("shuffle", self.task.id_bytes),
            )
            payloads = [b"".join(cts[i * m : (i + 1) * m]) for i in range(n)]
        else:
            raise ValueError(
                f"Client.encode covers the local and shuffle models; a {self.task.model} task "
                "needs its own client role"
            )
        id_bytes = os.urandom(16 * len(payloads))
        return [Report(id_bytes[16 * i : 16 * (i + 1)], p) for i, p in enumerate(payloads)]

    def upload_body(self, reports: Sequence[Report]) -> bytes:
        """The binary upload body of ``reports`` (see :mod:`privstats.services.wire`)."""
        from privstats.services.wire import pack_upload

        return pack_upload(self.task.id_bytes, [r.report_id for r in reports], [r.payload for r in reports])

    # ---- HTTP ----------------------------------------------------------------------------------------------
    def _client(self) -> Any:
        if self._http is None:
            import httpx

            self._http = httpx.Client(timeout=self.timeout)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _token(self, kind: str) -> str:
        if self.token is not None:
            return self.token
        env = os.environ.get(f"PRIVSTATS_{kind.upper()}_TOKEN")
        if env:
            return env
        party = "client" if kind == "upload" else "analyst"
        if self.task_path is not None and secrets_path(self.task_path, party).exists():
            return load_secrets(self.task_path, party).token(kind)
        raise ValueError(
            f"token: no {kind} token given (pass token=, set PRIVSTATS_{kind.upper()}_TOKEN, or put "
            f"{secrets_path(self.task_path or 'task.json', party).name} next to the task file)"
        )

    def _base(self, role: str) -> str:
        if role == self.task.collect_role() and self.collect_url is not None:
            return self.collect_url
        if role == self.task.upload_role() and self.url is not None:
            return self.url
        return self.task.url(role)

    def _request(
        self, method: str, url: str, *, token: str, content: bytes | None = None, json: Any = None
    ) -> Any:
        import httpx

        headers = {"Authorization": f"Bearer {token}"}
        if content is not None:
            headers["Content-Type"] = "application/octet-stream"
        last: str = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1) * (0.5 + random.random()))
            try:
                resp = self._client().request(method, url, content=content, json=json, headers=headers)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if resp.status_code in RETRY_STATUSES:
                last = f"HTTP {resp.status_code}"
                continue
            if resp.status_code >= 400:
                try:
                    detail = resp.json().get("detail", {})
                except ValueError:
                    detail = {}
                if not isinstance(detail, dict):
                    detail = {"error": "error", "message": str(detail)}
                raise ServiceError(
                    resp.status_code,
                    str(detail.get("error", "error")),
                    str(detail.get("message", resp.text[:200])),
                )
            return resp.json()
        raise ServiceError(
            503, "unavailable", f"{method} {url} failed after {self.retries + 1} attempts ({last})"
        )

    # ---- client role ----------------------------------------------------------------------------------
    def upload(self, reports: Sequence[Report]) -> int:
        """Upload in batches of ``batch_size``; returns how many reports the server acknowledged.

        Every acknowledged report is stored durably; re-uploading (a retry, or the same reports
        again) is counted once by the server.
        """
        if not all(isinstance(r, Report) for r in reports):
            raise TypeError("reports must be Report objects from Client.encode")
        url = f"{self._base(self.task.upload_role())}/tasks/{self.task.task_id}/reports"
        token = self._token("upload")
        acked = 0
        for i in range(0, len(reports), self.batch_size):
            out = self._request(
                "POST", url, token=token, content=self.upload_body(reports[i : i + self.batch_size])
            )
            acked += int(out["acknowledged"])
        return acked

    def submit(self, values: Any, rng: RNGLike = None, *, labels: Any = None) -> int:
        """:meth:`encode` then :meth:`upload`; returns the number acknowledged.

        A secure task (DAP-09): one Prio3Histogram report per value (and label, ROC and
        Hosmer–Lemeshow tasks), sharded with the OS CSPRNG and sealed to each aggregator, uploaded
        to the leader; ``rng`` is not used.
        """
        if getattr(self.task, "dap", None):  # DAP-09 task: one Prio3 report per value, to the leader
            from privstats.services.dap.client import DapClient

            return DapClient(self.task, http=self._client(), connections=8).upload(values, labels)
        return self.upload(self.encode(values, rng, labels=labels))

    # ---- analyst role ---------------------------------------------------------------------------------
    def collect(self, collection_id: str | None = None, **query: Any) -> Estimate:
        """The released :class:`~privstats.Estimate` (collect token); spends the task's guarantee once.

        Raises :class:`~privstats.privacy.ledger.BudgetExceededError` when the budget is spent, and
        :class:`ServiceError` (code ``batch_too_small``) below the minimum batch.

        A secure (DAP-09) task returns its statistic: a :class:`~privstats.cdf.result.PrivateECDF`
        (ecdf), an Estimate (quantiles at ``q=``; hosmer_lemeshow, ``groups=``) or ``(fpr, tpr,
        thresholds, Estimate)`` (roc); ``collection_id`` names the collection job, so a retry is
        idempotent; the aggregators refuse a batch below the task's ``min_batch``.
        """
        if getattr(self.task, "dap", None):  # DAP-09 task: the statistic itself (e.g. a PrivateECDF)
            from privstats.services.dap.client import collect_for_client

            unknown = set(query) - {"q", "groups", "rng", "interval", "timeout"}
            if unknown:
                raise ValueError(f"collect: a secure (DAP) task takes no {sorted(unknown)}")
            return collect_for_client(self.task, self.task_path, collection_id, self._client(), **query)
        cid = collection_id or uuid.uuid4().hex
        url = f"{self._base(self.task.collect_role())}/tasks/{self.task.task_id}/collect"
        try:
            out = self._request(
                "POST", url, token=self._token("collect"), json={"collection_id": cid, **query}
            )
        except ServiceError as exc:
            if exc.code == "budget_exceeded":
                raise BudgetExceededError(str(exc)) from None
            raise
        return estimate_from_dict(out["estimate"])

    def status(self, role: str | None = None) -> dict:
        """A role's status (budget and collections; never a report count): collect token; the
        shuffler's (whether its worker runs): upload token."""
        role = role or self.task.collect_role()
        kind = "collect" if role == self.task.collect_role() else "upload"
        base = self._base(role)
        return self._request("GET", f"{base}/tasks/{self.task.task_id}/status", token=self._token(kind))
