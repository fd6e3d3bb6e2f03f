"""DAP tasks: a secure-model :class:`~privstats.services.tasks.Task` whose ``dap`` object says what a
DAP-09 client and the two aggregators need.

``task.json`` → ``"dap"``::

    {"task_id": "<unpadded base64url of 32 random bytes>",
     "vdaf": {"type": "histogram", "length": 64, "chunk_length": 8},   # @divviup/dap's names
     "time_precision": 3600,
     "leader": "http://127.0.0.1:8473/", "helper": "http://127.0.0.1:8474/",
     "hpke_configs": {"leader": "<HpkeConfig>", "helper": "...", "collector": "..."},
     "tolerable_clock_skew": 60, "report_expiry_age": 604800, "max_refused_collections": 3}

The first five keys are exactly what ``new Task({...})`` of ``@divviup/dap`` takes (as ``id``,
``type``/``length``/``chunkLength``, ``timePrecisionSeconds``, ``leader``, ``helper``).  The HPKE
configs are encoded ``HpkeConfig`` structures (base64url); the collector's private key is in the
analyst's secrets file, each aggregator's in its own.  The leader and helper share the VDAF verify
key (``tokens["verify"]``), the leader presents the ``forward`` token to the helper, the analyst the
``collect`` token to the leader; uploads are unauthenticated, as DAP clients send no token.
``max_refused_collections`` caps the collections that the leader refuses below the minimum batch over
overlapping batch intervals (each refusal tells the analyst one bit: fewer than ``min_batch`` reports
so far); past the cap any interval overlapping them is ``batchQueriedTooManyTimes``.

The client's measurement is the index of its cell in the task's :class:`SecureSpec` grid
(Prio3Histogram, one-hot over ``n_parts * n_cells`` cells).

>>> t, s = new_dap_task("ecdf", bounds=(0, 1), grid=63, epsilon=1.0, min_batch=10)
>>> d = DapTask.from_task(t)
>>> len(d.task_id), d.vdaf_config, d.time_precision
(32, {'type': 'histogram', 'length': 64, 'chunk_length': 8}, 3600)
>>> s["analyst"].hpke_private_key is not None
True
"""

from __future__ import annotations

import base64
import math
import os
from dataclasses import dataclass, replace
from typing import Any

from privstats.services.dap.codec import HpkeConfig
from privstats.services.tasks import RoleSecrets, Task
from privstats.services.tasks import new_base_task as new_task

__all__ = ["PROTOCOL", "DapTask", "b64", "new_dap_task", "unb64"]

PROTOCOL = "dap-09+prio3"
_ROLES = ("leader", "helper", "collector")
CONFIG_IDS = {"leader": 1, "helper": 1, "collector": 1}


def b64(data: bytes) -> str:
    """Unpadded base64url (how DAP writes task ids)."""
    return base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode()


def unb64(text: str, what: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(str(text) + "=" * (-len(str(text)) % 4))
    except (ValueError, TypeError):
        raise ValueError(f"{what}: not base64url") from None


def new_dap_task(
    statistic: str,
    *,
    bounds,
    grid: int = 64,
    epsilon: float,
    min_batch: int,
    max_collections: int = 1,
    time_precision: int = 3600,
    urls: dict | None = None,
    chunk_length: int | None = None,
    method: str = "auto",
    neighbours: str = "replace",
    max_refused_collections: int = 3,
) -> tuple[Task, dict[str, RoleSecrets]]:
    """A fresh DAP task and every party's secrets (keys and tokens from the OS CSPRNG).

    ``statistic`` is one of the secure model's (``ecdf``, ``quantiles``, ``roc``,
    ``hosmer_lemeshow``); the Prio3Histogram length is the number of cells of its grid.  A quantiles
    task's grid is dithered: its params carry ``shift``, a uniform fraction of a cell from the OS CSPRNG
    (:class:`~privstats.secure.histogram.SecureSpec`), which every party reads from the task.
    """
    from privstats.secure.histogram import SecureSpec
    from privstats.services.dap.hpke import AEAD_AES128GCM, KDF_SHA256, KEM_X25519, generate_config

    if not isinstance(time_precision, int) or isinstance(time_precision, bool) or time_precision < 1:
        raise ValueError(f"time_precision must be a positive integer (seconds), got {time_precision!r}")
    _refusal_cap(max_refused_collections, "max_refused_collections")
    spec = SecureSpec(
        statistic, epsilon=epsilon, bounds=tuple(bounds), grid=grid, method=method, neighbours=neighbours
    )
    if spec.statistic == "quantiles" and spec.grid >= 2:
        from privstats.privacy.randomness import SecureSource

        # drawn once, when the task is made: the grid is fixed for its clients and the collector alike,
        # and over tasks a tied value's place in its cell is uniform (as privstats.quantiles draws it
        # per release, privstats.cdf.tree.dithered_bounds)
        spec = replace(spec, shift=float(SecureSource().random()))
    task, secrets = new_task(
        statistic,
        model="secure",
        params={"bounds": list(spec.bounds), "grid": grid, "method": method, "neighbours": neighbours},
        epsilon=epsilon,
        min_batch=min_batch,
        max_collections=max_collections,
        urls=urls,
    )
    length = spec.n_parts * spec.n_cells
    if chunk_length is None:
        chunk_length = max(1, math.isqrt(length))
    if not isinstance(chunk_length, int) or not 1 <= chunk_length <= length:
        raise ValueError(f"chunk_length must be an integer in [1, {length}], got {chunk_length!r}")
    configs = {
        r: HpkeConfig(CONFIG_IDS[r], KEM_X25519, KDF_SHA256, AEAD_AES128GCM, task.hpke_public_key(r))
        for r in ("leader", "helper")
    }
    collector_sk, configs["collector"] = generate_config(CONFIG_IDS["collector"])
    secrets["analyst"] = replace(secrets["analyst"], hpke_private_key=b64(collector_sk))
    dap = {
        "task_id": b64(os.urandom(32)),
        "vdaf": {"type": "histogram", "length": length, "chunk_length": chunk_length},
        "time_precision": time_precision,
        "leader": task.url("leader") + "/",
        "helper": task.url("helper") + "/",
        "hpke_configs": {r: b64(c.encode()) for r, c in configs.items()},
        "tolerable_clock_skew": 60,
        "report_expiry_age": 7 * 24 * 3600,
        "max_refused_collections": max_refused_collections,
    }
    return replace(task, protocol=PROTOCOL, params=spec.to_dict(), dap=dap), secrets


def _refusal_cap(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{where} must be an integer >= 0, got {value!r}")
    return value


@dataclass(frozen=True)
class DapTask:
    """The DAP view of a task (validated)."""

    task: Task
    task_id: bytes
    vdaf_config: dict
    time_precision: int
    leader_url: str
    helper_url: str
    hpke_configs: dict
    tolerable_clock_skew: int
    report_expiry_age: int
    max_refused_collections: int = 3  # refusals below the minimum batch per interval, then refused

    @classmethod
    def from_task(cls, task: Task) -> DapTask:
        """ValueError naming the field if ``task`` has no valid ``dap`` object."""
        d: Any = getattr(task, "dap", None)
        if not isinstance(d, dict) or not d:
            raise ValueError("task: no 'dap' object (make the task with privstats dap task new)")
        missing = [
            k for k in ("task_id", "vdaf", "time_precision", "leader", "helper", "hpke_configs") if k not in d
        ]
        if missing:
            raise ValueError(f"task.dap: missing field(s) {missing}")
        tid = unb64(d["task_id"], "task.dap.task_id")
        if len(tid) != 32:
            raise ValueError("task.dap.task_id must encode 32 bytes")
        tp = d["time_precision"]
        if not isinstance(tp, int) or isinstance(tp, bool) or tp < 1:
            raise ValueError("task.dap.time_precision must be a positive integer")
        vdaf = d["vdaf"]
        if not isinstance(vdaf, dict) or vdaf.get("type") != "histogram":
            raise ValueError("task.dap.vdaf: privstats tasks run Prio3Histogram ({'type': 'histogram', ...})")
        from privstats.services.dap.codec import DecodeError

        configs = {}
        for r in _ROLES:
            try:
                configs[r] = HpkeConfig.decode(unb64(d["hpke_configs"][r], f"task.dap.hpke_configs.{r}"))
            except (KeyError, TypeError, DecodeError) as exc:
                raise ValueError(f"task.dap.hpke_configs.{r}: {exc}") from None
        return cls(
            task,
            tid,
            dict(vdaf),
            tp,
            str(d["leader"]),
            str(d["helper"]),
            configs,
            int(d.get("tolerable_clock_skew", 60)),
            int(d.get("report_expiry_age", 7 * 24 * 3600)),
            _refusal_cap(d.get("max_refused_collections", 3), "task.dap.max_refused_collections"),
        )

    @property
    def task_id_b64(self) -> str:
        return b64(self.task_id)

    @property
    def spec(self):
        """The :class:`~privstats.secure.histogram.SecureSpec` (grid, ε, mechanism)."""
        from privstats.secure.histogram import SecureSpec

        return SecureSpec.from_dict({**self.task.params, "statistic": self.task.statistic})

    def vdaf(self):
        """The task's Prio3 instance (VDAF-08)."""
        from privstats.secure.vdaf import vdaf_from_config

        return vdaf_from_config(self.vdaf_config)

    def url(self, role: str) -> str:
        return (self.leader_url if role == "leader" else self.helper_url).rstrip("/")
