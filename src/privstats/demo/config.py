"""The demo's sizes, public constants and table columns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DemoSize:
    """Problem sizes for one demo size."""

    n_freq: int  # users in the frequency scenarios
    domain: int  # frequency domain size
    n_cont: int  # records in the ECDF / quantile / Gini data
    n_pairs: int  # users in the Kendall's tau data
    n_scores: int  # users in the synthetic calibrated-score data (AUC at scale, Hosmer–Lemeshow)
    summary_size: int  # points chosen by summarization
    epsilons: tuple[float, ...]


SIZES = {  # DemoSize(n_freq, domain, n_cont, n_pairs, n_scores, summary_size, epsilons)
    "tiny": DemoSize(5_000, 16, 1_000, 1_000, 2_000, 10, (1.0,)),
    "small": DemoSize(20_000, 64, 4_000, 4_000, 10_000, 20, (1.0, 4.0)),
    "full": DemoSize(1_000_000, 1024, 50_000, 20_000, 100_000, 50, (0.5, 1.0, 2.0)),
}

HEADLINE_EPSILON = 1.0
SHUFFLE_DELTA = 1e-6
INCOME_BOUNDS = (0.0, 256.0)  # public bounds (thousands); 40 lies on the default 1024-point grid
SHUFFLE_RANGE_USERS = 5_000  # users in the shuffle-model range row (see scenario_range_counts)
SHUFFLE_QUANTILE_USERS = 10_000  # users in the shuffle-model quantile row (see scenario_quantiles)
INCOME_THRESHOLD = 40.0  # public point at which the ECDF row evaluates F
QUANTILE_LEVELS = (0.25, 0.5, 0.75)
ORDINAL_LEVELS = 6
# (statistic, model) rows that cost seconds each to simulate: run at the headline ε only
HEADLINE_ONLY = {
    ("frequencies", "shuffle"),
    ("range_counts", "shuffle"),
    ("quantiles", "shuffle"),
    ("roc_curve", "local"),
}

ROW_COLUMNS = [
    ("statistic", "statistic"),
    ("model", "trust model"),
    ("protocol", "protocol"),
    ("privacy", "ε (δ)"),
    ("estimate", "private estimate"),
    ("exact", "exact value"),
    ("abs_error", "abs error"),
    ("stderr", "std error"),
    ("bits_per_user", "bits/user"),
    ("time_s", "time (s)"),
    ("plan", "planner's pick"),
]
ORACLE_COLUMNS = [
    ("oracle", "oracle"),
    ("domain", "d"),
    ("epsilon", "ε"),
    ("max_abs_error", "max abs error"),
    ("mean_abs_error", "mean abs error"),
    ("exact_std", "exact std"),
    ("bits_per_user", "bits/user"),
    ("time_s", "time (s)"),
]
