"""DP distributed data summarization (Sarpatwar et al. 2019): roles, messages, h1/h2, auction.

The public entry point is :func:`privstats.summarize`.
"""

from privstats.summarization.budget import PrivateParams, plan_private, sketch_accounting
from privstats.summarization.features import (
    RandomFourierFeatures,
    marginal_gains,
    mmd2,
    objective,
    rbf_kernel,
)
from privstats.summarization.gaussian import (
    GaussianParams,
    GaussianSketch,
    gaussian_accounting,
    plan_gaussian,
)
from privstats.summarization.planner import SummaryPlan, plan_summary
from privstats.summarization.protocol import (
    SummaryResult,
    json_transport,
    run_greedy,
    run_private,
    run_uniform,
)
from privstats.summarization.roles import Consumer, Curator, DataOwner, ProtocolError

__all__ = [
    "Consumer",
    "Curator",
    "DataOwner",
    "GaussianParams",
    "GaussianSketch",
    "PrivateParams",
    "ProtocolError",
    "RandomFourierFeatures",
    "SummaryPlan",
    "SummaryResult",
    "gaussian_accounting",
    "json_transport",
    "marginal_gains",
    "mmd2",
    "objective",
    "plan_gaussian",
    "plan_private",
    "plan_summary",
    "rbf_kernel",
    "run_greedy",
    "run_private",
    "run_uniform",
    "sketch_accounting",
]
