"""Validity circuits of the VDAF-08 Prio3 instances: Count, Sum, SumVec, Histogram.

Example:
    >>> from privstats.secure.vdaf.circuits import Histogram
    >>> Histogram(4, 2).encode(2)
    [0, 0, 1, 0]
"""

from __future__ import annotations

from typing import Any

from privstats.secure.vdaf.field import Field64, Field128
from privstats.secure.vdaf.flp import GadgetCall, Mul, ParallelSum, Range2, Valid

__all__ = ["Count", "Histogram", "Sum", "SumVec", "check_int"]


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an int in [low, high]; ValueError/TypeError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be in {bound}, got {value}")
    return value


def _measurement_int(value: Any, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"measurement must be an int, got {type(value).__name__}")
    if not 0 <= value < high:
        raise ValueError(f"measurement must be in [0, {high}), got {value}")
    return value


class Count(Valid):
    """A measurement in {0, 1}; checks x*x - x == 0 with one Mul call (Field64)."""

    FIELD = Field64
    MEAS_LEN = OUTPUT_LEN = 1
    JOINT_RAND_LEN = 0

    def __init__(self) -> None:
        self.GADGETS = [Mul()]
        self.GADGET_CALLS = [1]

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int, gadgets: list[GadgetCall]) -> int:
        return (gadgets[0]([meas[0], meas[0]]) - meas[0]) % self.FIELD.MODULUS

    def encode(self, measurement: Any) -> list[int]:
        return [_measurement_int(measurement, 2)]

    def truncate(self, meas: list[int]) -> list[int]:
        return list(meas)

    def decode(self, output: list[int], num_measurements: int) -> int:
        return output[0]


class Sum(Valid):
    """An integer in [0, 2^bits) sent as its bits, each range-checked with Range2 (Field128)."""

    FIELD = Field128
    OUTPUT_LEN = 1
    JOINT_RAND_LEN = 1

    def __init__(self, bits: int) -> None:
        self.bits = check_int("bits", bits, 1, 64)
        self.MEAS_LEN = bits
        self.GADGETS = [Range2()]
        self.GADGET_CALLS = [bits]

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int, gadgets: list[GadgetCall]) -> int:
        p = self.FIELD.MODULUS
        out, r = 0, joint_rand[0]
        for b in meas:
            out += r * gadgets[0]([b])
            r = r * joint_rand[0] % p
        return out % p

    def encode(self, measurement: Any) -> list[int]:
        value = _measurement_int(measurement, 2**self.bits)
        return [(value >> i) & 1 for i in range(self.bits)]

    def truncate(self, meas: list[int]) -> list[int]:
        return [self.FIELD.bits_to_int(meas)]

    def decode(self, output: list[int], num_measurements: int) -> int:
        return output[0]


class _ChunkedRange(Valid):
    """Shared part of SumVec and Histogram: ParallelSum(Mul, chunk_length) range checks of 0/1 entries."""

    FIELD = Field128

    def _setup(self, meas_len: int, chunk_length: int) -> None:
        self.chunk_length = check_int("chunk_length", chunk_length, 1)
        self.MEAS_LEN = meas_len
        self.GADGETS = [ParallelSum(Mul(), chunk_length)]
        self.GADGET_CALLS = [(meas_len + chunk_length - 1) // chunk_length]

    def range_terms(self, meas: list[int], r: int, num_shares: int, gadget: GadgetCall) -> int:
        """sum over chunks of ParallelSum(Mul) on (r^(idx+1) x_idx, x_idx - 1/num_shares); padding x = 0."""
        p = self.FIELD.MODULUS
        shares_inv = pow(num_shares, p - 2, p)
        c, out, r_pow = self.chunk_length, 0, r
        for i in range(self.GADGET_CALLS[0]):
            inputs = [0] * (2 * c)
            for j in range(c):
                idx = i * c + j
                x = meas[idx] if idx < len(meas) else 0
                inputs[2 * j] = r_pow * x % p
                inputs[2 * j + 1] = (x - shares_inv) % p
                r_pow = r_pow * r % p
            out += gadget(inputs)
        return out % p


class SumVec(_ChunkedRange):
    """A vector of ``length`` integers in [0, 2^bits), sent bit by bit (Field128)."""

    JOINT_RAND_LEN = 1

    def __init__(self, length: int, bits: int, chunk_length: int) -> None:
        self.length = check_int("length", length, 1)
        self.bits = check_int("bits", bits, 1, 64)
        self.OUTPUT_LEN = length
        self._setup(length * bits, chunk_length)

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int, gadgets: list[GadgetCall]) -> int:
        return self.range_terms(meas, joint_rand[0], num_shares, gadgets[0])

    def encode(self, measurement: Any) -> list[int]:
        if isinstance(measurement, (str, bytes)) or not hasattr(measurement, "__len__"):
            raise TypeError("measurement must be a sequence of ints")
        if len(measurement) != self.length:
            raise ValueError(f"measurement must have length {self.length}, got {len(measurement)}")
        out: list[int] = []
        for v in measurement:
            value = _measurement_int(int(v) if not isinstance(v, (int, bool)) else v, 2**self.bits)
            out += [(value >> i) & 1 for i in range(self.bits)]
        return out

    def truncate(self, meas: list[int]) -> list[int]:
        b = self.bits
        return [self.FIELD.bits_to_int(meas[i * b : (i + 1) * b]) for i in range(self.length)]

    def decode(self, output: list[int], num_measurements: int) -> list[int]:
        return list(output)


class Histogram(_ChunkedRange):
    """A bucket index in [0, length) sent one-hot; checks 0/1 entries summing to one (Field128)."""

    JOINT_RAND_LEN = 2

    def __init__(self, length: int, chunk_length: int) -> None:
        self.length = check_int("length", length, 1)
        self.OUTPUT_LEN = length
        self._setup(length, chunk_length)

    def eval(self, meas: list[int], joint_rand: list[int], num_shares: int, gadgets: list[GadgetCall]) -> int:
        p = self.FIELD.MODULUS
        r, u = joint_rand
        # The draft's prose multiplies each chunk by r; its reference code and vectors do not.
        range_check = self.range_terms(meas, r, num_shares, gadgets[0])
        sum_check = (sum(meas) - pow(num_shares, p - 2, p)) % p
        return (u * range_check + u * u % p * sum_check) % p

    def encode(self, measurement: Any) -> list[int]:
        value = _measurement_int(measurement, self.length)
        out = [0] * self.length
        out[value] = 1
        return out

    def truncate(self, meas: list[int]) -> list[int]:
        return list(meas)

    def decode(self, output: list[int], num_measurements: int) -> list[int]:
        return list(output)
