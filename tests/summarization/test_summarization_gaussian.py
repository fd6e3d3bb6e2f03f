"""The discrete-Gaussian sketch, its accounting and planner, and the no-release (pool greedy) protocol."""

import math

import numpy as np
import pytest

import privstats
from privstats.privacy import zcdp_to_approx
from privstats.summarization import Consumer, DataOwner, json_transport
from privstats.summarization.gaussian import (
    GaussianParams,
    GaussianSketch,
    gaussian_accounting,
    plan_gaussian,
    release_rounds,
    shrink,
)
from privstats.summarization.protocol import run_private
from privstats.summarization.roles import Curator


def test_encode_unbiased_and_within_the_sensitivity_bound():
    rng = np.random.default_rng(0)
    d, reps = 16, 3000
    sk = GaussianSketch(d, clip_norm=1.0, resolution=4)
    h = rng.uniform(-0.2, 0.2, size=d)
    h *= 0.9 / np.linalg.norm(h)  # inside the ball: no clipping
    U = sk.encode(np.tile(h, (reps, 1)), rng=1)
    y = h / sk.step
    p = y - np.floor(y)
    se = np.sqrt(p * (1 - p) / reps) + 1e-12  # exact sd of one Bernoulli rounding
    assert np.all(np.abs(U.mean(0) - y) <= 5 * se)
    big = rng.normal(size=(500, d)) * 3.0  # clipped rows, worst-case rounding included
    norms = np.linalg.norm(sk.encode(big, rng=2), axis=1)
    assert norms.max() <= sk.l2_sensitivity / sk.sensitivity
    assert norms.max() > 0.9 * sk.clip_norm / sk.step  # clipping keeps the norm, it does not zero rows


def test_release_noise_has_the_exact_variance_and_an_under_noised_release_is_caught():
    sk = GaussianSketch(400, clip_norm=1.0)
    sigma = 37.0
    U = np.zeros(400, dtype=np.int64)
    noise = np.concatenate([sk.release(U, sigma, rng=s) / sk.step for s in range(25)])
    n = noise.size  # 10^4 draws; discrete-Gaussian variance = σ²(1 − 1e-100s)
    se_var = sigma**2 * math.sqrt(2.0 / n)
    assert abs(noise.var() - sigma**2) < 5 * se_var
    assert abs(noise.mean()) < 5 * sigma / math.sqrt(n)
    assert abs(noise.var() - (sigma / 1.2) ** 2) > 5 * se_var
    assert np.allclose(noise, np.round(noise))  # integers on the lattice


def test_accounting_is_the_zcdp_of_each_release():
    params = GaussianParams(
        target_sigma=2000.0,
        summary_sigmas=(3000.0,) * 7,
        release_every=1,
        clip_norm=1.0,
        resolution=64,
        epsilon_auc=0.05,
        tau=3,
        delta=1e-6,
    )
    acc = gaussian_accounting(params, n_features=100, sensitivity=2)
    delta_l2 = 2 * (64 * math.sqrt(100) + math.sqrt(100))  # 2·(C/step + √d), step = C/(64√d)
    rho_t = delta_l2**2 / (2 * 2000.0**2)
    rho_s = 7 * delta_l2**2 / (2 * 3000.0**2)
    assert acc["detail"]["target_sketch"]["zcdp"].rho == pytest.approx(rho_t, rel=1e-12)
    assert acc["target"].epsilon == pytest.approx(zcdp_to_approx(rho_t, 1e-6).epsilon, rel=1e-12)
    assert acc["detail"]["summary_sketches"]["zcdp"].rho == pytest.approx(rho_s, rel=1e-12)
    owners_eps = zcdp_to_approx(rho_s, 5e-7).epsilon + acc["detail"]["auction"]["tight"].epsilon
    assert acc["owners"].epsilon == pytest.approx(owners_eps, rel=1e-12)
    add_remove = gaussian_accounting(params, n_features=100, sensitivity=1)
    assert add_remove["detail"]["target_sketch"]["zcdp"].rho == pytest.approx(rho_t / 4, rel=1e-12)


@pytest.mark.parametrize("release_every", [0, 1, 7])
def test_gaussian_planner_spends_the_budget_per_party(release_every):
    eps, delta, p = 2.0, 1e-5, 60
    params = plan_gaussian(eps, delta, n_owners=5, size=p, n_features=64, release_every=release_every)
    assert len(params.summary_sigmas) == len(release_rounds(p, release_every))
    acc = params.accounting(64, 2)
    for party in ("target", "owners"):
        assert 0.98 * eps <= acc[party].epsilon <= eps * (1 + 1e-9)
        assert acc[party].delta <= delta * (1 + 1e-12)


def test_james_stein_shrinkage_reduces_the_error_on_average():
    rng = np.random.default_rng(3)
    d, v = 50, 0.04
    truth = 0.05 * rng.normal(size=(400, d))
    noisy = truth + math.sqrt(v) * rng.normal(size=(400, d))
    shrunk = np.stack([shrink(r, np.zeros(d), v)[0] for r in noisy])
    assert ((shrunk - truth) ** 2).sum(1).mean() < ((noisy - truth) ** 2).sum(1).mean()


def _problem(seed=0, K=4, m=60, dim=3):
    rng = np.random.default_rng(seed)
    return [rng.normal(loc=0.4 * i, size=(m, dim)) for i in range(K)], rng.normal(loc=0.8, size=(40, dim))


def _owner_view(owners, target, release_every, select_worst, monkeypatch):
    """Everything the owners receive, with the curator's selection rule replaced when select_worst."""
    if select_worst:

        def worst(self):  # a different D_s, chosen without randomness
            n = self._n_rows
            j = int(np.argmin(np.where(np.isfinite(self._pool_base[:n]), self._pool_base[:n], np.inf)))
            t, self._pool[j] = self._pool[j], None
            self._pool_base[j] = -np.inf
            self.selected.append((t.owner, t.row, t.point))
            self._add_rows(self._pool_H[j][None, :])
            self.pool_sizes.append(self._n_pooled())

        monkeypatch.setattr(Curator, "select", worst)
    seen = []

    def transport(msg):
        seen.append(json_transport(msg).to_dict())
        return msg

    params = plan_gaussian(
        4.0, 1e-5, n_owners=len(owners), size=15, n_features=32, release_every=release_every
    )
    res = run_private(
        [DataOwner(o, i) for i, o in enumerate(owners)],
        Consumer(target),
        size=15,
        params=params,
        n_features=32,
        gamma=0.3,
        feature_seed=5,
        rng=7,
        transport=transport,
    )
    monkeypatch.undo()
    # handles are keyed by a per-owner random secret: compare what was asked by (owner, row) instead
    view = [
        m if m["type"] != "PointTransfer" else (m["owner"], m["round"], m["row"])
        for m in seen
        if m["type"] in ("Setup", "RoundBroadcast", "PointTransfer")
    ]
    return view, res


def test_without_summary_releases_the_owners_view_does_not_depend_on_the_summary(monkeypatch):
    owners, target = _problem(1)
    view, res = _owner_view(owners, target, 0, False, monkeypatch)
    view_other, res_other = _owner_view(owners, target, 0, True, monkeypatch)
    assert not np.array_equal(res.order, res_other.order)  # the summaries differ...
    assert view == view_other  # ...the owners cannot tell
    assert res.privacy["owners"].epsilon <= 4.0 and res.params["summary_sigmas"] == []
    # with summary releases the broadcasts do depend on D_s (so this test can fail)
    rel, _ = _owner_view(owners, target, 1, False, monkeypatch)
    rel_other, _ = _owner_view(owners, target, 1, True, monkeypatch)
    assert rel != rel_other


@pytest.mark.parametrize("release_every", [0, 1])
def test_large_epsilon_gaussian_is_close_to_greedy_and_beats_uniform(release_every):
    owners, target = _problem(5, m=80)
    kw = dict(size=25, rng=3, n_features=32, gamma=0.3)
    greedy = privstats.summarize(owners, target, method="greedy", **kw)
    uniform = privstats.summarize(owners, target, method="uniform", **kw)
    if release_every:  # σ = 1 lattice step: the sketches are nearly exact
        params = GaussianParams(1.0, (1.0,) * 24, 1, math.sqrt(2), 256, 50.0, 2, 1e-5)
        private = privstats.summarize(owners, target, params=params, **kw)
    else:
        private = privstats.summarize(owners, target, epsilon=50.0, delta=1e-5, **kw)
    assert private.params["sketch"] == "gaussian"
    assert private.mmd2 < greedy.mmd2 + 0.5 * (uniform.mmd2 - greedy.mmd2)


def test_paper_mwem_sketch_stays_available():
    owners, target = _problem(6)
    res = privstats.summarize(
        owners,
        target,
        size=8,
        epsilon=1.0,
        delta=1e-5,
        rng=0,
        n_features=16,
        gamma=0.3,
        sketch="mwem",
        t_init=50,
    )
    assert res.params["sketch"] == "mwem" and res.privacy["target"].epsilon <= 1.0


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(sketch="laplace"), "sketch"),
        (dict(release_every=-1), "release_every"),
        (dict(clip_norm=0.0), "clip_norm"),
        (dict(params=object()), "params"),
    ],
)
def test_gaussian_bad_input(kwargs, match):
    owners, target = _problem(7, m=10)
    with pytest.raises(ValueError, match=match):
        privstats.summarize(owners, target, size=3, epsilon=1.0, delta=1e-5, rng=0, **kwargs)
