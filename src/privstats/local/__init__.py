"""Local-model building blocks: ε-LDP randomizers and frequency oracles."""

from privstats.local.base import CountState, FrequencyOracle, SupportOracle
from privstats.local.choose import best_oracle, linear_variance
from privstats.local.grr import GRR, BinaryRR
from privstats.local.hadamard import HadamardResponse
from privstats.local.hierarchy import HierarchicalHistogram, HierarchyState
from privstats.local.olh import OLH
from privstats.local.unary import OUE

__all__ = [
    "GRR",
    "OLH",
    "OUE",
    "BinaryRR",
    "CountState",
    "FrequencyOracle",
    "HadamardResponse",
    "HierarchicalHistogram",
    "HierarchyState",
    "SupportOracle",
    "best_oracle",
    "linear_variance",
]
