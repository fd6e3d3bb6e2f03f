"""Exact noise samplers (Canonne–Kamath–Steinke 2020). To be implemented.

``rng`` follows :func:`privstats.privacy.randomness.as_source`: ``None`` is the OS
CSPRNG; a seed or a numpy Generator gives reproducible simulation.
"""

from __future__ import annotations

__all__ = ["bernoulli_exp", "discrete_laplace", "discrete_gaussian", "laplace", "gaussian"]


def bernoulli_exp(gamma, size=None, rng=None):
    """Exact Bernoulli(exp(−γ)) for rational γ >= 0 (Fraction, int, or float taken exactly)."""
    raise NotImplementedError


def discrete_laplace(scale, size=None, rng=None):
    """Exact discrete Laplace: P(x) ∝ exp(−|x|/scale) on the integers (scale rational > 0)."""
    raise NotImplementedError


def discrete_gaussian(sigma, size=None, rng=None):
    """Exact discrete Gaussian: P(x) ∝ exp(−x²/(2σ²)) on the integers (σ² rational)."""
    raise NotImplementedError


def laplace(scale, size=None, rng=None):
    """Continuous Laplace, FOR SIMULATION ONLY (floating point; Mironov 2012). rng must be a seed or Generator."""
    raise NotImplementedError


def gaussian(sigma, size=None, rng=None):
    """Continuous Gaussian, FOR SIMULATION ONLY. rng must be a seed or Generator."""
    raise NotImplementedError
