"""Shuffle-model building blocks (Ghazi, Golowich, Kumar, Pagh, Velingker, *On the Power of Multiple
Anonymous Messages*): the shuffler, single- and multi-message protocols, their numerical calibration.

Every protocol has the roles of DESIGN.md: ``encode``/``encode_batch`` (client, OS CSPRNG by
default), ``aggregate`` (mergeable :class:`~privstats.local.CountState`), ``simulate`` (exact law,
numpy Generator) and ``estimate`` (an :class:`~privstats.Estimate` with messages and bits per user).
"""

from privstats.shuffle.countmin import CountMinMultiMessage
from privstats.shuffle.hadamard import HadamardMultiMessage
from privstats.shuffle.shuffler import BatchTooSmallError, Shuffler, shuffle_rows
from privstats.shuffle.single import ShuffledKRR, ShuffledRAPPOR
from privstats.shuffle.summation import ShuffledSum

__all__ = [
    "BatchTooSmallError",
    "CountMinMultiMessage",
    "HadamardMultiMessage",
    "ShuffledKRR",
    "ShuffledRAPPOR",
    "ShuffledSum",
    "Shuffler",
    "shuffle_rows",
]
