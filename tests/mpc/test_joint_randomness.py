"""The in-circuit noise needs both parties' randomness: one party's random words alone do not fix it.

The real SPU program (Cheetah, two parties in two threads over an in-memory link) runs on inputs built
as the parties build them, with one or both parties' random words forced to zero (a party that
publishes or fixes its own randomness).  Skipped unless SPU is importable (``bash .ci/mpc``).
"""

import math
import threading

import numpy as np
import pytest

pytest.importorskip("spu")

from privstats.ustat.mpc.backend import decode
from privstats.ustat.mpc.circuit import JobSpec, noisy_program, runtime_config
from privstats.ustat.mpc.kernels import encode
from privstats.ustat.mpc.party import INPUTS, _own_randomness, program_inputs
from privstats.ustat.mpc.wire import own_share

from .test_mpc_plan import centred, gof_pvalue, realised_pmf

M = 20_000


def _run(job: JobSpec, a: np.ndarray, b: np.ndarray, zero: tuple[bool, bool]) -> np.ndarray:
    """The released integers of ``job`` on pairs (a[i], b[i]) (left holds a, right holds b)."""
    import jax
    import spu
    import spu.libspu as libspu
    from spu.utils import frontend as fe

    jax.config.update("jax_enable_x64", True)
    m = len(a)
    args = [np.zeros(s, d) for s, d in job.input_shapes(m)]
    vis = [libspu.Visibility.VIS_SECRET] * len(INPUTS)
    exe, _ = fe.compile(fe.Kind.JAX, noisy_program(job, m), args, {}, INPUTS, vis, lambda o: ["out"])
    desc = libspu.link.Desc()
    for r in range(2):
        desc.add_party(f"p{r}", f"thread_{r}")
    shares: list = [None, None]

    def party(rank: int) -> None:
        rt = spu.api.Runtime(libspu.link.create_mem(desc, rank), runtime_config(libspu))
        x = encode(job.spec, np.stack([a, b], 1).reshape(2 * m, 1)).reshape(m, 2, 1, 2)
        x[:, 1 - rank] = 0  # the other party's entries: contribution 0
        u, r = _own_randomness(job, m)
        if zero[rank]:
            r[:] = 0
        for name, (v, kind) in zip(INPUTS, program_inputs(job, x, u, r), strict=True):
            rt.set_var(name, own_share(libspu, v, kind))
        rt.run(exe)
        shares[rank] = rt.get_var("out")

    threads = [threading.Thread(target=party, args=(r,)) for r in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    out = spu.api.Io(2, runtime_config(libspu)).reconstruct(shares)
    return decode(job.outputs[0], np.asarray(out, dtype=np.int64).reshape(m))


@pytest.fixture(scope="module")
def pairs():
    g = np.random.default_rng(21)
    return np.round(g.normal(size=M), 1), np.round(g.normal(size=M), 1)  # mixed signs, ties


def test_laplace_noise_law_with_one_partys_words_zero(pairs):
    """Left's (then right's) random words all zero: the noise still has the plan's exact law (chi-square
    goodness of fit at p > 10^-6), not the law at 1.5ε; both zero: the noise is one fixed value."""
    a, b = pairs
    job = JobSpec.build([("greater_half", "laplace", 1.0)])
    plan, ref = job.outputs[0].plan, job.spec.reference(a, b)
    z, pmf = centred(realised_pmf(plan))
    from privstats.ustat.mpc import laplace_plan

    zw, pw = centred(realised_pmf(laplace_plan(1.5, 2)))
    sd = math.sqrt(plan.variance)
    lo, hi = int(-4 * sd) - 1, int(4 * sd) + 1
    for zero in ((True, False), (False, True)):
        noise = _run(job, a, b, zero) - ref
        assert gof_pvalue(noise, z, pmf, lo, hi) > 1e-6
        assert gof_pvalue(noise, zw, pw, lo, hi) < 1e-6
    fixed = (_run(job, a, b, (True, True)) - ref + 2 ** (plan.wrap_bits - 1)) % 2**plan.wrap_bits
    assert np.unique(fixed).size == 1  # every coin reads all-zero bits: one value on the cycle


def test_rr_flip_rate_with_one_partys_words_zero(pairs):
    """Randomized response: one party's words zero keeps the flip rate at T/2^k (within 5 SE); both zero
    flip every pair."""
    a, b = pairs
    job = JobSpec.build([("greater", "rr", 1.0)])
    p = 1 - job.outputs[0].plan.keep
    ref = job.spec.reference(a, b)
    for zero in ((True, False), (False, True)):
        flips = _run(job, a, b, zero) != ref
        assert abs(flips.mean() - p) < 5 * math.sqrt(p * (1 - p) / M)
    assert np.all(_run(job, a, b, (True, True)) != ref)
