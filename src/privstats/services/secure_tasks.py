"""Secure-model (leader/helper) task parameters, on top of :mod:`privstats.services.tasks`.

A secure task's ``protocol`` is ``"leader-helper"`` and its ``params`` are those of a
:class:`~privstats.secure.leader_helper.SecureSpec` (``epsilon``, ``bounds``, ``grid``,
``method``, ``neighbours``, ``smoothing``) plus the validity check's ``soundness_error``.
Besides the HPKE keys and tokens every task has, the leader and the helper share a
*verify key* (``tokens["verify"]`` of both secrets files, never given to clients): the
validity check's joint randomness is derived from it.

>>> from privstats.services.tasks import new_task
>>> t, s = new_task("ecdf", model="secure", params={"bounds": [0, 1], "grid": 64}, epsilon=1.0, min_batch=10)
>>> t.protocol, spec_of(t).n_cells, s["leader"].tokens["verify"] == s["helper"].tokens["verify"]
('leader-helper', 65, True)
"""

from __future__ import annotations

import os
from dataclasses import replace

from privstats.secure.leader_helper import STATISTICS, SecureSpec

__all__ = ["PROTOCOL", "add_verify_key", "resolve_secure", "spec_of", "verify_key"]

PROTOCOL = "leader-helper"


def resolve_secure(
    statistic: str,
    protocol: str | None,
    *,
    epsilon: float,
    delta: float | None = None,
    domain_size: int | None = None,
    options: dict | None = None,
) -> tuple[str, dict]:
    """``("leader-helper", params)`` of a secure task; ValueError naming the option."""
    if protocol not in (None, "auto", PROTOCOL):
        raise ValueError(f"--protocol: the secure model runs {PROTOCOL!r}, got {protocol!r}")
    if statistic not in STATISTICS:
        raise ValueError(f"--statistic: the secure services run {list(STATISTICS)}, got {statistic!r}")
    if delta:
        raise ValueError("--delta: the secure model's tree mechanism is pure ε-DP")
    if domain_size is not None:
        raise ValueError("--domain-size: the secure model takes --bounds and --grid")
    opts = dict(options or {})
    if "bounds" not in opts:
        raise ValueError("--bounds: the secure model needs public bounds LO HI")
    unknown = set(opts) - {"bounds", "grid", "method", "neighbours", "smoothing"}
    if unknown:
        raise ValueError(f"params: unknown secure-model option(s) {sorted(unknown)}")
    spec = SecureSpec(
        statistic,
        epsilon=epsilon,
        bounds=tuple(opts["bounds"]),
        grid=int(opts.get("grid", 1024)),
        method=opts.get("method", "auto"),
        neighbours=opts.get("neighbours", "replace"),
        smoothing=opts.get("smoothing"),
    )
    return PROTOCOL, {**spec.to_dict(), "soundness_error": spec.soundness_error}


def spec_of(task) -> SecureSpec:
    """The :class:`SecureSpec` of a secure :class:`~privstats.services.tasks.Task`."""
    if task.model != "secure":
        raise ValueError(f"task: not a secure-model task (model {task.model!r})")
    return SecureSpec.from_dict({**task.params, "statistic": task.statistic})


def add_verify_key(secrets: dict) -> dict:
    """Give the leader and the helper the same fresh 32-byte verify key (``tokens["verify"]``)."""
    key = os.urandom(32).hex()
    out = dict(secrets)
    for role in ("leader", "helper"):
        out[role] = replace(out[role], tokens={**out[role].tokens, "verify": key})
    return out


def verify_key(secrets) -> bytes:
    """The verify key from a leader's or helper's secrets."""
    return bytes.fromhex(secrets.token("verify"))
