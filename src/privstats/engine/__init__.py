"""Running aggregation at scale: chunked in-process or on Dask, over Parquet report files.

* :func:`write_reports` — the client role, vectorized: encode values, write Parquet.
* :func:`aggregate` — fold reports from a file, dataset, batches or arrays into an
  aggregator state, locally in bounded memory (``engine="local"``) or one state
  per partition tree-merged on a Dask cluster (``engine="dask"``).
* :mod:`privstats.engine.format` — the versioned report format (docs/report-format.md).
* :mod:`privstats.engine.registry` — protocol name + params → oracle.
* :class:`ShuffledMessages` — shuffle-model protocols as oracles (rows are messages).

pyarrow (extra ``arrow``) is needed for files, dask[distributed] (extra ``dask``)
for the Dask engine; both are imported only when used.

>>> import os, tempfile
>>> from privstats.local import GRR
>>> from privstats.engine import aggregate, write_reports
>>> oracle = GRR(8, epsilon=2.0)
>>> path = write_reports(oracle, [5] * 2000, os.path.join(tempfile.mkdtemp(), "r.parquet"), rng=1)
>>> est = oracle.estimate(aggregate(oracle, path))
>>> bool(abs(est.value[5] - 2000) < 6 * est.stderr[5])
True
"""

from privstats.engine.adapters import ShuffledMessages
from privstats.engine.core import DEFAULT_CHUNK_SIZE, aggregate, write_reports
from privstats.engine.format import FORMAT_VERSION, ReportFormatError, ReportWriter, read_report_metadata
from privstats.engine.registry import available_protocols, build_oracle, register_protocol

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "FORMAT_VERSION",
    "ReportFormatError",
    "ReportWriter",
    "ShuffledMessages",
    "aggregate",
    "available_protocols",
    "build_oracle",
    "read_report_metadata",
    "register_protocol",
    "write_reports",
]
