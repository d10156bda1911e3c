"""PSDBoost's solvers (``solver=``): the optimum of problem (3) for each, certified bounds at
every stop (convergence, ``max_iter``, ``max_time``), the choice of ``"auto"``, and the
pieces of the certificate (the primal value, the capped-simplex projection, the low-rank
Newton system of the subspace master)."""

from functools import partial

import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.exceptions import ConvergenceWarning
from test_psdboost import _dense_A, _margins
from test_psdboost import _problem as _with_duplicates

import psdlearn as pl
from psdlearn._solver import SolverResult
from psdlearn.psdboost import estimator, subspace
from psdlearn.psdboost._bounds import primal_value, project_capped_simplex
from psdlearn.psdboost.column_generation import solve_column_generation
from psdlearn.psdboost.ipm import _LowRankNewtonSystem, solve_ipm


def _problem(**kwargs):
    """Random points and distinct random triplets."""
    X, T = _with_duplicates(**kwargs)
    return X, np.unique(T, axis=0)


SOLVERS = ["column-generation", "interior-point", "subspace", "working-set"]
COMMON = ["metric_", "components_", "rank_", "objective_", "upper_bound_", "rho_", "slacks_",
          "dual_weights_", "objective_history_", "upper_bound_history_", "time_history_",
          "n_iter_", "converged_", "n_matvec_", "C_", "eps_", "side_info_", "solver_"]


def _scale(X, T):
    """The margin scale ``s`` of the estimator's ``eps = tol * s``."""
    dj, dk = X[T[:, 0]] - X[T[:, 1]], X[T[:, 0]] - X[T[:, 2]]
    return float(np.mean(np.sum(dj**2, 1) + np.sum(dk**2, 1))) / X.shape[1]


def _check_certificate(m, X, T):
    """``objective_`` is the value of ``metric_`` and ``upper_bound_`` is
    ``lambda_max(H(w))`` at a ``w`` of the capped simplex: both are true bounds."""
    M = m.metric_
    assert np.allclose(M, M.T) and np.linalg.eigvalsh(M).min() >= -1e-10
    assert np.trace(M) == pytest.approx(1.0, abs=1e-10)
    assert np.allclose(m.components_.T @ m.components_, M, atol=1e-10)
    margins = _margins(X, T, M)
    # The best (rho, xi) for this metric: the LP over (rho, xi), solved by HiGHS.
    t = len(T)
    lp = linprog(np.r_[-1.0, np.full(t, m.C_)],
                 A_ub=np.hstack([np.ones((t, 1)), -np.eye(t)]), b_ub=margins,
                 bounds=[(None, None)] + [(0, None)] * t, method="highs")
    assert m.objective_ == pytest.approx(-lp.fun, abs=1e-7 * _scale(X, T))
    w = getattr(m, "best_dual_weights_", m.dual_weights_)
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert w.min() >= 0 and w.max() <= m.C_ * (1 + 1e-12)
    lam = np.linalg.eigvalsh(np.einsum("r,rij->ij", w, _dense_A(X, T)))[-1]
    assert lam == pytest.approx(m.upper_bound_, abs=1e-8 * _scale(X, T))


@pytest.mark.sdp
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("seed,d,t,C", [(0, 5, 60, "auto"), (1, 12, 200, 0.05),
                                         (2, 10, 150, 1.0)])
def test_every_solver_reaches_the_cvxpy_optimum(solver, seed, d, t, C):
    pytest.importorskip("cvxpy")
    from psdlearn.psdboost.sdp import solve_sdp

    X, T = _problem(n=60, d=d, t=t, seed=seed)
    m = pl.PSDBoost(solver=solver, C=C, tol=1e-6, random_state=0).fit(X, pl.Triplets(T))
    ref = solve_sdp(X, T, m.C_)
    assert ref.status == "optimal" and m.solver_ == solver and m.converged_
    scale = max(abs(ref.objective), _scale(X, T))
    assert abs(m.objective_ - ref.objective) <= 1e-4 * scale
    # The certificate brackets the optimum (Clarabel's own accuracy: 1e-7).
    assert m.objective_ <= ref.objective + 1e-7 * scale
    assert m.upper_bound_ >= ref.objective - 1e-7 * scale
    assert m.upper_bound_ - m.objective_ <= m.eps_
    _check_certificate(m, X, T)


def test_subspace_with_the_low_rank_master_reaches_the_optimum(monkeypatch):
    # Masters with up to 1000 triplets normally use the dense t x t Newton system; force
    # the low-rank one (eliminated t-dimensional part) on a problem the dense IPM solves.
    monkeypatch.setattr(subspace, "_DENSE_MASTER_MAX_T", 0)
    X, T = _problem(n=60, d=9, t=300, seed=4)
    C = 1 / 30
    ref = solve_ipm(X, T, C, tol=1e-10)
    res = subspace.solve_subspace(X, T, C, tol=1e-6, n_vectors=3, random_state=0)
    assert res.status == "optimal"
    assert max(res.dim_history) < 9 or res.dim_history[0] < 9  # a proper subspace at first
    assert abs(res.objective - ref.objective) <= 1e-5 * _scale(X, T)
    assert res.objective <= ref.objective + 1e-8 * _scale(X, T) <= res.upper_bound + 2e-8 * (
        _scale(X, T))
    # Each master's certified lower bound never decreases (the best one is kept), and
    # the upper bound never increases.
    assert np.all(np.diff(res.objective_history) >= 0)
    assert np.all(np.diff(res.upper_bound_history) <= 0)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("stop", [{"max_iter": 1}, {"max_iter": 3}, {"max_time": 1e-4}])
def test_bounds_bracket_the_optimum_at_every_stop(solver, stop):
    X, T = _problem(n=60, d=10, t=150, seed=3)
    C = 1 / 15
    opt = solve_ipm(X, T, C)
    s = _scale(X, T)
    assert opt.upper_bound - opt.objective <= 1e-8 * s
    match = "max_time" if "max_time" in stop else "max_iter"
    with pytest.warns(ConvergenceWarning, match=match):
        m = pl.PSDBoost(solver=solver, C=C, tol=0.0, random_state=0, **stop).fit(X, pl.Triplets(T))
    assert m.converged_ is False
    assert m.objective_ <= opt.objective + 1e-8 * s
    assert m.upper_bound_ >= opt.objective - 1e-8 * s
    _check_certificate(m, X, T)
    if "max_iter" in stop:
        assert m.n_iter_ == stop["max_iter"]


@pytest.mark.parametrize("solve", [solve_column_generation, solve_ipm,
                                   subspace.solve_subspace,
                                   partial(subspace.solve_subspace, working_set=True)])
def test_a_callback_returning_true_stops_the_solver_at_its_last_iterate(solve):
    # Stopped by its callback after the second iteration, a solver returns the iterate of
    # that iteration: the one a run capped where that iterate is final returns (two master
    # solves; one Newton step, whose successor the callback sees before any step).
    X, T = _problem(n=60, d=10, t=150, seed=3)
    C = 1 / 15
    calls = []

    def stop_at_two(iteration, *values):
        calls.append(iteration)
        return iteration == 2

    kwargs = {} if solve is solve_ipm else {"random_state": 0}
    res = solve(X, T, C, tol=0.0, max_iter=50, callback=stop_at_two, **kwargs)
    capped = solve(X, T, C, tol=0.0, max_iter=1 if solve is solve_ipm else 2, **kwargs)
    assert isinstance(res, SolverResult)
    assert calls == [1, 2] and res.n_iter == 2
    assert res.interrupted and not res.converged and res.status == "interrupted"
    assert not capped.interrupted and capped.status == "max_iter"
    assert np.array_equal(res.metric, capped.metric)
    assert np.array_equal(res.embedding, capped.embedding)
    assert res.objective == capped.objective and res.upper_bound == capped.upper_bound
    assert np.array_equal(res.slacks, capped.slacks) and res.rho == capped.rho
    # The kept iterate is a trace-one PSD metric, F F^T.
    assert np.trace(res.metric) == pytest.approx(1.0)
    assert np.allclose(res.embedding @ res.embedding.T, res.metric, atol=1e-12)


@pytest.mark.parametrize("solver", SOLVERS)
def test_the_same_fitted_attributes_for_every_solver(solver):
    X, T = _problem(seed=1)
    m = pl.PSDBoost(solver=solver, random_state=0).fit(X, pl.Triplets(T))
    for name in COMMON:
        assert hasattr(m, name), name
    t, D = T.shape[0], X.shape[1]
    assert m.metric_.shape == (D, D) and m.components_.shape == (m.rank_, D)
    assert m.slacks_.shape == m.dual_weights_.shape == (t,)
    assert (len(m.objective_history_) == len(m.upper_bound_history_)
            == len(m.time_history_) == m.n_iter_)
    assert m.transform(X).shape == (len(X), m.rank_)


def test_auto_picks_as_documented(monkeypatch):
    doc = " ".join(pl.PSDBoost.__doc__.split())
    assert (f"``t <= {estimator.AUTO_IPM_MAX_TRIPLETS}`` triplets and "
            f"``D <= {estimator.AUTO_IPM_MAX_FEATURES}`` features") in doc
    monkeypatch.setattr(estimator, "AUTO_IPM_MAX_TRIPLETS", 40)
    monkeypatch.setattr(estimator, "AUTO_IPM_MAX_FEATURES", 4)
    X, T = _problem(n=30, d=5, t=41, seed=2)
    # Both bounds must hold for the interior-point method; either one exceeded picks the
    # working set.
    assert pl.PSDBoost().fit(X[:, :4], pl.Triplets(T[:40])).solver_ == "interior-point"
    assert pl.PSDBoost().fit(X[:, :4], pl.Triplets(T)).solver_ == "working-set"
    assert pl.PSDBoost().fit(X, pl.Triplets(T[:40])).solver_ == "working-set"
    for solver in SOLVERS:
        assert pl.PSDBoost(solver=solver).fit(X, pl.Triplets(T)).solver_ == solver


def test_solver_choices_are_the_registry():
    from psdlearn.psdboost.solvers import SOLVERS as REGISTRY

    assert REGISTRY.names() == tuple(SOLVERS)
    X, T = _problem(seed=2)
    with pytest.raises(ValueError, match="'solver' parameter"):
        pl.PSDBoost(solver="newton").fit(X, pl.Triplets(T))


@pytest.mark.parametrize("seed,t,C", [(0, 10, 0.25), (1, 37, 0.1), (2, 20, 0.05),
                                      (3, 5, 1.0)])
def test_primal_value_is_the_lp_over_rho_and_xi(seed, t, C):
    # value = max rho - C sum xi s.t. xi >= rho - m, xi >= 0 = min_{w in W} w . m.
    m = np.random.default_rng(seed).normal(size=t)
    value, rho, xi = primal_value(m, C)
    dual = linprog(m, A_eq=np.ones((1, t)), b_eq=[1.0], bounds=[(0, C)] * t,
                   method="highs")
    assert value == pytest.approx(dual.fun, abs=1e-12)
    assert np.all(xi >= 0) and np.all(m + xi >= rho - 1e-15)
    assert rho - C * xi.sum() == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("seed,t,C", [(0, 10, 0.25), (1, 50, 0.03), (2, 8, 0.125),
                                      (3, 30, 1.0)])
def test_capped_simplex_projection_satisfies_its_kkt_conditions(seed, t, C):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=t) * rng.choice([0.01, 1.0, 10.0])
    w = project_capped_simplex(v, C)
    assert w.sum() == pytest.approx(1.0, abs=1e-13)
    assert w.min() >= 0 and w.max() <= C
    # KKT: w = clip(v - tau, 0, C) for one tau; below, v - tau <= 0 where w = 0 and
    # v - tau >= C where w = C.
    free = (w > 0) & (w < C)
    tau = np.mean(v[free] - w[free]) if free.any() else None
    if tau is not None:
        assert np.allclose(v[free] - w[free], tau, atol=1e-12)
        assert np.all(v[w == 0] - tau <= 1e-12) and np.all(v[w == C] - tau >= C - 1e-12)
    # Projection: no feasible point is closer (random feasible points, a variational test).
    for _ in range(20):
        z = project_capped_simplex(rng.normal(size=t) * 5, C)
        assert (v - w) @ (z - w) <= 1e-10


@pytest.mark.parametrize("t,D", [(60, 3), (40, 5)])
def test_low_rank_newton_solve_equals_the_dense_system(t, D):
    # (G + Delta) x = b with G_rs = tr(A_r Z^-1 A_s X), formed here from the definition.
    rng = np.random.default_rng(t)
    Dk, Dj = rng.normal(size=(t, D)), rng.normal(size=(t, D)) * 0.7
    A = rng.normal(size=(D, D))
    Xm = A @ A.T + 0.1 * np.eye(D)
    Xm /= np.trace(Xm)
    # Delta spread over six orders of magnitude, as near the optimum.
    m, xi = 10.0 ** rng.uniform(-6, 0, t), 10.0 ** rng.uniform(-6, 0, t)
    C = 2.0 / t
    w = rng.uniform(0.1, 0.9, t) * C
    w /= w.sum()
    w = np.minimum(w, 0.99 * C)
    system = _LowRankNewtonSystem(Dk, Dj, C, Xm, m, xi, 0.0, 50.0, w)
    system.factorize()
    As = np.einsum("ri,rj->rij", Dk, Dk) - np.einsum("ri,rj->rij", Dj, Dj)
    Zi = np.linalg.inv(50.0 * np.eye(D) - np.einsum("r,rij->ij", w, As))
    G = np.einsum("rij,jk,skl,li->rs", As, Zi, As, Xm)
    full = G + np.diag(m / w + xi / (C - w))
    b = rng.normal(size=t)
    x = system.solve(b)
    assert np.abs(full @ x - b).max() <= 1e-9 * np.abs(b).max()
    assert len(system.free) < t  # both the dense block and the eliminated part are used


@pytest.mark.sdp
@pytest.mark.parametrize("low_rank", [False, True])
def test_proximal_master_solves_the_regularized_dual(low_rank):
    # The master of the spectral bundle step: min_{w in W} lambda_max(H(w))
    # + (u / 2) ||w - c||^2, here against cvxpy's lambda_max.
    cp = pytest.importorskip("cvxpy")
    from psdlearn.psdboost.ipm import path_following

    rng = np.random.default_rng(7)
    t, D, C, u = 80, 3, 1 / 8, 20.0
    Dk, Dj = rng.normal(size=(t, D)), rng.normal(size=(t, D)) * 0.8
    center = project_capped_simplex(rng.uniform(size=t), C)
    _, _, _, pi, w, _, _ = path_following(Dk, Dj, C, 1e-9, 100, low_rank=low_rank,
                                          prox=(u, center))
    value = pi + u / 2 * np.sum((w - center) ** 2)
    var = cp.Variable(t)
    H = Dk.T @ cp.diag(var) @ Dk - Dj.T @ cp.diag(var) @ Dj
    problem = cp.Problem(cp.Minimize(cp.lambda_max((H + H.T) / 2)
                                     + u / 2 * cp.sum_squares(var - center)),
                         [var >= 0, var <= C, cp.sum(var) == 1])
    problem.solve()
    assert value == pytest.approx(problem.value, abs=1e-6)
    assert np.abs(w - var.value).max() <= 1e-4
    # pi is the model value at w: lambda_max(H(w)) up to the interior-point tolerance.
    H_w = Dk.T @ (w[:, None] * Dk) - Dj.T @ (w[:, None] * Dj)
    assert pi == pytest.approx(np.linalg.eigvalsh(H_w)[-1], abs=1e-6)


@pytest.mark.parametrize("seed,d,t,C", [(5, 10, 400, 1 / 40), (6, 8, 600, 1 / 30),
                                        (7, 20, 500, 1 / 100)])
def test_working_set_grows_from_a_subset_to_the_optimum(seed, d, t, C):
    # The masters start on fewer rows than t, rows join by pricing, and the optimum of
    # all t triplets is reached without ever holding all of them.
    X, T = _problem(n=80, d=d, t=t, seed=seed)
    t, s = len(T), _scale(X, T)
    ref = solve_ipm(X, T, C, tol=1e-10)
    res = subspace.solve_subspace(X, T, C, tol=1e-7, working_set=True, random_state=0)
    sizes = res.working_set_history
    assert res.status == "optimal"
    assert sizes[0] >= 1 / C and sizes[0] < max(sizes) < t
    assert abs(res.objective - ref.objective) <= 1e-6 * s
    assert res.objective <= ref.objective + 1e-8 * s <= res.upper_bound + 2e-8 * s
    # The certificate's dual point is in the full capped simplex.
    w = res.dual_weights
    assert w.shape == (t,) and w.sum() == pytest.approx(1.0) and 0 <= w.min() <= w.max() <= C


def test_working_set_update_adds_violated_rows_and_drops_idle_ones():
    C = 1 / 4  # rows kept at least ceil(1 / C) + _WS_MIN_EXTRA
    floor = 4 + subspace._WS_MIN_EXTRA
    t = 3 * floor
    margins = np.arange(t, dtype=float)
    ws = subspace._WorkingSet(margins, C)
    assert np.array_equal(ws.rows, np.arange(floor))  # max(1.5 / C, 1 / C + extra) smallest
    # The metric moves: rows outside now have margins below the master's rho (the 4-th
    # smallest margin on the rows), the most violated join first, at most 0.5 / C = 2.
    margins = margins.copy()
    margins[[floor + 5, floor + 9, floor + 20]] = [-3.0, -1.0, -2.0]
    w = np.zeros(t)
    w[:4] = C
    center = w.copy()
    ws.update(margins, w, center)
    assert np.array_equal(ws.rows, np.r_[np.arange(floor), floor + 5, floor + 20])
    # Rows with zero weight and margin above rho for _WS_PATIENCE masters leave, but
    # never below the floor: the idle rows of smallest margin stay. Rows 4 .. floor - 1
    # have been idle since the first update; the third violated row joins now.
    for _ in range(subspace._WS_PATIENCE - 1):
        ws.update(margins, w, center)
    assert np.array_equal(ws.rows, np.r_[np.arange(floor - 3), floor + 5, floor + 9,
                                         floor + 20])
    # The center's rows stay even when idle: here the largest margin of the first rows,
    # while rows join (two per update) and idle rows of smaller margin leave.
    ws = subspace._WorkingSet(np.arange(t, dtype=float), C)
    margins = np.arange(t, dtype=float)
    margins[floor:] = -np.arange(1.0, t - floor + 1)  # every outside row violated
    center = np.zeros(t)
    center[floor - 1] = 1.0
    for _ in range(subspace._WS_PATIENCE):
        ws.update(margins, w, center)
    # Two join per update until rho (the 4-th smallest margin on the rows) is below every
    # outside margin: the four most negative.
    added = t - 1 - np.arange(4)
    assert np.array_equal(ws.rows, np.sort(np.r_[np.arange(floor - 1 - len(added)),
                                                 floor - 1, added]))


@pytest.mark.parametrize("low_rank,tol", [(False, 1e-9), (True, 1e-7)])
def test_master_with_bound_rows_held_at_C_has_the_full_optimum(low_rank, tol):
    # Rows at w_r = C in the optimum, moved out of the variables into the constant
    # G = C sum A_r (with sum w = 1 - C |bound| on the rest), leave the optimum unchanged;
    # binding a row whose optimal weight is below C raises it (a restricted dual). The
    # low-rank Newton system stops near a relative gap of 1e-7.
    from psdlearn.psdboost.ipm import path_following

    rng = np.random.default_rng(11)
    t, D, C = 150, 3, 1 / 60
    Dk, Dj = rng.normal(size=(t, D)), rng.normal(size=(t, D)) * 0.8
    _, _, _, pi, w, status, _ = path_following(Dk, Dj, C, 1e-9, 100)
    assert status == "optimal"
    bound = np.flatnonzero(w >= C * (1 - 1e-6))
    assert 10 <= len(bound) <= 58

    def restricted(rows):
        free = np.setdiff1d(np.arange(t), rows)
        G = C * (Dk[rows].T @ Dk[rows] - Dj[rows].T @ Dj[rows])
        Xm, rho, xi, pi_b, w_b, status, _ = path_following(
            Dk[free], Dj[free], C, tol, 100, low_rank=low_rank, fixed=(G, 1.0 - C * len(rows)))
        assert status == "optimal"  # its own gap test, on the objective below
        # The primal objective (1 - C |bound|) rho + <G, X> - C sum xi meets pi.
        objective = (1 - C * len(rows)) * rho + np.sum(G * Xm) - C * xi.sum()
        assert objective == pytest.approx(pi_b, abs=10 * tol)
        assert w_b.sum() == pytest.approx(1.0 - C * len(rows)) and w_b.max() <= C
        return free, pi_b, w_b

    free, pi_b, w_b = restricted(bound)
    assert pi_b == pytest.approx(pi, abs=10 * tol)
    assert np.abs(w_b - w[free]).max() <= 1e4 * tol * C
    # At most ceil(1 / C) - 1 = 59 rows can be bound (sum w = 1 - C |bound| > 0).
    zero = np.flatnonzero(w <= 1e-6 * C)[:59 - len(bound)]
    assert pi < restricted(np.r_[bound, zero])[1] - 1e-3


def test_working_set_binds_rows_at_C_and_frees_them_when_their_margin_reaches_rho():
    C = 1 / 4
    floor = 4 + subspace._WS_MIN_EXTRA
    t = 3 * floor
    margins = np.arange(t, dtype=float)
    ws = subspace._WorkingSet(margins, C)
    w = np.zeros(t)
    w[:4] = C
    for _ in range(subspace._WS_BOUND_PATIENCE - 1):
        ws.update(margins, w, w)
        assert ws.bound_rows.size == 0
    ws.update(margins, w, w)
    # rho is the 4-th smallest margin, 3: rows 0-2 are below it at weight C; row 3 is not.
    assert np.array_equal(ws.bound_rows, [0, 1, 2])
    assert np.array_equal(ws.free, np.setdiff1d(ws.rows, [0, 1, 2]))
    # Row 1's margin rises above rho (now the margin 4): it is freed, the others stay.
    margins[1] = 10.0
    ws.update(margins, w, w)
    assert np.array_equal(ws.bound_rows, [0, 2])
    # With eps, only rows below rho - eps bind (near-ties stay free).
    ws = subspace._WorkingSet(np.arange(t, dtype=float), C, eps=1.5)
    for _ in range(subspace._WS_BOUND_PATIENCE):
        ws.update(np.arange(t, dtype=float), w, w)
    assert np.array_equal(ws.bound_rows, [0, 1])  # margin 2 is not below rho - eps


def test_working_set_with_bound_rows_reaches_the_optimum():
    # nu = 0.5: half the triplets end at w = C, most of them bound during the solve.
    X, T = _problem(n=80, d=8, t=500, seed=8)
    t, s = len(T), _scale(X, T)
    C = 1 / (0.5 * t)
    ref = solve_ipm(X, T, C, tol=1e-10)
    res = subspace.solve_subspace(X, T, C, tol=1e-7, working_set=True, random_state=0)
    assert res.status == "optimal" and max(res.bound_history) >= 0.25 * t
    assert abs(res.objective - ref.objective) <= 1e-6 * s
    assert res.objective <= ref.objective + 1e-8 * s <= res.upper_bound + 2e-8 * s
    w = res.dual_weights
    assert w.sum() == pytest.approx(1.0) and 0 <= w.min() <= w.max() <= C
