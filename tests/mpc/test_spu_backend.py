"""SPU (Cheetah 2PC) backend: two real party processes over TCP on 127.0.0.1.

Skipped unless SPU is importable (it needs Python < 3.12 and numpy < 2: ``bash .ci/mpc`` builds that
environment and runs these tests).
"""

import socket
import threading

import numpy as np
import pytest

pytest.importorskip("spu")
import contextlib
import math

from scipy import stats

import privstats
from privstats.ustat import central as C
from privstats.ustat.mpc import (
    SpuSession,
    SpuTwoParty,
    default_session,
    encode,
    laplace_plan,
)
from privstats.ustat.mpc.wire import free_port
from privstats.ustat.pairs import simulated_two_party

from .test_mpc_plan import centred, gof_pvalue, realised_pmf

M = 10_000


@pytest.fixture(scope="module")
def session():
    return default_session()


def _values(seed):
    g = np.random.default_rng(seed)
    return np.round(g.random(M), 2), np.round(g.random(M), 2)  # rounded: many ties


@pytest.mark.parametrize(
    "kernel", ["greater", "greater_half", "sign_product", "not_equal_0", "equal", "absdiff"]
)
def test_exact_kernel_without_noise_equals_plain_computation(session, kernel):
    """Test-only mode (mechanism='none'): the 2PC releases the exact kernel; compare on 10^4 pairs."""
    be = SpuTwoParty(kernel, pair_epsilon=1.0, mechanism="none", session=session)
    a, b = _values(1)
    if be.spec.columns == 2:
        c, d = _values(2)
        a, b = np.stack([a, c], 1), np.stack([b, d], 1)
    out = be.raw(a, b)
    plain = be.spec.reference(a, b)
    assert out.shape == (M,)
    assert np.array_equal(out, plain)
    assert len(np.unique(plain)) == be.spec.units + 1 or kernel == "absdiff"  # every kernel value occurs


def _chi2_pvalue(x, y, lo, hi):
    bins = np.arange(lo, hi + 2) - 0.5
    hx = np.histogram(np.clip(x, lo, hi), bins)[0]
    hy = np.histogram(np.clip(y, lo, hi), bins)[0]
    keep = (hx + hy) > 0
    return stats.chi2_contingency(np.stack([hx[keep], hy[keep]]))[1]


def test_noisy_rr_matches_simulated_two_party(session):
    """Two-sample test on 10^4 outputs: SPU randomized response vs the simulated backend of the same path
    (``simulated_two_party``: the realised keep probability); the same test rejects a simulation with
    1.5ε (an under-noised release would be caught)."""
    a, b = _values(3)
    be = SpuTwoParty("greater", pair_epsilon=1.0, mechanism="rr", session=session)
    real = be.raw(a, b)
    sim = simulated_two_party("greater", pair_epsilon=1.0, mechanism="rr")
    assert sim.keep == be.plan.keep and sim.noise_variance == be.noise_variance
    sim_bits = np.rint(sim.compute(a, b, rng=5) * (2 * sim.keep - 1) + (1 - sim.keep)).astype(int)
    table = np.stack([np.bincount(real, minlength=2), np.bincount(sim_bits, minlength=2)])
    assert stats.chi2_contingency(table)[1] > 1e-4
    # conditional on the kernel value: flip rate = 1 − keep
    flips = real != be.spec.reference(a, b)
    assert abs(flips.mean() - (1 - be.plan.keep)) < 5 * np.sqrt(be.plan.keep * (1 - be.plan.keep) / M)
    weak = simulated_two_party("greater", pair_epsilon=1.5, mechanism="rr")
    wbits = np.rint(weak.compute(a, b, rng=6) * (2 * weak.keep - 1) + (1 - weak.keep)).astype(int)
    wflips = wbits != be.spec.reference(a, b)
    table = [[flips.sum(), M - flips.sum()], [wflips.sum(), M - wflips.sum()]]
    assert stats.chi2_contingency(table)[1] < 1e-4


def test_noisy_laplace_matches_simulated_two_party(session):
    """Discrete Laplace drawn inside the 2PC vs the simulated backend of the same path
    (``simulated_two_party``: the realised law of the rounded coins, the same grid ½, wrap and
    decoding): noise (output − kernel) compared with a chi-square two-sample test on 10^4 outputs; the
    same test rejects the simulation at 1.5ε."""
    a, b = _values(4)
    be = SpuTwoParty("greater_half", pair_epsilon=1.0, mechanism="laplace", session=session)
    ref = be.spec.reference(a, b)
    noise_real = be.raw(a, b) - ref
    sim = simulated_two_party("greater_half", pair_epsilon=1.0)
    assert sim.noise_variance == be.noise_variance
    noise_sim = np.rint(sim.compute(a, b, rng=7) / 0.5).astype(int) - ref
    assert _chi2_pvalue(noise_real, noise_sim, -12, 12) > 1e-4
    assert abs(noise_real.mean()) < 5 * np.sqrt(be.plan.variance / M)
    z, pmf = centred(realised_pmf(be.plan))  # exact kurtosis of the realised noise
    kurt = float(np.sum(pmf * z**4.0)) / be.plan.variance**2
    assert abs(noise_real.var() / be.plan.variance - 1) < 5 * np.sqrt((kurt - 1) / M)
    weak = simulated_two_party("greater_half", pair_epsilon=1.5)  # under-noised: rejected by the same test
    noise_weak = np.rint(weak.compute(a, b, rng=8) / 0.5).astype(int) - ref
    assert _chi2_pvalue(noise_real, noise_weak, -12, 12) < 1e-4


@pytest.mark.parametrize("kernel,eps", [("greater_half", 1.0), ("greater_half", 0.5), ("greater", 2.0)])
def test_spu_laplace_noise_law_is_the_plans_exact_pmf(session, kernel, eps):
    """The noise the two parties draw (OS CSPRNG: unseeded) against the plan's exact pmf, recomputed
    from the coins by the circuit's own assembly: chi-square goodness of fit on 2·10^4 draws at
    p > 10^-6 (a correct sampler fails with probability 10^-6); the same test rejects the law at 1.5ε
    (its chi-square statistic is far beyond: power ≈ 1)."""
    g = np.random.default_rng(12)
    m = 2 * M
    a, b = np.round(g.random(m), 2), np.round(g.random(m), 2)
    be = SpuTwoParty(kernel, pair_epsilon=eps, mechanism="laplace", session=session)
    noise = be.raw(a, b) - be.spec.reference(a, b)
    z, pmf = centred(realised_pmf(be.plan))
    sd = math.sqrt(be.plan.variance)
    lo, hi = int(-4 * sd) - 1, int(4 * sd) + 1
    assert gof_pvalue(noise, z, pmf, lo, hi) > 1e-6
    zw, pw = centred(realised_pmf(laplace_plan(1.5 * eps, be.spec.units)))
    assert gof_pvalue(noise, zw, pw, lo, hi) < 1e-6


def test_end_to_end_auc_tau_gmd_within_5_se(session):
    """n = 10^4 through the real backend: each estimate within 5 SE of the exact sample statistic."""
    g = np.random.default_rng(11)
    n = M
    y = np.r_[np.ones(n // 2), np.zeros(n // 2)]
    s = np.round(np.r_[g.beta(3, 2, n // 2), g.beta(2, 3, n // 2)], 2)
    e = privstats.auc(y, s, epsilon=1.0, model="secure", method="pairs", P=1, backend="spu", rng=1)
    exact = C.exact_auc(s[y == 1], s[y == 0], "half")
    assert abs(e.value - exact) < 5 * e.stderr
    assert e.details["backend"]["backend"] == "spu" and "semi-honest" in e.details["security"]
    assert e.delta == 0.0  # the wrapped release is pure ε-DP

    xx = np.round(g.random(n), 1)
    yy = np.round(xx + g.random(n), 1)
    e = privstats.kendall_tau(
        xx,
        yy,
        epsilon=2.0,
        model="secure",
        method="pairs",
        P=1,
        bounds=((0, 1), (0, 2)),
        backend="spu",
        rng=2,
    )
    exact = stats.kendalltau(xx, yy).statistic  # tau-b with ties
    assert abs(e.value - exact) < 5 * e.stderr

    x = g.random(n)
    e = privstats.gini_mean_difference(
        x * 10, epsilon=1.0, bounds=(0, 10), model="secure", method="pairs", P=1, backend="spu", rng=3
    )
    exact = C.exact_gini_mean_difference(x * 10)
    assert abs(e.value - exact) < 5 * e.stderr + 10 * 2**-10  # + the public grid's rounding (≤ one step)


def test_backend_argument_validation():
    with pytest.raises(ValueError, match="backend"):
        privstats.auc([0, 1], [0.1, 0.2], epsilon=1.0, model="local", backend="spu")
    with pytest.raises(ValueError, match="backend"):
        privstats.auc([0, 1], [0.1, 0.2], epsilon=1.0, model="secure", backend="mpyc")
    with pytest.raises(ValueError, match="built-in kernels"):
        privstats.ustatistic(
            np.random.default_rng(0).random(10),
            lambda a, b: abs(a - b),
            epsilon=1.0,
            bounds=(0, 1),
            kernel_range=(0, 1),
            model="secure",
            backend="spu",
        )
    with pytest.raises(ValueError, match="kernel"):
        SpuTwoParty("nope", pair_epsilon=1.0)
    with pytest.raises(ValueError, match="binary"):
        SpuTwoParty("greater_half", pair_epsilon=1.0, mechanism="rr")


class _Capture:
    """A TCP forwarder between the two parties recording every byte in both directions."""

    def __init__(self, target_port):
        self.srv = socket.create_server(("127.0.0.1", 0))
        self.port = self.srv.getsockname()[1]
        self.target = target_port
        self.data = bytearray()
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            try:
                t = socket.create_connection(("127.0.0.1", self.target))
            except OSError:  # the other party is not listening yet: drop, the link retries
                c.close()
                continue
            for src, dst in ((c, t), (t, c)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src, dst):
        while True:
            try:
                chunk = src.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                return
            with self.lock:
                self.data += chunk
            dst.sendall(chunk)


def test_link_carries_no_plaintext_input():
    """Every byte between the two parties goes through a recording proxy; neither party's plaintext
    (raw float64 values nor their int64 encodings) appears in the stream, while the stream does carry
    the protocol (the link's session id) and far more bytes than the inputs."""
    pl, pr = free_port(), free_port()
    cap_to_left, cap_to_right = _Capture(pl), _Capture(pr)
    sess = SpuSession(
        link_addrs=(
            (f"127.0.0.1:{pl}", f"127.0.0.1:{cap_to_right.port}"),
            (f"127.0.0.1:{pr}", f"127.0.0.1:{cap_to_left.port}"),
        )
    )
    try:
        g = np.random.default_rng(99)
        m = 2000
        a, b = 0.1 + 0.8 * g.random(m), 0.1 + 0.8 * g.random(m)  # distinct, high-entropy 8-byte patterns
        be = SpuTwoParty("greater", pair_epsilon=1.0, mechanism="rr", session=sess)
        out = be.raw(a, b)
        assert out.shape == (m,)
    finally:
        sess.close()
    stream = bytes(cap_to_left.data + cap_to_right.data)
    assert len(stream) > 50 * 16 * m
    assert b"privstats-pairs" in stream  # the capture sees the real link
    words = _patterns(be, a, b)
    assert _occurrences(stream, words) == 0
    # positive control: the same search finds plaintext planted at an unaligned offset
    planted = stream[:1001] + words[5:6].tobytes() + stream[1001:]
    assert _occurrences(planted, words) == 1


def _patterns(be, a, b):
    """The 8-byte words of both parties' plaintext: float64 values and their encodings, both byte orders."""
    out = []
    for v in (a, b):
        for arr in (v.astype("<f8"), encode(be.spec, v)[..., 0].astype("<i8").reshape(-1)):
            w = arr.view(np.uint64)
            out += [w, w.byteswap()]
    return np.unique(np.concatenate(out))


def _occurrences(stream: bytes, words: np.ndarray) -> int:
    """Number of (possibly unaligned) occurrences of any word in the stream (vectorized, all 8 offsets)."""
    buf = np.frombuffer(stream, dtype=np.uint8)
    hits = 0
    for off in range(8):
        k = (buf.size - off) // 8
        hits += int(np.isin(buf[off : off + 8 * k].view(np.uint64), words).sum())
    return hits


def test_runner_roles_hold_their_own_data(tmp_path):
    """`python -m privstats.ustat.mpc party` started by hand for each role with its own --data file; the
    aggregator sends only pair indices and gets the exact kernel (test-only mode) of those pairs."""
    import subprocess
    import sys

    g = np.random.default_rng(21)
    left_vals, right_vals = np.round(g.random(500), 2), np.round(g.random(400), 2)
    np.save(tmp_path / "left.npy", left_vals)
    np.save(tmp_path / "right.npy", right_vals)
    pl, pr = free_port(), free_port()
    procs, ports = [], []
    for role, own, other, data in (("left", pl, pr, "left.npy"), ("right", pr, pl, "right.npy")):
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "privstats.ustat.mpc",
                "party",
                "--role",
                role,
                "--listen",
                "127.0.0.1:0",
                "--self-addr",
                f"127.0.0.1:{own}",
                "--peer-addr",
                f"127.0.0.1:{other}",
                "--data",
                str(tmp_path / data),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        procs.append(p)
        ports.append(f"127.0.0.1:{int(p.stdout.readline().split()[1])}")
    sess = SpuSession(parties=(ports[0], ports[1]))
    try:
        li, ri = g.integers(0, 500, 3000), g.integers(0, 400, 3000)
        be = SpuTwoParty("greater_half", pair_epsilon=1.0, mechanism="none", session=sess)
        out = be.raw_indexed(li, ri)
        assert np.array_equal(out, be.spec.reference(left_vals[li], right_vals[ri]))
        with pytest.raises(RuntimeError, match="left party failed"):
            be.raw_indexed(np.array([10_000]), np.array([0]))  # index out of the party's data
    finally:
        sess.close()
        for p in procs:
            p.wait(timeout=30)
