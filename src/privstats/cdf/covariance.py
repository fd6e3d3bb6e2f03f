"""Noise covariance of released ECDF curves and the exact variance of the AUC of two of them.

Used by the ROC curve (central, secure and local models) and by the secure leader/helper release.
"""

from __future__ import annotations

import numpy as np

from privstats.cdf.result import PrivateECDF


def raw_covariance(result: PrivateECDF) -> np.ndarray:
    """Covariance of the unsmoothed released values ``result.raw`` given the data.

    Exact when the curve is normalised by a public n (replace-one): the noise is
    linear, Cov = Cov(counts) / n^2.  Under add/remove the curve is counts / noisy
    total, and this is the delta-method covariance J Cov(counts) J^T with
    J = (I - F e_last^T) / total (evaluated at the released values).
    """
    nm = result.estimate.details["noise_model"]
    cov_counts = nm["mechanism"].count_covariance()
    k = result.raw.size
    total = nm["total"]
    if nm["public_total"]:
        return cov_counts[:k, :k] / total**2
    F = nm["values"]
    J = np.zeros((k, F.size))
    J[:, :k] = np.eye(k)
    J[:, -1] -= F[:k]
    J /= total
    return J @ cov_counts @ J.T


def _auc_terms(pos_raw: np.ndarray, neg_raw: np.ndarray):
    """AUC of the curve (1 - neg, 1 - pos) and its gradients w.r.t. the two raw curves."""
    tpr = np.concatenate([[0.0], 1.0 - pos_raw[::-1], [1.0]])
    fpr = np.concatenate([[0.0], 1.0 - neg_raw[::-1], [1.0]])
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
    # d auc / d tpr_j = (fpr_{j+1} - fpr_{j-1}) / 2,  d auc / d fpr_j = (tpr_{j-1} - tpr_{j+1}) / 2 (inner j)
    g_tpr = (fpr[2:] - fpr[:-2]) / 2
    g_fpr = (tpr[:-2] - tpr[2:]) / 2
    return auc, -g_tpr[::-1], -g_fpr[::-1]  # chain rule: tpr_j = 1 - pos_{N+1-j}


def _second_difference_cov(A: np.ndarray) -> np.ndarray:
    """Cov of (a_{j+1} - a_{j-1})_j for a ~ Cov A, with a_0 = a_{N+1} = 0."""
    Ap = np.zeros((A.shape[0] + 2, A.shape[1] + 2))
    Ap[1:-1, 1:-1] = A
    return Ap[2:, 2:] - Ap[2:, :-2] - Ap[:-2, 2:] + Ap[:-2, :-2]


def auc_variance(pos_raw, neg_raw, cov_pos, cov_neg) -> tuple[float, float]:
    """(exact variance, unbiased estimate) for the AUC of two noisy curves with independent noise.

    The trapezoidal AUC is bilinear in the two curves: AUC(p + e, q + f) - AUC(p, q) =
    g_p^T e + g_q^T f + (1/2) sum_j e_j (f_{j+1} - f_{j-1}) (in curve order, up to sign).
    The three terms are uncorrelated, so Var = g_p^T S_p g_p + g_q^T S_q g_q + T with
    T = (1/4) tr(S_p D S_q D^T).  Called with the true curves it returns the exact
    variance; with the released curves, E[plug-in] = Var + 2T, so ``plug-in - 2T``
    (floored at T, the variance's minimum) is the unbiased estimate returned second.
    """
    _, g_pos, g_neg = _auc_terms(pos_raw, neg_raw)
    cross = 0.25 * float(np.sum(cov_pos[::-1, ::-1] * _second_difference_cov(cov_neg[::-1, ::-1])))
    lin = float(g_pos @ cov_pos @ g_pos + g_neg @ cov_neg @ g_neg)
    return lin + cross, max(lin - cross, cross)


def roc_points(pos: PrivateECDF, neg: PrivateECDF, covs=None):
    """The ROC curve of two class ECDFs (positives', negatives' scores): ``fpr, tpr, thresholds``
    ("predict positive when score > threshold"), the AUC of the released curves, the AUC of the raw
    curves and the unbiased estimate of its variance (:func:`auc_variance`); ``covs``: the two raw
    curves' covariances if already computed."""
    tau = pos.quantiles
    tpr = np.concatenate([[0.0], 1.0 - pos.probabilities[::-1], [1.0]])
    fpr = np.concatenate([[0.0], 1.0 - neg.probabilities[::-1], [1.0]])
    thresholds = np.concatenate([[np.inf], tau[::-1], [-np.inf]])
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
    auc_raw, _, _ = _auc_terms(pos.raw, neg.raw)
    cov_pos, cov_neg = (raw_covariance(pos), raw_covariance(neg)) if covs is None else covs
    _, var_hat = auc_variance(pos.raw, neg.raw, cov_pos, cov_neg)
    return fpr, tpr, thresholds, auc, auc_raw, var_hat
