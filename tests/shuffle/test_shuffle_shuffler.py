"""The shuffler role: minimum batch, uniform permutation independent of input order, opaque bytes."""

import itertools

import numpy as np
import pytest
from scipy import stats

from privstats.shuffle import BatchTooSmallError, Shuffler, shuffle_rows


def test_refuses_small_batches_and_keeps_them_pending():
    s = Shuffler(min_batch=3)
    s.submit([b"a", b"b"])
    with pytest.raises(BatchTooSmallError, match="min_batch=3"):
        s.release()
    assert len(s) == 2
    s.submit([b"c"])
    assert sorted(s.release()) == [b"a", b"b", b"c"]
    assert len(s) == 0  # nothing kept after release


def test_default_is_the_os_csprng():
    assert Shuffler(min_batch=1)._source.secure


def test_messages_are_opaque_bytes_of_fixed_size():
    s = Shuffler(min_batch=1, message_size=2)
    with pytest.raises(TypeError, match="bytes"):
        s.submit(["ab"])
    with pytest.raises(ValueError, match="exactly 2 bytes"):
        s.submit([b"ab", b"abc"])
    assert len(s) == 0  # a bad batch adds nothing


def test_output_order_is_uniform_and_independent_of_input_order():
    msgs = [b"x", b"y", b"z"]
    trials = 3000
    tables = []
    for order in ([0, 1, 2], [2, 0, 1]):
        s = Shuffler(min_batch=3, rng=42 + order[0])
        counts = {p: 0 for p in itertools.permutations(msgs)}
        for _ in range(trials):
            counts[tuple(s.shuffle([msgs[i] for i in order]))] += 1
        tables.append([counts[p] for p in itertools.permutations(msgs)])
        assert stats.chisquare(tables[-1]).pvalue > 1e-4  # uniform over the 6 orders
    assert stats.chi2_contingency(np.array(tables))[1] > 1e-4  # same law for both input orders


def test_a_biased_shuffler_would_be_caught():
    # the same statistic flags the identity "shuffle"
    assert stats.chisquare([3000, 0, 0, 0, 0, 0]).pvalue < 1e-4


def test_shuffle_rows_min_batch_and_permutation():
    rows = np.arange(10)
    out = shuffle_rows(rows, rng=1)
    assert sorted(out.tolist()) == rows.tolist()
    with pytest.raises(BatchTooSmallError):
        shuffle_rows(rows, min_batch=11)
