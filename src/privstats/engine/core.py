"""Chunked and Dask aggregation of local-model reports, and writing reports to Parquet.

>>> import os, tempfile
>>> from privstats.local import GRR
>>> oracle = GRR(16, epsilon=1.0)
>>> path = write_reports(oracle, [3] * 1000, os.path.join(tempfile.mkdtemp(), "r.parquet"), rng=0, chunk_size=300)
>>> state = aggregate(oracle, path, chunk_size=256)
>>> state.n, int(state.counts.sum())
(1000, 1000)
>>> state == aggregate(oracle, path, chunk_size=10_000)   # any chunking, same exact counts
True
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privstats.engine.format import (
    DigestChecker,
    ReportFormatError,
    ReportWriter,
    column_specs,
    list_report_files,
    open_report_file,
    record_batch_to_reports,
)
from privstats.validation import check_choice, check_positive_int

__all__ = ["DEFAULT_CHUNK_SIZE", "aggregate", "write_reports"]

DEFAULT_CHUNK_SIZE = 1 << 20
_MERGE_FAN_IN = 4
_PARTITIONS_PER_THREAD = 4  # a few tasks per worker thread: a slowed worker's share moves to the others


# ---- helpers ---------------------------------------------------------------------------------------------
def _check_oracle(oracle) -> None:
    missing = [
        a
        for a in ("name", "report_fields", "params", "encode_batch", "aggregate", "new_state")
        if not hasattr(oracle, a)
    ]
    if missing:
        raise TypeError(
            f"oracle must implement the FrequencyOracle interface; {type(oracle).__name__} "
            f"lacks {', '.join(missing)}"
        )


def _is_arrow(obj) -> bool:
    mod = type(obj).__module__ or ""
    return mod.startswith("pyarrow")


def _num_rows(reports: Mapping[str, np.ndarray]) -> int:
    lengths = {len(v) for v in reports.values()}
    if len(lengths) > 1:
        raise ValueError(
            f"source columns have different lengths: { {k: len(v) for k, v in reports.items()} }"
        )
    return lengths.pop() if lengths else 0


def _slices(reports: Mapping[str, Any], chunk_size: int) -> Iterator[dict[str, np.ndarray]]:
    cols = {k: np.asarray(v) for k, v in reports.items()}
    n = _num_rows(cols)
    for start in range(0, n, chunk_size):
        yield {k: v[start : start + chunk_size] for k, v in cols.items()}


def _to_reports(item, oracle, where: str) -> dict[str, np.ndarray]:
    """One batch of a non-file source (dict of columns, arrow batch/table, 1-D array) as numpy columns."""
    if _is_arrow(item):
        return record_batch_to_reports(item, column_specs(oracle), where=where)
    if isinstance(item, Mapping):
        missing = [k for k in oracle.report_fields if k not in item]
        if missing:
            raise ValueError(f"{where}: missing report column(s) {missing} for {oracle.name}")
        return {k: np.asarray(item[k]) for k in oracle.report_fields}
    fields = list(oracle.report_fields)
    if len(fields) == 1 and isinstance(item, (np.ndarray, list, tuple)):
        return {fields[0]: np.asarray(item)}
    raise TypeError(
        f"{where}: expected a dict of report columns or a pyarrow RecordBatch, got {type(item).__name__}"
    )


def _fold(oracle, state, reports, where: str):
    try:
        return oracle.aggregate(reports, state)
    except ReportFormatError:
        raise
    except ValueError as exc:
        raise ReportFormatError(f"{where}: invalid reports: {exc}") from None


class _Progress:
    """A one-line progress bar on stderr, shown only when stderr is a terminal."""

    def __init__(self, total: int | None, enabled: bool | None, label: str):
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        self.total, self.label, self.done = total, label, 0
        self._start = self._last = time.monotonic()
        self._lock = threading.Lock()

    def update(self, rows: int) -> None:
        if not self.enabled:
            return
        with self._lock:
            self.done += rows
            now = time.monotonic()
            if now - self._last < 0.2:
                return
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self.done / max(now - self._start, 1e-9)
        if self.total:
            frac = min(self.done / self.total, 1.0)
            bar = "#" * int(30 * frac)
            text = f"\r{self.label} [{bar:<30}] {self.done:,}/{self.total:,} reports  {rate:,.0f}/s"
        else:
            text = f"\r{self.label} {self.done:,} reports  {rate:,.0f}/s"
        sys.stderr.write(text)
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.monotonic())
            sys.stderr.write("\n")
            sys.stderr.flush()


# ---- sources ---------------------------------------------------------------------------------------------------
def _file_partitions(path, oracle, rows_per_partition: int):
    """``(file, row_groups, rows)`` partitions of a report file/dataset; every file's metadata is checked."""
    parts = []
    for f in list_report_files(Path(path).absolute()):  # absolute: workers may run elsewhere
        pf, _ = open_report_file(f, oracle)
        groups, rows = [], 0
        for i in range(pf.metadata.num_row_groups):
            groups.append(i)
            rows += pf.metadata.row_group(i).num_rows
            if rows >= rows_per_partition:
                parts.append((str(f), groups, rows))
                groups, rows = [], 0
        if groups or pf.metadata.num_row_groups == 0:
            parts.append((str(f), groups, rows))
    return parts


def _aggregate_file_part(
    oracle, path: str, row_groups: list[int], expected_rows: int, chunk_size: int, on_rows=None
):
    """State of some row groups of one report file; checks the rows read against the footer."""
    import pyarrow as pa

    pf, meta = open_report_file(path, oracle)
    specs = meta["columns"]
    state, rows = oracle.new_state(), 0
    checker = DigestChecker(pf, path, specs, row_groups or [])
    if row_groups:
        try:
            for batch in pf.iter_batches(
                batch_size=chunk_size, row_groups=row_groups, columns=list(specs), use_threads=False
            ):
                reports = record_batch_to_reports(batch, specs, where=path)
                checker.feed(reports)
                state = _fold(oracle, state, reports, path)
                rows += batch.num_rows
                if on_rows is not None:
                    on_rows(batch.num_rows)
            checker.finish()
        except (pa.ArrowException, OSError) as exc:
            raise ReportFormatError(f"{path}: corrupted report file ({exc})") from None
    _check_partition(state, oracle, rows, expected_rows, path)
    return state


def _aggregate_batch(oracle, reports: Mapping[str, np.ndarray], where: str):
    state = _fold(oracle, oracle.new_state(), reports, where)
    rows = _num_rows(reports)
    _check_partition(state, oracle, rows, rows, where)
    return state


def _check_partition(state, oracle, rows: int, expected_rows: int, where: str) -> None:
    """A partition's state is whole before it is merged: all its rows read, the right protocol."""
    if rows != expected_rows:
        raise ReportFormatError(f"{where}: read {rows} reports but the file says {expected_rows}")
    if (
        getattr(state, "protocol", oracle.name) != oracle.name
        or getattr(state, "params", oracle.params) != oracle.params
    ):
        raise ReportFormatError(f"{where}: partition state is not a {oracle.name} state with {oracle.params}")


def _merge_states(*states):
    return functools.reduce(lambda a, b: a.merge(b), states)


def _batch_source(oracle, source, chunk_size: int) -> Iterator[tuple[str, dict[str, np.ndarray]]]:
    """``(label, reports)`` of at most ``chunk_size`` rows for in-memory and iterable sources."""
    if isinstance(source, (Mapping, np.ndarray)) or (
        _is_arrow(source) and not hasattr(source, "read_next_batch")
    ):
        reports = _to_reports(source, oracle, "source")
        for i, piece in enumerate(_slices(reports, chunk_size)):
            yield f"source rows {i * chunk_size}-{i * chunk_size + _num_rows(piece) - 1}", piece
        return
    if not isinstance(source, Iterable) or isinstance(source, (str, bytes)):
        raise TypeError(
            "source must be a Parquet file or dataset path, a dict of report columns, a pyarrow "
            f"RecordBatch/Table, or an iterable of batches; got {type(source).__name__}"
        )
    for k, item in enumerate(source):
        reports = _to_reports(item, oracle, f"batch #{k}")
        if _num_rows(reports) == 0:
            yield f"batch #{k}", reports
        for piece in _slices(reports, chunk_size):
            yield f"batch #{k}", piece


# ---- engines -----------------------------------------------------------------------------------------------
def _aggregate_local(oracle, source, chunk_size: int, progress):
    if isinstance(source, (str, os.PathLike)):
        parts = _file_partitions(source, oracle, rows_per_partition=1 << 62)  # one partition per file
        bar = _Progress(sum(p[2] for p in parts), progress, "aggregating")
        state = oracle.new_state()
        for path, groups, rows in parts:
            state = state.merge(_aggregate_file_part(oracle, path, groups, rows, chunk_size, bar.update))
        bar.close()
        return state
    bar = _Progress(None, progress, "aggregating")
    state = oracle.new_state()
    for where, reports in _batch_source(oracle, source, chunk_size):
        state = _fold(oracle, state, reports, where)
        bar.update(_num_rows(reports))
    bar.close()
    return state


def _aggregate_dask(oracle, source, chunk_size: int, client, scheduler, n_workers, progress):
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover
        raise ImportError("engine='dask' needs dask[distributed]: pip install 'privstats[dask]'") from exc
    owned = []
    try:
        if client is None:
            if scheduler is not None:
                client = Client(scheduler)
                owned.append(client)
            else:
                # no dashboard; the scheduler's small HTTP server on a free port, not 8787
                cluster = LocalCluster(
                    n_workers=n_workers or os.cpu_count() or 1,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    scheduler_kwargs={"dashboard_address": ":0"},
                )
                owned.append(cluster)
                client = Client(cluster)
                owned.insert(0, client)
        return _run_dask(oracle, source, chunk_size, client, progress)
    finally:
        for obj in owned:
            obj.close()


def _run_dask(oracle, source, chunk_size: int, client, progress):
    from distributed import wait

    info = client.scheduler_info().get("workers", {})
    workers = max(1, sum(int(w.get("nthreads", 1)) for w in info.values()))  # worker threads
    leaves = []
    if isinstance(source, (str, os.PathLike)):
        # partitions of whole row groups, at least chunk_size rows, _PARTITIONS_PER_THREAD per thread: each
        # task streams its row groups in chunks (bounded memory), and few large tasks keep the per-task
        # scheduler round trips (the scheduler sends about one task per worker thread at a time) negligible
        from privstats.engine.format import read_report_metadata

        total = read_report_metadata(source)["n"]
        per_part = max(chunk_size, -(-total // (_PARTITIONS_PER_THREAD * workers)) if total else chunk_size)
        parts = _file_partitions(source, oracle, per_part)
        bar = _Progress(total, progress, "aggregating (dask)")
        for path, groups, rows in parts:
            fut = client.submit(_aggregate_file_part, oracle, path, groups, rows, chunk_size, pure=False)
            fut.add_done_callback(lambda f, r=rows: bar.update(r))
            leaves.append(fut)
    else:
        bar = _Progress(None, progress, "aggregating (dask)")
        in_flight_limit = 2 * workers + 2
        in_flight: list[Any] = []
        for where, reports in _batch_source(oracle, source, chunk_size):
            if len(in_flight) >= in_flight_limit:  # bound the data held by the cluster
                done, pending = wait(in_flight, return_when="FIRST_COMPLETED")
                for f in done:
                    if f.status == "error":
                        client.cancel(leaves)
                        f.result()
                in_flight = list(pending)
            [data] = client.scatter([reports], hash=False)
            fut = client.submit(_aggregate_batch, oracle, data, where, pure=False)
            rows = _num_rows(reports)
            fut.add_done_callback(lambda f, r=rows: bar.update(r))
            leaves.append(fut)
            in_flight.append(fut)
    if not leaves:
        bar.close()
        return oracle.new_state()
    level, tree = leaves, list(leaves)
    while len(level) > 1:  # tree merge; a failed leaf fails every merge above it
        level = [
            client.submit(_merge_states, *level[i : i + _MERGE_FAN_IN], pure=False)
            for i in range(0, len(level), _MERGE_FAN_IN)
        ]
        tree += level  # held until the end: cancelling a leaf cancels its merges, which must still be
        # wanted (a merge already released made the scheduler fail `assert ts.who_wants` and drop the client)
    try:
        result = level[0].result()
    except BaseException:
        client.cancel(tree)
        raise
    bar.close()
    return result


# ---- public API ---------------------------------------------------------------------------------------------
def aggregate(
    oracle,
    source,
    *,
    engine: str = "local",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    client=None,
    scheduler: str | None = None,
    n_workers: int | None = None,
    state=None,
    progress: bool | None = None,
):
    """Aggregate reports into ``oracle``'s aggregator state, in bounded memory or on Dask.

    Parameters
    ----------
    oracle : FrequencyOracle
        Any object with the frequency-oracle interface (``name``, ``params``,
        ``report_fields``, ``new_state``, ``aggregate``; states ``merge``).
    source :
        A Parquet report file or dataset directory (written by :func:`write_reports`;
        its metadata must name this protocol and these params), a dict of report
        columns (numpy arrays), a pyarrow ``RecordBatch``/``Table``, a 1-D array for
        one-column protocols, or an iterable of such batches.
    engine : {"local", "dask"}
        ``"local"``: stream chunks of at most ``chunk_size`` rows in this process.
        ``"dask"``: one aggregator state per partition (row groups of a file, or a
        batch), tree-merged on the cluster of ``client`` or ``scheduler`` (an
        address), else on a new ``distributed.LocalCluster`` with ``n_workers``
        processes (default: one per CPU), closed afterwards.  Workers read files
        by path, so the path must be visible to them.
    state :
        An existing state to add the result to (it is not modified).
    progress :
        Show a progress bar on stderr; default: only when stderr is a terminal.

    Returns
    -------
    state
        The merged state, only when every partition was read and validated; a
        corrupted file raises :class:`ReportFormatError` naming the file and returns
        nothing.  Estimate as usual with ``oracle.estimate(state)``.

    Examples
    --------
    >>> from privstats.local import GRR
    >>> oracle = GRR(4, epsilon=1.0)
    >>> reports = oracle.encode_batch([0, 1, 2, 3] * 10, rng=0)
    >>> aggregate(oracle, reports, chunk_size=7) == oracle.aggregate(reports)
    True
    """
    _check_oracle(oracle)
    engine = check_choice(engine, "engine", {"local", "dask"})
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    if n_workers is not None:
        n_workers = check_positive_int(n_workers, "n_workers")
    if engine == "local" and (client is not None or scheduler is not None):
        raise ValueError("client and scheduler are for engine='dask'; pass engine='dask' to use them")
    if client is not None and scheduler is not None:
        raise ValueError("pass either client or scheduler, not both")
    if state is not None and (
        getattr(state, "protocol", oracle.name) != oracle.name
        or getattr(state, "params", oracle.params) != oracle.params
    ):
        raise ValueError(f"state must be a {oracle.name} state with params {oracle.params}")
    if engine == "local":
        result = _aggregate_local(oracle, source, chunk_size, progress)
    else:
        result = _aggregate_dask(oracle, source, chunk_size, client, scheduler, n_workers, progress)
    return result if state is None else state.merge(result)


def _value_chunks(values, chunk_size: int) -> Iterator[Any]:
    if isinstance(values, Iterator) or (isinstance(values, Iterable) and not hasattr(values, "__len__")):
        for chunk in values:
            arr = np.asarray(chunk.to_numpy() if hasattr(chunk, "to_numpy") else chunk)
            arr = arr.reshape(1) if arr.ndim == 0 else arr
            for start in range(0, len(arr), chunk_size):
                yield arr[start : start + chunk_size]
        return
    arr = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
    arr = arr.reshape(1) if arr.ndim == 0 else arr
    for start in range(0, len(arr), chunk_size):
        yield arr[start : start + chunk_size]


def write_reports(
    oracle,
    values,
    path: str | os.PathLike,
    *,
    rng=None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    compression: str = "snappy",
    progress: bool | None = None,
) -> Path:
    """Encode users' values (the client role, vectorized) and write their reports to Parquet.

    ``values`` is array-like, or an iterator of array-like chunks (to write more
    reports than fit in memory).  Each chunk of at most ``chunk_size`` values is
    encoded with ``oracle.encode_batch`` and written as one row group, with the
    format metadata of :mod:`privstats.engine.format`.  ``rng`` defaults to the OS
    CSPRNG (these are privatized reports); pass a seed for reproducible tests.  The
    file appears only when complete (invalid values leave nothing behind).
    Returns the path.

    >>> import os, tempfile
    >>> from privstats.local import GRR
    >>> p = write_reports(GRR(4, epsilon=1.0), [0, 1, 2, 3], os.path.join(tempfile.mkdtemp(), "r.parquet"), rng=0)
    >>> p.name
    'r.parquet'
    """
    from privstats.privacy.randomness import as_source

    _check_oracle(oracle)
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    src = as_source(rng)
    bar = _Progress(len(values) if hasattr(values, "__len__") else None, progress, "encoding")
    with ReportWriter(path, oracle, chunk_size=chunk_size, compression=compression) as writer:
        for chunk in _value_chunks(values, chunk_size):
            if len(chunk) == 0:
                continue
            writer.write(oracle.encode_batch(chunk, rng=src))
            bar.update(len(chunk))
    bar.close()
    return writer.path
