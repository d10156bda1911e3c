"""Interior-point solver of PSDBoost's problem (3): KKT conditions, agreement with cvxpy's
SDP and with the column generation, input handling."""

import numpy as np
import pytest
from test_psdboost import _problem

import psdlearn as pl
from psdlearn.psdboost.ipm import solve_ipm


def _diffs(X, T):
    return X[T[:, 0]] - X[T[:, 2]], X[T[:, 0]] - X[T[:, 1]]


@pytest.mark.parametrize("seed,C", [(0, 0.25), (1, 0.05), (2, 1.0), (3, 1 / 40)])
def test_kkt_conditions_at_the_solution(seed, C):
    X, T = _problem(d=4 + seed, seed=seed)
    res = solve_ipm(X, T, C)
    assert res.status == "optimal"
    Dk, Dj = _diffs(X, T)
    M, w = res.metric, res.dual_weights
    scale = np.mean(np.sum(Dk**2, 1) + np.sum(Dj**2, 1)) / X.shape[1]
    # Primal: symmetric PSD, trace one, margins above rho - xi, xi >= 0.
    assert np.allclose(M, M.T) and np.linalg.eigvalsh(M)[0] >= -1e-10
    assert np.trace(M) == pytest.approx(1.0)
    margins = np.einsum("ri,ij,rj->r", Dk, M, Dk) - np.einsum("ri,ij,rj->r", Dj, M, Dj)
    slack = margins + res.slacks - res.rho
    assert slack.min() >= -1e-6 * scale and res.slacks.min() >= -1e-9 * scale
    # Dual: 0 <= w <= C, sum w = 1, Z = pi I - H(w) PSD with pi the optimum.
    assert w.sum() == pytest.approx(1.0) and w.min() >= 0 and w.max() <= C + 1e-12
    H = Dk.T @ (w[:, None] * Dk) - Dj.T @ (w[:, None] * Dj)
    lam = np.linalg.eigvalsh(H)[-1]
    assert lam == pytest.approx(res.upper_bound, abs=1e-6 * scale)
    assert res.upper_bound - res.objective <= 1e-6 * scale
    # Complementary slackness: X Z = 0, w_r (margin slack) = 0, xi_r (C - w_r) = 0.
    Z = res.upper_bound * np.eye(X.shape[1]) - H
    assert np.abs(M @ Z).max() <= 1e-5 * scale
    assert np.abs(w * slack).max() <= 1e-6 * scale
    assert np.abs(res.slacks * (C - w)).max() <= 1e-6 * scale


@pytest.mark.sdp
@pytest.mark.parametrize("seed,C", [(0, 0.25), (2, 1.0), (4, 0.05)])
def test_agrees_with_cvxpy(seed, C):
    pytest.importorskip("cvxpy")
    from psdlearn.psdboost.sdp import solve_sdp

    X, T = _problem(d=6, t=60, seed=seed)
    res, ref = solve_ipm(X, T, C), solve_sdp(X, T, C)
    assert ref.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-8)


def test_agrees_with_column_generation():
    # Two different algorithms for the same problem: LP column generation with its own
    # certificate, and the interior-point method.
    X, T = _problem(d=6, t=80, seed=5)
    m = pl.PSDBoost(tol=1e-7).fit(X, pl.Triplets(T))
    res = solve_ipm(X, T, m.C_)
    assert res.objective == pytest.approx(m.objective_, rel=1e-5)
    assert res.upper_bound >= m.objective_ - 1e-9 and m.upper_bound_ >= res.objective - 1e-9


def test_dual_bound_never_below_optimum_and_scale_invariance():
    X, T = _problem(seed=6)
    res = solve_ipm(X, T, 0.1)
    # Every iterate's pi is a feasible dual value: an upper bound on the optimum.
    assert all(h[1] >= res.objective - 1e-9 for h in res.history)
    scaled = solve_ipm(10.0 * X, T, 0.1)
    assert scaled.objective == pytest.approx(100.0 * res.objective, rel=1e-6)
    assert np.allclose(scaled.metric, res.metric, atol=1e-5)


def test_unbounded_c_and_iteration_cap():
    X, T = _problem()
    # The solver trusts C; the estimator refuses a C for which (3) is unbounded.
    with pytest.raises(ValueError, match="unbounded"):
        pl.PSDBoost(C=0.5 / len(T), solver="interior-point").fit(X, pl.Triplets(T))
    res = solve_ipm(X, T, 0.1, max_iter=3)
    assert res.status == "max_iter" and res.n_iter == 3
    with pytest.raises(ValueError, match="max_triplets"):
        solve_ipm(X, T, 0.1, max_triplets=len(T) - 1)


@pytest.mark.parametrize("seed,C", [(0, 0.05), (1, 1 / 90)])
def test_low_rank_newton_system_reaches_the_same_certified_optimum(seed, C):
    """The Newton system solved through its D(D+1)/2-dimensional part (the choice of
    low_rank="auto" from t >= 5 n_s) and the dense t x t system are two solves of the same
    steps: both end optimal at the same value, each with its own certified gap and a
    dual point whose lambda_max(H(w)) is its upper bound."""
    X, T = _problem(d=4, t=120, seed=seed)
    dense = solve_ipm(X, T, C, low_rank=False)
    low = solve_ipm(X, T, C, low_rank=True)
    assert dense.status == low.status == "optimal"
    assert low.objective == pytest.approx(dense.objective, rel=1e-6)
    Dk, Dj = _diffs(X, T)
    w = low.dual_weights
    lam = np.linalg.eigvalsh(Dk.T @ (w[:, None] * Dk) - Dj.T @ (w[:, None] * Dj))[-1]
    assert lam >= low.objective - 1e-9 and low.upper_bound - low.objective <= 1e-5 * abs(lam)


def test_low_rank_auto_follows_the_documented_crossover(monkeypatch):
    from psdlearn.psdboost import ipm

    seen = []
    original = ipm.path_following

    def spy(*args, **kwargs):
        seen.append(kwargs.get("low_rank", False))
        return original(*args, **kwargs)

    monkeypatch.setattr(ipm, "path_following", spy)
    n_s = 4 * 5 // 2
    for t, expect in ((5 * n_s - 1, False), (5 * n_s, True)):
        X, T = _problem(d=4, t=t, seed=3)
        seen.clear()
        assert solve_ipm(X, T, 3.0 / t).status == "optimal"
        # the first solve's system (an ill-conditioned low-rank one restarts dense)
        assert seen[0] is expect
    assert "``t >= 5 n_s``" in ipm.solve_ipm.__doc__


@pytest.mark.sdp
def test_low_rank_agrees_with_cvxpy():
    pytest.importorskip("cvxpy")
    from psdlearn.psdboost.sdp import solve_sdp

    X, T = _problem(d=4, t=100, seed=7)
    res, ref = solve_ipm(X, T, 0.05, low_rank=True), solve_sdp(X, T, 0.05)
    assert ref.status == "optimal"
    assert res.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-8)
