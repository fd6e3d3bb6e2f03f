"""Local-model building blocks: ε-LDP randomizers and frequency oracles."""

from privstats.local.base import CountState, FrequencyOracle
from privstats.local.grr import GRR, BinaryRR

__all__ = ["CountState", "FrequencyOracle", "GRR", "BinaryRR"]
