"""Private distributions: ECDF, quantiles, ROC curve and Hosmer–Lemeshow calibration.

Implements Barczewski, Mawass & Ramon, *Differentially Private Empirical Cumulative
Distribution Functions* (with the errata of the research note) plus the best known
alternatives: a consistent b-ary tree (Hay et al.; OpenDP's reference), and the
exponential / joint exponential mechanisms for a few quantiles.

>>> import numpy as np, privstats
>>> x = np.random.default_rng(0).beta(2, 5, 20_000)
>>> res = privstats.ecdf(x, epsilon=1.0, bounds=(0, 1), rng=0)
>>> bool(abs(res.evaluate(0.3) - np.mean(x <= 0.3)) < 0.01)
True
>>> q = privstats.quantiles(x, [0.5], epsilon=1.0, bounds=(0, 1), rng=0)
>>> bool(abs(q.value[0] - np.median(x)) < 0.01)
True
"""

from __future__ import annotations

# isort: off
from privstats.stats.distribution.ecdf import ecdf as ecdf
from privstats.stats.distribution.quantiles import quantiles as quantiles
from privstats.stats.distribution.roc import roc_curve as roc_curve
from privstats.stats.distribution.calibration import HL_BUDGETS as HL_BUDGETS
from privstats.stats.distribution.calibration import HL_QUANTILE_FRACTION as HL_QUANTILE_FRACTION
from privstats.stats.distribution.calibration import HL_STEPS as HL_STEPS
from privstats.stats.distribution.calibration import _hl_statistic as _hl_statistic
from privstats.stats.distribution.calibration import hl_group_sums as hl_group_sums
from privstats.stats.distribution.calibration import hl_uncertainty as hl_uncertainty
from privstats.stats.distribution.calibration import hosmer_lemeshow as hosmer_lemeshow
from privstats.stats.distribution.calibration import hosmer_lemeshow_accounting as hosmer_lemeshow_accounting

# isort: on
from privstats.cdf.covariance import _auc_terms as _auc_terms
from privstats.cdf.covariance import auc_variance as auc_variance
from privstats.cdf.covariance import raw_covariance as raw_covariance
from privstats.stats.distribution.plumbing import NEIGHBOURS as NEIGHBOURS

__all__ = [
    "auc_variance",
    "ecdf",
    "hosmer_lemeshow",
    "hosmer_lemeshow_accounting",
    "quantiles",
    "raw_covariance",
    "roc_curve",
]
