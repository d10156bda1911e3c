"""Choosing gamma from constraints: NPKL.score, gamma="auto", ConstraintKFold, NPKLCV,
and GridSearchCV over the supervised transformers."""

import re
import warnings

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.svm import LinearSVC

import psdlearn as pl
from psdlearn.graph import knn_laplacian
from psdlearn.model_selection import NPKLCV, ConstraintKFold, must_link_groups
from psdlearn.npkl import gamma as gamma_module
from psdlearn.npkl.gamma import critical_gamma, loss_gradient_matrix


def _blobs(n=90, n_classes=3, d=3, seed=0, scale=2.5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=scale, size=(n_classes, d))
    y = np.arange(n) % n_classes
    return centers[y] + rng.normal(size=(n, d)), y


def _fit_quiet(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y)


# ------------------------------------------------------------------ ConstraintKFold
@pytest.mark.parametrize("groups", ["pairs", "components"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_folds_are_disjoint_cover_everything_and_stratified(groups, shuffle):
    _, y = _blobs(120)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    splits = list(ConstraintKFold(4, shuffle=shuffle, random_state=0,
                                  groups=groups).split(C))
    assert len(splits) == 4
    tests = np.concatenate([te for _, te in splits])
    assert np.array_equal(np.sort(tests), np.arange(C.n_pairs))  # disjoint and covering
    for train, test in splits:
        assert np.intersect1d(train, test).size == 0
        assert np.array_equal(np.union1d(train, test), np.arange(C.n_pairs))
        signs = C.signs[test]
        assert (signs == 1).any() and (signs == -1).any()
        if groups == "pairs":  # stratified: each fold holds its share of each sign
            assert abs(np.sum(signs == 1) - C.n_must / 4) <= 1
            assert abs(np.sum(signs == -1) - C.n_cannot / 4) <= 1


def test_component_folds_hold_out_nothing_the_training_pairs_imply():
    _, y = _blobs(150)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=1)
    leaks = {"pairs": 0, "components": 0}
    for groups in leaks:
        for train, test in ConstraintKFold(5, groups=groups).split(C):
            implied = pl.PairwiseConstraints(C.pairs[train], C.signs[train],
                                             C.n_samples).closure()
            known = {tuple(p) for p in implied.pairs.tolist()}
            leaks[groups] += sum(tuple(p) in known for p in C.pairs[test].tolist())
    assert leaks["components"] == 0
    assert leaks["pairs"] > 0  # the leak the option exists for is real on this protocol


def test_must_link_groups_keep_components_together():
    C = pl.PairwiseConstraints([[0, 1], [1, 2], [3, 4], [0, 3], [2, 4], [5, 6]],
                               [1, 1, 1, -1, -1, -1], n_samples=7)
    g = dict(zip(map(tuple, C.pairs.tolist()), must_link_groups(C), strict=True))
    assert g[(0, 1)] == g[(1, 2)] != g[(3, 4)]
    assert g[(0, 3)] == g[(2, 4)]  # both cannot-links join components {0,1,2} and {3,4}
    assert len({g[(0, 1)], g[(3, 4)], g[(0, 3)], g[(5, 6)]}) == 4


def test_split_of_an_array_indexes_its_rows():
    arr = np.array([[5, 6, -1], [0, 1, 1], [3, 2, 1], [0, 4, -1], [1, 2, 1], [3, 6, -1]])
    for train, test in ConstraintKFold(3).split(arr):
        # indices are rows of arr (not of its sorted copy): one pair of each sign per fold
        assert sorted(arr[test, 2].tolist()) == [-1, 1]
        assert np.intersect1d(train, test).size == 0
    with pytest.raises(ValueError, match="4 folds need at least 4"):
        list(ConstraintKFold(4).split(arr))


def test_constraint_kfold_is_a_scikit_learn_splitter_over_every_form_of_pairs():
    from sklearn.model_selection import BaseCrossValidator, check_cv

    X, y = _blobs(60)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    for groups in ("pairs", "components"):
        cv = ConstraintKFold(3, groups=groups)
        assert isinstance(cv, BaseCrossValidator) and check_cv(cv) is cv
        assert cv.get_n_splits() == 3 and "groups=" in repr(cv)
        ref = list(cv.split(C))
        for form, (pairs, signs) in {"indices": (C.pairs, C.signs),
                                     "rows": (C.to_array(), None)}.items():
            got = list(cv.split(pairs, signs))
            for (tr, te), (tr0, te0) in zip(got, ref, strict=True):
                np.testing.assert_array_equal(te, te0, err_msg=form)
                np.testing.assert_array_equal(tr, tr0, err_msg=form)
        # pairs of points: the points are numbered by value, so the folds differ from
        # those of the indices, but they are folds of the same kind
        tests = [te for _, te in cv.split(X[C.pairs], C.signs)]
        assert np.array_equal(np.sort(np.concatenate(tests)), np.arange(C.n_pairs))
        assert all((C.signs[te] > 0).any() and (C.signs[te] < 0).any() for te in tests)
        if groups == "components":
            g = must_link_groups(C)
            assert all(np.intersect1d(g[te], np.delete(g, te)).size == 0 for te in tests)
        # the folds are a property of the set of pairs, not of the order of the rows
        perm = np.random.default_rng(0).permutation(C.n_pairs)
        flipped = C.pairs[perm][:, ::-1]
        for (_, te), (_, te0) in zip(cv.split(flipped, C.signs[perm]), ref, strict=True):
            np.testing.assert_array_equal(np.sort(perm[te]), te0)


def test_constraint_kfold_input_errors_and_the_renamed_argument():
    _, y = _blobs(30)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    cv = ConstraintKFold(3)
    with pytest.raises(ValueError, match="y .* is required"):
        list(cv.split(C.pairs))
    with pytest.raises(ValueError, match=r"\+1 .* or -1"):
        list(cv.split(C.pairs, (C.signs > 0).astype(int)))
    with pytest.raises(ValueError, match="entries but X holds"):
        list(cv.split(C.pairs, C.signs[:-1]))
    with pytest.raises(ValueError, match="X must be"):
        list(cv.split(np.zeros((4, 5))))
    with pytest.warns(FutureWarning, match="renamed 'X'"):
        old = list(cv.split(constraints=C))
    for (tr, te), (tr0, te0) in zip(old, cv.split(C), strict=True):
        np.testing.assert_array_equal(te, te0)
        np.testing.assert_array_equal(tr, tr0)
    with pytest.warns(FutureWarning, match="renamed 'X'"):
        assert cv.get_n_splits(constraints=C) == 3


# ------------------------------------------------------------------------- score
def test_score_properties():
    X, y = _blobs(90)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    held = pl.PairwiseConstraints.from_labels(y, 200, 200, random_state=5)
    model = _fit_quiet(pl.NPKL(gamma=1.0, random_state=0), X, C)
    s = model.score(X, held)
    assert 0.9 < s <= 1.0
    flipped = pl.PairwiseConstraints(held.pairs, -held.signs, held.n_samples)
    # AUC of the reversed labels is exactly 1 - AUC (ties count half either way)
    assert model.score(X, flipped) == pytest.approx(1.0 - s, abs=1e-12)
    assert model.score(None, held) == s and model.score(X.copy(), held) == s
    # invariant to the scale of K, which gamma changes
    E = model.embedding_
    model.embedding_ = 7.0 * E
    assert model.score(X, held) == pytest.approx(s, abs=1e-12)
    # a random embedding separates nothing
    rng = np.random.default_rng(0)
    model.embedding_ = rng.normal(size=E.shape)
    many = pl.PairwiseConstraints.from_labels(y, 1200, 1200, random_state=2)
    assert abs(model.score(X, many) - 0.5) < 0.05
    # a zero kernel scores chance exactly (all cosines 0: one tie)
    model.embedding_ = np.zeros_like(E)
    assert model.score(X, held) == 0.5
    with pytest.raises(ValueError, match="must-links and cannot-links"):
        model.score(X, pl.PairwiseConstraints(held.must_link, np.ones(held.n_must), 90))


def test_score_on_new_points_uses_transform():
    X, y = _blobs(120)
    C = pl.PairwiseConstraints.from_labels(y[:90], 0.6, 0.6, random_state=0)
    model = _fit_quiet(pl.NPKL(random_state=0), X[:90], C)
    held = pl.PairwiseConstraints.from_labels(y[90:], 40, 40, random_state=1)
    Z = model.transform(X[90:])
    i, j = held.pairs.T
    cos = np.einsum("ij,ij->i", Z[i], Z[j]) / np.linalg.norm(Z[i], axis=1) / np.linalg.norm(
        Z[j], axis=1)
    from sklearn.metrics import roc_auc_score
    assert model.score(X[90:], held) == pytest.approx(roc_auc_score(held.signs > 0, cos))


def test_score_with_a_precomputed_laplacian_is_transductive():
    X, y = _blobs(60)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    held = pl.PairwiseConstraints.from_labels(y, 50, 50, random_state=3)
    # solved to the optimum (unique for the square loss): the kNN fit starts from the
    # points in the order of their values, the precomputed one in input order
    solve = {"loss": "square", "tol": 1e-10, "max_iter": 2000, "random_state": 0}
    model = _fit_quiet(pl.NPKL(graph="precomputed", **solve), L, C)
    ref = _fit_quiet(pl.NPKL(**solve), X, C)
    assert model.score(L, held) == pytest.approx(ref.score(X, held))
    with pytest.raises(ValueError, match="precomputed"):
        model.score(X, held)


# ---------------------------------------------------------------- gamma = "auto"
@pytest.mark.parametrize("loss", ["hinge", "square", "pcp"])
def test_critical_gamma_is_where_L_minus_gamma_G_stops_being_psd(loss):
    X, y = _blobs(60)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    g0 = critical_gamma(L, C.pairs, C.signs, loss)
    G = loss_gradient_matrix(60, C.pairs, C.signs, loss).toarray()
    assert np.allclose(G, G.T)
    lo = sl.eigvalsh(L.toarray() - 0.999 * g0 * G)[0]
    hi = sl.eigvalsh(L.toarray() - 1.001 * g0 * G)[0]
    assert lo > 0 > hi


@pytest.mark.parametrize("loss", ["hinge", "square", "pcp"])
@pytest.mark.parametrize("n_pairs", [3, 12])
def test_critical_gamma_of_few_pairs_among_many_points(loss, n_pairs):
    # the dense solve runs on the Schur complement of the rows no pair touches (most of
    # them here): gamma_0 is still where L - gamma G stops being positive semidefinite
    X, y = _blobs(200)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, n_pairs, n_pairs, random_state=1)
    assert len(np.unique(C.pairs)) < 100
    g0 = critical_gamma(L, C.pairs, C.signs, loss)
    G = loss_gradient_matrix(200, C.pairs, C.signs, loss).toarray()
    assert sl.eigvalsh(L.toarray() - 0.999 * g0 * G)[0] > 0
    assert sl.eigvalsh(L.toarray() - 1.001 * g0 * G)[0] < 0


@pytest.mark.parametrize("n_pairs", [30, 0.6])
def test_critical_gamma_by_lobpcg_matches_the_dense_pencil(monkeypatch, n_pairs):
    # 30 + 30 pairs: lambda_max about 12; 0.6 n + 0.6 n: about 80, where LOBPCG's relative
    # stopping residual is 0.8 (an absolute tolerance of 1e-2 would ask 80 times more)
    X, y = _blobs(400, d=2)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, n_pairs, n_pairs, random_state=0)
    dense = critical_gamma(L, C.pairs, C.signs, "square")
    monkeypatch.setattr(gamma_module, "_DENSE_MAX", 100)
    assert critical_gamma(L, C.pairs, C.signs, "square") == pytest.approx(dense, rel=1e-5)


def test_critical_gamma_survives_a_lobpcg_run_that_returns_its_start(monkeypatch):
    """scipy's LOBPCG returns its iterate of smallest absolute residual, which can be the
    start: a Ritz value below a pair's two-point Rayleigh quotient. The one-vector runs
    here are made to do exactly that; the wider run then finds lambda_max."""
    X, y = _blobs(400, d=2)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, 30, 30, random_state=0)
    dense = critical_gamma(L, C.pairs, C.signs, "square")
    monkeypatch.setattr(gamma_module, "_DENSE_MAX", 100)
    lobpcg, widths = gamma_module.lobpcg, []

    def stuck(A, X, B=None, **kwargs):
        widths.append(X.shape[1])
        if X.shape[1] > 1:
            return lobpcg(A, X, B=B, **kwargs)
        x = X[:, 0]
        return np.array([(x @ (A @ x)) / (x @ (B @ x))]), X

    monkeypatch.setattr(gamma_module, "lobpcg", stuck)
    assert critical_gamma(L, C.pairs, C.signs, "square") == pytest.approx(dense, rel=1e-5)
    assert widths[-1] == gamma_module._LOBPCG_WIDE_BLOCK


def test_critical_gamma_needs_no_wider_run_where_lobpcg_converges(monkeypatch):
    X, y = _blobs(400, d=2)
    L = knn_laplacian(X)
    monkeypatch.setattr(gamma_module, "_DENSE_MAX", 100)
    monkeypatch.setattr(gamma_module, "_lobpcg_wide", None)  # a call would raise
    for n_pairs in (30, 0.6):
        C = pl.PairwiseConstraints.from_labels(y, n_pairs, n_pairs, random_state=0)
        for loss in ("square", "hinge"):
            assert np.isfinite(critical_gamma(L, C.pairs, C.signs, loss))


def test_verbose_gamma_0_shows_its_products_and_changes_nothing(capsys):
    # minutes at 10^7 points between the graph and the solver's first bar: the eigen-solve
    # has a bar of its own; it counts the products with G and leaves them as they were
    X, y = _blobs(600, d=2)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    quiet = pl.NPKL(loss="square", rank=3, random_state=0, max_iter=2,
                    certificate_tol=None).fit(X, C)
    assert capsys.readouterr().err == ""
    loud = pl.NPKL(loss="square", rank=3, random_state=0, max_iter=2, certificate_tol=None,
                   verbose=1).fit(X, C)
    err = capsys.readouterr().err
    counts = [int(c) for c in re.findall(r"NPKL gamma_0 \(LOBPCG\): (\d+)products", err)]
    assert counts and max(counts) > 10
    assert loud.gamma_ == quiet.gamma_
    np.testing.assert_array_equal(loud.embedding_, quiet.embedding_)


def test_critical_gamma_from_the_vectors_of_fewer_pairs_matches_the_dense_pencil(monkeypatch):
    # partial_fit's gamma_0: LOBPCG started from the block of the pencil without the new
    # pairs, no scale run, the same accuracy as from a random block
    X, y = _blobs(400, d=2)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    keep = np.arange(C.n_pairs) % 10 != 0
    dense = critical_gamma(L, C.pairs, C.signs, "square")
    monkeypatch.setattr(gamma_module, "_DENSE_MAX", 100)
    old, vectors = critical_gamma(L, C.pairs[keep], C.signs[keep], "square",
                                  return_vectors=True)
    assert vectors.shape == (400, 1) and old != pytest.approx(dense, rel=1e-3)
    runs = []
    lobpcg = gamma_module.lobpcg
    monkeypatch.setattr(gamma_module, "lobpcg", lambda *a, **k: runs.append(k) or lobpcg(*a, **k))
    warm = critical_gamma(L, C.pairs, C.signs, "square", start=vectors)
    assert warm == pytest.approx(dense, rel=1e-5)
    assert len(runs) == 1  # no scale run
    # a degenerate block (a zero vector: no Ritz value) is replaced by a random one
    cold = critical_gamma(L, C.pairs, C.signs, "square", start=np.zeros((400, 1)))
    assert cold == pytest.approx(dense, rel=1e-5) and len(runs) == 3


def test_critical_gamma_with_few_constrained_rows_among_many(monkeypatch):
    # 8 pairs among 22,500 points: a random start block has almost no G-energy, and scipy's
    # LOBPCG hands back the iterate of smallest absolute residual. The exact value from the
    # constrained rows alone: lambda_max(G, L) = lambda_max(G_CC (L^-1)_CC), G living on C
    side = 150
    grid = sp.diags([np.ones(side - 1)], [1], shape=(side, side))
    path = sp.diags(np.r_[1.0, 2.0 * np.ones(side - 2), 1.0]) - grid - grid.T
    L = (sp.kron(path, sp.eye(side)) + sp.kron(sp.eye(side), path)
         + 0.01 * sp.eye(side * side)).tocsr()
    n = L.shape[0]
    rng = np.random.default_rng(0)
    pairs = np.sort(rng.choice(n, size=(8, 2), replace=False), axis=1)
    signs = np.array([1, -1, 1, 1, -1, 1, -1, 1])
    G = loss_gradient_matrix(n, pairs, signs, "square")
    rows = np.unique(pairs)
    E = np.zeros((n, len(rows)))
    E[rows, np.arange(len(rows))] = 1.0
    inv_cc = E.T @ spla.splu(L.tocsc()).solve(E)
    exact = 1.0 / np.max(np.linalg.eigvals(G[rows][:, rows].toarray() @ inv_cc).real)
    scales = []
    lobpcg = gamma_module.lobpcg

    def recorded(*args, **kwargs):
        vals, X = lobpcg(*args, **kwargs)
        scales.append(float(np.max(vals)))
        return vals, X

    monkeypatch.setattr(gamma_module, "lobpcg", recorded)
    assert critical_gamma(L, pairs, signs, "square") == pytest.approx(exact, rel=1e-5)
    # the scale run ends near lambda_max, not at its start (whose Ritz value is ~1e-4 of
    # it): the second run's tolerance is then relative to lambda_max, as intended
    assert len(scales) == 2 and scales[0] > 0.5 / exact


def test_zero_kernel_below_critical_gamma_by_the_exact_sdp():
    pytest.importorskip("cvxpy")
    X, y = _blobs(30)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, 15, 15, random_state=0)
    g0 = critical_gamma(L, C.pairs, C.signs, "hinge")
    traces = {}
    for f in (0.8, 1.25):
        m = _fit_quiet(pl.NPKL(solver="sdp", graph="precomputed", gamma=f * g0), L, C)
        traces[f] = np.sum(m.embedding_**2)
    assert traces[0.8] < 1e-5 and traces[1.25] > 1e-2


def test_auto_gamma_is_nonzero_where_a_small_gamma_gives_k_zero():
    # a few pairs among many points: the regime of the 1e6-point benchmark, scaled down
    X, y = pl.datasets.make_two_gaussians(1200, n_features=3, random_state=0)
    L = knn_laplacian(X, n_neighbors=10)
    C = pl.PairwiseConstraints.from_labels(y, 8, 8, random_state=0)
    g0 = critical_gamma(L, C.pairs, C.signs, "hinge")
    with pytest.warns(UserWarning, match="kernel is zero"):
        pl.NPKL(graph="precomputed", gamma=0.5 * g0, random_state=0).fit(L, C)
    model = _fit_quiet(pl.NPKL(graph="precomputed", gamma="auto", random_state=0), L, C)
    assert model.gamma_ == pytest.approx(gamma_module.AUTO_GAMMA_FACTOR * g0)
    E = model.embedding_
    assert np.mean(np.sum(E**2, axis=1)) > 0
    margins = C.signs * np.einsum("ij,ij->i", E[C.pairs[:, 0]], E[C.pairs[:, 1]])
    assert np.mean(margins > 0) >= 0.9
    assert pl.NPKL(gamma=1.0).get_params()["gamma"] == 1.0  # a float stays reachable


# ------------------------------------------------------------------- warm_start
def test_warm_start_reaches_the_same_optimum_in_fewer_sweeps():
    X, y = _blobs(90)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    cold = _fit_quiet(pl.NPKL(loss="square", gamma=2.0, random_state=0, tol=1e-7), X, C)
    warm = _fit_quiet(pl.NPKL(loss="square", gamma=1.0, random_state=1, tol=1e-7,
                              warm_start=True), X, C)
    _fit_quiet(warm.set_params(gamma=2.0), X, C)
    assert warm.objective_history_[0] < cold.objective_history_[0]  # it started near
    # the square loss is convex in K: both reach one optimum
    assert warm.objective() == pytest.approx(cold.objective(), rel=1e-4)
    Kw, Kc = warm.embedding_ @ warm.embedding_.T, cold.embedding_ @ cold.embedding_.T
    assert np.linalg.norm(Kw - Kc) <= 1e-2 * np.linalg.norm(Kc)
    again = warm.n_iter_
    _fit_quiet(warm, X, C)  # same gamma: starts at the optimum
    assert warm.n_iter_ < again


def test_warm_start_never_starts_from_a_zero_kernel():
    X, y = _blobs(90)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    model = _fit_quiet(pl.NPKL(gamma=1e-4, warm_start=True, random_state=0), X, C)
    assert np.sum(model.embedding_**2) < 1e-8
    _fit_quiet(model.set_params(gamma=1.0), X, C)
    assert np.mean(np.sum(model.embedding_**2, axis=1)) > 0.1


# ------------------------------------------------------------------------- NPKLCV
def test_npklcv_params_follow_npkl_and_clone():
    cv = NPKLCV(gammas=3, cv=2, loss="square", n_neighbors=7)
    params = cv.get_params()
    assert params["loss"] == "square" and params["n_neighbors"] == 7 and params["gammas"] == 3
    assert "gamma" not in params and "warm_start" not in params
    assert clone(cv).get_params() == params
    with pytest.raises(TypeError, match="unexpected"):
        NPKLCV(gamma=1.0)


def test_npklcv_extends_to_new_points():
    """NPKLCV hands over the refit's lazily chosen out-of-sample neighbourhood (its private
    state, not only the attributes ending in ``_``), so new points can be transformed."""
    X, y = _blobs(90)
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    cv = _fit_quiet(NPKLCV(gammas=2, cv=2, max_iter=50, certificate_tol=None, random_state=0),
                    X, C)
    assert cv.n_neighbors_transform_ in {k * cv.n_neighbors_ for k in (1, 2, 3, 4)}
    assert np.all(np.isfinite(cv.transform(X[:5] + 0.1)))


def test_npklcv_picks_the_gamma_that_learns_something():
    X, y = _blobs(90)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    g0 = critical_gamma(L, C.pairs, C.signs, "hinge")
    folds = list(ConstraintKFold(3).split(C))
    # below the gamma_0 of every training fold K = 0 is optimal: it predicts nothing
    low = 0.5 * min(critical_gamma(L, C.pairs[tr], C.signs[tr], "hinge") for tr, _ in folds)
    grid = [low, 30 * g0]
    # (solved to the end: an unfinished fit there is small, not zero, and its directions
    # still rank pairs)
    cv = _fit_quiet(NPKLCV(gammas=grid, cv=folds, graph="precomputed", cv_tol=1e-9,
                           random_state=0), L, C)
    assert cv.scores_.shape == (2, 3)
    assert np.allclose(cv.scores_[0], 0.5)
    assert np.all(cv.scores_[1] > 0.8)
    assert cv.gamma_ == pytest.approx(30 * g0)
    assert np.array_equal(cv.gammas_, np.sort(grid))
    # the refit is NPKL on every constraint with the chosen gamma
    ref = _fit_quiet(pl.NPKL(graph="precomputed", gamma=cv.gamma_, random_state=0), L, C)
    assert cv.objective() == pytest.approx(ref.objective(), rel=1e-3)
    assert cv.side_info_.n_pairs == C.n_pairs and cv.embedding_.shape == (90, cv.rank_)


def test_npklcv_default_grid_and_transform():
    X, y = _blobs(90)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    cv = _fit_quiet(NPKLCV(gammas=4, cv=ConstraintKFold(3, groups="components"),
                           random_state=0), X, C)
    assert np.allclose(cv.gammas_ / cv.gamma0_,
                       gamma_module.AUTO_GAMMA_FACTOR * np.logspace(-1, 2, 4))
    assert cv.cv_n_iter_.shape == (4, 3) and cv.gamma_ in cv.gammas_
    assert cv.transform(X[:5]).shape == (5, cv.rank_)
    assert cv.score(X, C) > 0.9


# ------------------------------------------------- GridSearchCV over the transformers
def test_gridsearch_over_psdboost_pipeline():
    X, y = _blobs(60, d=4, scale=1.5)
    pipe = Pipeline([("metric", pl.PSDBoost(max_iter=30)),
                     ("knn", KNeighborsClassifier(3))])
    search = _fit_quiet(GridSearchCV(pipe, {"metric__C": [0.01, 1.0]}, cv=3), X, y)
    assert search.cv_results_["mean_test_score"].shape == (2,)
    assert search.best_params_["metric__C"] in (0.01, 1.0)
    assert search.score(X, y) > 0.5


def test_gridsearch_over_kernel_metric_learner_pipeline():
    X, y = _blobs(60, d=4, scale=1.5)
    pipe = Pipeline([("kml", pl.KernelMetricLearner(random_state=0)),
                     ("knn", KNeighborsClassifier(3))])
    grid = {"kml__kernel_gamma": [0.05, 0.5], "kml__rank": [2, 5]}
    search = _fit_quiet(GridSearchCV(pipe, grid, cv=3), X, y)
    assert search.cv_results_["mean_test_score"].shape == (4,)
    assert search.score(X, y) > 0.5


def test_gridsearch_over_nystroem_pipeline_and_lambda_by_cv():
    X, y = _blobs(90, d=4, scale=1.5)
    pipe = Pipeline([("ny", pl.GeneralizedNystroem(n_landmarks=15, random_state=0,
                                                   max_iter=20)),
                     ("svm", LinearSVC())])
    search = _fit_quiet(GridSearchCV(pipe, {"ny__lambdas": [(1e-3,), (1e2,)]},
                                     cv=StratifiedKFold(3)), X, y)
    assert search.cv_results_["mean_test_score"].shape == (2,)
    ny = _fit_quiet(pl.GeneralizedNystroem(n_landmarks=15, lambdas=(1e-4, 1e0, 1e4),
                                           lambda_selection="cv", random_state=0,
                                           max_iter=20), X, y)
    assert ny.lambda_ in (1e-4, 1e0, 1e4)
    scores = ny.lambda_scores_
    assert np.all((scores >= 0) & (scores <= 1))  # accuracies
    assert ny.lambda_ == (1e-4, 1e0, 1e4)[int(np.argmax(scores))]
    partial = np.full(90, -1)
    partial[:6] = y[:6]  # two labelled points per class: no 3 folds
    with pytest.raises(ValueError, match="at least 3 labelled"):
        pl.GeneralizedNystroem(n_landmarks=15, lambda_selection="cv").fit(X, partial)
