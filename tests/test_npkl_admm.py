"""ADMM solver of seed 001: SMW solves, exact block steps, KKT, SDP agreement, estimator."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning

import psdlearn as pl
from psdlearn._linalg import smw_row_solve
from psdlearn.graph import knn_laplacian
from psdlearn.npkl import _admm_kernels as K
from psdlearn.npkl.admm import RHO_MIN, kkt_residuals, solve_admm, update_rho
from psdlearn.npkl.bcd import initial_embedding
from psdlearn.npkl.estimator import auto_rank
from psdlearn.npkl.problem import NPKLProblem, npkl_objective


def _problem(n=45, loss="pcp", gamma=1.0, seed=0, centers=3):
    X, y = make_blobs(n, centers=centers, cluster_std=1.5, random_state=seed)
    C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=seed)
    L = knn_laplacian(X, n_neighbors=5)
    return NPKLProblem(L, C.pairs, C.signs.astype(np.float64), loss, gamma), X, C


def _rank(problem):
    m = len(problem.pairs)
    return auto_rank(2 * m + problem.n_samples if problem.loss == "pcp" else m)


def _dense_objective(problem, E):
    """tr(K L) + gamma / 2 sum over the ordered set T, built densely from its definition."""
    Kmat = E @ E.T
    n = problem.n_samples
    T = {}
    for (i, j), s in zip(problem.pairs, problem.signs, strict=True):
        t = (1.0 if s > 0 else 0.0) if problem.loss == "pcp" else s
        T[(i, j)] = T[(j, i)] = t
    if problem.loss == "pcp":
        for i in range(n):
            T[(i, i)] = 1.0
    fit = sum((Kmat[i, j] - t) ** 2 for (i, j), t in T.items())
    return float(np.trace(Kmat @ problem.laplacian.toarray()) + 0.5 * problem.gamma * fit)


def _augmented_lagrangian(problem, V, U, lam, rho):
    """Eq. (6) of seed 001 in plain NumPy."""
    Tp, Ti, Tt = problem.ordered_targets()
    rows = np.repeat(np.arange(problem.n_samples), np.diff(Tp))
    fit = np.sum((np.einsum("ij,ij->i", V[rows], U[Ti]) - Tt) ** 2)
    return float(np.sum(V * (problem.laplacian @ U)) + 0.5 * problem.gamma * fit
                 + np.sum(lam * (V - U)) + 0.5 * rho * np.sum((V - U) ** 2))


def _csr(problem):
    L = problem.laplacian
    return L.indptr.astype(np.int64), L.indices.astype(np.int64), L.data


@pytest.mark.parametrize("loss", ["pcp", "square"])
def test_objective_is_the_ordered_pair_formula(loss):
    problem, _, _ = _problem(loss=loss, gamma=0.7)
    E = initial_embedding(problem.n_samples, 6, 1)
    assert problem.objective(E) == pytest.approx(_dense_objective(problem, E), rel=1e-12)
    assert npkl_objective(E, problem.laplacian, problem.pairs, problem.signs, loss,
                          0.7) == pytest.approx(problem.objective(E), rel=1e-14)


@pytest.mark.parametrize(("k", "r"), [(1, 5), (4, 9), (12, 7), (30, 30)])
def test_smw_equals_direct_solve(k, r):
    rng = np.random.default_rng(k * 100 + r)
    S = rng.standard_normal((40, r))
    Ti = rng.choice(40, size=k, replace=False).astype(np.int64)
    rhs = rng.standard_normal(r)
    for rho, gamma in [(100.0, 1.0), (10.0, 3.0), (0.5, 20.0)]:
        P = S[Ti]
        direct = np.linalg.solve(rho * np.eye(r) + gamma * P.T @ P, rhs)
        out = rhs.copy()
        smw_row_solve(S, Ti, 0, k, out, rho, gamma, np.empty((k, k)), np.empty((k, k)),
                      np.empty(k))
        assert np.allclose(out, direct, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["pcp", "square"])
def test_block_steps_are_exact_minimizers(loss):
    """After the V-step the gradient (9) vanishes; the AL never increases over V and U."""
    problem, _, _ = _problem(loss=loss, gamma=1.3, seed=2)
    n, r = problem.n_samples, 7
    rng = np.random.default_rng(0)
    V, U = rng.standard_normal((n, r)), rng.standard_normal((n, r))
    lam = 0.3 * rng.standard_normal((n, r))
    rho = 5.0
    Lp, Li, Lx = _csr(problem)
    Tp, Ti, Tt = problem.ordered_targets()
    before = _augmented_lagrangian(problem, V, U, lam, rho)
    K.half_step(Lp, Li, Lx, Tp, Ti, Tt, U, U, lam, -1.0, rho, problem.gamma, V, False)
    mid = _augmented_lagrangian(problem, V, U, lam, rho)
    gv, _, _ = kkt_residuals(problem, V, U, lam, rho)
    assert gv < 1e-10 * max(1.0, np.linalg.norm(V))
    # finite differences of the AL in V agree with the zero gradient
    eps = 1e-6
    for i, c in [(0, 0), (5, 3), (n - 1, r - 1)]:
        Vp, Vm = V.copy(), V.copy()
        Vp[i, c] += eps
        Vm[i, c] -= eps
        g = (_augmented_lagrangian(problem, Vp, U, lam, rho)
             - _augmented_lagrangian(problem, Vm, U, lam, rho)) / (2 * eps)
        assert abs(g) < 1e-5
    lam_before = lam.copy()
    _, size, primal2, smooth, fit = K.half_step(Lp, Li, Lx, Tp, Ti, Tt, V, V, lam, 1.0, rho,
                                                problem.gamma, U, True)
    after = _augmented_lagrangian(problem, V, U, lam_before, rho)
    assert mid <= before + 1e-9 * abs(before)
    assert after <= mid + 1e-9 * abs(mid)
    _, gu, _ = kkt_residuals(problem, V, U, lam_before, rho)
    assert gu < 1e-10 * max(1.0, np.linalg.norm(U))
    # the fused bookkeeping of the U-step
    assert np.allclose(lam, lam_before + rho * (V - U), atol=1e-12)
    assert primal2 == pytest.approx(np.sum((V - U) ** 2), rel=1e-10)
    assert size == pytest.approx(np.sum(U**2), rel=1e-12)
    assert smooth + 0.5 * problem.gamma * fit == pytest.approx(problem.objective(V), rel=1e-10)


def test_update_rho_schedule():
    assert update_rho(100.0, 11.0, 1.0) == 200.0
    assert update_rho(100.0, 1.0, 11.0) == 50.0
    assert update_rho(12.0, 1.0, 11.0) == RHO_MIN
    assert update_rho(100.0, 1.0, 5.0) == 100.0


@pytest.mark.parametrize("loss", ["pcp", "square"])
def test_residuals_vanish_and_kkt_hold(loss):
    problem, _, _ = _problem(n=40, loss=loss, seed=3)
    r = _rank(problem)
    res = solve_admm(problem, initial_embedding(problem.n_samples, r, 0), max_iter=4000,
                     tol=1e-9)
    assert res.converged
    scale = np.linalg.norm(res.embedding)
    assert res.primal_residual_history[-1] <= 1e-9 * scale
    assert res.primal_residual_history[-1] < 1e-4 * res.primal_residual_history[0]
    gv, gu, pr = kkt_residuals(problem, res.embedding, res.U, res.multipliers,
                               res.rho_history[-1])
    assert max(gv, gu, pr) < 1e-6 * scale
    # the recorded objective is the objective of V at every iteration
    assert res.objective_history[-1] == pytest.approx(problem.objective(res.embedding),
                                                      rel=1e-10)
    assert len(res.objective_history) == res.n_iter + 1 == len(res.time_history)
    assert len(res.rho_history) == res.n_iter


def test_restart_at_a_converged_state_stays_there():
    """A converged (V, U, Lambda, rho) is a fixed point of the iteration: restarted from it
    (U0, lam0 and the final rho) ADMM stops at once where it was."""
    problem, _, _ = _problem(n=40, seed=3)
    V0 = initial_embedding(problem.n_samples, _rank(problem), 0)
    ref = solve_admm(problem, V0, max_iter=4000, tol=1e-9)
    assert ref.converged
    warm = solve_admm(problem, ref.embedding, ref.U, ref.multipliers,
                      rho=float(ref.rho_history[-1]), max_iter=50, tol=1e-8)
    assert warm.converged and warm.n_iter <= 2
    assert np.linalg.norm(warm.embedding - ref.embedding) <= 1e-7 * np.linalg.norm(
        ref.embedding)
    with pytest.raises(ValueError, match="lam0"):
        solve_admm(problem, V0, lam0=np.zeros((3, 2)))


def test_estimator_warm_start_keeps_the_admm_state():
    problem, X, C = _problem(n=40, seed=3)
    model = pl.NPKL(loss="pcp", solver="admm", gamma=1.0, max_iter=4000, tol=1e-7,
                    warm_start=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, C)
        first = model.n_iter_
        model.fit(X, C)
    assert model.converged_ and model.n_iter_ <= 2 < first


def test_reordering_does_not_change_the_iterates():
    problem, _, _ = _problem(n=50, seed=4)
    V0 = initial_embedding(problem.n_samples, _rank(problem), 1)
    a = solve_admm(problem, V0, max_iter=60, tol=0.0, reorder=True)
    b = solve_admm(problem, V0, max_iter=60, tol=0.0, reorder=False)
    assert np.allclose(a.embedding, b.embedding, atol=1e-9)
    assert np.allclose(a.objective_history, b.objective_history, rtol=1e-10)
    assert np.array_equal(a.rho_history, b.rho_history)


def test_callback_sees_objective_of_v():
    problem, _, _ = _problem(n=30, loss="square", seed=5)
    seen = []
    solve_admm(problem, initial_embedding(30, 5, 0), max_iter=5, tol=0.0, reorder=False,
               callback=lambda k, V, obj: seen.append((k, obj, problem.objective(V))))
    assert [k for k, _, _ in seen] == [1, 2, 3, 4, 5]
    for _, obj, direct in seen:
        assert obj == pytest.approx(direct, rel=1e-10)


def test_invalid_solver_arguments():
    # the solver trusts its parameters: NPKL validates them (solve_admm checks shapes only)
    _, X, C = _problem(n=20, loss="hinge")
    with pytest.raises(ValueError, match="handles the losses"):
        pl.NPKL(loss="hinge", solver="admm").fit(X, C)
    problem, X, C = _problem(n=20, loss="pcp")
    with pytest.raises(ValueError, match="rho"):
        pl.NPKL(loss="pcp", solver="admm", solver_options={"rho": 0.0}).fit(X, C)
    with pytest.raises(ValueError, match="shape"):
        solve_admm(problem, np.zeros((19, 3)))


@pytest.mark.sdp
@pytest.mark.parametrize("loss", ["pcp", "square"])
def test_admm_reaches_sdp_optimum(loss):
    """Paper settings (random start, rho0 = 100, 500 iterations): within 1% of the SDP."""
    pytest.importorskip("cvxpy")
    from psdlearn.npkl.sdp import solve_sdp

    for seed in (0, 1):
        problem, _, _ = _problem(n=50, loss=loss, seed=seed)
        ref = solve_sdp(problem)
        res = solve_admm(problem, initial_embedding(50, _rank(problem), seed), max_iter=500,
                         tol=0.0)
        value = problem.objective(res.embedding)
        assert value >= ref.objective - 1e-6 * abs(ref.objective)
        assert value <= 1.01 * ref.objective


def test_estimator_admm_attributes_and_warning():
    _, X, C = _problem(n=60, seed=6)
    with warnings.catch_warnings():
        # converges within max_iter: no warning of the stopping test (certificate_tol=None:
        # the certificate's own warning is tested in test_npkl_certificate.py)
        warnings.simplefilter("error", ConvergenceWarning)
        model = pl.NPKL(loss="pcp", solver="admm", max_iter=2000, tol=1e-4,
                        certificate_tol=None, random_state=0).fit(X, C)
    assert model.rank_ == auto_rank(2 * C.n_pairs + 60)
    assert model.embedding_.shape == (60, model.rank_)
    assert len(model.objective_history_) == model.n_iter_ + 1
    for name in ("primal_residual_history_", "dual_residual_history_", "rho_history_"):
        assert len(getattr(model, name)) == model.n_iter_
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-10)
    assert model.transform(X[:5] + 0.01).shape == (5, model.rank_)
    with pytest.warns(ConvergenceWarning, match="admm"):
        pl.NPKL(loss="pcp", solver="admm", max_iter=3, random_state=0).fit(X, C)
    again = pl.NPKL(loss="pcp", solver="admm", max_iter=2000, tol=1e-4,
                    random_state=0).fit(X, C)
    assert np.array_equal(again.embedding_, model.embedding_)


def test_estimator_loss_solver_compatibility():
    _, X, C = _problem(n=30, seed=7)
    with pytest.raises(ValueError, match="handles the losses"):
        pl.NPKL(loss="hinge", solver="admm").fit(X, C)
    with pytest.raises(ValueError, match="handles the losses"):
        pl.NPKL(loss="pcp", solver="bcd").fit(X, C)


def test_bcd_warm_start_reaches_the_same_objective():
    problem, X, C = _problem(n=60, loss="square", seed=8)
    kw = dict(loss="square", solver="admm", max_iter=3000, tol=1e-6, random_state=0)
    cold = pl.NPKL(solver_options={"init": "random"}, **kw).fit(X, C)
    warm = pl.NPKL(solver_options={"init": "bcd"}, **kw).fit(X, C)
    assert warm.objective_history_[0] < cold.objective_history_[0]
    assert warm.objective_history_[-1] == pytest.approx(cold.objective_history_[-1], rel=1e-4)
