"""The exact SDP reference solver, checked against mathematics.

Optimality is verified without trusting cvxpy: no feasible point beats the reported value
(random low-rank points and perturbations of the optimum), the value is attained by the
returned embedding, closed forms on two points, an independent Burer-Monteiro solve on
three points, the KKT conditions of the square and squared hinge losses, and agreement
of the primal and dual models.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

pytest.importorskip("cvxpy")

from psdlearn.graph import knn_laplacian  # noqa: E402
from psdlearn.npkl.problem import LOSSES, NPKLProblem  # noqa: E402

#: Losses of seed 000 (functions of the margin alone); pcp has its own closed forms below.
MARGIN_LOSSES = tuple(loss for loss in LOSSES if loss != "pcp")
from psdlearn._solver import SolverResult  # noqa: E402
from psdlearn.npkl.estimator import NPKL  # noqa: E402
from psdlearn.npkl.sdp import (  # noqa: E402
    DEFAULT_MAX_SAMPLES,
    _embedding,
    solve_sdp,
)

pytestmark = pytest.mark.sdp


def make_problem(n=25, loss="hinge", *, gamma=1.0, b=1.0, dim=2, n_classes=3, seed=0, ratio=0.6):
    """Clustered random points, their kNN Laplacian and ``ratio * n`` must + cannot pairs."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    centers = rng.normal(scale=3.0, size=(n_classes, dim))
    X = centers[y] + rng.normal(size=(n, dim))
    laplacian = knn_laplacian(X, n_neighbors=5)
    n_each = int(np.ceil(ratio * n))
    n_same = int(sum(c * (c - 1) // 2 for c in np.bincount(y)))
    assert n_each <= min(n_same, n * (n - 1) // 2 - n_same), "too few points for the pairs"
    seen, rows = set(), []
    for want in (1.0, -1.0):
        count = 0
        while count < n_each:
            i, j = sorted(int(v) for v in rng.choice(n, size=2, replace=False))
            sign = 1.0 if y[i] == y[j] else -1.0
            if sign != want or (i, j) in seen:
                continue
            seen.add((i, j))
            rows.append((i, j, sign))
            count += 1
    table = np.array(rows)
    pairs = table[:, :2].astype(np.int64)
    signs = table[:, 2].astype(np.float64)
    return NPKLProblem(laplacian, pairs, signs, loss, gamma, b)


def with_pairs(problem, pairs, signs, **changes):
    """Copy of ``problem`` with other constraints (and optionally loss/gamma/b)."""
    fields = {
        "laplacian": problem.laplacian,
        "pairs": np.asarray(pairs, dtype=np.int64).reshape(-1, 2),
        "signs": np.asarray(signs, dtype=np.float64).reshape(-1),
        "loss": problem.loss,
        "gamma": problem.gamma,
        "b": problem.b,
    }
    fields.update(changes)
    return NPKLProblem(**fields)


def clip_rows(E, b):
    """Scale rows of ``E`` onto the ball ``||e_i|| <= b`` (feasibility for the linear loss)."""
    norms = np.linalg.norm(E, axis=1, keepdims=True)
    return E * np.minimum(1.0, b / np.maximum(norms, 1e-300))


def pair_gradient(problem, K):
    """``G = grad f(K) = L - sum_k alpha_k T_k S_k`` for the smooth losses.

    ``f(K) = tr(L K) + gamma sum_k l(T_k K_ij)`` depends on the symmetric ``K`` through
    ``K_ij = <S_k, K>``, ``S_k = (e_i e_j^T + e_j e_i^T) / 2``; hence
    ``grad f = L + gamma sum_k l'(T_k K_ij) T_k S_k`` with ``l'(z) = -2 (1 - z)`` (square)
    or ``-2 max(1 - z, 0)`` (squared hinge), i.e. ``alpha_k = -gamma l'(T_k K_ij)``.
    """
    i, j = problem.pairs[:, 0], problem.pairs[:, 1]
    margin = 1.0 - problem.signs * K[i, j]
    if problem.loss == "squared_hinge":
        margin = np.maximum(margin, 0.0)
    alpha = 2.0 * problem.gamma * margin
    G = problem.laplacian.toarray()
    coef = 0.5 * alpha * problem.signs
    np.add.at(G, (i, j), -coef)
    np.add.at(G, (j, i), -coef)
    return G


@pytest.fixture(scope="module")
def solved():
    """One solved problem per loss (n = 30), shared by the checks below."""
    out = {}
    for loss in LOSSES:
        problem = make_problem(30, loss, gamma=1.5, b=0.8, seed=1)
        out[loss] = (problem, solve_sdp(problem))
    return out


@pytest.mark.parametrize("loss", LOSSES)
def test_solution_is_symmetric_psd(solved, loss):
    problem, res = solved[loss]
    assert isinstance(res, SolverResult)
    n = problem.n_samples
    assert res.K.shape == (n, n)
    assert res.status == "optimal"
    assert res.solver == "CLARABEL"
    assert res.solve_time > 0
    np.testing.assert_array_equal(res.K, res.K.T)
    scale = max(1.0, np.abs(res.K).max())
    assert np.linalg.eigvalsh(res.K).min() >= -1e-7 * scale
    # E E^T reproduces K and E has few columns (the optimum is low rank here)
    E = res.embedding
    assert E.ndim == 2 and E.shape[0] == n and 1 <= E.shape[1] < n
    np.testing.assert_allclose(E @ E.T, res.K, atol=1e-5 * scale)
    assert np.all(np.diff(np.linalg.norm(E, axis=0)) <= 1e-12)  # largest first


def test_linear_loss_respects_radius(solved):
    problem, res = solved["linear"]
    b2 = problem.b**2
    assert np.all(np.diag(res.K) <= b2 * (1 + 1e-6))
    assert np.all(np.linalg.norm(res.embedding, axis=1) <= problem.b * (1 + 1e-6))
    # the bound is active: without it the linear objective is unbounded, so the optimum
    # pushes constrained samples to the sphere
    constrained = np.unique(problem.pairs)
    assert np.max(np.diag(res.K)[constrained]) == pytest.approx(b2, rel=1e-5)


@pytest.mark.parametrize("loss", LOSSES)
def test_embedding_attains_sdp_value(solved, loss):
    problem, res = solved[loss]
    assert res.objective == pytest.approx(problem.objective(res.embedding), rel=1e-12)
    assert res.objective == pytest.approx(res.sdp_value, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("loss", LOSSES)
def test_no_feasible_point_beats_sdp_value(solved, loss):
    """(a) The SDP value lower-bounds the objective at every feasible ``K = E E^T``."""
    problem, res = solved[loss]
    rng = np.random.default_rng(7)
    n = problem.n_samples
    tol = 1e-6 * max(1.0, abs(res.sdp_value))
    values = []
    for rank in (1, 2, 3, 5, n):
        for scale in np.logspace(-2, 0.5, 12):
            E = scale * rng.normal(size=(n, rank)) / np.sqrt(rank)
            if loss == "linear":
                E = clip_rows(E, problem.b)
            values.append(problem.objective(E))
    # local perturbations of the optimum, in every direction and with extra columns
    E0 = np.hstack([res.embedding, np.zeros((n, 2))])
    for eps in (1e-4, 1e-3, 1e-2, 1e-1):
        for _ in range(20):
            E = E0 + eps * rng.normal(size=E0.shape)
            if loss == "linear":
                E = clip_rows(E, problem.b)
            values.append(problem.objective(E))
    values = np.array(values)
    assert values.min() >= res.sdp_value - tol
    # the perturbations come close, so the bound is not vacuous
    assert values.min() <= res.sdp_value + 1e-2 * max(1.0, abs(res.sdp_value))


def test_embedding_symmetrizes_clips_and_truncates():
    """``K -> (K + K^T) / 2``, negative eigenvalues to 0, ``E`` keeps ``lambda > tol lambda_1``."""
    rng = np.random.default_rng(12)
    U, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    lam = np.array([5.0, 2.0, 1e-9, 0.0, -1e-3, -0.5])
    K_sym = (U * lam) @ U.T
    skew = rng.normal(size=(6, 6))
    K_psd, E = _embedding(K_sym + 1e-3 * (skew - skew.T), 1e-6)
    expected = (U[:, :3] * np.maximum(lam[:3], 0)) @ U[:, :3].T
    np.testing.assert_allclose(K_psd, expected, atol=1e-12)
    np.testing.assert_array_equal(K_psd, K_psd.T)
    assert E.shape == (6, 2)
    np.testing.assert_allclose(np.linalg.norm(E, axis=0) ** 2, [5.0, 2.0], rtol=1e-12)
    np.testing.assert_allclose(E @ E.T, (U[:, :2] * lam[:2]) @ U[:, :2].T, atol=1e-12)
    # K = 0 keeps one zero column so that E always has the shape (n, r >= 1)
    K_psd, E = _embedding(np.zeros((4, 4)), 1e-6)
    assert E.shape == (4, 1) and not E.any() and not K_psd.any()


@pytest.mark.parametrize("loss", LOSSES)
def test_primal_and_dual_models_agree(loss):
    problem = make_problem(18, loss, gamma=2.0, b=1.3, seed=3)
    dual = solve_sdp(problem, formulation="dual")
    primal = solve_sdp(problem, formulation="primal")
    for res in (primal, dual):
        # Clarabel may flag a solve "inaccurate" on a rounding-level change of L (1e-15);
        # the agreement below is what this test checks
        assert res.status in ("optimal", "optimal_inaccurate")
        np.testing.assert_array_equal(res.K, res.K.T)
        assert np.linalg.eigvalsh(res.K).min() >= -1e-7 * max(1.0, np.abs(res.K).max())
    assert primal.formulation == "primal" and dual.formulation == "dual"
    assert primal.sdp_value == pytest.approx(dual.sdp_value, rel=1e-6, abs=1e-8)
    assert primal.objective == pytest.approx(dual.objective, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize(
    ("loss", "case"),
    [(loss, case) for loss in MARGIN_LOSSES for case in ("no_pairs", "gamma_zero")]
    + [("pcp", "gamma_zero")],
)
def test_without_loss_term_optimum_is_zero(loss, case):
    """``min tr(L K)`` over ``K >= 0`` with ``L`` positive definite is 0, at ``K = 0`` only."""
    problem = make_problem(25, loss, seed=4)
    if case == "no_pairs":
        problem = with_pairs(problem, np.empty((0, 2)), np.empty(0))
    else:
        problem = with_pairs(problem, problem.pairs, problem.signs, gamma=0.0)
    res = solve_sdp(problem)
    assert res.sdp_value == pytest.approx(0.0, abs=1e-7)
    assert res.objective == pytest.approx(0.0, abs=1e-7)
    assert np.abs(res.K).max() <= 1e-6


def _two_point_optimum(loss, a, c, sign, gamma, b):
    """Closed form on two samples, ``L = [[a, -c], [-c, a]]``, one pair ``(0, 1)``.

    For ``K = [[p, q], [q, r]] >= 0`` write ``q = T k``: then ``p r >= k^2`` and
    ``a (p + r) >= 2 a |k|`` with equality at ``p = r = |k|``, so the problem reduces to
    ``min_{k >= 0} 2 s k + gamma l(k)`` with ``s = a - T c`` (and ``k <= b^2`` for the
    linear loss); the optimum is ``K = k [[1, T], [T, 1]]``.
    """
    s = a - sign * c
    if loss in ("square", "squared_hinge"):
        k = max(0.0, 1.0 - s / gamma)
        value = 2 * s * k + gamma * (1 - k) ** 2
    elif loss == "hinge":
        k = 1.0 if 2 * s < gamma else 0.0
        value = min(2 * s, gamma)
    else:
        k = b * b if 2 * s < gamma else 0.0
        value = min(0.0, (2 * s - gamma) * b * b)
    return value, k * np.array([[1.0, sign], [sign, 1.0]])


@pytest.mark.parametrize("loss", MARGIN_LOSSES)
@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("gamma", [0.3, 1.0, 5.0])
def test_two_point_closed_form(loss, sign, gamma):
    a, c, b = 1.0, 0.3, 0.9
    laplacian = sp.csr_matrix(np.array([[a, -c], [-c, a]]))
    problem = NPKLProblem(laplacian, np.array([[0, 1]]), np.array([sign]), loss, gamma, b)
    value, K = _two_point_optimum(loss, a, c, sign, gamma, b)
    res = solve_sdp(problem)
    assert res.sdp_value == pytest.approx(value, rel=1e-7, abs=1e-8)
    assert res.objective == pytest.approx(value, rel=1e-6, abs=1e-8)
    np.testing.assert_allclose(res.K, K, atol=1e-6)


def _burer_monteiro(problem, n_starts=25, seed=0):
    """Independent optimum: min over a full (n x n) factor E by SLSQP from random starts.

    With rank ``n`` every ``K >= 0`` is some ``E E^T``; the hinge is written with slacks
    ``s_k >= 0, s_k >= 1 - T_k e_i.e_j`` so that SLSQP sees a smooth problem, and the
    linear loss gets the constraints ``b^2 - ||e_i||^2 >= 0``.
    """
    n = problem.n_samples
    L = problem.laplacian.toarray()
    i, j = problem.pairs[:, 0], problem.pairs[:, 1]
    T, gamma, m = problem.signs, problem.gamma, len(problem.pairs)
    hinge = problem.loss == "hinge"
    n_e = n * n

    def unpack(x):
        return x[:n_e].reshape(n, n)

    def margins(x):
        E = unpack(x)
        return T * np.einsum("ij,ij->i", E[i], E[j])

    def fun(x):
        E = unpack(x)
        smooth = np.sum(E * (L @ E))
        if hinge:
            return smooth + gamma * np.sum(x[n_e:])
        return problem.objective(E) if m else smooth

    constraints = []
    if hinge:
        constraints.append({"type": "ineq", "fun": lambda x: x[n_e:] - (1.0 - margins(x))})
    if problem.loss == "linear":
        constraints.append(
            {"type": "ineq", "fun": lambda x: problem.b**2 - np.sum(unpack(x) ** 2, axis=1)}
        )
    bounds = [(None, None)] * n_e + ([(0.0, None)] * m if hinge else [])
    rng = np.random.default_rng(seed)
    best = np.inf
    for _ in range(n_starts):
        x0 = rng.normal(scale=0.5, size=n_e)
        if hinge:
            x0 = np.concatenate([x0, np.maximum(1.0 - margins(x0), 0.0) + 0.1])
        out = minimize(
            fun,
            x0,
            method="SLSQP",
            bounds=bounds,
            constraints=constraints,
            options={"ftol": 1e-13, "maxiter": 2000},
        )
        feasible = all(np.all(cons["fun"](out.x) >= -1e-8) for cons in constraints)
        if feasible:
            best = min(best, problem.objective(unpack(out.x)))
    return best


@pytest.mark.parametrize("loss", LOSSES)
def test_three_points_match_burer_monteiro(loss):
    rng = np.random.default_rng(11)
    laplacian = knn_laplacian(rng.normal(size=(3, 2)), n_neighbors=2)
    pairs = np.array([[0, 1], [0, 2], [1, 2]])
    signs = np.array([1.0, -1.0, -1.0])
    problem = NPKLProblem(laplacian, pairs, signs, loss, 1.7, 0.8)
    res = solve_sdp(problem)
    reference = _burer_monteiro(problem)
    assert res.sdp_value == pytest.approx(reference, rel=1e-6, abs=1e-7)
    assert res.objective == pytest.approx(reference, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("loss", ["square", "squared_hinge"])
def test_kkt_conditions(solved, loss):
    """(d) ``K`` minimizes the convex ``f`` over the PSD cone iff ``G = grad f(K) >= 0``
    and ``<G, K> = 0`` (then ``G K = 0``)."""
    problem, res = solved[loss]
    K = res.K
    G = pair_gradient(problem, K)
    g_scale = np.abs(G).max()
    k_scale = np.abs(K).max()
    assert np.linalg.eigvalsh(G).min() >= -1e-6 * g_scale
    assert abs(np.sum(G * K)) <= 1e-6 * g_scale * k_scale * problem.n_samples
    assert np.abs(G @ K).max() <= 1e-5 * g_scale * k_scale
    # a wrong K fails the same test: the optimum of the other smooth loss
    other = "square" if loss == "squared_hinge" else "squared_hinge"
    K_other = solved[other][1].K
    G_other = pair_gradient(problem, K_other)
    assert not (
        np.linalg.eigvalsh(G_other).min() >= -1e-6 * g_scale
        and abs(np.sum(G_other * K_other)) <= 1e-6 * g_scale * k_scale * problem.n_samples
    )


def test_scs_agrees_with_clarabel():
    problem = make_problem(20, "squared_hinge", seed=5)
    ref = solve_sdp(problem)
    with warnings.catch_warnings():
        # SCS is a first-order method: "optimal_inaccurate" is acceptable here
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = solve_sdp(problem, solver="scs")
    assert res.solver == "SCS"
    assert res.sdp_value == pytest.approx(ref.sdp_value, rel=1e-4)
    assert res.objective == pytest.approx(ref.objective, rel=1e-4)


def test_size_guard():
    problem = make_problem(12, "hinge", seed=6)
    with pytest.raises(ValueError, match=r"12 samples > max_samples=10.*force=True"):
        solve_sdp(problem, max_samples=10)
    res = solve_sdp(problem, max_samples=10, force=True)
    assert res.status == "optimal"
    assert DEFAULT_MAX_SAMPLES >= 200


def test_missing_cvxpy_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)
    with pytest.raises(ImportError, match=r"pip install psdlearn\[sdp\]"):
        solve_sdp(make_problem(10, "hinge"))


@pytest.mark.parametrize("formulation", ["dual", "primal"])
def test_unbounded_problem_raises(formulation):
    """With ``L = -I`` the objective decreases without bound along ``K = t I``."""
    problem = make_problem(9, "hinge", seed=2)
    bad = with_pairs(problem, problem.pairs, problem.signs, laplacian=-sp.identity(9, format="csr"))
    with pytest.raises(RuntimeError, match="status"):
        solve_sdp(bad, formulation=formulation)


def test_non_optimal_status_warns():
    problem = make_problem(20, "hinge", seed=8)
    with pytest.warns(ConvergenceWarning, match="user_limit"):
        res = solve_sdp(problem, solver_options={"max_iter": 3})
    assert res.status == "user_limit"


def test_bad_arguments():
    problem = make_problem(10, "hinge")
    y = np.column_stack([problem.pairs, problem.signs])

    def fit(**params):  # the solver trusts the problem: NPKL validates it
        return NPKL(solver="sdp", graph="precomputed", **params).fit(problem.laplacian, y)

    with pytest.raises(ValueError, match="loss"):
        fit(loss="logistic")
    with pytest.raises(ValueError, match="gamma"):
        fit(gamma=-1.0)
    with pytest.raises(ValueError, match="'b'"):
        fit(loss="linear", b=0.0)
    with pytest.raises(ValueError, match="formulation"):
        solve_sdp(problem, formulation="lagrangian")
    with pytest.raises(ValueError, match="not an installed cvxpy solver"):
        solve_sdp(problem, solver="no-such-solver")
    with pytest.raises(ValueError, match="eig_tol"):
        solve_sdp(problem, eig_tol=2.0)


def test_inputs_not_modified():
    problem = make_problem(15, "square", seed=9)
    L, pairs, signs = problem.laplacian.copy(), problem.pairs.copy(), problem.signs.copy()
    solve_sdp(problem)
    assert (problem.laplacian != L).nnz == 0
    np.testing.assert_array_equal(problem.pairs, pairs)
    np.testing.assert_array_equal(problem.signs, signs)
