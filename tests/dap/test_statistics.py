"""The other secure-model statistics through DAP (quantiles, ROC + AUC): the same opening as
``privstats.*(model="secure")`` applied to the two aggregators' noisy shares."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("fastapi")

from inproc import collect, make_pair

from privstats.services.dap.codec import Collection, Interval


def _collect_open(pair, **kw):
    from privstats.services.dap.client import open_collection

    tp = pair.lctx.dap.time_precision
    iv = Interval(0, (int(time.time()) // tp + 1) * tp)
    status, body = collect(pair, iv)
    assert status == 200, body
    return open_collection(pair.lctx.dap, pair.secrets["analyst"], Collection.decode(body), iv, **kw)


def test_quantiles(tmp_path):
    from privstats.services.dap.client import DapClient

    pair = make_pair(tmp_path, statistic="quantiles", grid=63, epsilon=2.0)
    try:
        x = np.random.default_rng(5).beta(2.0, 5.0, size=600)
        DapClient(pair.task, http=pair.leader).upload(x)
        est = _collect_open(pair, q=[0.25, 0.5, 0.75])
        exact = np.quantile(x, [0.25, 0.5, 0.75])
        # grid spacing 1/63 plus the noise: at n = 600, ε = 2 the ECDF's noise SE is about 0.01
        assert np.all(np.abs(np.asarray(est.value) - exact) < 0.08), (est.value, exact)
    finally:
        pair.close()


def test_roc_with_private_labels(tmp_path):
    from privstats.services.dap.client import DapClient

    pair = make_pair(tmp_path, statistic="roc", grid=31, epsilon=2.0)
    try:
        rng = np.random.default_rng(8)
        y = rng.integers(0, 2, size=600)
        s = np.clip(rng.normal(np.where(y == 1, 0.65, 0.35), 0.15), 0, 1)
        DapClient(pair.task, http=pair.leader).upload(s, labels=y)
        fpr, tpr, thresholds, est = _collect_open(pair)
        pos, neg = s[y == 1], s[y == 0]
        exact_auc = np.mean(pos[:, None] > neg[None, :]) + 0.5 * np.mean(pos[:, None] == neg[None, :])
        auc, se = float(np.ravel(est.value)[0]), float(np.ravel(est.stderr)[0])
        # the grid merges pairs within a cell (1/31 wide): at most ~1/31 of the pairs move by 1/2
        assert abs(auc - exact_auc) < 5 * se + 1 / 31, (auc, se, exact_auc)
        assert fpr.shape == tpr.shape and np.all(np.diff(thresholds) < 0)  # decreasing, as sklearn
    finally:
        pair.close()
