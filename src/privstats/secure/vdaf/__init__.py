"""VDAF-08 Prio3 (draft-irtf-cfrg-vdaf-08): Prio3Count, Prio3Sum, Prio3SumVec, Prio3Histogram.

The instances speak the draft's byte encodings (every official VDAF-08 test vector is reproduced), use
XofTurboShake128 (pycryptodome, imported lazily) and two aggregators by default. Output and aggregate
shares are ``list[int]`` of field elements mod ``vdaf.field.MODULUS`` (Field64: 2^64 - 2^32 + 1 for
Count, Field128: 2^128 - 7 * 2^66 + 1 for the others), so a noise share can be added mod p.
Throughput: ``Prio3.shard_encoded`` (closed-form histogram proof), ``Prio3.prep_init_batch`` and
``Prio3.prep_shares_to_prep_batch`` (compiled numba kernels for SumVec and Histogram, numpy limb
arithmetic without numba) give the same bytes as the per-report methods; the per-report
``prep_init`` of a 1024-bucket histogram costs a few milliseconds, the batch path some tens of
microseconds with numba, a few hundred without (benchmarks/bench_dap.py). The ping-pong
messages of DAP's aggregation jobs (two aggregators, one round) are in :mod:`.pingpong`.

Example:
    >>> from privstats.secure.vdaf import vdaf_from_config
    >>> vdaf = vdaf_from_config({"type": "histogram", "length": 64, "chunk_length": 8})
    >>> (vdaf.ID, vdaf.SHARES, vdaf.field.MODULUS == 2**128 - 7 * 2**66 + 1)
    (3, 2, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privstats.secure.vdaf.errors import VdafError
from privstats.secure.vdaf.field import Field64, Field128
from privstats.secure.vdaf.prio3 import Prio3, Prio3Count, Prio3Histogram, Prio3Sum, Prio3SumVec

__all__ = [
    "Field64",
    "Field128",
    "Prio3",
    "Prio3Count",
    "Prio3Histogram",
    "Prio3Sum",
    "Prio3SumVec",
    "VdafError",
    "vdaf_from_config",
    "vdaf_to_config",
]

_FIELDS = {
    "count": (),
    "sum": ("bits",),
    "sumVec": ("length", "bits", "chunk_length"),
    "histogram": ("length", "chunk_length"),
}
_ALIASES = {"chunkLength": "chunk_length"}


def vdaf_from_config(config: Mapping[str, Any]) -> Prio3:
    """Prio3 instance from a DAP / @divviup/dap style description.

    ``type`` is one of ``count``, ``sum`` (``bits``), ``sumVec`` (``length``, ``bits``,
    ``chunk_length``) or ``histogram`` (``length``, ``chunk_length``); ``chunkLength`` is accepted
    for ``chunk_length``. Unknown or missing fields raise ValueError naming them.

    Example:
        >>> vdaf_from_config({"type": "sum", "bits": 8}).ID
        1
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping, got {type(config).__name__}")
    cfg = {_ALIASES.get(k, k): v for k, v in config.items()}
    kind = cfg.pop("type", None)
    if kind not in _FIELDS:
        raise ValueError(f"config['type'] must be one of {sorted(_FIELDS)}, got {kind!r}")
    need = _FIELDS[kind]
    missing = [k for k in need if k not in cfg]
    extra = [k for k in cfg if k not in need]
    if missing:
        raise ValueError(f"config for {kind!r} lacks {missing}")
    if extra:
        raise ValueError(f"config for {kind!r} has unknown fields {extra}")
    if kind == "count":
        return Prio3Count()
    if kind == "sum":
        return Prio3Sum(cfg["bits"])
    if kind == "sumVec":
        return Prio3SumVec(cfg["length"], cfg["bits"], cfg["chunk_length"])
    return Prio3Histogram(cfg["length"], cfg["chunk_length"])


def vdaf_to_config(vdaf: Prio3) -> dict[str, Any]:
    """Inverse of :func:`vdaf_from_config` (snake_case field names).

    Example:
        >>> vdaf_to_config(Prio3SumVec(3, 4, 2))
        {'type': 'sumVec', 'length': 3, 'bits': 4, 'chunk_length': 2}
    """
    valid: Any = vdaf.valid
    kind = {0: "count", 1: "sum", 2: "sumVec", 3: "histogram"}[vdaf.ID]
    return {"type": kind, **{k: getattr(valid, k) for k in _FIELDS[kind]}}
