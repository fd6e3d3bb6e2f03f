"""Protocol C pairs as a real two-party computation (SPU, Cheetah), noise drawn inside the computation.

:class:`SpuTwoParty` implements :class:`~privstats.ustat.pairs.TwoPartyBackend`.  Each batch of pairs
runs as one SPU program between two OS processes, the **left** and the **right** party, connected over
TCP (SPU's brpc link).  The aggregator (the calling process) only schedules the pairs, sends each party
its own side's values, and receives the two parties' *shares* of the released noisy outputs, which it
reconstructs.  It never sees the noise; neither party sees the other's values, the noise, or the output.

Inside the computation (all arithmetic in the ring Z_{2^64}):

* **kernel** on exact integer encodings: comparisons on order-preserving int64 images of the float64
  values and their sign bits (AUC, Kendall's sign product, tie indicators: exact for every pair of
  finite values, ties included, however far apart; see :mod:`.kernels`), or ``|a − b|`` on a public
  grid of ``2^-grid_bits`` (Gini mean difference: each party rounds its own value to the grid);
* **joint randomness**: every random bit is ``r_left ⊕ r_right`` (and every noise-share word is a
  party's own), where each party draws its own from the OS CSPRNG; the XOR is uniform if either party
  is honest, and unknown to both.  Each party's own contribution is its share of the program input
  (nothing is sent).  Every coin is ``[u < T]`` on k such bits, a tree of one-bit ANDs against the
  public T in boolean sharing (:mod:`.bits`), all coins of a job side by side (one AND call per level);
* **randomized response** (binary kernels): the flip coin with ``T = ⌈2^k/(1+e^ε)⌉`` (rounded up, so
  the realised ε' ≤ ε exactly; ``k`` is the least precision whose debiased variance is within 0.5% of
  the exact-ε variance, 11 bits at ε = 1; the aggregator debiases with the realised value), XORed
  into the comparison's bit.  Against a party colluding with the aggregator the guarantee is the same
  ε: the other party's bits keep ``u`` uniform;
* **discrete Laplace** (bounded kernels, noise on the kernel grid): ``Z = S·nz·(1+G)`` (or ``G ⊕ S``,
  centred at −½, for small ε) with ``G`` built from its independent binary digits, each a coin at
  its own precision, a coin ``nz`` and a fair sign S; the release is ``(kernel + Z) mod 2^(J+1)``,
  whose noise covers the whole cycle: pure ε-DP, δ = 0.  :func:`laplace_plan` accounts for the
  realised thresholds exactly (every step ratio on the cycle within e^{±ε/Δ}; for Δ = 2 the exact
  worst window) and picks the precisions for the fewest ANDs with the variance within 1%.

Security model: semi-honest (passive) adversary corrupting one of the two parties, computational
security (SPU Cheetah: OT and lattice-HE based 2PC with no trusted dealer); the aggregator is a third
party that only learns the noisy outputs.  The released value is ε-DP (ε', δ for Laplace) per pair for
each input; a user in P pairs gets εP by basic composition (``PairsProtocol`` divides ε by P).

Install with the ``mpc`` extra (``pip install 'privstats[mpc]'``; SPU needs Python 3.10 or 3.11 and
numpy < 2, so use a separate virtual environment; on other Pythons ``backend='spu'`` raises an
ImportError that says so).  A deployment where each party holds only its own data and enforces its
own copy of the task is :mod:`privstats.services.party` (``privstats task new --backend spu``).

Library mode: run the two roles on two machines with::

    python -m privstats.ustat.mpc party --role left  --listen 0.0.0.0:7001 \
        --self-addr hostA:7101 --peer-addr hostB:7102
    python -m privstats.ustat.mpc party --role right --listen 0.0.0.0:7002 \
        --self-addr hostB:7102 --peer-addr hostA:7101

and point the aggregator at them with ``SpuTwoParty(..., parties=("hostA:7001", "hostB:7002"))``.

>>> import numpy as np
>>> be = SpuTwoParty("greater", pair_epsilon=1.0, mechanism="rr")    # doctest: +SKIP
>>> out = be.compute(np.array([0.3, 0.9]), np.array([0.5, 0.1]))      # doctest: +SKIP
"""

from __future__ import annotations

from .backend import SECURITY, SpuTwoParty, debias, noise_law, noise_variance
from .circuit import JobSpec, Output, noisy_program, require_spu, runtime_config
from .kernels import SPECS, KernelSpec, encode, encode_sortable, kernel_spec, kernel_units
from .noise import MECHANISMS, RING, NoisePlan, laplace_plan, make_plan, rr_plan, shares_plan
from .party import Party, run_party
from .session import SpuSession, default_session

__all__ = [
    "MECHANISMS",
    "RING",
    "SECURITY",
    "SPECS",
    "JobSpec",
    "KernelSpec",
    "NoisePlan",
    "Output",
    "Party",
    "SpuSession",
    "SpuTwoParty",
    "debias",
    "default_session",
    "encode",
    "encode_sortable",
    "kernel_spec",
    "kernel_units",
    "laplace_plan",
    "make_plan",
    "noise_law",
    "noise_variance",
    "noisy_program",
    "require_spu",
    "rr_plan",
    "run_party",
    "runtime_config",
    "shares_plan",
    "spu_available",
]

_spec = kernel_spec  # the former private name (tests, benchmarks)
_Party = Party


def spu_available() -> bool:
    """True if SPU (the ``mpc`` extra) can be imported here (and this Python supports it)."""
    try:
        require_spu()
    except ImportError:
        return False
    return True
