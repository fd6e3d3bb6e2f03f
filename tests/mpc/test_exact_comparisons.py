"""Comparisons are right for every pair of finite values: mixed signs, huge magnitudes, equal values.

The first tests check the circuit's formula on numpy with SPU's ring semantics emulated (``e_a − e_b``
wraps in int64 exactly as in Z_2^64, the comparison is its sign bit); they run in the main suite.
The SPU tests run the real two-party computation (``bash .ci/mpc``).
"""

import math

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from privstats.ustat.mpc import encode, encode_sortable, kernel_spec  # noqa: E402

FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
EDGE = [
    0.0,
    -0.0,
    5e-324,
    -5e-324,
    1e-300,
    -1e-300,
    1.0,
    -1.0,
    2.0,
    -2.0,
    1e10,
    -1e10,
    1.7976931348623157e308,
]
EDGE += [-1.7976931348623157e308, 8.0, -8.0, 7.999999999999999, -7.999999999999999]


def ring_order(a, b):
    """The circuit's [a < b], [a > b] with SPU's comparison emulated: int64 arithmetic wraps exactly like
    the ring Z_2^64, ``x < 0`` is the sign bit, as in SPU; the top bits are XORed and ANDed as booleans."""
    ea, eb = encode(kernel_spec("greater"), a)[:, 0], encode(kernel_spec("greater"), b)[:, 0]
    wa, ta, wb, tb = ea[:, 0], ea[:, 1] == 1, eb[:, 0], eb[:, 1] == 1
    with np.errstate(over="ignore"):
        lt63, gt63 = (wa - wb) < 0, (wb - wa) < 0
    lt = lt63 ^ ((ta ^ tb) & (lt63 ^ tb))
    gt = gt63 ^ ((ta ^ tb) & (gt63 ^ ta))
    return lt.astype(int), gt.astype(int)


def pairs_with_edges(a, b):
    e = np.array(EDGE)
    i, j = np.meshgrid(np.arange(e.size), np.arange(e.size))
    return np.r_[a, e[i.ravel()]], np.r_[b, e[j.ravel()]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(FINITE, FINITE), min_size=1, max_size=50))
def test_ring_formula_is_exact(pairs):
    a, b = pairs_with_edges(*np.array(pairs).T)
    lt, gt = ring_order(a, b)
    assert np.array_equal(lt, (a < b).astype(int)) and np.array_equal(gt, (a > b).astype(int))


def test_plain_ring_comparison_is_wrong_without_the_sign_bits():
    """Control: SPU's comparison of the codes alone fails on opposite signs far apart (the reported bug)."""
    a, b = np.array([2.0, 1e10, 1000.0]), np.array([-2.0, -1e10, -0.01])
    ea, eb = encode_sortable(a), encode_sortable(b)
    with np.errstate(over="ignore"):
        assert not np.any((eb - ea) < 0)  # "a > b" as the sign of the wrapped difference of codes: all 0
    assert np.all(ring_order(a, b)[1] == 1)  # the split encoding: right


@pytest.mark.parametrize("eps,units", [(1.0, 2), (0.5, 2), (8.0, 2), (1.0, 1)])
def test_laplace_coins_are_u_less_than_T(eps, units):
    """Every coin of the Laplace plans: the circuit's tree on all 2^n values of the bits it reads is
    [u < T], so each coin's probability is exactly T/2^k (the law the plan accounts for)."""
    from privstats.ustat.mpc.bits import coin_bits
    from privstats.ustat.mpc.circuit import _chain_less
    from privstats.ustat.mpc.noise import laplace_plan

    for T, k in laplace_plan(eps, units).coins:
        n = coin_bits(T, k)
        u = np.arange(2**n, dtype=np.int64)
        got = _chain_less(((u[:, None] >> np.arange(n)) & 1).astype(bool), T, k)
        assert np.array_equal(got, (u << (k - n)) < T) and got.sum() == T >> (k - n)


@pytest.mark.parametrize("eps", [0.01, 1.0, 3.0])
def test_rr_coin_chain_is_u_less_than_T(eps):
    """The randomized-response coin: the circuit's bit chain on every k-bit u equals [u < T] (so the flip
    probability is exactly T/2^k), on all 2^(k − low) values of the bits it reads."""
    from privstats.ustat.mpc.circuit import _chain_less
    from privstats.ustat.mpc.noise import rr_plan

    plan = rr_plan(eps)
    T, k, n = plan.thresholds[0], plan.coin_bits, plan.n_bits
    low = k - n
    u = np.arange(2**n, dtype=np.int64)
    bits = ((u[:, None] >> np.arange(n)) & 1).astype(bool)
    got = _chain_less(bits, T, k)
    assert np.array_equal(got, (u << low) < T)  # u's bits below T's lowest set bit do not matter
    assert got.sum() == T >> low  # exactly T/2^k of all k-bit words
    wrong = _chain_less(bits, T + (2 << low), k)  # a different threshold (same lowest set bit) is caught
    assert not np.array_equal(wrong, got)


def test_reference_kernels_exact_on_edges():
    a, b = pairs_with_edges(np.zeros(0), np.zeros(0))
    assert np.array_equal(kernel_spec("greater").reference(a, b), (a > b).astype(int))
    assert np.array_equal(kernel_spec("greater_half").reference(a, b), (a > b) * 1 + (a >= b) * 1)
    assert np.array_equal(kernel_spec("equal").reference(a, b), (a == b).astype(int))
    ab, ba = np.stack([a, b], 1), np.stack([b, -a], 1)
    want = np.sign(a - b) * np.sign(b + a) + 1
    assert np.array_equal(kernel_spec("sign_product").reference(ab, ba), want)


def packed_kernel(name, a, b):
    """The bit-sliced kernel of the noisy outputs (``PackedOrder``: the comparison, the top-bit fixes and
    the equality trees on the full words' bits), run on numpy with SPU's ring emulated, in grid units."""
    from privstats.ustat.mpc.bits import Circuit
    from privstats.ustat.mpc.packed import PackedOrder, kernel_nodes, order_needs, unpack
    from privstats.ustat.mpc.party import program_inputs

    spec = kernel_spec(name)
    m = len(a)
    x = encode(spec, np.stack([a, b], 1).reshape(2 * m, -1)).reshape(m, 2, spec.columns, 2)
    w, _, _, _, full = (v for v, _ in program_inputs(spec_job(name), x, np.zeros((m, 1)), np.zeros((1, 1))))
    c = Circuit(np)
    with np.errstate(over="ignore"):
        order = PackedOrder(c, np, w, full, m, order_needs(spec))
        low, high = kernel_nodes(spec, order)
        vals = c.run([low, high])
    bits = [unpack(np, v[None, :], m)[0] if v is not None else np.zeros(m, np.int64) for v in vals]
    return bits[0] + 2 * bits[1]


def spec_job(name):
    from privstats.ustat.mpc import JobSpec

    return JobSpec.build(
        [(name, "rr" if name != "greater_half" and name != "sign_product" else "laplace", 1.0)]
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(FINITE, FINITE), min_size=1, max_size=150))
def test_packed_kernels_exact_for_all_finite_values(pairs):
    """Every sortable kernel of the noisy (bit-sliced) path equals the plain kernel on all finite pairs,
    with the edges (signed zeros, subnormals, ±max, values 2^63 apart) and equal values mixed in; a pair
    layout off the 64-pair word boundary."""
    a0, b0 = np.array(pairs).T
    a, b = pairs_with_edges(np.r_[a0, a0[:5]], np.r_[b0, a0[:5]])  # copies: ties
    for name in ("greater", "greater_half", "equal", "not_equal_0"):
        A, B = (a, b) if name != "not_equal_0" else (np.stack([a, b], 1), np.stack([b, a], 1))
        assert np.array_equal(packed_kernel(name, A, B), kernel_spec(name).reference(A, B)), name
    A, B = np.stack([a, b], 1), np.stack([b, -a], 1)
    assert np.array_equal(packed_kernel("sign_product", A, B), kernel_spec("sign_product").reference(A, B))


def test_equality_tree_reads_every_bit():
    """[a = b] from the AND tree of all 64 bits of the full words: values that differ in one bit only
    (the lowest, a middle one, the top one: 2.0 vs −2.0's neighbours) are unequal, copies equal."""
    from privstats.ustat.mpc.packed import bit_rows

    g = np.random.default_rng(4)
    x = g.integers(-(2**63), 2**63 - 1, 200, dtype=np.int64)
    rows = bit_rows(np, x, 200)
    for i in (0, 31, 63):
        got = (rows[i][np.arange(200) // 64] >> (np.arange(200) % 64)) & 1
        assert np.array_equal(got, (x >> i) & 1)
    a = np.array([1.0, 1.0, 0.0, 5e-324, 2.0])
    b = np.array([np.nextafter(1.0, 2.0), 1.0, -0.0, -5e-324, -2.0])
    assert packed_kernel("equal", a, b).tolist() == [0, 1, 1, 0, 0]
    assert packed_kernel("greater_half", a, b).tolist() == [0, 1, 1, 2, 2]


# ---------------------------------------------------------------------------------------------------
# the real two-party computation
# ---------------------------------------------------------------------------------------------------
M = 256  # one compiled shape for every example


@pytest.fixture(scope="module")
def session():
    pytest.importorskip("spu")
    from privstats.ustat.mpc import default_session

    return default_session()


def _fill(a, b):
    k = math.ceil(M / a.size)
    return np.tile(a, k)[:M], np.tile(b, k)[:M]


@settings(max_examples=8, deadline=None)
@given(
    st.lists(st.tuples(FINITE, FINITE), min_size=1, max_size=M // 2),
    st.sampled_from(
        [(-8.0, 8.0), (-1e10, 1e10), (0.0, 1.0), (-1.7976931348623157e308, 1.7976931348623157e308)]
    ),
)
def test_spu_comparisons_exact_within_bounds(session, pairs, bounds):
    """Hypothesis: values clipped to public bounds, mixed with their ends and copies (equal values)."""
    from privstats.ustat.mpc import SpuTwoParty

    a0, b0 = np.clip(np.array(pairs).T, *bounds)
    lo, hi, same = *bounds, a0[: a0.size // 2 + 1]
    a = np.r_[a0, lo, hi, lo, hi, same]  # both ends of the bounds, and equal values
    b = np.r_[b0, hi, lo, lo, hi, same]
    a, b = _fill(a, b)
    for kernel, want in (("greater", (a > b) * 1), ("greater_half", (a > b) * 1 + (a >= b) * 1)):
        out = SpuTwoParty(kernel, pair_epsilon=1.0, mechanism="none", session=session).raw(a, b)
        assert np.array_equal(out, want)


def test_spu_reported_cases_and_every_kernel(session):
    from privstats.ustat.mpc import SpuTwoParty

    a = np.array([2.0, 3.0, 5.0, 1e10, 1000.0, -2.0])
    b = np.array([-2.0, -3.0, -5.0, -1e10, -0.01, 2.0])
    a, b = pairs_with_edges(a, b)
    a, b = a[:M], b[:M]
    for kernel, want in (
        ("greater", (a > b) * 1),
        ("greater_half", (a > b) * 1 + (a >= b) * 1),
        ("equal", (a == b) * 1),
    ):
        out = SpuTwoParty(kernel, pair_epsilon=1.0, mechanism="none", session=session).raw(a, b)
        assert np.array_equal(out, want), kernel
    A, B = np.stack([a, b], 1), np.stack([b, -a], 1)
    with np.errstate(over="ignore"):  # a − b may round to ±inf: its sign is still right
        sp = np.sign(a - b) * np.sign(b + a) + 1
    for kernel, want in (
        ("sign_product", sp),
        ("not_equal_0", (a != b) * 1),
        ("not_equal_1", (b != -a) * 1),
    ):
        out = SpuTwoParty(kernel, pair_epsilon=1.0, mechanism="none", session=session).raw(A, B)
        assert np.array_equal(out, want), kernel
