"""Masked arrays (issue 26, item 7): the mask is never silently ignored.

Every public statistic × model gets each of its data arguments as a masked array with one
masked entry: the call ends in a ValueError naming the argument (dropping the entries is the
caller's choice, jointly for paired inputs).  A masked array with nothing masked is plain data.
"""

from __future__ import annotations

import warnings

import fuzz_harness as H
import numpy as np
import pytest

DATA_KINDS = ("float_data", "labels", "int_data")
LABELS = [c.label for c in H.CASES]


def _data_args(case):
    return [a for a, k in case.kinds.items() if k in DATA_KINDS and a in case.kwargs]


@pytest.mark.parametrize("label", LABELS)
def test_masked_entries_are_refused_with_the_argument_named(label):
    warnings.simplefilter("ignore")
    case = H.CASE_BY_LABEL[label]
    for arg in _data_args(case):
        base = np.asarray(case.kwargs[arg])
        mask = np.zeros(base.shape, bool)
        mask[1] = True
        with pytest.raises(ValueError, match=f"{arg} is a masked array with 1 masked"):
            case.call(**{arg: np.ma.masked_array(base, mask=mask)})


@pytest.mark.parametrize("label", ["auc/central", "quantiles/central", "frequencies/central"])
def test_masked_array_without_masked_entries_is_plain_data(label):
    warnings.simplefilter("ignore")
    case = H.CASE_BY_LABEL[label]
    plain = case.call()
    masked = case.call(**{a: np.ma.masked_array(np.asarray(case.kwargs[a])) for a in _data_args(case)})
    np.testing.assert_array_equal(np.asarray(plain.value), np.asarray(masked.value))
