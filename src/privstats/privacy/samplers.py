"""Exact noise samplers (Canonne–Kamath–Steinke 2020, "The Discrete Gaussian for
Differential Privacy", Algorithms 1–3).

``rng`` follows :func:`privstats.privacy.randomness.as_source`: ``None`` is the OS
CSPRNG; a seed or a numpy Generator gives reproducible simulation.  The exact
samplers use only uniform integers from the source and integer arithmetic, so
their output distribution is exactly the stated one (no floating point).

Every sampler is vectorized: a batch of candidates is processed per round with
masks, and rejection repeats over rounds (a handful of rounds, never a Python loop
per sample).  Arithmetic is int64; values that would overflow int64 (huge σ, or
astronomically rare tails) fall back to Python integers in object arrays, which is
exact but slower.

Rounding (documented, conservative): a parameter whose exact rational form has a
numerator or denominator too large for the int64 path is rounded *up* (more noise):

* :func:`discrete_laplace`: ``scale`` = t/s is rounded up to a rational with
  denominator at most ``min(2**50, 2**50 // ceil(scale))`` (absolute change at most
  2⁻⁵⁰·ceil(scale), e.g. below 10⁻¹⁵ for ``scale=0.1``); ``scale`` must be below 2⁵⁰.
* :func:`discrete_gaussian`: σ² is rounded up to a rational with denominator at most
  ``max(1, floor(2**22 / σ²))`` (relative change at most 2⁻²²).  Floats such as
  ``sigma=3.7`` therefore give σ² slightly above 13.69.  Very small σ (below about
  2⁻⁹) or very large σ (above about 2¹²) make the rejection step use Python integers
  for some or all candidates: still exact, but slower.
* :func:`bernoulli_exp` is always exact (γ is not rounded).

>>> int(discrete_laplace(10, size=5, rng=1).size)
5
>>> isinstance(discrete_gaussian(3, rng=2), int)
True
>>> bool(bernoulli_exp(0, rng=3))
True
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from privstats.privacy.randomness import (
    GeneratorSource,
    RandomSource,
    RNGLike,
    SecureSource,
    Size,
    as_generator,
    as_source,
)

__all__ = ["bernoulli_exp", "discrete_gaussian", "discrete_laplace", "gaussian", "laplace"]

_SAFE = 1 << 62  # products below this fit int64 with headroom
_I64_MAX = (1 << 63) - 1
_LAPLACE_BITS = 50  # numerator/denominator bound for the discrete Laplace scale
_GAUSS_DEN_BITS = 22  # denominator budget for σ² (relative rounding < 2^-22)


# ----------------------------------------------------------------------------- inputs


def _as_fraction(x: Any, name: str, *, allow_zero: bool = False) -> Fraction:
    """A finite rational >= 0 (> 0 unless allow_zero); floats are taken exactly."""
    if isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{name} must be a finite rational number, got {x!r}")
    if isinstance(x, (numbers.Rational, np.integer)):
        f = Fraction(int(x)) if isinstance(x, np.integer) else Fraction(int(x.numerator), int(x.denominator))
    elif isinstance(x, (float, np.floating)):
        if not math.isfinite(x):
            raise ValueError(f"{name} must be a finite rational number, got {x!r}")
        f = Fraction(float(x))
    else:
        raise ValueError(f"{name} must be a finite rational number (int, float or Fraction), got {x!r}")
    if f < 0 or (f == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {x!r}")
    return f


def _shape(size: Size) -> tuple[int, ...] | None:
    if size is None:
        return None
    if isinstance(size, (int, np.integer)) and not isinstance(size, (bool, np.bool_)):
        if size < 0:
            raise ValueError(f"size must be a non-negative integer or tuple, got {size!r}")
        return (int(size),)
    try:
        shape = tuple(int(s) for s in size)  # type: ignore[union-attr]  # non-iterables: TypeError below
    except TypeError:
        raise ValueError(f"size must be None, an integer or a tuple of integers, got {size!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"size must be non-negative, got {size!r}")
    return shape


def _round_up(x: Fraction, max_den: int) -> Fraction:
    """The smallest-error rational >= x found with denominator <= max_den (x itself if it fits)."""
    if x.denominator <= max_den:
        return x
    best = Fraction(math.ceil(x * max_den), max_den)
    cand = x.limit_denominator(max_den)
    if x <= cand < best:
        best = cand
    return best


# ------------------------------------------------------------------ exact primitives


def _randbelow_big(high: np.ndarray, src: RandomSource) -> np.ndarray:
    """Exactly uniform integers in [0, high) for Python-int (object) highs of any size."""
    n = high.size
    out = np.empty(n, dtype=object)
    bits = max(int(h).bit_length() for h in high)  # only reached for huge rationals
    words = (bits + 63) // 64 + 1  # one extra word: rejection probability < 2^-64
    span = 1 << (64 * words)
    limit = (span // high) * high
    todo = np.arange(n)
    while todo.size:
        w = src.uint64((todo.size, words)).astype(object)
        x = np.zeros(todo.size, dtype=object)
        for j in range(words):
            x = (x << 64) | w[:, j]
        ok = np.asarray(x < limit[todo], dtype=bool)
        out[todo[ok]] = x[ok] % high[todo[ok]]
        todo = todo[~ok]
    return out


def _fits(a: np.ndarray) -> bool:
    return a.dtype != object or a.size == 0 or (int(a.max()) <= _I64_MAX and int(a.min()) >= -_I64_MAX)


def _bern_rational(num: np.ndarray, den: np.ndarray, src: RandomSource) -> np.ndarray:
    """Exact Bernoulli(num/den) elementwise, 0 <= num <= den, den >= 1 (int64 or object arrays)."""
    if den.size == 0:
        return np.zeros(0, dtype=bool)
    if _fits(den):
        d = den.astype(np.int64, copy=False)
        n = num.astype(np.int64, copy=False)
        return np.asarray(src.integers(d)) < n
    return np.asarray(_randbelow_big(den, src) < num, dtype=bool)


def _bern_over_k(num: np.ndarray, den: np.ndarray, k: np.ndarray, src: RandomSource) -> np.ndarray:
    """Exact Bernoulli(num / (den·k)); one draw when den·k fits int64, else Bern(num/den)·Bern(1/k)."""
    if den.dtype != object and int(den.max()) * int(k.max()) < _SAFE:
        return _bern_rational(num, den * k, src)
    a = _bern_rational(num, den, src)
    b = _bern_rational(np.ones(k.size, dtype=np.int64), k, src)
    return np.asarray(a & b)


_L = 20
_L_FACT = math.factorial(_L)  # 20! < 2^63
_FACT_THRESH = np.array([_L_FACT // math.factorial(k) for k in range(_L, 0, -1)], dtype=np.int64)  # ascending


def _bern_exp1(n: int, src: RandomSource) -> np.ndarray:
    """n exact Bernoulli(exp(−1)) draws: CKS Algorithm 1 with γ = 1, with the trials batched.

    Algorithm 1 returns [K odd] where P(K > k) = 1/k!.  One uniform N in [0, 20!) gives
    K > k ⇔ N < 20!/k! exactly for k <= 20; only if N = 0 (probability 1/20!) do the
    Bernoulli(1/k) trials continue from k = 21.
    """
    nn = np.asarray(src.integers(_L_FACT, size=n), dtype=np.int64)
    k = 1 + (_L - np.searchsorted(_FACT_THRESH, nn, side="right"))  # 1 + #{k <= L : N < L!/k!}
    res = (k % 2) == 1
    idx = np.flatnonzero(k > _L)
    kk = np.full(idx.size, _L + 1, dtype=np.int64)
    while idx.size:
        a = np.asarray(src.integers(kk)) == 0  # Bernoulli(1/k)
        stop = ~a
        res[idx[stop]] = (kk[stop] % 2) == 1
        idx, kk = idx[a], kk[a] + 1
    return np.asarray(res)


def _bern_exp_frac(r: np.ndarray, d: np.ndarray, src: RandomSource) -> np.ndarray:
    """Exact Bernoulli(exp(−r/d)) for 0 <= r/d <= 1 (CKS Algorithm 1), vectorized over rounds."""
    n = r.size
    res = np.empty(n, dtype=bool)
    idx = np.arange(n)
    k = np.ones(n, dtype=np.int64)
    while idx.size:
        a = _bern_over_k(r, d, k, src)  # A ~ Bernoulli(γ/K)
        stop = ~a
        res[idx[stop]] = (k[stop] % 2) == 1  # return 1 iff K is odd
        idx, r, d, k = idx[a], r[a], d[a], k[a] + 1
    return res


def _bern_exp(num: np.ndarray, den: np.ndarray, src: RandomSource) -> np.ndarray:
    """Exact Bernoulli(exp(−num/den)) elementwise for num >= 0, den >= 1.

    For γ > 1: exp(−γ) = exp(−1)^⌊γ⌋ · exp(−(γ − ⌊γ⌋)), i.e. ⌊γ⌋ independent
    Bernoulli(exp(−1)) trials and one with the fractional part must all succeed.
    Each element drops out at its first failure, so the rounds end quickly.
    """
    n = num.size
    q = num // den
    r = num - q * den
    alive = np.ones(n, dtype=bool)
    idx = np.flatnonzero(np.asarray(q > 0, dtype=bool))
    cnt = q[idx]
    while idx.size:
        b = _bern_exp1(idx.size, src)
        alive[idx[~b]] = False
        keep = b & np.asarray(cnt > 1, dtype=bool)
        idx, cnt = idx[keep], cnt[keep] - 1
    idx = np.flatnonzero(alive & np.asarray(r > 0, dtype=bool))
    if idx.size:
        alive[idx] = _bern_exp_frac(r[idx], den[idx], src)
    return alive


def _geometric_exp1(n: int, src: RandomSource) -> np.ndarray:
    """Number of Bernoulli(exp(−1)) successes before the first failure (P(V=v) = (1−e⁻¹)e^{−v})."""
    v = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        idx = idx[_bern_exp1(idx.size, src)]
        v[idx] += 1
    return v


def _dlap(t: int, s: int, n: int, src: RandomSource) -> np.ndarray:
    """n exact draws from the discrete Laplace with scale t/s (CKS Algorithm 2), int64."""
    out = np.empty(n, dtype=np.int64)
    filled = 0
    # acceptance probability (floating point, only to size the batches)
    p_d = -math.expm1(-1.0) / (t * -math.expm1(-1.0 / t))
    rate = max(0.9 * p_d * (1.0 + 0.5 * math.expm1(-s / t)), 0.05)
    while filled < n:
        need = n - filled
        m = int(need / rate * 1.05) + 16
        u = np.asarray(src.integers(t, size=m), dtype=np.int64)
        keep = _bern_exp_frac(u, np.full(m, t, dtype=np.int64), src)  # D ~ Bernoulli(exp(−U/t)), U/t < 1
        u = u[keep]
        v = _geometric_exp1(u.size, src)
        if v.size and int(v.max()) >= (1 << 10):  # probability ~ e^-1024
            raise OverflowError("discrete Laplace geometric overflow")
        x = u + t * v
        y = x // s
        b = np.asarray(src.integers(2, size=y.size)) == 1  # sign
        ok = ~(b & (y == 0))  # reject (B=1, Y=0)
        z = np.where(b, -y, y)[ok]
        rate = max(z.size / m, 0.05)
        take = min(z.size, need)
        out[filled : filled + take] = z[:take]
        filled += take
    return out


def _finish(x: np.ndarray, shape: tuple[int, ...] | None, scalar: type = int) -> Any:
    if shape is None:
        return scalar(x[0])
    return x.reshape(shape)


# --------------------------------------------------------------------- public API


def bernoulli_exp(gamma: Any, size: Size = None, rng: RNGLike = None) -> Any:
    """Exact Bernoulli(exp(−γ)) for rational γ >= 0 (Fraction, int, or float taken exactly).

    Returns a Python bool for ``size=None``, else a bool array of shape ``size``.

    >>> from fractions import Fraction
    >>> float(bernoulli_exp(Fraction(1, 3), size=20000, rng=0).mean().round(1))
    0.7
    """
    g = _as_fraction(gamma, "gamma", allow_zero=True)
    shape = _shape(size)
    n = 1 if shape is None else math.prod(shape)
    src = as_source(rng)
    p, q = g.numerator, g.denominator
    dtype = np.int64 if p <= _I64_MAX and q <= _I64_MAX else object
    num = np.full(n, p, dtype=dtype)
    den = np.full(n, q, dtype=dtype)
    res = _bern_exp(num, den, src) if n else np.zeros(0, dtype=bool)
    return _finish(res, shape, bool)


def discrete_laplace(scale: Any, size: Size = None, rng: RNGLike = None) -> Any:
    """Exact discrete Laplace: P(x) ∝ exp(−|x|/scale) on the integers (scale rational > 0).

    CKS Algorithm 2 with ``scale`` = t/s.  Returns a Python int for ``size=None``,
    else an int64 array.  ``scale`` is rounded up if its rational form is too large
    for int64 arithmetic (see the module docstring).

    >>> x = discrete_laplace(10, size=100000, rng=0)
    >>> bool(abs(x.mean()) < 0.2)
    True
    """
    f = _as_fraction(scale, "scale")
    if f >= (1 << _LAPLACE_BITS):
        raise ValueError(f"scale must be < 2**{_LAPLACE_BITS}, got {scale!r}")
    f = _round_up(f, max(1, (1 << _LAPLACE_BITS) // math.ceil(f)))
    shape = _shape(size)
    n = 1 if shape is None else math.prod(shape)
    src = as_source(rng)
    return _finish(_dlap(f.numerator, f.denominator, n, src), shape)


def _sigma2_rational(sigma: Any) -> Fraction:
    s = _as_fraction(sigma, "sigma")
    if s >= (1 << 40):
        raise ValueError(f"sigma must be < 2**40, got {sigma!r}")
    s2 = s * s
    return _round_up(s2, max(1, math.floor((1 << _GAUSS_DEN_BITS) / s2)))


def discrete_gaussian(sigma: Any, size: Size = None, rng: RNGLike = None) -> Any:
    """Exact discrete Gaussian: P(x) ∝ exp(−x²/(2σ²)) on the integers (σ² rational).

    CKS Algorithm 3: a discrete Laplace candidate Y with scale t = ⌊σ⌋ + 1 is
    accepted with probability exp(−(|Y| − σ²/t)²/(2σ²)).  σ² is rounded up if its
    denominator is too large (see the module docstring).  Returns a Python int for
    ``size=None``, else an int64 array.

    >>> x = discrete_gaussian(5, size=100000, rng=0)
    >>> bool(abs(x.var() - 25) < 1)
    True
    """
    s2 = _sigma2_rational(sigma)
    a, b = s2.numerator, s2.denominator
    t = math.isqrt(a * b) // b + 1
    shape = _shape(size)
    n = 1 if shape is None else math.prod(shape)
    src = as_source(rng)
    out = np.empty(n, dtype=np.int64)
    filled = 0
    rate = 0.5
    bt = b * t
    den = 2 * a * b * t * t
    small_den = den < _SAFE
    lim = math.isqrt(_SAFE) if small_den else -1  # |v| < lim keeps v² in int64
    while filled < n:
        need = n - filled
        m = int(need / rate * 1.1) + 16
        y = _dlap(t, 1, m, src)
        ay = np.abs(y)
        # γ = (|Y| − σ²/t)² / (2σ²) = v² / den with v = |Y|·b·t − a
        fast = np.zeros(m, dtype=bool)
        if small_den and a < lim:
            fast = ay <= (lim + a - 1) // bt  # ⇔ −lim < v < lim, so ay·bt < 2^32: no overflow
        c = np.zeros(m, dtype=bool)
        if fast.any():
            v = ay[fast] * bt - a
            c[fast] = _bern_exp(v * v, np.full(v.size, den, dtype=np.int64), src)
        slow = ~fast
        if slow.any():
            v = ay[slow].astype(object) * bt - a
            c[slow] = _bern_exp(v * v, np.full(v.size, den, dtype=object), src)
        z = y[c]
        rate = max(z.size / m, 0.05)
        take = min(z.size, need)
        out[filled : filled + take] = z[:take]
        filled += take
    return _finish(out, shape)


def _simulation_generator(rng: RNGLike, name: str) -> np.random.Generator:
    if (
        rng is None
        or isinstance(rng, SecureSource)
        or (isinstance(rng, RandomSource) and not isinstance(rng, GeneratorSource))
    ):
        raise ValueError(
            f"{name} draws floating-point noise and is only for simulation (Mironov 2012): "
            "pass rng as an int seed or a numpy Generator; to protect real data use the exact "
            "discrete_laplace / discrete_gaussian with rng=None"
        )
    return as_generator(rng)


def _float_noise(kind: str, width: Any, width_name: str, size: Size, rng: RNGLike) -> Any:
    """Centred float64 Laplace (``kind="laplace"``, scale ``width``) or Gaussian (sd ``width``) draws."""
    scale = float(_as_fraction(width, width_name))
    gen = _simulation_generator(rng, kind)
    return gen.laplace(0.0, scale, size=size) if kind == "laplace" else gen.normal(0.0, scale, size=size)


def laplace(scale: Any, size: Size = None, rng: RNGLike = None) -> Any:
    """Continuous Laplace, FOR SIMULATION ONLY (floating point; Mironov 2012). rng must be a seed or Generator.

    >>> round(float(laplace(1.0, size=200000, rng=0).std()), 1)
    1.4
    """
    return _float_noise("laplace", scale, "scale", size, rng)


def gaussian(sigma: Any, size: Size = None, rng: RNGLike = None) -> Any:
    """Continuous Gaussian, FOR SIMULATION ONLY. rng must be a seed or Generator.

    >>> round(float(gaussian(2.0, size=200000, rng=0).std()), 1)
    2.0
    """
    return _float_noise("gaussian", sigma, "sigma", size, rng)
