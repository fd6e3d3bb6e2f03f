"""The demo's data sets, generated from a seed or bundled with scikit-learn, and exact references."""

from __future__ import annotations

import math
import zlib

import numpy as np

from privstats.demo.config import INCOME_BOUNDS, SIZES


# ----------------------------------------------------------------------------- data
def _zipf(n: int, d: int, rng: np.random.Generator, s: float = 1.1) -> np.ndarray:
    p = 1.0 / np.arange(1, d + 1) ** s
    return rng.choice(d, size=n, p=p / p.sum()).astype(np.int64)


def _breast_cancer_scores() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=2000))
    score = model.fit(X, y).predict_proba(X)[:, 1]
    return y.astype(np.int64), score


def _digits_owners(rng: np.random.Generator):
    """Five owners by digit pairs and a 70/30 target of 3s and 4s (issue 6's stand-in for MNIST)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    owners = [X[np.isin(y, pair)] for pair in ([0, 1], [3, 4], [5, 6], [7, 8], [9, 2])]
    threes, fours = rng.permutation(np.flatnonzero(y == 3)), rng.permutation(np.flatnonzero(y == 4))
    k = 200  # the consumer's validation set D_v
    target = X[np.concatenate([threes[: int(0.7 * k)], fours[: k - int(0.7 * k)]])]
    return owners, target


def demo_data(name: str, size: str = "full", seed: int = 2024):
    """The demo's data sets, generated from ``seed`` (deterministic)."""
    cfg = SIZES[size]
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if name == "zipf":
        return _zipf(cfg.n_freq, cfg.domain, rng)
    if name == "incomes":
        x = rng.lognormal(mean=math.log(40.0), sigma=0.6, size=cfg.n_cont)
        return np.clip(np.round(x, 2), *INCOME_BOUNDS)
    if name == "ordinal":
        z = rng.multivariate_normal([0.0, 0.0], [[1.0, 0.75], [0.75, 1.0]], size=cfg.n_pairs)
        cuts = np.array([-1.2, -0.5, 0.0, 0.5, 1.2])
        return np.searchsorted(cuts, z[:, 0]), np.searchsorted(cuts, z[:, 1])
    if name == "scores":  # a calibrated model: y ~ Bernoulli(p), p ~ Beta(2, 5)
        p = np.round(rng.beta(2.0, 5.0, size=cfg.n_scores), 4)
        return (rng.random(cfg.n_scores) < p).astype(np.int64), p
    if name == "breast_cancer":
        return _breast_cancer_scores()
    if name == "digits":
        return _digits_owners(rng)
    raise ValueError(f"name must be a demo data set, got {name!r}")


def gini_mean_difference_exact(x) -> float:
    """Mean of |x_i − x_j| over pairs i < j, in O(n log n) from the sorted values."""
    x = np.sort(np.asarray(x, dtype=float))
    n = x.size
    return float(2.0 * np.sum((2 * np.arange(n) - n + 1) * x) / (n * (n - 1)))
