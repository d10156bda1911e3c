"""PSDBoost (Shen, Welsh & Wang 2008): optimality against the SDP, LP duality, invariants,
side information, scikit-learn conventions, quiet and interruptible fits."""

import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

import psdlearn as pl
from psdlearn._progress import FitInterruptedWarning
from psdlearn.psdboost._pricing import TripletOperator


def _problem(n=30, d=5, t=40, seed=0):
    """Random points and random distinct-index triplets."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d)
    T = np.array([rng.choice(n, 3, replace=False) for _ in range(t)])
    return X, T


def _dense_A(X, T):
    dj = X[T[:, 0]] - X[T[:, 1]]
    dk = X[T[:, 0]] - X[T[:, 2]]
    return np.einsum("ri,rj->rij", dk, dk) - np.einsum("ri,rj->rij", dj, dj)


def _margins(X, T, M):
    return np.einsum("rij,ij->r", _dense_A(X, T), M)


def test_params_roundtrip_and_clone():
    model = pl.PSDBoost(C=0.5, tol=1e-6, max_iter=7, n_columns=2, smoothing=0.0,
                        max_bases=10, n_triplets=20, random_state=3)
    assert clone(model).get_params() == model.get_params()
    assert model.get_params()["max_bases"] == 10


@pytest.mark.parametrize("kwargs,match", [({"C": -1.0}, "C"), ({"n_columns": 0}, "n_columns"),
                                          ({"smoothing": 1.0}, "smoothing"),
                                          ({"max_bases": 1}, "max_bases"),
                                          ({"eigen_solver": "qr"}, "eigen_solver")])
def test_invalid_parameters_raise(kwargs, match):
    X, T = _problem()
    with pytest.raises(ValueError, match=match):
        pl.PSDBoost(**kwargs).fit(X, pl.Triplets(T))


def test_bad_triplets_raise_and_duplicates_warn():
    X, T = _problem(n=10, t=5)
    model = pl.PSDBoost()
    with pytest.raises(ValueError, match=r"out of range \[0, 10\) in row 5"):
        model.fit(X, pl.Triplets(np.vstack([T, [0, 1, 10]]), n_samples=len(X)))
    with pytest.raises(ValueError, match="negative"):
        model.fit(X, pl.Triplets(np.vstack([T, [-1, 1, 2]])))
    with pytest.raises(ValueError, match="repeats an index"):
        model.fit(X, pl.Triplets(np.vstack([T, [3, 3, 4]])))
    with pytest.raises(ValueError, match="shape"):
        model.fit(X, pl.Triplets(T[:, :2]))
    with pytest.raises(ValueError, match="no triplet"):
        model.fit(X, pl.Triplets(np.empty((0, 3), dtype=int)))
    with pytest.raises(ValueError, match="integer"):
        model.fit(X, pl.Triplets(T + 0.5))
    with pytest.raises(ValueError, match="refers to 11 samples but X has 10"):
        model.fit(X, pl.Triplets(np.vstack([T, [0, 1, 10]])))
    with pytest.raises(ValueError, match="C="):
        pl.PSDBoost(C=0.1).fit(X, pl.Triplets(T))  # C t = 0.5 < 1: (3) unbounded
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError):
        model.fit(X_nan, pl.Triplets(T))
    T_before = T.copy()
    with pytest.warns(UserWarning, match="duplicate"):
        model.fit(X, pl.Triplets(np.vstack([T, T[:2]])))
    assert len(model.side_info_.triplets) == len(T)
    assert np.array_equal(T, T_before)


def test_degenerate_triplets_warn():
    # Collinear: a_i - a_j is a shorter multiple of a_i - a_k, so A_r is PSD and every
    # metric satisfies every triplet.
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    T = np.array([[0, 1, 2], [0, 1, 3], [1, 2, 3]])
    with pytest.warns(UserWarning, match="satisfied by every metric"):
        pl.PSDBoost().fit(X, pl.Triplets(T))


def test_matrix_free_operator_matches_dense():
    X, T = _problem(d=7)
    op = TripletOperator(X, T)
    A = _dense_A(X, T)
    w = np.random.default_rng(1).uniform(size=len(T))
    # H(w) acts only on the samples of weighted triplets: zero weights must not matter.
    w[6:] = 0.0
    H = np.einsum("r,rij->ij", w, A)
    assert np.allclose(op.hessian(w), H)
    assert len(op.weighted_incidence(w)[1]) < len(op.X)
    U = np.random.default_rng(2).normal(size=(7, 3))
    assert np.allclose(op.column_coefficients(U), np.einsum("ia,rij,ja->ra", U, A, U))
    vals, vecs, _ = op.top_eigenpairs(w, 2, "lanczos")
    assert np.allclose(vals, np.linalg.eigvalsh(H)[::-1][:2])
    assert np.allclose(np.abs(vecs[:, 0] @ np.linalg.eigh(H)[1][:, -1]), 1.0)


def test_single_triplet_closed_form():
    # t = 1 forces C >= 1, so xi = 0 and the optimum is max_{tr X = 1} <A, X> =
    # lambda_max(A), attained by the top eigenvector of A.
    X, T = _problem(n=5, d=4, t=1, seed=3)
    m = pl.PSDBoost(tol=1e-10).fit(X, pl.Triplets(T))
    lam = np.linalg.eigvalsh(_dense_A(X, T)[0])[-1]
    assert m.objective_ == pytest.approx(lam, rel=1e-8)
    assert np.allclose(m.slacks_, 0.0)


def test_hard_margin_when_C_at_least_one():
    # With C >= 1 no slack pays off: rho equals the smallest margin of metric_.
    X, T = _problem(t=15, seed=4)
    m = pl.PSDBoost(C=1.0, tol=1e-6).fit(X, pl.Triplets(T))
    assert np.allclose(m.slacks_, 0.0, atol=1e-9)
    assert _margins(X, T, m.metric_).min() == pytest.approx(m.rho_, abs=1e-7)


@pytest.mark.parametrize("seed", [0, 1])
def test_metric_invariants_and_transform(seed):
    X, T = _problem(seed=seed)
    m = pl.PSDBoost(tol=1e-7, random_state=0).fit(X, pl.Triplets(T))
    assert m.converged_
    M = m.get_mahalanobis_matrix()
    assert np.allclose(M, M.T)
    assert np.linalg.eigvalsh(M).min() >= -1e-10
    assert np.trace(M) == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(m.components_.T @ m.components_, M)
    Z = m.transform(X)
    d_learned = np.sum((Z[T[:, 0]] - Z[T[:, 1]]) ** 2, axis=1)
    diff = X[T[:, 0]] - X[T[:, 1]]
    assert np.allclose(d_learned, np.einsum("ri,ij,rj->r", diff, M, diff))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lp_duality_and_complementary_slackness(seed):
    X, T = _problem(seed=seed)
    m = pl.PSDBoost(solver="column-generation", tol=1e-7).fit(X, pl.Triplets(T))
    w, C, pi = m.dual_weights_, m.C_, m.objective_history_[-1]
    # Dual feasibility of (D1) and equal primal / dual values.
    assert w.sum() == pytest.approx(1.0, abs=1e-9)
    assert w.min() >= 0 and w.max() <= C * (1 + 1e-9)
    assert m.objective_ == pytest.approx(pi, abs=1e-8)
    assert m.theta_.sum() == pytest.approx(1.0, abs=1e-9)
    # Complementary slackness, with margins from the dense A_r.
    margins = _margins(X, T, m.metric_)
    residual = margins - m.rho_ + m.slacks_
    assert residual.min() >= -1e-7
    assert np.all(np.abs(residual[w > 1e-9]) < 1e-7)
    assert np.all(np.abs(w[m.slacks_ > 1e-9] - C) < 1e-9)
    for th, F in zip(m.theta_, m.bases_, strict=True):
        reduced = w @ _margins(X, T, F.T @ F)
        assert reduced <= pi + 1e-7
        if th > 1e-9:
            assert reduced == pytest.approx(pi, abs=1e-7)


def test_certificate_at_termination():
    X, T = _problem(seed=5)
    m = pl.PSDBoost(solver="column-generation", tol=1e-6).fit(X, pl.Triplets(T))
    w = m.best_dual_weights_
    assert w.sum() == pytest.approx(1.0) and w.min() >= 0 and w.max() <= m.C_ * (1 + 1e-9)
    lam = np.linalg.eigvalsh(np.einsum("r,rij->ij", w, _dense_A(X, T)))[-1]
    assert lam == pytest.approx(m.upper_bound_, rel=1e-9, abs=1e-12)
    assert lam <= m.objective_ + m.eps_
    assert min(m.lambda_max_history_) == pytest.approx(m.upper_bound_)


@pytest.mark.parametrize("kwargs", [{}, {"n_columns": 1, "smoothing": 0.0},
                                    {"eigen_solver": "lanczos"},
                                    {"max_bases": 8, "max_iter": 150}])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_objective_history_never_decreases(kwargs):
    # Every added column can only raise the restricted master value (aggregation keeps
    # the current X feasible); allowance: HiGHS's 1e-7 feasibility tolerance.
    X, T = _problem(d=6, seed=6)
    m = pl.PSDBoost(solver="column-generation", tol=1e-7, **kwargs).fit(X, pl.Triplets(T))
    h = np.array(m.objective_history_)
    assert np.all(np.diff(h) >= -1e-7 * max(1.0, np.abs(h).max()))
    assert h[-1] <= min(m.lambda_max_history_) + 1e-12


def test_master_recovers_when_highs_reports_unknown():
    # On these heart triplets at C = 1 / (0.2 t) the optimum of (3) is about 0 and one
    # master solve used to end in HiGHS's "Unknown" status (dual infeasibilities after
    # its cleanup); the fit must reach the optimum, certified by the interior-point method.
    from sklearn.model_selection import train_test_split

    from psdlearn.psdboost.ipm import solve_ipm

    X, y = pl.datasets.load("heart")
    X, _, y, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=1)
    T = pl.triplets_from_labels(X, y)
    m = pl.PSDBoost(C=1 / (0.2 * len(T)), solver="column-generation",
                    random_state=1).fit(X, pl.Triplets(T))
    ref = solve_ipm(X, T, m.C_)
    assert m.converged_
    assert abs(m.objective_ - ref.objective) <= m.eps_


def test_convergence_warning_at_max_iter():
    X, T = _problem(d=8, t=60, seed=7)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        pl.PSDBoost(max_iter=1, tol=0.0).fit(X, pl.Triplets(T))


def test_fit_from_labels_uses_nearest_neighbour_triplets():
    X, y = pl.datasets.make_triplet_synthetic(90, 6, random_state=0)
    m = pl.PSDBoost(n_neighbors=1, n_triplets=50, impostors="nearest",
                    random_state=0).fit(X, y)
    T = m.side_info_.triplets
    assert T.shape == (50, 3)
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    np.fill_diagonal(D2, np.inf)
    for i, j, k in T:
        assert y[j] == y[i] and y[k] != y[i]
        assert D2[i, j] == D2[i, y == y[i]].min()
        assert D2[i, k] == D2[i, y != y[i]].min()
    m2 = pl.PSDBoost(n_neighbors=1, n_triplets=50, impostors="nearest",
                     random_state=0).fit(X, y)
    assert np.array_equal(m2.side_info_.triplets, T) and np.allclose(m2.metric_, m.metric_)


def test_nearest_impostors_are_three_target_neighbours_with_nu_0_3():
    """impostors="nearest": three same-class neighbours per point, each with the nearest
    other-class point, and C = 1 / (0.3 t); n_neighbors=1 is the paper's rule."""
    X, y = pl.datasets.make_triplet_synthetic(90, 6, random_state=0)
    m = pl.PSDBoost(impostors="nearest", random_state=0).fit(X, y)
    assert m.get_params()["n_neighbors"] == "auto" and m.n_neighbors_ == 3
    assert m.get_params()["C"] == "auto"
    assert np.array_equal(m.side_info_.triplets, pl.triplets_from_labels(X, y, n_neighbors=3))
    assert len(m.side_info_.triplets) == 3 * len(X)  # every class has more than 3 points
    assert m.C_ == pytest.approx(1.0 / (0.3 * len(m.side_info_.triplets)))
    paper = pl.PSDBoost(n_neighbors=1, impostors="nearest", random_state=0).fit(X, y)
    assert np.array_equal(paper.side_info_.triplets, pl.triplets_from_labels(X, y))


def test_default_3nn_beats_euclidean_3nn_on_the_synthetic_set():
    """Held-out 3-NN accuracy in the default metric against the Euclidean metric on the
    set of the paper's Fig. 1 (measured: +4.4 points at this split, about +4 over 5 splits)."""
    from sklearn.model_selection import train_test_split
    from sklearn.neighbors import KNeighborsClassifier

    X, y = pl.datasets.make_triplet_synthetic(600, 24, random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    m = pl.PSDBoost(random_state=0).fit(Xtr, ytr)

    def accuracy(A, B):
        return KNeighborsClassifier(n_neighbors=3).fit(A, ytr).score(B, yte)

    assert accuracy(m.transform(Xtr), m.transform(Xte)) >= accuracy(Xtr, Xte) + 0.02


@pytest.mark.sdp
@pytest.mark.parametrize("seed,C", [(0, "auto"), (1, 0.05), (2, 1.0), (3, "auto")])
def test_objective_equals_sdp_optimum(seed, C):
    pytest.importorskip("cvxpy")
    from psdlearn.psdboost.sdp import solve_sdp

    X, T = _problem(d=5 + seed, seed=seed)
    m = pl.PSDBoost(C=C, tol=1e-7, solver="column-generation").fit(X, pl.Triplets(T))
    ref = solve_sdp(X, T, m.C_)
    assert ref.status == "optimal"
    assert m.upper_bound_ - m.objective_ <= m.eps_
    scale = max(abs(ref.objective), 1e-3 * np.mean(np.abs(_margins(X, T, np.eye(5 + seed)))))
    assert abs(m.objective_ - ref.objective) <= 1e-4 * scale
    # The restricted master value converges to the SDP optimum from below.
    assert m.objective_history_[-1] <= ref.objective + 1e-4 * scale
    assert np.all(np.array(m.objective_history_) <= ref.objective + 1e-4 * scale)
    # The SDP's own metric, scored with the optimal slacks xi = max(rho - margin, 0),
    # gives the same value (checks the reference's margins against our dense A_r).
    rho_ref = ref.rho - m.C_ * np.maximum(ref.rho - _margins(X, T, ref.metric), 0).sum()
    assert rho_ref == pytest.approx(ref.objective, abs=1e-4 * scale)


@pytest.mark.sdp
def test_paper_algorithm_matches_sdp():
    pytest.importorskip("cvxpy")
    from psdlearn.psdboost.sdp import solve_sdp

    X, T = _problem(d=4, t=25, seed=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = pl.PSDBoost(n_columns=1, smoothing=0.0, tol=1e-7, max_iter=5000,
                        solver="column-generation").fit(X, pl.Triplets(T))
    ref = solve_sdp(X, T, m.C_)
    assert m.objective_ == pytest.approx(ref.objective, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("seed,t,C", [(0, 80, 1 / 16), (1, 80, 1 / 16), (2, 300, 0.5)])
def test_row_generation_master_equals_full_lp(seed, t, C):
    # The master keeps only the triplet rows it needs (adding violated rows, dropping
    # far non-binding ones); its value and duals must be those of (P1) over all rows,
    # solved here in one piece by scipy's HiGHS.
    from scipy.optimize import linprog

    from psdlearn.psdboost._master import RestrictedMaster

    rng = np.random.default_rng(seed)
    master = RestrictedMaster(t, C)
    history, n_rows = [], []
    for m in (3, 4, 5, 2, 2, 2):
        master.add_columns(rng.normal(0.3, 1.0, size=(t, m)))
        pi, w, theta, rho, xi, _ = master.solve()
        A = master.coefficients
        M = A.shape[1]
        # Variables [rho, xi, theta]; minimize -(rho - C sum xi).
        cost = np.r_[-1.0, np.full(t, C), np.zeros(M)]
        A_ub = np.hstack([np.ones((t, 1)), -np.eye(t), -A])
        A_eq = np.r_[0.0, np.zeros(t), np.ones(M)][None]
        full = linprog(cost, A_ub=A_ub, b_ub=np.zeros(t), A_eq=A_eq, b_eq=[1.0],
                       bounds=[(None, None)] + [(0, None)] * (t + M), method="highs")
        assert full.status == 0
        assert pi == pytest.approx(-full.fun, abs=1e-9)
        assert rho - C * xi.sum() == pytest.approx(pi, abs=1e-9)
        # Primal feasible for all t rows, dual feasible for (D1) with w = 0 off the model.
        assert np.all(A @ theta - rho + xi >= -1e-9)
        assert w.sum() == pytest.approx(1.0) and w.min() >= 0 and w.max() <= C + 1e-12
        assert np.all(w @ A <= pi + 1e-9)
        outside = np.setdiff1d(np.arange(t), master.rows)
        assert np.all(w[outside] == 0) and np.all(xi[outside] == 0)
        history.append(pi)
        n_rows.append(len(master.rows))
    assert max(n_rows) < t  # the rows that never bind stayed out of the model
    if t == 300:
        assert min(np.diff(n_rows)) < 0  # rows were dropped, and the optimum kept
    assert np.all(np.diff(history) >= -1e-12)
    # Dropping columns at theta = 0 with non-binding dual constraints leaves the optimum.
    drop = master.slack_columns()
    if len(drop):
        master.delete_columns(drop)
        assert master.solve()[0] == pytest.approx(history[-1], abs=1e-9)


def test_verbose_reports_progress_without_changing_the_fit(capsys):
    X, T = _problem(seed=3)
    quiet = pl.PSDBoost(random_state=0).fit(X, pl.Triplets(T))
    loud = pl.PSDBoost(random_state=0, verbose=1).fit(X, pl.Triplets(T))
    captured = capsys.readouterr()
    assert "PSDBoost" in captured.err and "gap=" in captured.err
    assert captured.out == ""
    assert loud.objective_ == quiet.objective_
    assert np.array_equal(loud.metric_, quiet.metric_)


# ---------------------------------------------------------------- scikit-learn conventions


@parametrize_with_checks([pl.PSDBoost(random_state=0)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_fit_transform_matches_fit_then_transform():
    X, y = pl.datasets.make_triplet_synthetic(60, 5, random_state=1)
    Z = pl.PSDBoost(random_state=0).fit_transform(X, y)
    m = pl.PSDBoost(random_state=0).fit(X, y)
    assert np.allclose(Z, m.transform(X))
    assert Z.shape == (60, m.rank_) and m.components_.shape == (m.rank_, 5)


def test_converged_and_iteration_count():
    X, T = _problem(seed=2)
    m = pl.PSDBoost(tol=1e-6).fit(X, pl.Triplets(T))
    assert m.converged_ is True
    assert m.n_iter_ == len(m.objective_history_) == len(m.time_history_)
    assert m.upper_bound_ - m.objective_ <= m.eps_
    assert m.fit_time_ >= m.time_history_[-1] > 0
    with pytest.warns(ConvergenceWarning):
        capped = pl.PSDBoost(max_iter=2, tol=0.0).fit(X, pl.Triplets(T))
    assert capped.converged_ is False and capped.n_iter_ == 2


# ---------------------------------------------------------------- side information


def test_labels_with_unlabelled_points_and_any_label_type():
    X, y = pl.datasets.make_triplet_synthetic(90, 6, random_state=0)
    partial = y.copy()
    partial[::3] = -1
    m = pl.PSDBoost(random_state=0).fit(X, partial)
    assert np.all(partial[m.side_info_.triplets] != -1)  # unlabelled points are never used
    # String labels: only equality of labels matters, "-1" still means unlabelled.
    names = np.array(["a", "b", "c"])[y].astype(object)
    names[::3] = "-1"
    m2 = pl.PSDBoost(random_state=0).fit(X, names)
    assert np.array_equal(m2.side_info_.triplets, m.side_info_.triplets)
    assert np.allclose(m2.metric_, m.metric_)


def test_pairs_give_the_triplets_of_their_shared_points():
    X, y = pl.datasets.make_triplet_synthetic(60, 4, random_state=2)
    C = pl.PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    m = pl.PSDBoost(random_state=0).fit(X, C)
    must = {tuple(sorted(p)) for p in C.must_link.tolist()}
    cannot = {tuple(sorted(p)) for p in C.cannot_link.tolist()}
    assert len(m.side_info_.triplets) > 0
    for i, j, k in m.side_info_.triplets:
        assert tuple(sorted((i, j))) in must and tuple(sorted((i, k))) in cannot
    # The same pairs as an (m, 3) array of [i, j, +1/-1] rows give the same fit.
    m2 = pl.PSDBoost(random_state=0).fit(X, C.to_array())
    assert np.array_equal(m2.side_info_.triplets, m.side_info_.triplets)
    assert np.allclose(m2.metric_, m.metric_)
    sub = pl.PSDBoost(n_triplets=10, random_state=0).fit(X, C)
    assert len(sub.side_info_.triplets) == 10


def test_triplets_are_used_as_given():
    X, T = _problem(seed=1)
    m = pl.PSDBoost(n_triplets=5, random_state=0).fit(X, pl.Triplets(T, n_samples=len(X)))
    assert np.array_equal(m.side_info_.triplets, T)  # n_triplets subsamples derived triplets only
    m2 = pl.PSDBoost(n_triplets=5, random_state=0).fit(X, pl.Triplets(T))
    assert np.allclose(m2.metric_, m.metric_)


@pytest.mark.parametrize("y,match", [
    (None, "requires y to be passed"),
    (np.zeros(30, dtype=int), "1 class"),
    (np.full(30, -1), "0 class"),
    (np.r_[0, 1, 2, np.full(27, -1)], "needs a class with at least 2 labelled samples"),
    (np.zeros(29, dtype=int), "length 29 but X has 30"),
    (np.array([[0, 1, 1], [2, 3, -1]]), "share the sample i"),
    (np.zeros((4, 2), dtype=int), "shape"),
])
def test_side_information_errors(y, match):
    X, _ = _problem()
    with pytest.raises(ValueError, match=match):
        pl.PSDBoost().fit(X, y)


def test_sparse_x_is_rejected_as_the_tags_say():
    import scipy.sparse as sp

    X, y = pl.datasets.make_triplet_synthetic(30, 4, random_state=0)
    assert pl.PSDBoost().__sklearn_tags__().input_tags.sparse is False
    with pytest.raises(TypeError, match="dense data is required"):
        pl.PSDBoost().fit(sp.csr_matrix(X), y)


# ---------------------------------------------------------------- quiet and interruptible


def test_a_fit_in_a_fresh_process_writes_nothing_to_stdout():
    # HiGHS prints its banner from C on the first solver object of a process unless its
    # log is off before anything else is done with it: only a fresh process shows it.
    code = ("import psdlearn as pl\n"
            "X, y = pl.datasets.load('iris')\n"
            "m = pl.PSDBoost(random_state=0).fit(X, y)\n"
            "m.transform(X)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout == b""
    assert b"HiGHS" not in out.stderr


def _slow_problem():
    """A fit of many master solves: Algorithm 1 (one column, no smoothing) tails off."""
    X, y = pl.datasets.make_triplet_synthetic(400, 24, random_state=0)
    T = pl.triplets_from_labels(X, y, random_state=0)
    return X, T, pl.PSDBoost(n_columns=1, smoothing=0.0, tol=0.0, max_iter=100_000,
                             solver="column-generation")


def _check_kept_iterate(m, X, T):
    """The fitted attributes are one complete master solve: a feasible point of (3)."""
    assert m.converged_ is False
    assert m.n_iter_ == len(m.objective_history_) == len(m.time_history_)
    assert m.objective_ == pytest.approx(m.objective_history_[-1], abs=1e-9)
    M = m.metric_
    assert np.trace(M) == pytest.approx(1.0) and np.linalg.eigvalsh(M).min() >= -1e-10
    margins = _margins(X, T, M)
    assert np.all(margins - m.rho_ + m.slacks_ >= -1e-6 * np.abs(margins).max())
    assert m.objective_ == pytest.approx(m.rho_ - m.C_ * m.slacks_.sum(), abs=1e-9)
    assert m.transform(X).shape == (len(X), m.rank_)


def test_sigint_from_a_timer_keeps_the_last_complete_master_solve(monkeypatch):
    from psdlearn.psdboost._master import RestrictedMaster

    X, T, model = _slow_problem()
    sent = []

    def interrupt():
        sent.append(time.perf_counter())
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    timer = threading.Timer(1.0, interrupt)
    solve = RestrictedMaster.solve

    def solve_then_arm(self):
        # The timer starts once a first master solve has completed, however loaded the
        # machine: the signal then always finds an iterate to keep.
        result = solve(self)
        if timer.ident is None:
            timer.start()
        return result

    monkeypatch.setattr(RestrictedMaster, "solve", solve_then_arm)
    try:
        with pytest.warns(FitInterruptedWarning, match="interrupted"):
            model.fit(X, pl.Triplets(T))
        stopped = time.perf_counter()
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped fit instead of stopping the column generation")
    finally:
        timer.cancel()
    # It stopped soon after the signal: a master solve and a pricing take milliseconds here.
    assert len(sent) == 1 and stopped - sent[0] < 5.0
    assert 0 < model.n_iter_ < model.max_iter
    _check_kept_iterate(model, X, T)


def test_interrupt_keeps_the_solve_before_it_and_reraises_without_one(monkeypatch):
    from psdlearn.psdboost._master import RestrictedMaster

    X, T, model = _slow_problem()
    reference = clone(model).set_params(max_iter=3)
    with pytest.warns(ConvergenceWarning):
        reference.fit(X, pl.Triplets(T))
    solve, calls = RestrictedMaster.solve, []

    def interrupted_solve(self):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return solve(self)

    monkeypatch.setattr(RestrictedMaster, "solve", interrupted_solve)
    with pytest.warns(FitInterruptedWarning, match="after 3 complete master solves"):
        model.fit(X, pl.Triplets(T))
    assert model.n_iter_ == 3
    assert model.objective_history_ == reference.objective_history_
    assert np.array_equal(model.metric_, reference.metric_)
    _check_kept_iterate(model, X, T)
    # Interrupted before any master solve completed: nothing to keep, the interrupt stands.
    calls.clear()
    calls.extend([1, 1, 1])
    with pytest.raises(KeyboardInterrupt):
        clone(model).fit(X, pl.Triplets(T))


# ------------------------------------------------------------ renamed names, output API
def test_fit_triplets_is_a_deprecated_alias_of_fit_with_triplets():
    X, T = _problem(seed=3)
    with pytest.warns(FutureWarning, match=r"fit_triplets.*deprecated.*fit\(X, psdlearn"):
        old = pl.PSDBoost(random_state=0).fit_triplets(X, T)
    new = pl.PSDBoost(random_state=0).fit(X, pl.Triplets(T))
    assert np.array_equal(old.metric_, new.metric_)
    assert old.objective_ == new.objective_ and old.solver_ == new.solver_


def test_side_info_holds_the_triplets_and_triplets_is_deprecated():
    X, y = pl.datasets.make_triplet_synthetic(60, 4, random_state=0)
    m = pl.PSDBoost(n_neighbors=2, impostors="nearest", random_state=0).fit(X, y)
    assert isinstance(m.side_info_, pl.Triplets) and m.side_info_.n_samples == len(X)
    assert np.array_equal(m.side_info_.triplets, pl.triplets_from_labels(X, y, n_neighbors=2))
    with pytest.warns(FutureWarning, match="triplets_ is deprecated.*side_info_.triplets"):
        assert np.array_equal(m.triplets_, m.side_info_.triplets)
    # the triplets kept give the same fit again
    again = pl.PSDBoost(random_state=0).fit(X, m.side_info_)
    assert np.allclose(again.metric_, m.metric_, atol=1e-10)
    with pytest.warns(FutureWarning):
        assert not hasattr(pl.PSDBoost(), "triplets_")


def test_mahalanobis_matrix_and_metric_in_nearest_neighbors():
    from sklearn.neighbors import NearestNeighbors

    X, y = pl.datasets.make_triplet_synthetic(60, 4, random_state=1)
    m = pl.PSDBoost(random_state=0).fit(X, y)
    M = m.get_mahalanobis_matrix()
    assert np.allclose(M, M.T, atol=1e-12)
    assert np.linalg.eigvalsh((M + M.T) / 2).min() >= -1e-10
    assert np.trace(M) == pytest.approx(1.0)
    assert np.allclose(M, m.components_.T @ m.components_, atol=1e-10)
    metric = m.get_metric()
    u, v = X[2], X[40]
    assert metric(u, v) == pytest.approx(np.sqrt((u - v) @ M @ (u - v)), rel=1e-8)
    Z = m.transform(X)
    dist, ind = NearestNeighbors(n_neighbors=4, metric=metric).fit(X).kneighbors(X[:12])
    dist_z, ind_z = NearestNeighbors(n_neighbors=4).fit(Z).kneighbors(Z[:12])
    assert np.array_equal(ind, ind_z)
    assert np.allclose(dist, dist_z, rtol=1e-8, atol=1e-12)


def test_set_output_pandas_and_per_row_transform():
    pd = pytest.importorskip("pandas")
    X, y = pl.datasets.make_triplet_synthetic(60, 4, random_state=2)
    m = pl.PSDBoost(random_state=0).fit(X, y)
    names = [f"psdboost{i}" for i in range(m.rank_)]
    assert list(m.get_feature_names_out()) == names
    out = m.set_output(transform="pandas").transform(X)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == names
    m.set_output(transform="default")
    # no embedding_: transform is a linear map, each row from its own point
    assert not hasattr(m, "embedding_")
    Z = m.transform(X)
    assert np.allclose(out.to_numpy(), Z)
    assert np.allclose(m.transform(X[5:6]), Z[5:6], rtol=1e-12, atol=0)
