"""Monotone post-processing of a noisy cumulative curve (free: post-processing).

* ``"l1"`` / ``"l2"`` — the paper's Eq. 3: the smallest correction nu over the
  binary-tree nodes (``sum |nu|`` or ``sum nu^2``) such that F + M nu is
  non-decreasing with F(first) >= 0 and F(last) <= 1.  Consecutive-pair constraints
  only (N + 1 rows, about 4N non-zeros after substituting F).
  - L1: a linear programme, solved by HiGHS (``scipy.optimize.linprog``).
  - L2: solved through its dual, a non-negative quadratic programme whose
    Hessian G = A A^T is a sparse M-matrix (about 6N non-zeros), by a
    primal-dual active-set method (finite and monotone for M-matrices), with
    one sparse LU per iteration.
  ``solver="cvxopt"`` solves the same programmes with cvxopt (for parity checks).
* ``"isotonic"`` — Euclidean projection on {non-decreasing, in [0, 1]}: pool
  adjacent violators (``scipy.optimize.isotonic_regression``), then clipping.
  Never increases the Euclidean error to a true ECDF (both lie in the convex set).

Every result gets a final guard ``clip`` + running maximum against solver tolerance.

>>> import numpy as np
>>> F = np.array([0.1, 0.05, 0.3, 0.7, 0.65, 1.02])
>>> bool(np.all(np.diff(smooth(F, "l2")) >= 0))
True
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import splu

__all__ = ["SMOOTHING_METHODS", "isotonic_projection", "smooth", "tree_smoothing_problem"]

SMOOTHING_METHODS = ("none", "isotonic", "l1", "l2")


def _guard(f: np.ndarray) -> np.ndarray:
    return np.maximum.accumulate(np.clip(f, 0.0, 1.0))


def isotonic_projection(values: np.ndarray) -> np.ndarray:
    """Euclidean projection on non-decreasing curves in [0, 1] (PAVA + clip, O(N))."""
    from scipy.optimize import isotonic_regression

    return _guard(isotonic_regression(np.asarray(values, dtype=np.float64)).x)


def _tree_matrix(n_points: int) -> sparse.csr_matrix:
    """M (N x nodes): path indicators of the binary tree over N points (nodes meeting [0, N))."""
    L = int(n_points - 1).bit_length()
    idx = np.arange(n_points)
    parts, start = [], 0
    for l in range(L + 1):
        parts.append(start + (idx >> l))
        start += -(-n_points // (1 << l))
    cols = np.stack(parts, axis=1).ravel()
    rows = np.repeat(idx, L + 1)
    return sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n_points, start))


def tree_smoothing_problem(values: np.ndarray) -> tuple[sparse.csr_matrix, sparse.csr_matrix, np.ndarray]:
    """(M, A, c) of Eq. 3 in nu: constraints A nu >= c make F + M nu monotone and in [0, 1]."""
    F = np.asarray(values, dtype=np.float64)
    N = F.size
    M = _tree_matrix(N)
    D = sparse.diags([-np.ones(N - 1), np.ones(N - 1)], [0, 1], shape=(N - 1, N), format="csr")
    first = sparse.csr_matrix(([1.0], ([0], [0])), shape=(1, N))
    last = sparse.csr_matrix(([-1.0], ([0], [N - 1])), shape=(1, N))
    S = sparse.vstack([D, first, last], format="csr")
    A = (S @ M).tocsr()
    A.eliminate_zeros()
    c = np.concatenate([F[:-1] - F[1:], [-F[0]], [F[-1] - 1.0]])
    return M, A, c


class _StridedTridiagonal:
    """G = A A^T of Eq. 3 restricted to a free set, factorised by cyclic reduction.

    The monotonicity rows are indexed by the boundary beta = i + 1 (1..N-1).  G
    couples beta and beta + 2^l only when both are multiples of 2^l, so eliminating
    the odd multiples of 2^v for v = 0, 1, ... leaves, at every stage, a
    tridiagonal system of stride 2^v: the factorisation is O(N), vectorized per
    level, with no pivoting (G is symmetric positive definite).  The couplings of
    stride 2^l are stored compactly (one entry per multiple of 2^l), so a
    factorisation touches O(N) memory in total.  The two bound rows are handled by
    bordering.
    """

    def __init__(self, G: sparse.csr_matrix, n_points: int):
        N = n_points
        self.N = N
        self.L = int(N - 1).bit_length()
        self.levels = []  # (s, k): stride and number of eliminated rows
        for v in range(self.L):
            s = 1 << v
            k = len(range(s, N, 2 * s))
            if k == 0:
                break
            self.levels.append((s, k))
        size = max([2 * s * k + 1 for s, k in self.levels] + [N + 1])
        self.size = size
        core = G[: N - 1][:, : N - 1].tocoo()
        self.diag0 = np.ones(size)
        on = core.row == core.col
        self.diag0[core.row[on] + 1] = core.data[on]
        up = core.col > core.row
        i, j, val = core.row[up] + 1, core.col[up] + 1, core.data[up]
        d = j - i
        lvl = np.log2(d).astype(np.int64)
        if np.any((1 << lvl) != d) or np.any(i % d) or np.any(lvl > self.L):
            raise np.linalg.LinAlgError("unexpected sparsity pattern")
        # off0[l][m] couples m 2^l and (m + 1) 2^l
        self.off0 = [np.zeros((size - 1) // (1 << l) + 1) for l in range(self.L + 2)]
        for l in np.unique(lvl):
            sel = lvl == l
            self.off0[l][i[sel] >> l] = val[sel]
        self.E0 = G[: N - 1][:, N - 1 :].toarray()
        self.Gb0 = G[N - 1 :][:, N - 1 :].toarray()

    def factor(self, free: np.ndarray):
        N, size = self.N, self.size
        fc = np.zeros(size, dtype=bool)
        fc[1:N] = free[: N - 1]
        self.free_core, self.free_bound = fc, free[N - 1 :]
        diag = np.where(fc, self.diag0, 1.0)
        off = []
        for l, o in enumerate(self.off0):
            f = fc[:: 1 << l]
            m = min(o.size, f.size - 1)
            oo = np.zeros(o.size)
            oo[:m] = o[:m] * (f[:m] & f[1 : m + 1])
            off.append(oo)
        self.stages = []
        for v, (s, k) in enumerate(self.levels):
            mid, left, right = (
                slice(s, 2 * s * k, 2 * s),
                slice(0, 2 * s * k, 2 * s),
                slice(2 * s, 2 * s * (k + 1), 2 * s),
            )
            d = diag[mid].copy()
            gl, gr = off[v][0 : 2 * k : 2].copy(), off[v][1 : 2 * k : 2].copy()
            diag[left] -= gl * gl / d
            diag[right] -= gr * gr / d
            off[v + 1][:k] -= gl * gr / d
            self.stages.append((mid, left, right, d, gl, gr))
        return self

    def _solve_core(self, rhs: np.ndarray) -> np.ndarray:
        """Solve for the columns of ``rhs`` (rows = core rows); works on rows of a (cols, size) array."""
        r = np.zeros((rhs.shape[1], self.size))
        r[:, 1 : self.N] = rhs.T
        r[:, ~self.free_core] = 0.0
        for mid, left, right, d, gl, gr in self.stages:
            rb = r[:, mid] / d
            r[:, left] -= gl * rb
            r[:, right] -= gr * rb
        x = np.zeros_like(r)
        for mid, left, right, d, gl, gr in reversed(self.stages):
            x[:, mid] = (r[:, mid] - gl * x[:, left] - gr * x[:, right]) / d
        return x[:, 1 : self.N].T

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        N = self.N
        fb = self.free_bound
        E = self.E0[:, fb] * self.free_core[1:N, None]
        sol = self._solve_core(np.column_stack([rhs[: N - 1], E]))
        z, Y = sol[:, 0], sol[:, 1:]
        out = np.zeros(rhs.size)
        if fb.any():
            S = self.Gb0[np.ix_(fb, fb)] - E.T @ Y
            xb = np.linalg.solve(S, rhs[N - 1 :][fb] - E.T @ z)
            z = z - Y @ xb
            out[N - 1 :][fb] = xb
        out[: N - 1] = np.where(self.free_core[1:N], z, 0.0)
        return out


def _l2_active_set(A: sparse.csr_matrix, c: np.ndarray, n_points: int, max_iter: int = 100) -> np.ndarray:
    """min 1/2||nu||^2 s.t. A nu >= c via the dual  min_{mu>=0} 1/2 mu^T G mu - c^T mu, G = A A^T.

    Primal-dual active set (Hintermueller-Ito-Kunisch); G is an M-matrix (all
    off-diagonal entries <= 0), for which the iteration terminates at the exact
    optimum.  Each step solves one principal subsystem of G in O(N)."""
    G = (A @ A.T).tocsr()
    try:
        solver = _StridedTridiagonal(G, n_points)
    except np.linalg.LinAlgError:  # pragma: no cover - structure is guaranteed for Eq. 3
        solver = None
    m = c.size
    free = c > 0  # constraints violated at nu = 0
    for _ in range(max_iter):
        mu = np.zeros(m)
        if free.any():
            if solver is not None:
                mu = solver.factor(free).solve(np.where(free, c, 0.0))
            else:  # pragma: no cover
                mu[free] = splu(G[free][:, free].tocsc()).solve(c[free])
        grad = G @ mu - c
        new_free = (mu - grad) > 0
        if np.array_equal(new_free, free):
            break
        free = new_free
    else:
        raise RuntimeError("L2 smoothing active-set iteration did not converge")
    return A.T @ mu


def _l1_highs(A: sparse.csr_matrix, c: np.ndarray) -> np.ndarray:
    from scipy.optimize import linprog

    k = A.shape[1]
    A_ub = sparse.hstack([-A, A], format="csr")  # -A(nu+ - nu-) <= -c
    res = linprog(np.ones(2 * k), A_ub=A_ub, b_ub=-c, bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the L1 smoothing LP: {res.message}")
    return res.x[:k] - res.x[k:]


def _cvxopt(A: sparse.csr_matrix, c: np.ndarray, p: int) -> np.ndarray:
    import cvxopt
    from cvxopt import solvers

    solvers.options["show_progress"] = False
    k = A.shape[1]
    Acoo = (-A).tocoo()
    if p == 2:
        G = cvxopt.spmatrix(Acoo.data.tolist(), Acoo.row.tolist(), Acoo.col.tolist(), size=A.shape)
        P = cvxopt.spmatrix(1.0, range(k), range(k))
        sol = solvers.qp(P, cvxopt.matrix(np.zeros(k)), G, cvxopt.matrix(-c))
        if sol["status"] != "optimal":
            raise RuntimeError(f"cvxopt QP status {sol['status']}")
        return np.array(sol["x"]).ravel()
    # LP in (nu, s): min 1^T s, -A nu <= -c, nu - s <= 0, -nu - s <= 0
    I = sparse.identity(k, format="csr")
    Gs = sparse.vstack(
        [
            sparse.hstack([-A, sparse.csr_matrix((A.shape[0], k))]),
            sparse.hstack([I, -I]),
            sparse.hstack([-I, -I]),
        ]
    ).tocoo()
    G = cvxopt.spmatrix(Gs.data.tolist(), Gs.row.tolist(), Gs.col.tolist(), size=Gs.shape)
    h = cvxopt.matrix(np.concatenate([-c, np.zeros(2 * k)]))
    sol = solvers.lp(cvxopt.matrix(np.concatenate([np.zeros(k), np.ones(k)])), G, h)
    if sol["status"] != "optimal":
        raise RuntimeError(f"cvxopt LP status {sol['status']}")
    return np.array(sol["x"]).ravel()[:k]


def smooth(values, method: str = "l2", *, solver: str = "auto", return_correction: bool = False):
    """Monotone, [0, 1]-bounded version of a noisy ECDF on its grid.

    ``method`` in ``"none"``, ``"isotonic"``, ``"l1"``, ``"l2"``; ``solver`` is
    ``"auto"`` (HiGHS / active set) or ``"cvxopt"``.  With ``return_correction``
    also returns the tree-node correction nu (Eq. 3 methods only).
    """
    F = np.asarray(values, dtype=np.float64)
    if F.ndim != 1 or F.size == 0 or not np.all(np.isfinite(F)):
        raise ValueError("values must be a non-empty finite 1-d array")
    if method not in SMOOTHING_METHODS:
        raise ValueError(f"smoothing must be one of {SMOOTHING_METHODS}, got {method!r}")
    if solver not in ("auto", "cvxopt"):
        raise ValueError(f"solver must be 'auto' or 'cvxopt', got {solver!r}")
    if method == "none":
        return F.copy()
    if method == "isotonic":
        return isotonic_projection(F)
    if F.size == 1:
        out = np.clip(F, 0.0, 1.0)
        return (out, out - F) if return_correction else out
    M, A, c = tree_smoothing_problem(F)
    p = 1 if method == "l1" else 2
    if solver == "cvxopt":
        nu = _cvxopt(A, c, p)
    else:
        nu = _l1_highs(A, c) if p == 1 else _l2_active_set(A, c, F.size)
    out = F + M @ nu
    return (_guard(out), nu) if return_correction else _guard(out)
