"""MFPC baseline (Hu & Kwok 2013 Table 2; Shang, Jiao & Wang 2012): K = Q U Q^T, U >= 0."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.utils.estimator_checks import parametrize_with_checks

import psdlearn as pl
from psdlearn.graph import knn_laplacian
from psdlearn.npkl.mfpc import (
    _Operator,
    mfpc_gradient,
    solve_mfpc,
    trailing_eigenvectors,
)
from psdlearn.npkl.problem import NPKLProblem


def _problem(n=40, loss="pcp", gamma=1.0, seed=0):
    X, y = make_blobs(n, centers=3, cluster_std=1.5, random_state=seed)
    C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=seed)
    L = knn_laplacian(X, n_neighbors=5)
    return NPKLProblem(L, C.pairs, C.signs.astype(np.float64), loss, gamma), C


def _gradient_parts(problem, Q):
    indptr, cols, targets = problem.ordered_targets()
    rows = np.repeat(np.arange(problem.n_samples), np.diff(indptr))
    Lam = Q.T @ (problem.laplacian @ Q)
    return 0.5 * (Lam + Lam.T), _Operator(Q, rows, cols), targets


@pytest.mark.parametrize("loss", ["pcp", "square"])
def test_objective_is_npkl_objective_of_QUQt(loss):
    problem, _ = _problem(loss=loss)
    res = solve_mfpc(problem, 8, max_iter=300, tol=1e-8, random_state=0)
    # f(U) of the small problem is the NPKL objective of the kernel Q U Q^T
    assert res.objective_history[-1] == pytest.approx(problem.objective(res.embedding),
                                                      rel=1e-10)
    K = res.embedding @ res.embedding.T
    np.testing.assert_allclose(K, res.basis @ res.U @ res.basis.T, atol=1e-10)


def test_gradient_matches_finite_differences():
    problem, _ = _problem()
    _, Q = trailing_eigenvectors(problem.laplacian, 6)
    Lam, op, t = _gradient_parts(problem, Q)
    rng = np.random.default_rng(0)
    U = rng.standard_normal((6, 6))
    U = U @ U.T
    D = rng.standard_normal((6, 6))
    D = 0.5 * (D + D.T)
    grad, _ = mfpc_gradient(U, Lam, op, t, problem.gamma)
    h = 1e-6
    fd = (mfpc_gradient(U + h * D, Lam, op, t, problem.gamma)[1]
          - mfpc_gradient(U - h * D, Lam, op, t, problem.gamma)[1]) / (2 * h)
    assert fd == pytest.approx(np.sum(grad * D), rel=1e-6)


@pytest.mark.parametrize("loss", ["pcp", "square"])
def test_U_is_psd_and_satisfies_kkt_for_fixed_Q(loss):
    problem, _ = _problem(loss=loss, gamma=3.0)
    res = solve_mfpc(problem, 10, max_iter=5000, tol=1e-10, random_state=0)
    assert res.converged
    Lam, op, t = _gradient_parts(problem, res.basis)
    G, _ = mfpc_gradient(res.U, Lam, op, t, problem.gamma)
    scale = np.linalg.norm(G) + 1.0
    # KKT of min f(U) s.t. U >= 0: U >= 0, grad f(U) >= 0, <U, grad f(U)> = 0
    assert np.linalg.eigvalsh(res.U).min() >= -1e-10
    assert np.linalg.eigvalsh(G).min() >= -1e-6 * scale
    assert abs(np.sum(res.U * G)) <= 1e-6 * scale * (np.linalg.norm(res.U) + 1.0)
    # and the constraint is active: the unconstrained minimizer is not PSD here
    assert np.linalg.matrix_rank(res.U, tol=1e-8 * np.abs(res.U).max()) < 10


def test_optimum_decreases_with_rank_nested_bases():
    problem, _ = _problem()
    values = [solve_mfpc(problem, r, max_iter=5000, tol=1e-10).objective_history[-1]
              for r in (2, 5, 10, 20)]
    # Q_r spans a subspace of Q_r', r < r': the feasible set grows
    assert all(b <= a * (1 + 1e-8) for a, b in zip(values, values[1:], strict=False))


def test_full_basis_reaches_the_sdp_optimum():
    pytest.importorskip("cvxpy")
    problem, C = _problem(n=30)
    res = solve_mfpc(problem, 30, max_iter=20000, tol=1e-10, random_state=0)
    sdp = pl.NPKL(loss="pcp", solver="sdp", graph="precomputed",
                  gamma=problem.gamma).fit(problem.laplacian, C)
    assert res.objective_history[-1] == pytest.approx(sdp.objective_history_[-1], rel=1e-6)


def test_trailing_eigenvectors_sparse_path_matches_dense():
    X, _ = make_blobs(700, centers=3, random_state=1)
    L = knn_laplacian(X, n_neighbors=5)
    w, Q = trailing_eigenvectors(L, 6)  # 700 > DENSE_N: shift-invert Lanczos
    dense = np.linalg.eigvalsh(L.toarray())[:6]
    np.testing.assert_allclose(w, dense, atol=1e-8)
    np.testing.assert_allclose(Q.T @ Q, np.eye(6), atol=1e-8)
    np.testing.assert_allclose(L @ Q, Q * w, atol=1e-7)


def test_estimator_solver_mfpc():
    problem, C = _problem()
    model = pl.NPKL(loss="pcp", solver="mfpc", graph="precomputed", rank=7,
                    random_state=0).fit(problem.laplacian, C)
    assert model.embedding_.shape == (40, 7)
    assert model.mfpc_U_.shape == (7, 7)
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-10)
    # the fixed basis cannot do better than the free low-rank NPKL of the same rank
    admm = pl.NPKL(loss="pcp", solver="admm", graph="precomputed", rank=7,
                   random_state=0).fit(problem.laplacian, C)
    assert admm.objective_history_[-1] <= model.objective_history_[-1] * (1 + 1e-6)
    with pytest.raises(ValueError, match="mfpc"):
        pl.NPKL(loss="hinge", solver="mfpc", graph="precomputed").fit(problem.laplacian, C)


@parametrize_with_checks(
    [pl.NPKL(solver="mfpc", loss="pcp", gamma=1.0, max_iter=50)])
def test_sklearn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)
