"""Differential privacy on top of DAP: noisy aggregate shares and their opening.

Each aggregator turns its Prio3Histogram aggregate share ``h`` (field elements, one per cell)
into a share of the task's tree statistic ``S(h)`` (an integer linear map, applied limb-wise so it
is exact in the field) and adds its *own full* discrete-Laplace noise, drawn exactly with the OS
CSPRNG by :func:`privstats.secure.histogram.server_noise` — the same law as the in-process
secure model — once per batch (the servers store the sealed result; a retry gets the same noise).
The collector adds the two shares mod p, centres them and post-processes with
:func:`privstats.services.opening.open_result` (ECDF, quantiles, ROC, Hosmer–Lemeshow).

So what the collector decrypts is *not* a VDAF aggregate share: it is a field vector (VDAF-08's
little-endian encoding) of the noisy statistic's length.  A DAP collector from another project
would read it as a histogram; privstats' collector knows the task.

Report count: DAP's ``Collection.report_count`` would tell the collector the exact batch size.  The
leader puts ``n + Z`` there, ``Z`` discrete Laplace with scale ``1/ε`` (sensitivity 1, OS CSPRNG),
clamped at 0, under replace-one neighbours (the default), where the batch size is public by definition
of the guarantee and the noise only keeps the exact count off the wire.  Under add/remove neighbours
the batch size is private and no budget pays for a count: ``report_count`` is 0 and the opening uses
the histogram's own noisy total.

>>> from privstats.secure.histogram import SecureSpec
>>> spec = SecureSpec("ecdf", epsilon=1.0, bounds=(0, 1), grid=3)
>>> p = 2**61 - 1
>>> len(noisy_share(spec, [5, 0, 0, 0], p, 0)) > 0
True
"""

from __future__ import annotations

import numpy as np

from privstats.privacy.randomness import RNGLike

__all__ = ["noisy_count", "noisy_share", "open_noisy"]

_LIMB = 21


def _linear_mod(fn, share: list[int], modulus: int) -> list[int]:
    """Apply an int64 linear map ``fn`` with small coefficients to field elements, exactly mod ``modulus``."""
    a = np.array([int(v) for v in share], dtype=object)
    out: list[int] | None = None
    for k in range((int(modulus).bit_length() + _LIMB - 1) // _LIMB):
        limb = np.array([(int(v) >> (_LIMB * k)) & ((1 << _LIMB) - 1) for v in a], dtype=np.int64)
        part = [int(x) << (_LIMB * k) for x in np.asarray(fn(limb), dtype=np.int64).tolist()]
        out = part if out is None else [x + y for x, y in zip(out, part, strict=True)]
    assert out is not None
    return [x % modulus for x in out]


def noisy_share(spec, agg_share: list[int], modulus: int, party: int, rng: RNGLike = None) -> list[int]:
    """Server ``party``'s (0 leader, 1 helper) share of the noisy statistic, as field elements.

    ``agg_share`` is its Prio3Histogram aggregate share (``spec.n_parts * spec.n_cells`` elements).
    Call once per batch: the noise is drawn here (OS CSPRNG when ``rng`` is None).
    """
    from privstats.secure.histogram import server_noise

    if len(agg_share) != spec.n_parts * spec.n_cells:
        raise ValueError(f"agg_share: expected {spec.n_parts * spec.n_cells} elements, got {len(agg_share)}")
    mech = spec.mechanism
    noise = server_noise(spec, party, rng)
    out: list[int] = []
    for j in range(spec.n_parts):
        hist = agg_share[j * spec.n_cells : (j + 1) * spec.n_cells]
        stat = _linear_mod(lambda h: mech.statistic(np.cumsum(h[:-1])), hist, modulus)
        z = np.asarray(mech.noise_to_statistic(noise[j]), dtype=np.int64).tolist()
        if len(z) != len(stat):
            raise AssertionError("noise and statistic lengths differ")
        out.extend((s + int(e)) % modulus for s, e in zip(stat, z, strict=True))
    return out


def noisy_count(n: int, epsilon: float, rng: RNGLike = None) -> int:
    """``max(0, n + Z)``, Z ~ discrete Laplace(1/ε), exact sampler (OS CSPRNG when ``rng`` is None).

    >>> noisy_count(1000, 1.0) >= 0
    True
    """
    from privstats.privacy.samplers import discrete_laplace

    z = int(np.asarray(discrete_laplace(1.0 / float(epsilon), size=1, rng=rng)).ravel()[0])
    return max(0, int(n) + z)


def open_noisy(spec, leader: list[int], helper: list[int], modulus: int, report_count: int, **kwargs):
    """The task's statistic from the two noisy shares (``open_result``'s post-processing)."""
    from privstats.services.opening import open_result

    if len(leader) != len(helper):
        raise ValueError("the two noisy shares have different lengths")
    half = modulus // 2
    opened = [((a + b) % modulus) for a, b in zip(leader, helper, strict=True)]
    signed = np.array([v - modulus if v > half else v for v in opened], dtype=np.int64)
    p61 = (1 << 61) - 1  # open_result adds two partials mod 2^61 - 1: pass the opened value and 0
    as_field = (signed % p61).astype(np.uint64)
    zeros = np.zeros_like(as_field)
    return open_result(spec, as_field, zeros, max(int(report_count), 1), **kwargs)
