"""Leak 1: a batch's noisy aggregate is released once.

The attack: release, let one more client report, release again, subtract.  With the noise
reused the difference is exactly the new client's cumulative one-hot (measured before the
fix: ``[0, 0, 0, 1, 1, 1, 1, 1]`` for cell 3 of 8, in 100 of 100 trials).  Now the second
report is refused, and a new batch has fresh noise.
"""

import numpy as np
import pytest

from privstats.cdf.tree import BinaryTreeMechanism
from privstats.secure.aggregation import (
    AggregationServer,
    BatchClosedError,
    SecureECDFAggregation,
    encode_client,
    open_partials,
)
from privstats.secure.dcf import FSSECDFServer, fss_ecdf_keys

MECH = BinaryTreeMechanism(8, 1.0)


def _servers(seed):
    return [AggregationServer(j, 2, MECH, rng=seed * 10 + j) for j in range(2)]


def test_report_after_release_is_refused():
    servers = _servers(1)
    for cell in (0, 5, 2):
        for s, m in zip(servers, encode_client(cell, 9, 2, rng=cell), strict=True):
            s.receive(m)
    first = open_partials([s.partial() for s in servers])
    late = encode_client(3, 9, 2, rng=99)
    for s, m in zip(servers, late, strict=True):
        with pytest.raises(BatchClosedError):
            s.receive(m)
        with pytest.raises(BatchClosedError):
            s.receive_aggregate(np.zeros(9, dtype=np.uint64), 1)
        with pytest.raises(BatchClosedError):
            s.merge(AggregationServer(s.index, 2, MECH, rng=0))
        with pytest.raises(BatchClosedError):
            AggregationServer(s.index, 2, MECH, rng=0).merge(s)
    assert np.array_equal(open_partials([s.partial() for s in servers]), first)  # same release
    proto = SecureECDFAggregation(MECH, n_servers=2, rng=3)
    proto.simulate(np.array([1, 2]))
    with pytest.raises(BatchClosedError):
        proto.simulate(np.array([1, 2, 3]))


def test_difference_attack_recovers_nothing():
    """Two batches (the second with one more client, cell 3): the difference minus the client's
    one-hot is fresh noise of variance 2 x (opened variance), never identically zero."""
    onehot = (np.arange(8) >= 3).astype(np.int64)
    hits, diffs = 0, []
    for t in range(60):
        cells = np.array([0, 5, 2])
        a = SecureECDFAggregation(MECH, n_servers=2, rng=2 * t).simulate(cells)
        b = SecureECDFAggregation(MECH, n_servers=2, rng=2 * t + 1).simulate(np.append(cells, 3))
        d = (b - a) - onehot
        hits += int(not d.any())
        diffs.append(d[0])
    assert hits == 0
    v = 2 * 2 * MECH.count_variance()[0]  # two batches, each with 2 servers' full noise
    assert np.var(diffs) > 0.3 * v


def test_fss_batch_keys_are_fixed_and_released_once():
    cells = np.array([1, 4, 6])
    k0, k1 = fss_ecdf_keys(cells, 3, rng=0)
    servers = [FSSECDFServer(k, MECH, rng=j) for j, k in enumerate((k0, k1))]
    first = open_partials([s.partial() for s in servers])
    more0, _ = fss_ecdf_keys(np.append(cells, 3), 3, rng=1)
    with pytest.raises(AttributeError):
        servers[0].keys = more0  # a batch cannot grow
    assert np.array_equal(open_partials([s.partial() for s in servers]), first)
    assert servers[0].closed


def test_rng_none_batches_have_independent_noise():
    a = AggregationServer(0, 2, MECH).noise_shares()
    b = AggregationServer(0, 2, MECH).noise_shares()
    assert a.dtype == np.int64 and not np.array_equal(a, b)
