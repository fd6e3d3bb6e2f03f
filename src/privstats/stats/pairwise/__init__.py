"""Pairwise statistics (degree-2 U-statistics) under local DP, pairwise 2PC, or a trusted curator.

``model`` picks the trust model and ``method`` the protocol (Bell et al. 2020):

=========  =====================  ==============================================================
model      method                 protocol (module of this package)
=========  =====================  ==============================================================
local      ``tree`` (AUC only)    B: hierarchical histograms with the Hadamard level oracle (``local_tree``)
local      ``quantized``          A: quantise, one oracle report per user (k-RR / OUE / HR) (``local_quantized``)
secure     ``pairs``              C: P random permutations, pairs of users add noise in 2PC (``secure_pairs``)
secure     ``all-pairs``          every pair, advanced composition (simulated baseline) (``secure_all_pairs``)
central    ``exact``              exact statistic + discrete Laplace (replace-one sensitivity) (``central``)
=========  =====================  ==============================================================

Each module holds one unit per statistic (:mod:`privstats.stats.units`): the protocol's
predictor (registered with the planner) next to its run.  The public functions
(``functions``) validate their arguments, take the named ``method`` or the planner's choice,
run the unit and finish once.

``model`` defaults to ``"central"`` (as every statistic; :func:`privstats.plan` compares the
models).  ``method="auto"`` takes the protocol and parameters with the smallest predicted
error (bias² + variance) from the planner's registered predictors.  Values are kept in the
statistic's range (AUC, collision probability in [0, 1], tau in [−1, 1], Gini mean difference in
[0, hi − lo]); ``postprocess="none"`` keeps the raw unbiased value, which is always in
``details["unbiased"]``.  ``rng=None`` runs the deployment path (client encoding and pair noise
from the OS CSPRNG with exact samplers); a seed or Generator runs the vectorized simulation,
which has the same distribution.  Every result is an :class:`~privstats.Estimate` whose
``params`` show the chosen bins / depth / threshold / P.

>>> import numpy as np, privstats
>>> g = np.random.default_rng(0)
>>> y = np.r_[np.ones(50000), np.zeros(50000)]
>>> s = np.r_[g.beta(3, 2, 50000), g.beta(2, 3, 50000)]
>>> est = privstats.auc(y, s, epsilon=1.0, model="local", rng=1)
>>> est.protocol, bool(abs(est.value - 0.756) < 0.05)
('ustat-quantized', True)
"""

from __future__ import annotations

# the unit modules register themselves (planner predictors and runs) on import, in this order
# isort: off
from privstats.stats.pairwise import central  # noqa: F401
from privstats.stats.pairwise import secure_pairs  # noqa: F401
from privstats.stats.pairwise import local_quantized  # noqa: F401
from privstats.stats.pairwise import local_tree  # noqa: F401
from privstats.stats.pairwise import secure_all_pairs  # noqa: F401
from privstats.stats.pairwise import gini  # noqa: F401

# isort: on
from privstats.stats.pairwise.functions import (
    auc,
    collision_probability,
    gini_coefficient,
    gini_mean_difference,
    kendall_tau,
    ustatistic,
)
from privstats.stats.pairwise.plumbing import METHODS as METHODS
from privstats.stats.pairwise.plumbing import MODELS as MODELS
from privstats.stats.pairwise.plumbing import PAIR_BACKENDS as PAIR_BACKENDS

__all__ = [
    "auc",
    "collision_probability",
    "gini_coefficient",
    "gini_mean_difference",
    "kendall_tau",
    "ustatistic",
]
