"""Boundary validation: every bad input raises a ValueError naming the argument, and inputs are untouched."""

import math

import numpy as np
import pytest

from privstats import validation as v


@pytest.mark.parametrize("eps", [0, -1, math.nan, math.inf, "1", None, True])
def test_bad_epsilon_named(eps):
    with pytest.raises(ValueError, match="^epsilon"):
        v.check_epsilon(eps)


@pytest.mark.parametrize("delta", [0, 1, -0.1, 1.5, math.nan, None])
def test_bad_delta_named(delta):
    with pytest.raises(ValueError, match="^delta"):
        v.check_delta(delta)


def test_delta_zero_allowed_only_when_asked():
    assert v.check_delta(0, allow_zero=True) == 0.0
    assert v.check_delta(1e-6) == 1e-6


@pytest.mark.parametrize("d", [1, 0, -3, 2.5, "8", True])
def test_bad_domain_size_named(d):
    with pytest.raises(ValueError, match="^domain_size"):
        v.check_domain_size(d)


def test_power_of_two():
    assert v.check_domain_size(1024, power_of_two=True) == 1024
    with pytest.raises(ValueError, match="grid must be a power of two"):
        v.check_power_of_two(1000, "grid")


def test_bounds_required_and_explained():
    with pytest.raises(ValueError, match="bounds is required.*leak"):
        v.check_bounds(None)
    for bad in [(1, 1), (2, 1), (0, math.inf), (0,), "ab"]:
        with pytest.raises(ValueError, match="^bounds"):
            v.check_bounds(bad)
    assert v.check_bounds([0, 1]) == (0.0, 1.0)


def test_float_array_rejects_nan_inf_empty_and_out_of_bounds():
    with pytest.raises(ValueError, match="x contains NaN"):
        v.as_float_array([1.0, np.nan], "x")
    with pytest.raises(ValueError, match="x contains infinite"):
        v.as_float_array([1.0, np.inf], "x")
    with pytest.raises(ValueError, match="x must not be empty"):
        v.as_float_array([], "x")
    with pytest.raises(ValueError, match=r"x: \d+ values? outside bounds"):
        v.as_float_array([0.5, 2.0], "x", bounds=(0, 1))
    with pytest.raises(TypeError, match="x must be numeric"):
        v.as_float_array(["a"], "x")


def test_domain_values():
    data = [0, 3, 3, 1]
    out = v.as_domain_values(data, 4)
    assert out.dtype == np.int64 and data == [0, 3, 3, 1]
    for bad, msg in [
        ([0, 4], r"values must be in \[0, 4\)"),
        ([-1], r"values must be in"),
        ([0.5], "non-integer"),
        ([np.nan], "NaN"),
        ([], "must not be empty"),
        ([[0, 1]], "1-dimensional"),
    ]:
        with pytest.raises(ValueError, match=msg):
            v.as_domain_values(bad, 4)
    assert v.as_domain_values(np.array([1.0, 2.0]), 4).tolist() == [1, 2]


def test_binary_labels():
    assert v.as_binary_labels([0, 1, 1]).tolist() == [False, True, True]
    assert v.as_binary_labels([-1, 1]).tolist() == [False, True]
    with pytest.raises(ValueError, match="y_true must contain exactly two classes"):
        v.as_binary_labels([1, 1, 1])
    with pytest.raises(ValueError, match="y_true classes"):
        v.as_binary_labels([0, 2])
    with pytest.raises(ValueError, match="y_true contains NaN"):
        v.as_binary_labels([0.0, 1.0, np.nan])


def test_same_length_names_both():
    with pytest.raises(ValueError, match="y_true has 3, y_score has 2"):
        v.check_same_length(y_true=[1, 2, 3], y_score=[1, 2])


def test_pandas_like_input_accepted():
    class Column:  # the to_numpy protocol of pandas / polars columns
        def to_numpy(self):
            return np.array([0.1, 0.2])

    assert v.as_float_array(Column(), "x").tolist() == [0.1, 0.2]
