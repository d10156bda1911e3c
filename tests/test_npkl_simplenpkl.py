"""SimpleNPKL (JMLR 2011) checked against its mathematics.

The linear closed form against JMLR Prop. 1 (``||K||_F^2 = B``, ``K`` proportional to the
PSD part of ``gamma sum T_k S_k - L``, no feasible point better); the saddle-point
iterations: the dual gradient against finite differences, weak duality at every step, a
non-decreasing dual, and the optimum of the ``B``-constrained SDP solved by cvxpy.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import psdlearn as pl
from psdlearn.graph import knn_laplacian
from psdlearn.npkl import simplenpkl as snp
from psdlearn.npkl.problem import NPKLProblem
from psdlearn.npkl.simplenpkl import default_B, solve_simplenpkl

SADDLE_LOSSES = ("hinge", "squared_hinge", "square", "pcp")


def make_problem(n=24, loss="hinge", *, gamma=1.0, seed=0, n_pairs=None):
    """Three 2-d clusters, their kNN Laplacian, ``n_pairs`` must + cannot pairs each."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(scale=3.0, size=(3, 2))[y] + rng.normal(size=(n, 2))
    n_pairs = int(0.6 * n) if n_pairs is None else n_pairs
    C = pl.PairwiseConstraints.from_labels(y, n_must=n_pairs, n_cannot=n_pairs,
                                           random_state=seed)
    return NPKLProblem(knn_laplacian(X, n_neighbors=5), C.pairs,
                       C.signs.astype(np.float64), loss, gamma)


def pair_matrix(problem, weights):
    """Dense ``sum_k w_k S_k``, ``S_k = (e_i e_j^T + e_j e_i^T) / 2``."""
    n = problem.n_samples
    W = np.zeros((n, n))
    i, j = problem.pairs[:, 0], problem.pairs[:, 1]
    np.add.at(W, (i, j), 0.5 * weights)
    np.add.at(W, (j, i), 0.5 * weights)
    return W


def kernel(E):
    return E @ E.T


# ----------------------------------------------------------------------- linear loss
@pytest.mark.parametrize("B", [1.0, 100.0])
def test_linear_closed_form_is_prop1(B):
    problem = make_problem(loss="linear", gamma=2.0)
    n = problem.n_samples
    res = solve_simplenpkl(problem, B=B, rank=n, random_state=0)
    K = kernel(res.embedding)
    M = pair_matrix(problem, problem.gamma * problem.signs) - problem.laplacian.toarray()
    sigma, U = np.linalg.eigh(M)
    M_plus = (U * np.maximum(sigma, 0)) @ U.T
    assert sigma[-1] > 0
    assert np.trace(K @ K) == pytest.approx(B, rel=1e-10)
    np.testing.assert_allclose(K, np.sqrt(B) * M_plus / np.linalg.norm(M_plus), atol=1e-10)
    # tr(A K) = -sqrt(B) ||M_+||_F is both histories and the seed 000 objective
    value = -np.sqrt(B) * np.linalg.norm(M_plus)
    assert res.objective_history == pytest.approx([value], rel=1e-10)
    assert res.simplenpkl_objective_history == pytest.approx([value], rel=1e-10)
    assert res.converged and res.n_iter == 0


def test_linear_closed_form_beats_feasible_points():
    problem = make_problem(loss="linear", gamma=1.0, seed=3)
    n, B = problem.n_samples, 10.0
    A = problem.laplacian.toarray() - pair_matrix(problem, problem.signs)
    best = np.sum(A * kernel(solve_simplenpkl(problem, B=B, rank=n).embedding))
    rng = np.random.default_rng(0)
    for _ in range(200):
        G = rng.normal(size=(n, rng.integers(1, n + 1)))
        K = G @ G.T
        K *= np.sqrt(B) / np.linalg.norm(K)  # on the boundary tr K^2 = B
        assert np.sum(A * K) >= best - 1e-10


def test_sparse_lanczos_path_matches_dense(monkeypatch):
    problem = make_problem(n=600, loss="linear", n_pairs=40)
    res_sparse = solve_simplenpkl(problem, B=100.0, rank=8, random_state=0)
    monkeypatch.setattr(snp, "DENSE_MAX_N", 10_000)
    res_dense = solve_simplenpkl(problem, B=100.0, rank=8, random_state=0)
    np.testing.assert_allclose(kernel(res_sparse.embedding), kernel(res_dense.embedding),
                               atol=1e-7)


@pytest.mark.parametrize("loss", ["hinge", "pcp"])
def test_warm_started_lanczos_iterations_match_dense(monkeypatch, loss):
    # the K steps restart Lanczos from the previous positive eigenspace: same iterates
    problem = make_problem(n=600, loss=loss, n_pairs=40)
    kw = dict(B=100.0, rank=8, max_iter=6, tol=0.0, random_state=0)
    res_sparse = solve_simplenpkl(problem, **kw)
    monkeypatch.setattr(snp, "DENSE_MAX_N", 10_000)
    res_dense = solve_simplenpkl(problem, **kw)
    assert res_sparse.n_eig == res_dense.n_eig > 6
    np.testing.assert_allclose(res_sparse.dual, res_dense.dual, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(kernel(res_sparse.embedding), kernel(res_dense.embedding),
                               atol=1e-8 * np.sqrt(100.0))


# ------------------------------------------------------------------- saddle point
def dual_value(problem, a, B):
    """``J(a) = sum h(a) - sqrt(B) ||M(a)_+||_F`` by a dense eigendecomposition."""
    terms = snp._Terms(problem)
    M = terms.matrix(a, problem.laplacian).toarray()
    sigma = np.linalg.eigvalsh(M)
    return terms.h(a) - np.sqrt(B) * np.linalg.norm(np.maximum(sigma, 0))


@pytest.mark.parametrize("loss", SADDLE_LOSSES)
def test_dual_gradient_matches_finite_differences(loss):
    problem = make_problem(loss=loss, seed=1)
    n, B = problem.n_samples, 30.0
    terms = snp._Terms(problem)
    a = terms.start() * np.random.default_rng(0).uniform(0.3, 0.9, size=len(terms.c))
    E, _, _ = snp._KStep(terms, problem.laplacian, n, B, np.random.default_rng(0))(a)
    grad = terms.dh(a) - terms.c * terms.entries(E)
    h = 1e-6
    for k in np.random.default_rng(1).choice(len(a), size=6, replace=False):
        e = np.zeros_like(a)
        e[k] = h
        fd = (dual_value(problem, a + e, B) - dual_value(problem, a - e, B)) / (2 * h)
        assert fd == pytest.approx(grad[k], abs=1e-5)


@pytest.mark.parametrize("loss", SADDLE_LOSSES)
def test_saddle_iterations_dual_increases_and_bounds_primal(loss):
    problem = make_problem(loss=loss, seed=2)
    B = 50.0
    res = solve_simplenpkl(problem, B=B, rank=problem.n_samples, max_iter=300, tol=0.0)
    dual = np.array(res.simplenpkl_objective_history)
    primal = np.array(res.objective_history)
    assert res.n_iter == 300 and len(dual) == len(primal) == 301
    assert np.all(np.diff(dual) >= -1e-9 * np.abs(dual[1:]).max())
    assert dual[-1] > dual[0]
    # K(a_t) is feasible for (P_B): weak duality at every step
    assert np.all(primal >= dual - 1e-9 * np.abs(primal).max())
    K = kernel(res.embedding)
    assert np.trace(K @ K) == pytest.approx(B, rel=1e-9)
    # J is evaluated at the returned dual point
    assert dual[-1] == pytest.approx(dual_value(problem, res.dual, B), rel=1e-9)


def cvxpy_optimum(problem, B):
    """Optimal value of (P_B) with cvxpy (dense model, small n)."""
    cp = pytest.importorskip("cvxpy")
    n, gamma = problem.n_samples, problem.gamma
    K = cp.Variable((n, n), PSD=True)
    kij = cp.hstack([K[i, j] for i, j in problem.pairs])
    if problem.loss == "pcp":
        loss = (gamma * cp.sum_squares(kij - (problem.signs > 0))
                + 0.5 * gamma * cp.sum_squares(cp.diag(K) - 1.0))
    else:
        z = cp.multiply(problem.signs, kij)
        loss = gamma * {"hinge": cp.sum(cp.pos(1 - z)),
                        "squared_hinge": cp.sum_squares(cp.pos(1 - z)),
                        "square": cp.sum_squares(1 - z)}[problem.loss]
    objective = cp.trace(problem.laplacian.toarray() @ K) + loss
    prob = cp.Problem(cp.Minimize(objective), [cp.norm(K, "fro") <= np.sqrt(B)])
    prob.solve(solver="CLARABEL")
    return prob.value, K.value


@pytest.mark.sdp
@pytest.mark.parametrize("loss", SADDLE_LOSSES)
@pytest.mark.parametrize("B,gamma", [(10.0, 1.0), (50.0, 0.5)])
def test_saddle_point_reaches_sdp_optimum(loss, B, gamma):
    problem = make_problem(loss=loss, gamma=gamma, seed=4)
    value, K_ref = cvxpy_optimum(problem, B)
    # SimpleNPKL's K(a) lies on the sphere tr K^2 = B: it needs the capacity to bind
    assert np.sum(K_ref**2) == pytest.approx(B, rel=1e-4)
    res = solve_simplenpkl(problem, B=B, rank=problem.n_samples, max_iter=5000, tol=1e-7)
    assert res.converged
    scale = max(1.0, abs(value))
    assert res.objective_history[-1] == pytest.approx(value, abs=1e-5 * scale)
    assert res.simplenpkl_objective_history[-1] == pytest.approx(value, abs=1e-5 * scale)
    # (P_B) is strictly convex on the sphere tr K^2 = B: the optimal K is unique
    np.testing.assert_allclose(kernel(res.embedding), K_ref, atol=1e-3 * np.sqrt(B))


def test_low_rank_k_step_exact_when_rank_covers_positive_part():
    problem = make_problem(loss="square", seed=5)
    n, B = problem.n_samples, 20.0
    terms = snp._Terms(problem)
    E0, _, _ = snp._KStep(terms, problem.laplacian, n, B, np.random.default_rng(0))(
        terms.start())
    counts = [int(np.sum(np.any(E0 != 0, axis=0)))]

    def count(it, E, objective):
        counts.append(int(np.sum(np.any(E != 0, axis=0))))

    full = solve_simplenpkl(problem, B=B, rank=n, max_iter=50, tol=0.0, callback=count)
    n_pos = max(counts)
    assert n_pos < n
    low = solve_simplenpkl(problem, B=B, rank=n_pos + 1, max_iter=50, tol=0.0)
    assert not low.truncated
    np.testing.assert_allclose(low.simplenpkl_objective_history,
                               full.simplenpkl_objective_history, rtol=1e-9)
    np.testing.assert_allclose(kernel(low.embedding), kernel(full.embedding), atol=1e-9)


# ---------------------------------------------------------------------- estimator
def test_default_B_rule():
    assert default_B(270, "hinge") == 100.0
    assert default_B(1605, "square") == 100.0 * 1605
    assert default_B(150, "pcp") == 100.0 * 150


def test_estimator_attributes_and_determinism():
    problem = make_problem(n=60, loss="squared_hinge")
    C = np.column_stack([problem.pairs, problem.signs])
    L = problem.laplacian
    kw = dict(loss="squared_hinge", solver="simplenpkl", graph="precomputed", random_state=0)
    a = pl.NPKL(**kw).fit(L, C)
    b = pl.NPKL(**kw).fit(L, C)
    assert a.B_ == 100.0
    assert a.embedding_.shape == (60, a.rank_)
    assert len(a.objective_history_) == len(a.simplenpkl_objective_history_) == a.n_iter_ + 1
    np.testing.assert_array_equal(a.embedding_, b.embedding_)
    K = kernel(a.embedding_)
    assert np.trace(K @ K) == pytest.approx(100.0, rel=1e-8)
    assert a.objective() == pytest.approx(a.objective_history_[-1])


def test_estimator_warns_at_max_iter_and_validates():
    problem = make_problem(n=40, loss="hinge")
    C = np.column_stack([problem.pairs, problem.signs])
    with pytest.warns(ConvergenceWarning, match="simplenpkl"):
        pl.NPKL(solver="simplenpkl", graph="precomputed", solver_options={"B": 1e4}, max_iter=1,
                random_state=0).fit(problem.laplacian, C)
    with pytest.raises(TypeError, match="'p'"):  # only the papers' p = 2 exists
        pl.NPKL(solver="simplenpkl", p=3)
    with pytest.raises(ValueError):
        pl.NPKL(solver="simplenpkl", solver_options={"B": -1.0}).fit(
            np.eye(5), np.array([[0, 1, 1]]))


def test_m_plus_zero_gives_zero_kernel():
    # one cannot-link pair with a tiny gamma: M = gamma T S - L is negative definite
    L = sp.csr_matrix(np.array([[1.1, -0.5], [-0.5, 1.1]]))
    problem = NPKLProblem(L, np.array([[0, 1]]), np.array([-1.0]), "linear", 1e-3)
    res = solve_simplenpkl(problem, B=5.0, rank=2)
    assert np.all(res.embedding == 0.0)
    assert res.objective_history == [0.0]
