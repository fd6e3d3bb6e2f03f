"""The client and analyst side of a secure (leader/helper) task, used by :class:`privstats.client.Client`.

* :func:`encode_reports` — the device role: the contribution's shares and validity proof
  (:func:`privstats.secure.leader_helper.encode`), the leader's share HPKE-sealed to the
  leader and the helper's 16-byte seed sealed to the helper, each bound to the task id and
  the report id.  The upload payload is ``leader ciphertext || helper ciphertext``; the
  leader stores and forwards the second part, which it cannot open.
* :func:`open_collection` — the analyst role: the two partials the leader returns, opened
  into the statistic exactly as ``privstats.ecdf/quantiles/roc_curve(..., model="secure")``
  post-process theirs.

>>> from privstats.services.tasks import new_task
>>> t, s = new_task("ecdf", model="secure", params={"bounds": [0, 1], "grid": 8}, epsilon=1.0, min_batch=10)
>>> ids, payloads = encode_reports(t, [0.2, 0.7])
>>> len(ids), len(payloads[0]) == sum(payload_sizes(spec_of(t)))
(2, True)
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

from privstats.privacy.randomness import RNGLike
from privstats.secure.leader_helper import encode, open_result
from privstats.services.aggregators import payload_sizes
from privstats.services.secure_tasks import spec_of
from privstats.services.security import hpke_info, hpke_seal

__all__ = ["encode_reports", "open_collection", "payload_sizes"]


def encode_reports(task, values, labels=None, rng: RNGLike = None) -> tuple[list[bytes], list[bytes]]:
    """``(report ids, payloads)`` for a secure task (OS CSPRNG unless ``rng`` simulates)."""
    reps = encode(spec_of(task), values, labels, rng=rng)
    pk_l, pk_h = task.hpke_public_key("leader"), task.hpke_public_key("helper")
    tid = task.id_bytes
    payloads = [
        hpke_seal(pk_l, r.leader_share, hpke_info("secure-leader", tid, r.report_id))
        + hpke_seal(pk_h, r.helper_seed, hpke_info("secure-helper", tid, r.report_id))
        for r in reps
    ]
    return [r.report_id for r in reps], payloads


def open_collection(task, out: dict, *, q=None, statistic: str | None = None) -> Any:
    """The result of a collection: PrivateECDF (ecdf), Estimate (quantiles, ``q``) or
    ``(fpr, tpr, thresholds, Estimate)`` (roc).  An ECDF batch may be opened as quantiles
    (``statistic="quantiles"``): the same release, post-processed."""
    spec = spec_of(task)
    if statistic is not None and statistic != spec.statistic:
        if {statistic, spec.statistic} != {"ecdf", "quantiles"}:
            raise ValueError(f"statistic: a {spec.statistic!r} batch cannot be opened as {statistic!r}")
        spec = replace(spec, statistic=statistic, smoothing=None)
    res = open_result(
        spec,
        base64.b64decode(out["leader"]),
        base64.b64decode(out["helper"]),
        None if out.get("n_valid") is None else int(out["n_valid"]),  # type: ignore[arg-type]  # absent under add-remove
        q=q,
        n_invalid=int(out.get("n_invalid", 0)),
    )
    est = res[3] if isinstance(res, tuple) else getattr(res, "estimate", res)
    est.details.update(batch_id=int(out["batch_id"]), collection_id=out.get("collection_id"))
    if "n_invalid" not in out:  # an add-remove task publishes no count
        est.details.pop("n_invalid", None)
    return res
