"""Local-model building blocks: ε-LDP randomizers and frequency oracles."""

from privstats.local.base import CountState, FrequencyOracle, SupportOracle
from privstats.local.grr import GRR, BinaryRR
from privstats.local.unary import OUE
from privstats.local.olh import OLH
from privstats.local.hadamard import HadamardResponse
from privstats.local.choose import best_oracle, linear_variance
from privstats.local.hierarchy import HierarchicalHistogram, HierarchyState

__all__ = ["CountState", "FrequencyOracle", "SupportOracle", "GRR", "BinaryRR", "OUE", "OLH", "HadamardResponse", "best_oracle",
           "linear_variance", "HierarchicalHistogram", "HierarchyState"]
