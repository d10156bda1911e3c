"""Tests of the NPKL block-coordinate-descent solver (seed 000, Algorithm 1)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from _npkl_reference import box_qp_reference, sample_objective_reference
from _npkl_reference import update_sample_reference as _update_sample_reference
from scipy.optimize import minimize
from sklearn.datasets import make_blobs

from psdlearn.constraints import PairwiseConstraints
from psdlearn.graph import knn_laplacian
from psdlearn.npkl import _kernels as K
from psdlearn.npkl._qp import _two_variables, box_qp, kkt_residual
from psdlearn.npkl.bcd import (
    initial_embedding,
    level_split,
    parallel_split,
    solve_bcd,
)
from psdlearn.npkl.estimator import NPKL
from psdlearn.npkl.problem import NPKLProblem

LOSSES = ("hinge", "squared_hinge", "square", "linear")


# ------------------------------------------------------------------ helpers


def _label_pairs(y, n_must, n_cannot, rng):
    """Random distinct must-link / cannot-link pairs ``i < j`` drawn from labels ``y``."""
    n = len(y)
    seen, pairs, signs = set(), [], []
    want = {1.0: n_must, -1.0: n_cannot}
    while want[1.0] or want[-1.0]:
        i, j = sorted(rng.choice(n, size=2, replace=False).tolist())
        sign = 1.0 if y[i] == y[j] else -1.0
        if (i, j) in seen or not want[sign]:
            continue
        seen.add((i, j))
        pairs.append((i, j))
        signs.append(sign)
        want[sign] -= 1
    return np.array(pairs, dtype=np.int64), np.array(signs)


def _blob_problem(n, n_classes, seed, loss, gamma=1.0, b=1.0, delta=0.01, frac=0.6):
    """Blobs, kNN Laplacian (k=5) and 0.6 n must + 0.6 n cannot pairs from the labels."""
    rng = np.random.default_rng(seed)
    X, y = make_blobs(
        n_samples=n, centers=n_classes, n_features=4, cluster_std=1.5, random_state=seed
    )
    L = knn_laplacian(X, n_neighbors=5, delta=delta)
    m = int(round(frac * n))
    pairs, signs = _label_pairs(y, m, m, rng)
    return NPKLProblem(L, pairs, signs, loss, gamma, b)


def _csr_arrays(L):
    return (
        L.indptr.astype(np.int64),
        L.indices.astype(np.int64),
        L.data.astype(np.float64),
        L.diagonal().astype(np.float64),
    )


def _kernel_update(i, E, L, Tp, Ti, Ts, loss, gamma, b, alpha, path=K.SQUARE_AUTO, acc=None,
                   omega=1.0, code=None):
    """Call the compiled per-sample update with freshly allocated workspaces (``code``:
    a kernel loss code instead of ``loss``'s, e.g. ``K.SMOOTH_HINGE`` with ``b = mu``)."""
    dmax = max(1, int(Tp[i + 1] - Tp[i]))
    Lp, Li, Lx, diag = _csr_arrays(L)
    work = K.workspaces(E.shape[1], dmax, True)
    code = K.LOSS_CODES[loss] if code is None else code
    return K.update_sample(i, E, Lp, Li, Lx, diag, Tp, Ti, Ts, code, gamma, b, alpha, path,
                           *work, np.zeros(3) if acc is None else acc, omega)


def _instance(d, r, seed, gamma=None):
    """Sample 0 with ``d`` partners, a random Laplacian row and a random embedding."""
    rng = np.random.default_rng(seed)
    n = d + 4
    E = rng.normal(size=(n, r)) * rng.uniform(0.5, 1.5) / np.sqrt(r) * 1.5
    dense = np.eye(n)
    dense[0, 0] = rng.uniform(0.5, 2.0)
    nbrs = rng.choice(np.arange(1, n), size=min(4, n - 1), replace=False)
    w = -rng.uniform(0.05, 0.5, size=len(nbrs))
    dense[0, nbrs] = w
    dense[nbrs, 0] = w
    L = sp.csr_matrix(dense)
    L.sort_indices()
    pairs = np.stack([np.zeros(d, dtype=np.int64), np.arange(1, d + 1)], axis=1)
    signs = rng.choice([-1.0, 1.0], size=d)
    gamma = float(rng.choice([0.5, 2.0, 10.0])) if gamma is None else gamma
    return E, L, pairs, signs, gamma


def _margins_ok(v, E, L, Tp, Ti, Ts, loss, gamma, alpha, tol):
    """Optimality certificate of ``v = (A alpha - s) / L_ii`` for the hinge duals."""
    sl = slice(Tp[0], Tp[1])
    lii, s = float(L[0, 0]), np.asarray(L.getrow(0) @ E).ravel() - L[0, 0] * E[0]
    A = E[Ti[sl]].T * Ts[sl]
    alpha = alpha[sl]
    assert np.allclose(lii * v, A @ alpha - s, atol=tol, rtol=0)
    z = A.T @ v  # margins T_ij v^T e_j
    if loss == "hinge":
        assert np.all(alpha >= -tol) and np.all(alpha <= gamma / 2 + tol)
        assert np.all(z[alpha < gamma / 2 - 1e-7] >= 1 - tol)
        assert np.all(z[alpha > 1e-7] <= 1 + tol)
        return int(np.sum((alpha > 1e-7) & (alpha < gamma / 2 - 1e-7)))
    np.testing.assert_allclose(alpha, gamma * np.maximum(1 - z, 0), atol=tol)
    return int(np.sum(alpha > 1e-7))


def _brute_force(E, L, Tp, Ti, Ts, loss, gamma, b, seed):
    """Minimize Phi_0 by scipy from several random starts (SLSQP on the primal (19) for the
    hinge, with the ball for the linear loss; L-BFGS-B on the C^1 losses)."""
    rng = np.random.default_rng(seed)
    r = E.shape[1]
    sl = slice(Tp[0], Tp[1])
    lii, s = float(L[0, 0]), np.asarray(L.getrow(0) @ E).ravel() - L[0, 0] * E[0]
    A = E[Ti[sl]].T * Ts[sl]
    d = A.shape[1]

    def phi(v):
        return sample_objective_reference(v, 0, E, L, Tp, Ti, Ts, loss, gamma)

    best = None
    for _ in range(4):
        v0 = rng.normal(size=r)
        if loss == "hinge":
            x0 = np.concatenate([v0, np.maximum(1 - A.T @ v0, 0) + 0.1])
            res = minimize(
                lambda x: 0.5 * lii * x[:r] @ x[:r] + x[:r] @ s + 0.5 * gamma * x[r:].sum(),
                x0,
                jac=lambda x: np.concatenate([lii * x[:r] + s, np.full(d, 0.5 * gamma)]),
                method="SLSQP",
                options={"ftol": 1e-15, "maxiter": 2000},
                bounds=[(None, None)] * r + [(0, None)] * d,
                constraints=[
                    {
                        "type": "ineq",
                        "fun": lambda x: A.T @ x[:r] - 1 + x[r:],
                        "jac": lambda x: np.hstack([A.T, np.eye(d)]),
                    }
                ],
            )
            v = res.x[:r]
        elif loss == "linear":
            res = minimize(
                phi,
                v0 * b / np.linalg.norm(v0) / 2,
                method="SLSQP",
                options={"ftol": 1e-15, "maxiter": 2000},
                constraints=[{"type": "ineq", "fun": lambda v: b * b - v @ v}],
            )
            v = res.x * min(1.0, b / np.linalg.norm(res.x))  # SLSQP may overshoot by ~1e-8
        else:

            def grad(v):
                z = A.T @ v
                if loss == "square":
                    dl = -2 * (1 - z)
                else:
                    dl = -2 * np.maximum(1 - z, 0)
                return lii * v + s + 0.5 * gamma * A @ dl

            v = minimize(
                phi,
                v0,
                jac=grad,
                method="L-BFGS-B",
                options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 10000},
            ).x
        if best is None or phi(v) < phi(best):
            best = v
    return best, phi


# ------------------------------------------------------------------ small QP


@pytest.mark.parametrize("d,rank", [(2, 2), (5, 2), (12, 2), (5, 5), (12, 20), (30, 4)])
@pytest.mark.parametrize("hi", [0.7, np.inf])
def test_box_qp_kkt_and_reference(d, rank, hi):
    """Active set is exact (KKT residual at rounding level) on singular and regular H."""
    rng = np.random.default_rng(d * 100 + rank)
    for trial in range(10):
        A = rng.normal(size=(rank, d))
        if trial % 3 == 0:
            A[:, 1] = A[:, 0]  # parallel partners: singular even when d <= rank
        H = A.T @ A + (0.0 if hi < np.inf else 0.05) * np.eye(d)
        q = 1.0 + A.T @ rng.normal(size=rank)
        for x0 in (np.zeros(d), rng.uniform(0, 1, size=d)):
            x = x0.copy()
            ws = [np.empty(d) for _ in range(3)] + [np.empty(d, dtype=np.int64) for _ in range(2)]
            status = box_qp(H, q, d, 0.0, hi, x, *ws, np.empty((d, d)), np.empty((d, d)))
            assert status > 0  # the active set itself terminated, no fallback
            assert np.all(x >= 0) and np.all(x <= hi)
            res, scale = kkt_residual(H, q, d, 0.0, hi, x, np.empty(d))
            assert res <= 1e-10 * scale
            xr = box_qp_reference(H, q, 0.0, hi, x0)
            f = 0.5 * x @ H @ x - q @ x
            fr = 0.5 * xr @ H @ xr - q @ xr
            assert abs(f - fr) <= 1e-10 * (1 + abs(f))
            # the primal point A x is unique even where x is not
            np.testing.assert_allclose(A @ x, A @ xr, atol=1e-8 * (1 + np.abs(A @ x).max()))


@pytest.mark.parametrize("hi", [0.7, np.inf])
def test_two_variable_box_qp_closed_form_is_exact(hi):
    """The closed form of ``d = 2`` (interior point, else the best edge minimizer) meets
    the KKT conditions on its own, on definite and singular ``H`` (parallel or zero
    partners) and with the minimizer inside, on an edge or at a corner."""
    rng = np.random.default_rng(11)
    shapes = {"inside": 0, "edge": 0, "corner": 0}
    for trial in range(300):
        A = rng.normal(size=(3, 2))
        if trial % 4 == 1:
            A[:, 1] = A[:, 0] * rng.choice([-1.0, 1.0])  # parallel partners: singular
        if trial % 4 == 2:
            A[:, 1] = 0.0  # a zero partner
        H = A.T @ A + (0.0 if hi < np.inf else 0.05) * np.eye(2)
        q = rng.normal(size=2) * 2.0
        x = np.full(2, np.nan)
        assert _two_variables(H, q, 0.0, hi, x)
        assert np.all(x >= 0) and np.all(x <= hi)
        res, scale = kkt_residual(H, q, 2, 0.0, hi, x, np.empty(2))
        assert res <= 1e-10 * scale
        xr = box_qp_reference(H, q, 0.0, hi, np.zeros(2))
        f, fr = 0.5 * x @ H @ x - q @ x, 0.5 * xr @ H @ xr - q @ xr
        assert f <= fr + 1e-12 * (1 + abs(fr))
        at_bound = int(np.sum((x == 0.0) | (x == hi)))
        shapes[("inside", "edge", "corner")[at_bound]] += 1
    assert all(count > 0 for count in shapes.values())


# ------------------------------------------------------------------ per-sample updates


@pytest.mark.parametrize("loss", LOSSES)
def test_update_is_exact_minimizer(loss):
    """Kernel = NumPy reference (1e-10), optimality certificate, and brute force agree."""
    n_interior = 0
    for d in (1, 2, 5, 12):
        for rank in (2, 5, 20):
            seed = 1000 * d + rank
            E, L, pairs, signs, gamma = _instance(d, rank, seed)
            b = 0.8
            Tp, Ti, Ts = NPKLProblem(L, pairs, signs, loss, gamma, b).neighbors()
            ref, alpha_ref = _update_sample_reference(0, E, L, Tp, Ti, Ts, loss, gamma, b)
            Ek = E.copy()
            alpha = np.zeros(len(Ti))
            _kernel_update(0, Ek, L, Tp, Ti, Ts, loss, gamma, b, alpha)
            v = Ek[0]
            assert np.array_equal(Ek[1:], E[1:])
            np.testing.assert_allclose(v, ref, rtol=0, atol=1e-10 * (1 + np.abs(ref).max()))
            if loss in ("hinge", "squared_hinge"):
                n_interior += _margins_ok(v, E, L, Tp, Ti, Ts, loss, gamma, alpha, 1e-9)
            elif loss == "square":
                A = E[Ti[: Tp[1]]].T * Ts[: Tp[1]]
                lii = L[0, 0]
                s = np.asarray(L.getrow(0) @ E).ravel() - lii * E[0]
                grad = lii * v + s - gamma * A @ (1 - A.T @ v)
                assert np.abs(grad).max() <= 1e-10 * (1 + np.abs(s).max())
            else:
                assert np.linalg.norm(v) <= b + 1e-12
            vb, phi = _brute_force(E, L, Tp, Ti, Ts, loss, gamma, b, seed)
            assert phi(v) <= phi(vb) + 1e-9 * (1 + abs(phi(vb)))
            np.testing.assert_allclose(v, vb, atol=1e-3 * (1 + np.abs(v).max()))
    if loss in ("hinge", "squared_hinge"):
        assert n_interior > 0  # the instances exercise multipliers strictly inside the box


@pytest.mark.sdp
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_update_matches_cvxpy_primal(loss):
    """Hinge duals against the primal QPs (19)/(24) solved by cvxpy."""
    cp = pytest.importorskip("cvxpy")
    for d, rank in [(2, 5), (5, 2), (12, 5), (12, 20)]:
        E, L, pairs, signs, gamma = _instance(d, rank, 7 * d + rank)
        Tp, Ti, Ts = NPKLProblem(L, pairs, signs, loss, gamma).neighbors()
        Ek = E.copy()
        _kernel_update(0, Ek, L, Tp, Ti, Ts, loss, gamma, 1.0, np.zeros(len(Ti)))
        lii = float(L[0, 0])
        s = np.asarray(L.getrow(0) @ E).ravel() - lii * E[0]
        A = E[Ti[: Tp[1]]].T * Ts[: Tp[1]]
        v = cp.Variable(rank)
        xi = cp.pos(1 - A.T @ v)
        pen = cp.sum(xi) if loss == "hinge" else cp.sum_squares(xi)
        cp.Problem(cp.Minimize(0.5 * lii * cp.sum_squares(v) + s @ v + 0.5 * gamma * pen)).solve(
            solver=cp.CLARABEL
        )
        np.testing.assert_allclose(Ek[0], v.value, atol=1e-6)


@pytest.mark.parametrize("d,rank", [(1, 4), (3, 4), (3, 10), (7, 5), (7, 20), (25, 20)])
def test_square_smw_equals_direct(d, rank):
    """Woodbury path (d x d solve) and direct r x r Cholesky give the same update."""
    for seed in range(5):
        E, L, pairs, signs, gamma = _instance(d, rank, 31 * seed + d)
        Tp, Ti, Ts = NPKLProblem(L, pairs, signs, "square", gamma).neighbors()
        out = []
        for path in (K.SQUARE_SMW, K.SQUARE_DIRECT, K.SQUARE_AUTO):
            Ek = E.copy()
            _kernel_update(0, Ek, L, Tp, Ti, Ts, "square", gamma, 1.0, np.zeros(len(Ti)), path)
            out.append(Ek[0])
        for path in ("smw", "direct"):
            out.append(
                _update_sample_reference(0, E, L, Tp, Ti, Ts, "square", gamma, square_path=path)[0]
            )
        for other in out[1:]:
            np.testing.assert_allclose(
                out[0], other, rtol=0, atol=1e-10 * (1 + np.abs(out[0]).max())
            )


@pytest.mark.parametrize("loss", ["square", "linear"])
def test_row_with_many_partners_needs_no_dual_workspace(loss):
    """A row with 40,000 partners (a coarse level keeps repeated pairs): the square loss
    solves it by the r x r system and the linear loss by a projection, so no 3 d^2 dual
    workspace (38 GB here) is allocated, and the sweep gives the exact row minimizer."""
    n, rank, d = 40_001, 4, 40_000
    rng = np.random.default_rng(0)
    L = (1.01 * sp.identity(n, format="csr")).tocsr()
    pairs = np.column_stack([np.zeros(d, dtype=np.int64), np.arange(1, n)])
    signs = np.where(rng.random(d) < 0.5, 1.0, -1.0)
    problem = NPKLProblem(L, pairs, signs, loss, 0.01)
    E = rng.standard_normal((n, rank)) / 4.0
    Tp, Ti, Ts = problem.neighbors()
    E_new = E.copy()
    K.sweep_constrained(np.array([0]), E_new, L.indptr.astype(np.int64),
                        L.indices.astype(np.int64), L.data, L.diagonal(), Tp, Ti, Ts,
                        K.LOSS_CODES[loss], 0.01, 1.0, np.zeros(len(Ti)), K.SQUARE_AUTO,
                        np.zeros(3))
    expected = _update_sample_reference(0, E, L, Tp, Ti, Ts, loss, 0.01)[0]
    np.testing.assert_allclose(E_new[0], expected, rtol=0, atol=1e-10)
    assert np.array_equal(E_new[1:], E[1:])


def test_warm_start_does_not_change_update():
    """The dual warm start only changes the path, not the (unique) primal minimizer."""
    rng = np.random.default_rng(3)
    for loss in ("hinge", "squared_hinge"):
        for d, rank in [(5, 2), (12, 5), (5, 20)]:
            E, L, pairs, signs, gamma = _instance(d, rank, d + rank)
            Tp, Ti, Ts = NPKLProblem(L, pairs, signs, loss, gamma).neighbors()
            cold = E.copy()
            _kernel_update(0, cold, L, Tp, Ti, Ts, loss, gamma, 1.0, np.zeros(len(Ti)))
            warm = E.copy()
            alpha = rng.uniform(0, gamma, size=len(Ti))
            _kernel_update(0, warm, L, Tp, Ti, Ts, loss, gamma, 1.0, alpha)
            np.testing.assert_allclose(cold[0], warm[0], atol=1e-10)


@pytest.mark.parametrize("loss", LOSSES)
def test_single_updates_never_increase_objective(loss):
    """Each per-sample update (constrained or not) is a descent step of the objective (10)."""
    prob = _blob_problem(70, 3, 5, loss, gamma=2.0, b=1.0)
    L = prob.laplacian
    Lp, Li, Lx, _ = _csr_arrays(L)
    Tp, Ti, Ts = prob.neighbors()
    code = K.LOSS_CODES[loss]
    E = initial_embedding(prob.n_samples, 4, 0, max_norm=1.0)
    alpha = np.zeros(len(Ti))
    rng = np.random.default_rng(0)
    f = K.objective(E, Lp, Li, Lx, prob.pairs, prob.signs, code, prob.gamma)
    np.testing.assert_allclose(f, prob.objective(E), rtol=1e-12)
    for _ in range(2):
        for i in rng.permutation(prob.n_samples):
            acc = np.zeros(3)
            _kernel_update(i, E, L, Tp, Ti, Ts, loss, prob.gamma, prob.b, alpha, acc=acc)
            f_new = K.objective(E, Lp, Li, Lx, prob.pairs, prob.signs, code, prob.gamma)
            assert f_new <= f + 1e-10 * abs(f)
            # the update reports its exact objective change (used for the per-sweep history)
            assert acc[0] == pytest.approx(f_new - f, rel=1e-8, abs=1e-10 * abs(f))
            # and the squared norm of the new row (summed into ||E||^2 for the stop test)
            assert acc[2] == pytest.approx(E[i] @ E[i], rel=1e-12, abs=1e-300)
            f = f_new


@pytest.mark.parametrize("loss", [*LOSSES, "smoothed_hinge"])
@pytest.mark.parametrize("frac", [0.6, 0.1])
def test_over_relaxed_updates_report_their_exact_objective_changes(loss, frac):
    """With ``omega = 1.75`` each row update reports the exact changes of the objective
    (10) (``acc[0]``; the hinge's for the smoothed stage) and of the objective the rows
    minimize (``acc[1]``), whether it kept the over-relaxed point or the minimizer: the
    changes are formed from the step along the line of the old row and the minimizer (the
    linear loss's projected point apart), and must equal differences of exact
    objectives. ``frac = 0.1`` leaves most rows without partners."""
    smoothed = loss == "smoothed_hinge"
    mu = 0.05
    prob = _blob_problem(60, 3, 7, "hinge" if smoothed else loss, gamma=2.0, b=1.0, frac=frac)
    L = prob.laplacian
    Lp, Li, Lx, _ = _csr_arrays(L)
    Tp, Ti, Ts = prob.neighbors()
    code = K.SMOOTH_HINGE if smoothed else K.LOSS_CODES[loss]
    outer = K.HINGE if smoothed else code
    b = mu if smoothed else prob.b

    def objectives(E):
        return (K.objective(E, Lp, Li, Lx, prob.pairs, prob.signs, outer, prob.gamma),
                K.objective(E, Lp, Li, Lx, prob.pairs, prob.signs, code, prob.gamma, b))

    E = initial_embedding(prob.n_samples, 4, 3, max_norm=1.0)
    alpha = np.zeros(len(Ti))
    rng = np.random.default_rng(1)
    f, g = objectives(E)
    kept = 0
    for _ in range(3):
        for i in rng.permutation(prob.n_samples):
            acc = np.zeros(3)
            _kernel_update(i, E, L, Tp, Ti, Ts, "hinge", prob.gamma, b, alpha, acc=acc,
                           omega=1.75, code=code)
            f_new, g_new = objectives(E)
            assert acc[0] == pytest.approx(f_new - f, rel=1e-8, abs=1e-10 * abs(f))
            assert acc[1] == pytest.approx(g_new - g, rel=1e-8, abs=1e-10 * abs(g))
            assert acc[1] <= 1e-10 * abs(g)  # the minimized objective never increases
            kept += acc[1] < 0
            f, g = f_new, g_new
    assert kept > 0


# ------------------------------------------------------------------ full solver


@pytest.mark.parametrize("loss", LOSSES)
def test_objective_monotone_over_sweeps(loss):
    """Theorem 1: Phi(E_t) is non-increasing, on several data sets, seeds and both modes."""
    for n, n_classes, data_seed in [(60, 2, 0), (100, 3, 1), (150, 4, 2)]:
        prob = _blob_problem(n, n_classes, data_seed, loss, gamma=1.0 + data_seed)
        for seed, mode in [(0, "sequential"), (1, "block"), (2, "sequential")]:
            E0 = initial_embedding(n, 3 + seed, seed, max_norm=prob.b)
            res = solve_bcd(
                prob, E0, max_iter=60, tol=1e-9, random_state=seed, unconstrained=mode, block_iter=2
            )
            h = np.asarray(res.objective_history)
            assert len(h) == res.n_iter + 1 == len(res.time_history)
            assert np.all(np.diff(h) <= 1e-10 * np.abs(h[1:]))
            assert h[-1] < h[0]
            assert np.all(np.diff(res.time_history) >= 0)
            np.testing.assert_allclose(h[-1], prob.objective(res.embedding), rtol=1e-10)


def test_linear_loss_rows_stay_in_ball():
    """Every row satisfies ||e_i|| <= b after every sweep (the start is projected too)."""
    for b in (0.5, 1.0, 2.0):
        prob = _blob_problem(90, 3, 4, "linear", gamma=3.0, b=b)
        E0 = initial_embedding(prob.n_samples, 5, 1, scale=3.0)  # infeasible on purpose
        norms = []

        def cb(it, E, obj, norms=norms):
            norms.append(np.linalg.norm(E, axis=1).max())

        for mode in ("sequential", "block"):
            res = solve_bcd(prob, E0, max_iter=40, random_state=0, unconstrained=mode, callback=cb)
            assert np.linalg.norm(res.embedding, axis=1).max() <= b + 1e-12
        assert len(norms) > 2 and max(norms) <= b + 1e-12
        # the ball is active: the unconstrained optimum would leave it
        assert max(norms) >= b - 1e-9


def test_block_and_sequential_reach_same_fixed_point():
    """With E_L fixed, Gauss-Seidel (13) and Jacobi (17) both converge to
    E_U* = -L_UU^{-1} L_UL E_L, the minimizer of the strictly convex problem in E_U."""
    prob = _blob_problem(120, 3, 9, "square", delta=0.1, frac=0.15)
    L = prob.laplacian
    Lp, Li, Lx, diag = _csr_arrays(L)
    Tp = prob.neighbors()[0]
    U = np.flatnonzero(np.diff(Tp) == 0).astype(np.int64)
    C = np.flatnonzero(np.diff(Tp) > 0)
    assert 10 < len(U) < prob.n_samples
    E = initial_embedding(prob.n_samples, 6, 0)
    Luu = L[U][:, U].tocsc()
    Eu_star = -spla.splu(Luu).solve(L[U][:, C] @ E[C])

    seq = E.copy()
    for _ in range(300):
        K.sweep_unconstrained(U, seq, Lp, Li, Lx, diag, np.inf, np.zeros(3))
    jac = E.copy()
    buf, start = np.empty((len(U), 6)), np.empty((len(U), 6))
    K.jacobi_unconstrained(U, jac, Lp, Li, Lx, diag, np.inf, 300, buf, start)
    for out in (seq, jac):
        np.testing.assert_allclose(out[U], Eu_star, atol=1e-10)
        np.testing.assert_array_equal(out[C], E[C])
    # one Jacobi step = one step of (17) written with matrices
    one = E.copy()
    K.jacobi_unconstrained(U, one, Lp, Li, Lx, diag, np.inf, 1, buf, start)
    Lbar = L - sp.diags(diag)
    np.testing.assert_allclose(one[U], -(Lbar[U] @ E) / diag[U, None], atol=1e-13)


def test_determinism_and_input_untouched():
    prob = _blob_problem(80, 3, 3, "hinge")
    E0 = initial_embedding(prob.n_samples, 4, 11)
    E0_copy = E0.copy()
    a = solve_bcd(prob, E0, max_iter=30, random_state=5)
    b = solve_bcd(prob, E0, max_iter=30, random_state=np.random.default_rng(5))
    c = solve_bcd(prob, E0, max_iter=30, random_state=6)
    np.testing.assert_array_equal(E0, E0_copy)
    np.testing.assert_array_equal(a.embedding, b.embedding)
    assert a.objective_history == b.objective_history
    assert not np.array_equal(a.embedding, c.embedding)
    np.testing.assert_array_equal(initial_embedding(50, 3, 2), initial_embedding(50, 3, 2))


def test_convergence_flag_and_callback():
    prob = _blob_problem(60, 2, 0, "square")
    E0 = initial_embedding(prob.n_samples, 3, 0)
    res = solve_bcd(prob, E0, max_iter=2000, tol=1e-6, random_state=0)
    assert res.converged and res.n_iter < 2000
    short = solve_bcd(prob, E0, max_iter=3, tol=1e-12, random_state=0)
    assert not short.converged and short.n_iter == 3
    seen = []
    stop = solve_bcd(
        prob,
        E0,
        max_iter=50,
        tol=0.0,
        random_state=0,
        callback=lambda it, E, f: seen.append((it, f)) or it == 4,
    )
    assert stop.n_iter == 4 and [s[0] for s in seen] == [1, 2, 3, 4]
    assert [s[1] for s in seen] == stop.objective_history[1:]
    # initial_embedding: rows of norm ~ scale, projected when max_norm is given
    E = initial_embedding(4000, 50, 0, scale=2.0)
    assert abs(np.mean(np.sum(E**2, axis=1)) - 4.0) < 0.1
    assert np.linalg.norm(initial_embedding(100, 5, 0, max_norm=0.3), axis=1).max() <= 0.3 + 1e-15


def _fit_through_npkl(prob, **params):
    """NPKL on ``prob``'s Laplacian and pairs: the estimator validates what the solver trusts."""
    y = np.column_stack([prob.pairs, prob.signs])
    return NPKL(graph="precomputed", gamma=prob.gamma, **params).fit(prob.laplacian, y)


def test_invalid_arguments():
    prob = _blob_problem(60, 2, 0, "hinge")
    E0 = initial_embedding(prob.n_samples, 3, 0)
    with pytest.raises(ValueError, match="unconstrained"):
        _fit_through_npkl(prob, solver_options={"unconstrained": "jacobi"})
    with pytest.raises(ValueError, match="E0"):
        solve_bcd(prob, E0[:-1])
    with pytest.raises(ValueError, match="block_iter"):
        solve_bcd(prob, E0, unconstrained="block", block_iter=0)
    with pytest.raises(ValueError, match="loss"):
        _fit_through_npkl(prob, loss="pcp", solver="bcd")


@pytest.mark.parametrize("mu", [0.1, 1e-3])
def test_smoothed_hinge_surrogate_never_increases(mu):
    """Each smoothed stage is exact BCD on a C^1 surrogate: its objective is monotone."""
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=2.5, size=(3, 3))
    y = np.arange(90) % 3
    X = centers[y] + rng.normal(size=(90, 3))
    L = knn_laplacian(X, n_neighbors=5)
    C = PairwiseConstraints.from_labels(y, random_state=0)
    prob = NPKLProblem(L, C.pairs, C.signs.astype(float), "hinge", 1.0, 1.0)
    res = solve_bcd(prob, initial_embedding(90, 10, 0), smoothing=mu, max_iter=300, tol=0,
                    random_state=0)
    sur = np.asarray(res.surrogate_history)
    hinge = np.asarray(res.objective_history)
    assert np.all(np.diff(sur) <= 1e-10 * np.abs(sur).max())
    # hinge - mu/2 <= h_mu <= hinge, summed over the m pairs with weight gamma = 1
    assert np.all(sur <= hinge + 1e-12)
    assert np.all(hinge - sur <= 0.5 * mu * C.n_pairs + 1e-9)


@pytest.mark.parametrize("mu", [0.5, 1e-2, 1e-4])
def test_smoothed_hinge_row_update_is_stationary(mu):
    """The smoothed-hinge row update zeroes the gradient of the (C^1, strictly convex) row
    objective 1/2 L_ii |v|^2 + v.s_i + gamma/2 sum_j h_mu(1 - T_ij v.e_j)."""
    rng = np.random.default_rng(1)
    centers = rng.normal(scale=2.5, size=(3, 3))
    y = np.arange(60) % 3
    X = centers[y] + rng.normal(size=(60, 3))
    L = knn_laplacian(X, n_neighbors=5)
    C = PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=1)
    gamma = 2.0
    prob = NPKLProblem(L, C.pairs, C.signs.astype(float), "hinge", gamma, 1.0)
    Tp, Ti, Ts = prob.neighbors()
    E = initial_embedding(60, 6, 3) * 2.0
    Lp, Li, Lx = L.indptr.astype(np.int64), L.indices.astype(np.int64), L.data
    diag = L.diagonal().copy()
    alpha = np.zeros(len(Ti))
    i = int(np.argmax(np.diff(Tp)))  # the sample with most partners
    K.sweep_constrained(np.array([i], dtype=np.int64), E, Lp, Li, Lx, diag, Tp, Ti, Ts,
                        K.SMOOTH_HINGE, gamma, mu, alpha, K.SQUARE_AUTO, np.zeros(3))
    v = E[i]
    s_i = L[i] @ E - L[i, i] * v
    grad = L[i, i] * v + np.ravel(s_i)
    for t in range(Tp[i], Tp[i + 1]):
        a = Ts[t] * E[Ti[t]]
        u = 1.0 - a @ v
        grad -= 0.5 * gamma * np.clip(u / mu, 0.0, 1.0) * a
    assert np.abs(grad).max() < 1e-9 * max(1.0, np.abs(E).max())


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("smoothing", [0.0, 0.01])
def test_history_equals_exact_objective_every_sweep(loss, smoothing):
    """The per-sweep history is accumulated from per-row increments: check it is exact."""
    if smoothing and loss != "hinge":
        pytest.skip("smoothing applies to the hinge only")
    prob = _blob_problem(80, 3, 5, loss, gamma=1.5, b=1.0)
    seen = []

    def callback(it, E, obj):
        seen.append((obj, prob.objective(E)))

    solve_bcd(prob, initial_embedding(prob.n_samples, 6, 1, max_norm=1.0), max_iter=60,
              tol=0, random_state=0, smoothing=smoothing, callback=callback)
    got, want = np.array(seen).T
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())


@pytest.mark.parametrize("frac", [0.6, 0.1])
@pytest.mark.parametrize("loss", LOSSES)
def test_over_relaxation_keeps_objective_monotone_and_same_optimum(loss, frac):
    """Safeguarded SOR rows never increase the objective; on the convex-in-K losses it
    reaches the same objective as plain BCD (Algorithm 1). ``frac = 0.1`` leaves most
    samples unconstrained (for the linear loss: SOR steps projected onto the ball)."""
    prob = _blob_problem(100, 3, 4, loss, gamma=1.0, b=1.0, frac=frac)
    E0 = initial_embedding(prob.n_samples, 8, 2, max_norm=1.0)
    plain = solve_bcd(prob, E0, max_iter=3000, tol=1e-9, random_state=0)
    sor = solve_bcd(prob, E0, max_iter=3000, tol=1e-9, random_state=0, omega=1.75)
    h = np.asarray(sor.objective_history)
    assert np.all(np.diff(h) <= 1e-10 * np.abs(h).max())
    if loss != "hinge":  # the hinge stalls at order-dependent non-stationary points
        f0, f1 = plain.objective_history[-1], sor.objective_history[-1]
        assert f1 == pytest.approx(f0, rel=1e-5, abs=1e-8)
    with pytest.raises(ValueError, match="omega"):
        _fit_through_npkl(prob, loss=loss, solver_options={"omega": 2.0})


@pytest.mark.parametrize("loss", LOSSES)
def test_renumbered_problem_has_the_same_objective(loss):
    prob = _blob_problem(80, 3, 11, loss)
    E = initial_embedding(prob.n_samples, 6, 2, max_norm=1.0)
    perm, inverse, new = prob.renumbered()
    assert np.array_equal(perm[inverse], np.arange(prob.n_samples))
    assert np.all(new.pairs[:, 0] < new.pairs[:, 1])
    assert new.objective(E[perm]) == pytest.approx(prob.objective(E), rel=1e-12)
    # the RCM order narrows the band of L
    i, j = prob.laplacian.nonzero()
    i2, j2 = new.laplacian.nonzero()
    assert np.abs(i2 - j2).max() <= np.abs(i - j).max()


@pytest.mark.parametrize("connected", [True, False])
@pytest.mark.parametrize("n_parts", [2, 3])
def test_level_split_parts_share_no_edge(n_parts, connected):
    """Connected: the parts are cut by breadth-first levels; three blobs: by components."""
    if connected:
        X = np.random.default_rng(5).standard_normal((300, 3))
        prob = NPKLProblem(knn_laplacian(X, n_neighbors=5), np.array([[0, 1]]),
                           np.array([1.0]), "square", 1.0)
        assert sp.csgraph.connected_components(prob.laplacian)[0] == 1
    else:
        prob = _blob_problem(300, 3, 5, "square", frac=0.2)
    Tp, _, _ = prob.neighbors()
    free = np.flatnonzero(np.diff(Tp) == 0).astype(np.int64)
    order, bounds = level_split(prob.laplacian, free, n_parts)
    assert np.array_equal(np.sort(order), free)
    part = np.full(prob.n_samples, -1)
    for k in range(n_parts):
        part[order[bounds[k]:bounds[k + 1]]] = k
    i, j = prob.laplacian.nonzero()
    both = (part[i] >= 0) & (part[j] >= 0)
    assert np.all(part[i][both] == part[j][both])
    assert np.diff(bounds)[:-1].max() < len(free)  # a real split, not one part


@pytest.mark.parametrize("loss", ["square", "linear"])
def test_parallel_unconstrained_pass_equals_the_sequential_pass_in_its_order(loss):
    prob = _blob_problem(300, 3, 6, loss, frac=0.2)
    Lp, Li, Lx, diag = _csr_arrays(prob.laplacian)
    Tp, _, _ = prob.neighbors()
    free = np.flatnonzero(np.diff(Tp) == 0).astype(np.int64)
    order, bounds = level_split(prob.laplacian, free, 3)
    radius = 0.5 if loss == "linear" else np.inf
    E0 = initial_embedding(prob.n_samples, 7, 3)
    E1, E2 = E0.copy(), E0.copy()
    acc1, accs = np.zeros(3), np.zeros((len(bounds) - 1, 3))
    c1 = K.sweep_unconstrained(order, E1, Lp, Li, Lx, diag, radius, acc1, 1.6)
    c2 = K.sweep_unconstrained_split(order, bounds, E2, Lp, Li, Lx, diag, radius, accs, 1.6)
    np.testing.assert_allclose(E2, E1, rtol=1e-12, atol=1e-14)
    assert c2 == pytest.approx(c1, rel=1e-10)
    np.testing.assert_allclose(accs.sum(axis=0), acc1, rtol=1e-10)
    # the pass visits each free row once: acc[2] is their squared norm after it
    assert acc1[2] == pytest.approx(np.sum(E1[free] ** 2), rel=1e-12)


@pytest.mark.parametrize("loss", ["square", "squared_hinge", "linear"])
def test_parallel_bcd_is_monotone_and_reaches_the_serial_optimum(loss):
    prob = _blob_problem(200, 3, 7, loss, frac=0.2)
    E0 = initial_embedding(prob.n_samples, 8, 4, max_norm=1.0)
    serial = solve_bcd(prob, E0, max_iter=1000, tol=1e-7, random_state=0, omega=1.6,
                       parallel=False)
    par = solve_bcd(prob, E0, max_iter=1000, tol=1e-7, random_state=0, omega=1.6,
                    parallel=True)
    h = np.asarray(par.objective_history)
    assert np.all(np.diff(h) <= 1e-10 * np.abs(h).max())
    assert par.objective_history[-1] == pytest.approx(serial.objective_history[-1], rel=1e-4)
    assert par.converged and serial.converged
    with pytest.raises(ValueError, match="parallel"):
        solve_bcd(prob, E0, parallel="yes")
    split = parallel_split(prob, 8, True)
    if split is not None:  # numba has at least two threads
        again = solve_bcd(prob, E0, max_iter=1000, tol=1e-7, random_state=0, omega=1.6,
                          parallel=split)
        np.testing.assert_array_equal(again.embedding, par.embedding)
        with pytest.raises(ValueError, match="split"):
            solve_bcd(prob, E0, parallel=(split[0][:-1], split[1]))


def test_parallel_laplacian_term_equals_trace():
    prob = _blob_problem(300, 3, 8, "square")
    Lp, Li, Lx, _ = _csr_arrays(prob.laplacian)
    E = initial_embedding(prob.n_samples, 5, 1)
    want = np.trace(E.T @ (prob.laplacian @ E))
    assert K._laplacian_term_parallel(E, Lp, Li, Lx) == pytest.approx(want, rel=1e-12)
    assert K._laplacian_rows(E, Lp, Li, Lx, 0, prob.n_samples) == pytest.approx(want, rel=1e-12)


def test_vanishing_embedding_stops_and_warns():
    """With a negligible loss weight K = 0 is optimal: E shrinks geometrically, so the
    relative-change test alone would never stop; the vanishing test does."""
    prob = _blob_problem(120, 3, 9, "square", gamma=1e-6)
    res = solve_bcd(prob, initial_embedding(prob.n_samples, 6, 0), max_iter=5000, tol=1e-5,
                    random_state=0, omega=1.5)
    assert res.converged and res.n_iter < 5000
    assert np.einsum("ij,ij->", res.embedding, res.embedding) <= 1e-16 * prob.n_samples
    from psdlearn import NPKL

    with pytest.warns(UserWarning, match="kernel is zero"):
        NPKL(loss="square", graph="precomputed", gamma=1e-6, random_state=0).fit(
            prob.laplacian, np.column_stack([prob.pairs, prob.signs]).astype(np.int64))
