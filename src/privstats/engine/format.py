"""The privstats report format: local-model reports as versioned Parquet / Arrow.

A *report file* is a Parquet file holding one row per user report of one protocol
with one set of public parameters.  A *report dataset* is a directory of report
files of the same protocol and parameters (``**/*.parquet``; names starting with
``_`` or ``.`` are ignored).  The full specification is in ``docs/report-format.md``;
in short:

* **Columns** are the oracle's ``report_fields`` (in that order).  A 1-D column of
  numpy dtype ``T`` is stored as the Arrow primitive type of ``T`` (``int64`` →
  ``int64``, ``bool`` → ``bool``, ...).  A column with more than one dimension per
  row (OUE's packed bits, shape ``(n, w)``) is flattened per row to ``w`` items and
  stored as ``fixed_size_binary(w)`` when the dtype is ``uint8`` and as
  ``fixed_size_list<T>[w]`` otherwise.  No column may contain nulls.
* **Metadata**: the Arrow schema (and so the Parquet footer) carries one key,
  ``privstats``, whose value is UTF-8 JSON::

      {"format": "privstats.reports", "version": 1,
       "protocol": "grr", "params": {"domain_size": 1024, "epsilon": 1.0},
       "columns": {"value": {"dtype": "int64", "shape": []}}}

  ``shape`` is the per-row shape (``[]`` for scalars, ``[w]`` for OUE bits).
  ``protocol``/``params`` are the oracle's ``name``/``params``; with the registry
  (:mod:`privstats.engine.registry`) they rebuild the oracle.
* **Integrity**: files are written with Parquet page CRC checksums, which readers
  verify, and each row group holds at most ``chunk_size`` rows.  A reader that
  meets a newer ``version`` refuses the file rather than guessing.  The footer also
  holds a SHA-256 digest per row group, a random ``privstats.file_id`` and
  ``privstats.mac``: an HMAC-SHA256, keyed by the owner's key
  (:mod:`privstats.privacy.integrity`; ``key=None`` is the default key), of the
  metadata, row-group sizes, digests and file id.  Readers refuse
  (:class:`ReportIntegrityError`) a file whose MAC is missing or does not verify
  (edited, or rewritten by anyone without the key), and a dataset that holds the
  same file twice (a copy: same file id; a symlink: same real path).
  ``verify=False`` skips these checks, for forensics only.

>>> import tempfile, os, numpy as np
>>> from privstats.local import GRR
>>> oracle = GRR(4, epsilon=1.0)
>>> path = os.path.join(tempfile.mkdtemp(), "r.parquet")
>>> with ReportWriter(path, oracle) as w:
...     w.write(oracle.encode_batch([0, 1, 2, 3], rng=0))
>>> read_report_metadata(path)["protocol"], read_report_metadata(path)["n"]
('grr', 4)
>>> sum(len(b["value"]) for b in iter_report_batches(path, oracle))
4
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privstats.privacy.integrity import IntegrityError, check_mac, mac, resolve_key

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "METADATA_KEY",
    "ReportFormatError",
    "ReportIntegrityError",
    "ReportWriter",
    "column_specs",
    "iter_report_batches",
    "list_report_files",
    "read_report_metadata",
    "record_batch_to_reports",
    "reports_to_record_batch",
]

FORMAT_NAME = "privstats.reports"
FORMAT_VERSION = 1
METADATA_KEY = b"privstats"
ROW_GROUPS_KEY = b"privstats.row_groups"
DIGESTS_KEY = b"privstats.digests"
FILE_ID_KEY = b"privstats.file_id"
MAC_KEY = b"privstats.mac"


class _GroupHasher:
    """SHA-256 of one row group: the privstats metadata (as stored), the group's index, and each column's
    rows in canonical numpy bytes (one hash per column, so the batching used to read does not matter).

    The writer records one digest per row group in the footer (``privstats.digests``); readers recompute
    them while streaming and refuse a file whose metadata (e.g. ε) or reports were edited.
    """

    def __init__(self, meta_raw: bytes, index: int, specs: Mapping[str, Any]):
        import hashlib

        self._head = b"privstats-rowgroup-v1\0" + meta_raw + b"\0" + str(index).encode()
        self._cols = {name: hashlib.sha256() for name in sorted(specs)}  # order-free: writer and reader

    def update(self, reports: Mapping[str, np.ndarray], a: int, b: int) -> None:
        for name, h in self._cols.items():
            h.update(np.ascontiguousarray(reports[name][a:b]).tobytes())

    def hexdigest(self) -> str:
        import hashlib

        h = hashlib.sha256(self._head)
        for name, c in self._cols.items():
            h.update(name.encode() + b"\0" + c.digest())
        return h.hexdigest()


class DigestChecker:
    """Verifies the row-group digests of one file while its batches stream past (``feed``, then ``finish``)."""

    def __init__(self, pf, path, specs: Mapping[str, Any], row_groups: list[int] | None = None):
        raw = (pf.metadata.metadata or {}).get(DIGESTS_KEY)
        if raw is None:
            # refused rather than accepted with a warning: deleting the digest would otherwise be all it
            # takes to get an edited file (say ε raised in the metadata) aggregated
            raise ReportFormatError(
                f"{path}: no {DIGESTS_KEY.decode()} entry: the file was written by an older "
                "privstats (or the digest was removed), so its metadata cannot be checked "
                "against its reports; rewrite it with the current privstats.engine writer"
            )
        try:
            self.digests = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.digests = None
        nrg = pf.metadata.num_row_groups
        if not isinstance(self.digests, list) or len(self.digests) != nrg:
            raise ReportFormatError(f"{path}: corrupted {DIGESTS_KEY.decode()} entry")
        self.path, self.specs = path, specs
        self.meta_raw = (pf.schema_arrow.metadata or {}).get(METADATA_KEY, b"")
        self.groups = list(range(nrg)) if row_groups is None else list(row_groups)
        self.sizes = [pf.metadata.row_group(i).num_rows for i in self.groups]
        self.pos = -1
        self._next()

    def _next(self) -> None:
        self.pos += 1
        while self.pos < len(self.groups):
            self.hasher = _GroupHasher(self.meta_raw, self.groups[self.pos], self.specs)
            self.left = self.sizes[self.pos]
            if self.left:
                return
            self._check()
            self.pos += 1

    def _check(self) -> None:
        i = self.groups[self.pos]
        if self.hasher.hexdigest() != self.digests[i]:
            raise ReportFormatError(
                f"{self.path}: row group {i} does not match the digest recorded at write time: "
                "the file's privstats metadata (protocol, params such as epsilon) or its "
                "reports were edited; refusing to aggregate it"
            )

    def feed(self, reports: Mapping[str, np.ndarray]) -> None:
        n = len(next(iter(reports.values()))) if reports else 0
        off = 0
        while off < n:
            if self.pos >= len(self.groups):
                raise ReportFormatError(f"{self.path}: more rows than the footer records")
            take = min(self.left, n - off)
            self.hasher.update(reports, off, off + take)
            off += take
            self.left -= take
            if self.left == 0:
                self._check()
                self._next()

    def finish(self) -> None:
        if self.pos < len(self.groups):
            raise ReportFormatError(f"{self.path}: fewer rows than the footer records")


class ReportFormatError(ValueError):
    """A report file or batch that cannot be read as the expected protocol's reports."""


class ReportIntegrityError(ReportFormatError, IntegrityError):
    """A report file whose MAC is missing or does not verify, or a file counted twice in a dataset."""


def _mac_body(meta_raw: bytes, row_groups: bytes, digests: bytes, file_id: bytes) -> bytes:
    return b"\0".join((meta_raw, row_groups, digests, file_id))


def _check_file_mac(pf, path, key: Any) -> str:
    """Verify a report file's MAC (ReportIntegrityError naming ``path``); returns its file id."""
    kv = pf.metadata.metadata or {}
    if DIGESTS_KEY not in kv:
        raise ReportIntegrityError(
            f"{path}: no {DIGESTS_KEY.decode()} entry: the file was written by an older privstats (or the "
            "digest was removed), so its metadata cannot be checked against its reports; rewrite it with "
            "the current privstats.engine writer"
        )
    meta_raw = (pf.schema_arrow.metadata or {}).get(METADATA_KEY, b"")
    file_id = kv.get(FILE_ID_KEY, b"")
    tag = kv.get(MAC_KEY)
    body = _mac_body(meta_raw, kv.get(ROW_GROUPS_KEY, b""), kv.get(DIGESTS_KEY, b""), file_id)
    try:
        check_mac(
            resolve_key(key), "reportfile", body, tag.decode("ascii", "replace") if tag else None, str(path)
        )
    except IntegrityError as exc:
        raise ReportIntegrityError(str(exc)) from None
    return file_id.decode("ascii", "replace")


def _pa():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - extra is part of the test install
        raise ImportError("the report format needs pyarrow: pip install 'privstats[arrow]'") from exc
    return pa, pq


def _canonical_params(params: Mapping[str, Any]) -> dict:
    """Params as they come back from the JSON metadata (so comparisons are like for like)."""
    return json.loads(json.dumps(dict(params), sort_keys=True))


# ---- column specs -------------------------------------------------------------------------------
def _spec_from_field(spec: Any) -> tuple[np.dtype, tuple[int, ...] | None]:
    """A ``report_fields`` entry to (dtype, per-row shape or None if only known from data).

    Accepts a dtype (``"int64"``), or ``(dtype, width)`` / ``(dtype, shape)``.
    """
    if isinstance(spec, (tuple, list)) and len(spec) == 2 and not isinstance(spec[1], str):
        dtype, shape = spec
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
        return np.dtype(dtype), shape
    return np.dtype(spec), None


def column_specs(oracle, reports: Mapping[str, np.ndarray] | None = None) -> dict[str, dict]:
    """Per-column ``{"dtype", "shape"}`` of ``oracle``'s reports, as written in the metadata.

    The per-row shape comes from ``report_fields`` when it gives one, else from
    ``reports`` (a sample batch), else from encoding one throw-away value.
    """
    key = (type(oracle), json.dumps(_canonical_params(oracle.params), sort_keys=True))
    if key in _SPEC_CACHE:
        return json.loads(_SPEC_CACHE[key])
    specs: dict[str, dict] = {}
    sample = reports
    for name, field in oracle.report_fields.items():
        dtype, shape = _spec_from_field(field)
        if shape is None:
            if sample is None or name not in sample:
                from privstats.privacy.randomness import as_source

                # shapes only: these reports are discarded
                sample = oracle.encode_batch(np.zeros(1, dtype=np.int64), rng=as_source(0))
            shape = tuple(np.asarray(sample[name]).shape[1:])
        specs[name] = {"dtype": dtype.name, "shape": list(shape)}
    _SPEC_CACHE[key] = json.dumps(specs)
    return specs


_SPEC_CACHE: dict[tuple, str] = {}


def _arrow_type(spec: dict):
    pa, _ = _pa()
    dtype = np.dtype(spec["dtype"])
    base = pa.from_numpy_dtype(dtype)
    if not spec["shape"]:
        return base
    width = int(np.prod(spec["shape"]))
    return pa.binary(width) if dtype == np.uint8 else pa.list_(base, width)


def _schema(oracle, specs: dict[str, dict]):
    pa, _ = _pa()
    meta = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "protocol": oracle.name,
        "params": _canonical_params(oracle.params),
        "columns": specs,
    }
    fields = [pa.field(name, _arrow_type(spec), nullable=False) for name, spec in specs.items()]
    return pa.schema(fields, metadata={METADATA_KEY: json.dumps(meta, sort_keys=True).encode()})


# ---- numpy <-> arrow ------------------------------------------------------------------------------
def reports_to_record_batch(reports: Mapping[str, np.ndarray], schema, specs: dict[str, dict]):
    """A report batch (dict of numpy columns) as a ``pyarrow.RecordBatch`` of ``schema``."""
    pa, _ = _pa()
    arrays = []
    n = None
    for name, spec in specs.items():
        if name not in reports:
            raise ReportFormatError(f"reports is missing column {name!r}")
        col = np.asarray(reports[name])
        dtype = np.dtype(spec["dtype"])
        shape = tuple(spec["shape"])
        if col.dtype != dtype or col.shape[1:] != shape:
            raise ReportFormatError(
                f"reports[{name!r}] has dtype {col.dtype} and row shape {col.shape[1:]}, "
                f"the format expects {dtype} and {shape}"
            )
        if n is not None and len(col) != n:
            raise ReportFormatError("reports columns have different lengths")
        n = len(col)
        if not shape:
            arrays.append(pa.array(col, type=pa.from_numpy_dtype(dtype)))
            continue
        flat = np.ascontiguousarray(col).reshape(n, int(np.prod(shape)))
        width = flat.shape[1]
        if dtype == np.uint8:
            arrays.append(
                pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, pa.py_buffer(flat)])
            )
        else:
            arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(flat.ravel()), width))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def record_batch_to_reports(batch, specs: dict[str, dict], *, where: str = "batch") -> dict[str, np.ndarray]:
    """The numpy report batch of a ``RecordBatch`` (or ``Table``), checked against ``specs``.

    Raises :class:`ReportFormatError` naming ``where`` on a missing column, a wrong
    type, or nulls.
    """
    pa, _ = _pa()
    if isinstance(batch, pa.Table):
        batch = (
            batch.combine_chunks().to_batches()[0]
            if batch.num_rows
            else pa.RecordBatch.from_pylist([], schema=batch.schema)
        )
    out: dict[str, np.ndarray] = {}
    for name, spec in specs.items():
        idx = batch.schema.get_field_index(name)
        if idx < 0:
            raise ReportFormatError(f"{where}: missing report column {name!r}")
        arr = batch.column(idx)
        expected = _arrow_type(spec)
        if not arr.type.equals(expected):
            raise ReportFormatError(f"{where}: column {name!r} has type {arr.type}, expected {expected}")
        if arr.null_count:
            raise ReportFormatError(f"{where}: column {name!r} contains {arr.null_count} null(s)")
        dtype = np.dtype(spec["dtype"])
        shape = tuple(spec["shape"])
        n = len(arr)
        if not shape:
            col = arr.to_numpy(zero_copy_only=False)
        elif dtype == np.uint8:
            width = arr.type.byte_width
            data = arr.buffers()[1]
            col = np.frombuffer(data, dtype=np.uint8, count=n * width, offset=arr.offset * width)
        else:
            flat = arr.flatten()
            if flat.null_count:
                raise ReportFormatError(f"{where}: column {name!r} contains null items")
            col = flat.to_numpy(zero_copy_only=False)
        out[name] = col.reshape((n, *shape)) if shape else col
    return out


# ---- files ------------------------------------------------------------------------------------------------
class ReportWriter:
    """Write report batches of one oracle to a Parquet file, atomically.

    Rows go to a temporary file next to ``path``, renamed to ``path`` by
    :meth:`close` (a failure leaves no partial file).  Each :meth:`write` call
    becomes row groups of at most ``chunk_size`` rows.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        oracle,
        *,
        chunk_size: int = 1 << 20,
        compression: str = "snappy",
        sample_reports: Mapping[str, np.ndarray] | None = None,
        key: bytes | None = None,
    ):
        _, pq = _pa()
        self._key = resolve_key(key)
        self.path = Path(path)
        if self.path.is_dir():
            raise ValueError(f"path {str(self.path)!r} is a directory; give a file name ending in .parquet")
        self.oracle = oracle
        self.chunk_size = int(chunk_size)
        self.specs = column_specs(oracle, sample_reports)
        self.schema = _schema(oracle, self.specs)
        self.n = 0
        self.row_groups: list[int] = []
        self.digests: list[str] = []
        self._meta_raw = self.schema.metadata[METADATA_KEY]
        self._tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}.tmp")
        self._writer = pq.ParquetWriter(
            self._tmp, self.schema, compression=compression, write_page_checksum=True, use_dictionary=True
        )

    def write(self, reports: Mapping[str, np.ndarray]) -> None:
        """Append one report batch (dict of numpy columns, as ``oracle.encode_batch`` returns)."""
        try:
            batch = reports_to_record_batch(reports, self.schema, self.specs)
            self._writer.write_batch(batch, row_group_size=self.chunk_size)
        except BaseException:
            self.abort()
            raise
        m = batch.num_rows
        self.n += m
        self.row_groups += [min(self.chunk_size, m - s) for s in range(0, m, self.chunk_size)] or [0]
        back = record_batch_to_reports(batch, self.specs)  # the form readers will hash
        for s in range(0, m, self.chunk_size) if m else [0]:
            h = _GroupHasher(self._meta_raw, len(self.digests), self.specs)
            h.update(back, s, min(s + self.chunk_size, m))
            self.digests.append(h.hexdigest())

    def close(self) -> Path:
        """Finish the file and move it into place; returns its path."""
        if self._writer is not None:
            groups, digests = json.dumps(self.row_groups).encode(), json.dumps(self.digests).encode()
            file_id = uuid.UUID(bytes=os.urandom(16)).hex.encode()
            tag = mac(self._key, "reportfile", _mac_body(self._meta_raw, groups, digests, file_id))
            self._writer.add_key_value_metadata(
                {ROW_GROUPS_KEY: groups, DIGESTS_KEY: digests, FILE_ID_KEY: file_id, MAC_KEY: tag.encode()}
            )
            self._writer.close()
            self._writer = None
            os.replace(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Discard everything written so far."""
        if self._writer is not None:
            try:
                self._writer.close()
            finally:
                self._writer = None
                self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> ReportWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def list_report_files(path: str | os.PathLike, *, verify: bool = True) -> list[Path]:
    """The report files of a file or dataset directory, in a fixed (sorted) order.

    Refuses (:class:`ReportIntegrityError`) a dataset holding one file twice: a symlink to another
    of its files (same real path) or a copy (same ``privstats.file_id``); ``verify=False`` skips it.
    """
    p = Path(path)
    if p.is_file():
        return [p]
    if p.is_dir():
        files = sorted(
            f
            for f in p.rglob("*.parquet")
            if f.is_file() and not any(part.startswith(("_", ".")) for part in f.relative_to(p).parts)
        )
        if not files:
            raise ReportFormatError(f"report dataset {str(p)!r} contains no .parquet files")
        if verify:
            _check_distinct(files)
        return files
    raise FileNotFoundError(f"no report file or dataset at {str(p)!r}")


def _check_distinct(files: list[Path]) -> None:
    """No file counted twice: distinct real paths and distinct file ids."""
    _, pq = _pa()
    seen: dict[Any, Path] = {}
    for f in files:
        real = os.path.realpath(f)
        try:
            kv = pq.read_metadata(f).metadata or {}
        except Exception:  # unreadable: the reader names it later
            kv = {}
        for what, token in (("the same file as", real), ("a copy of", kv.get(FILE_ID_KEY))):
            if token is None:
                continue
            if (what, token) in seen:
                raise ReportIntegrityError(
                    f"{f}: {what} {seen[(what, token)]} (a report file may be counted once); "
                    "refusing the dataset"
                )
            seen[(what, token)] = f


def _open(path: Path):
    _, pq = _pa()
    import pyarrow as pa

    try:
        return pq.ParquetFile(path, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as exc:
        raise ReportFormatError(f"{path}: not a readable Parquet report file ({exc})") from None


def _metadata_of(pf, path: Path) -> dict:
    raw = (pf.schema_arrow.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise ReportFormatError(f"{path}: no privstats metadata (not written by privstats.engine)")
    try:
        meta = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ReportFormatError(f"{path}: corrupted privstats metadata") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise ReportFormatError(f"{path}: metadata is not in the {FORMAT_NAME} format")
    version = meta.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise ReportFormatError(
            f"{path}: report format version {version!r} is not supported (this privstats reads "
            f"versions 1..{FORMAT_VERSION}); upgrade privstats"
        )
    for key in ("protocol", "params", "columns"):
        if key not in meta:
            raise ReportFormatError(f"{path}: metadata lacks {key!r}")
    return meta


def _check_row_groups(pf, path: Path) -> None:
    """The footer's row counts must equal those the writer recorded at close (the footer has no checksum)."""
    raw = (pf.metadata.metadata or {}).get(ROW_GROUPS_KEY)
    if raw is None:
        raise ReportFormatError(
            f"{path}: no {ROW_GROUPS_KEY.decode()} entry (file not closed by a privstats writer)"
        )
    try:
        recorded = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        recorded = None
    footer = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
    if recorded != footer:
        raise ReportFormatError(
            f"{path}: corrupted footer: row-group sizes {footer[:8]} differ from those recorded by the writer"
        )


def read_report_metadata(path: str | os.PathLike, *, key: bytes | None = None, verify: bool = True) -> dict:
    """The ``privstats`` metadata of a report file or dataset, plus ``n`` (rows) and ``files``.

    For a dataset every file must have the same protocol, parameters and columns.  Each file's MAC
    is verified with ``key`` (None: the owner's default key) unless ``verify=False`` (forensics).
    """
    files = list_report_files(path, verify=verify)
    first = None
    n = 0
    row_groups = 0
    for f in files:
        pf = _open(f)
        meta = _metadata_of(pf, f)
        if verify:
            _check_file_mac(pf, f, key)
        _check_row_groups(pf, f)
        n += pf.metadata.num_rows
        row_groups += pf.metadata.num_row_groups
        sig = (meta["protocol"], meta["params"], meta["columns"])
        if first is None:
            first, first_sig = meta, sig
        elif sig != first_sig:
            raise ReportFormatError(
                f"{f}: protocol/params {meta['protocol']}{meta['params']} differ from "
                f"{files[0]}: {first['protocol']}{first['params']}"
            )
    assert first is not None  # `files` is non-empty
    return {**first, "n": n, "row_groups": row_groups, "files": [str(f) for f in files]}


def check_file_matches(meta: dict, oracle, path) -> None:
    """Raise ReportFormatError unless a file's metadata is for ``oracle`` (protocol and params)."""
    if meta["protocol"] != oracle.name or meta["params"] != _canonical_params(oracle.params):
        raise ReportFormatError(
            f"{path}: holds {meta['protocol']} reports with params {meta['params']}, "
            f"not {oracle.name} with {_canonical_params(oracle.params)}"
        )


def open_report_file(path: str | os.PathLike, oracle, *, key: bytes | None = None, verify: bool = True):
    """``(ParquetFile, metadata)`` of a report file checked to hold ``oracle``'s reports (and, unless
    ``verify=False``, to carry a MAC that verifies with ``key``, None: the owner's default key)."""
    path = Path(path)
    pf = _open(path)
    meta = _metadata_of(pf, path)
    if verify:
        _check_file_mac(pf, path, key)
    check_file_matches(meta, oracle, path)
    _check_row_groups(pf, path)
    expected = column_specs(oracle)
    if meta["columns"] != expected:
        raise ReportFormatError(f"{path}: columns {meta['columns']} do not match {oracle.name}'s {expected}")
    return pf, meta


def iter_report_batches(
    path: str | os.PathLike,
    oracle,
    *,
    chunk_size: int = 1 << 20,
    row_groups: list[int] | None = None,
    key: bytes | None = None,
    verify: bool = True,
) -> Iterator[dict[str, np.ndarray]]:
    """Report batches (dicts of numpy columns, at most ``chunk_size`` rows) of a file or dataset.

    Checks every file's metadata against ``oracle`` first, then streams; any read
    error raises :class:`ReportFormatError` naming the file.  ``row_groups``
    restricts a single file to those row groups.  ``key``/``verify`` as in :func:`open_report_file`.
    """
    import pyarrow as pa

    files = list_report_files(path, verify=verify)
    # validate all metadata before yielding
    opened = [open_report_file(f, oracle, key=key, verify=verify) for f in files]
    for f, (pf, meta) in zip(files, opened, strict=False):
        specs = meta["columns"]
        checker = DigestChecker(pf, f, specs, row_groups)
        try:
            it = pf.iter_batches(
                batch_size=int(chunk_size), row_groups=row_groups, columns=list(specs), use_threads=False
            )
            for batch in it:
                reports = record_batch_to_reports(batch, specs, where=str(f))
                checker.feed(reports)
                yield reports
            checker.finish()
        except (pa.ArrowException, OSError) as exc:
            raise ReportFormatError(f"{f}: corrupted report file ({exc})") from None
