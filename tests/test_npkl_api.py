"""NPKL as a scikit-learn estimator: checks, out-of-sample extension, graphs, interrupts."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.neighbors import KNeighborsTransformer, NearestNeighbors
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_interrupt_phases import Interrupter

import psdlearn as pl
from psdlearn._progress import FitInterruptedWarning


@parametrize_with_checks(
    [pl.NPKL(max_iter=50), pl.NPKL(solver="admm", loss="pcp", max_iter=50)])
def test_sklearn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def _blobs(n=90, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), n // 3)
    X = rng.normal(size=(n, 4)) * 0.6 + 3.0 * np.eye(3, 4)[y]
    return X, y


def test_fit_transform_is_embedding():
    X, y = _blobs()
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    model = pl.NPKL(loss="square", random_state=0)
    E = model.fit_transform(X, C)
    assert np.array_equal(E, model.embedding_)


@pytest.mark.parametrize("rule", ["normalized", "weighted_mean"])
def test_transform_batch_equals_one_at_a_time(rule):
    X, y = _blobs(120)
    C = pl.PairwiseConstraints.from_labels(y[:90], random_state=0)
    model = pl.NPKL(loss="square", out_of_sample=rule, random_state=0).fit(X[:90], C)
    batch = model.transform(X[90:])
    single = np.vstack([model.transform(X[i:i + 1]) for i in range(90, 120)])
    assert np.allclose(batch, single, rtol=0, atol=1e-14)
    assert np.allclose(model.transform(X[90:95]), batch[:5], rtol=0, atol=1e-14)


@pytest.mark.parametrize("solver, loss", [("bcd", "hinge"), ("admm", "pcp")])
def test_transform_of_training_points_is_the_fitted_kernel(solver, loss):
    """transform(X_fit) gives embedding_: its kernel equals E E^T to 1e-8, in any order and
    for a copy of X_fit (matched by value, not identity)."""
    X, y = _blobs(90, seed=3)
    C = pl.PairwiseConstraints.from_labels(y, n_must=30, n_cannot=30, random_state=0)
    model = pl.NPKL(solver=solver, loss=loss, max_iter=200, random_state=0).fit(X, C)
    E = model.embedding_
    T = model.transform(X.copy())
    assert np.abs(T @ T.T - E @ E.T).max() <= 1e-8
    order = np.random.default_rng(0).permutation(90)
    assert np.array_equal(model.transform(X[order]), E[order])
    # the extension alone (what transform gave training points before) differs
    assert np.abs(model._extend(X) - E).max() > 1e-3 * np.abs(E).max()


def test_transform_mixed_batch_equals_rows_one_at_a_time():
    X, y = _blobs(120, seed=4)
    model = pl.NPKL(loss="square", random_state=0).fit(
        X[:90], pl.PairwiseConstraints.from_labels(y[:90], random_state=0))
    mixed = np.vstack([X[85:100], X[:3], X[110:]])
    batch = model.transform(mixed)
    single = np.vstack([model.transform(row[None]) for row in mixed])
    np.testing.assert_array_equal(batch, single)
    np.testing.assert_array_equal(batch[:5], model.embedding_[85:90])
    np.testing.assert_array_equal(batch[15:18], model.embedding_[:3])
    np.testing.assert_array_equal(batch[5:15], model._extend(X[90:100]))
    # one ulp away from a training point is a new point
    near = X[:1].copy()
    near[0, 0] = np.nextafter(near[0, 0], np.inf)
    np.testing.assert_array_equal(model.transform(near), model._extend(near))
    # sparse input matches dense training rows
    np.testing.assert_array_equal(model.transform(sp.csr_matrix(X[:4])), model.embedding_[:4])


def test_pipeline_predicts_the_clusters_of_the_embedding():
    from sklearn.cluster import KMeans
    from sklearn.pipeline import make_pipeline

    X, y = _blobs(90, seed=5)
    C = pl.PairwiseConstraints.from_labels(y, n_must=20, n_cannot=20, random_state=0)
    pipe = make_pipeline(pl.NPKL(random_state=0), KMeans(3, n_init=10, random_state=0))
    pipe.fit(X, C)
    E = pipe[0].embedding_
    direct = KMeans(3, n_init=10, random_state=0).fit(E)
    np.testing.assert_array_equal(pipe.predict(X), direct.labels_)
    np.testing.assert_array_equal(pipe.predict(X), pipe[-1].labels_)


def test_transform_precomputed_graphs_maps_training_rows():
    """graph="precomputed": rows of the training Laplacian map to embedding_, others raise;
    graph="precomputed_nearest_neighbors": the training distance graph maps to embedding_."""
    X, y = _blobs(60, seed=6)
    L = pl.graph.knn_laplacian(X)
    model = pl.NPKL(graph="precomputed", loss="square", random_state=0).fit(L, y)
    np.testing.assert_array_equal(model.transform(L), model.embedding_)
    np.testing.assert_array_equal(model.transform(L[[7, 3]].toarray()),
                                  model.embedding_[[7, 3]])
    with pytest.raises(ValueError, match="rows of the training Laplacian only"):
        model.transform(L[:2] * 2.0)
    knt = KNeighborsTransformer(n_neighbors=10, mode="distance").fit(X)
    D = knt.transform(X)
    model = pl.NPKL(graph="precomputed_nearest_neighbors", loss="square",
                    random_state=0).fit(D, y)
    np.testing.assert_array_equal(model.transform(D), model.embedding_)
    Xn = X[:3] + 0.01
    np.testing.assert_array_equal(model.transform(knt.transform(Xn)),
                                  model._extend(knt.transform(Xn)))


def test_transform_kept_index_equals_rebuilt_closed_form():
    """The kept index gives the rows computed from a fresh exact search and the formula of
    each rule: the default normalized row sum_j s_j e_j / ((1 + delta) sqrt(d_x (D_jj +
    s_j))) and the weighted mean sum_j s_j e_j / sum_j s_j."""
    X, y = _blobs(120, seed=1)
    C = pl.PairwiseConstraints.from_labels(y[:90], random_state=1)
    model = pl.NPKL(loss="square", knn_method="exact", random_state=0).fit(X[:90], C)
    assert model.out_of_sample == "normalized"
    k = model.n_neighbors_transform_
    assert k in (5, 10, 15, 20)
    dist, ind = NearestNeighbors(n_neighbors=k).fit(X[:90]).kneighbors(X[90:])
    s = np.exp(-dist**2 / (2 * model.sigma_**2))
    E = model.embedding_
    d_x = s.sum(1, keepdims=True)
    coef = s / ((1 + model.delta) * np.sqrt(d_x * (model.degrees_[ind] + s)))
    normalized = np.einsum("bk,bkr->br", coef, E[ind])
    assert np.allclose(model.transform(X[90:]), normalized, rtol=1e-12, atol=1e-14)
    expected = np.einsum("bk,bkr->br", s / s.sum(1, keepdims=True), E[ind])
    model.set_params(out_of_sample="weighted_mean")  # read at transform time
    assert np.allclose(model.transform(X[90:]), expected, rtol=1e-12, atol=1e-14)
    assert not np.allclose(normalized, expected, rtol=1e-3)
    model.set_params(out_of_sample="mean")
    with pytest.raises(ValueError, match="out_of_sample must be"):
        model.transform(X[90:])


def test_transform_minimizes_its_graph_term_and_reproduces_constants():
    """out_of_sample="weighted_mean": each row minimizes sum_j s_j ||e - e_j||^2 (zero
    gradient, and any step increases it); a constant embedding maps every new point to
    that constant."""
    X, y = _blobs(120, seed=2)
    model = pl.NPKL(loss="square", out_of_sample="weighted_mean", random_state=0).fit(
        X[:90], pl.PairwiseConstraints.from_labels(y[:90], random_state=0))
    Xn = X[90:]
    E_new = model.transform(Xn)
    dist, ind = model.neighbor_index_.kneighbors(Xn, n_neighbors=model.n_neighbors_transform_)
    s = np.exp(-dist**2 / (2 * model.sigma_**2))
    diff = E_new[:, None, :] - model.embedding_[ind]
    grad = 2 * np.einsum("bk,bkr->br", s, diff)
    assert np.abs(grad).max() < 1e-12 * max(1.0, np.abs(model.embedding_).max())
    step = np.random.default_rng(0).normal(size=E_new.shape) * 1e-3
    f = np.einsum("bk,bkr->b", s, diff**2)
    f_step = np.einsum("bk,bkr->b", s, (diff + step[:, None, :]) ** 2)
    assert np.all(f_step > f)
    model.embedding_ = np.tile([[0.3, -1.2]], (90, 1))
    assert np.allclose(model.transform(Xn), [0.3, -1.2], rtol=0, atol=1e-14)


def _loo_errors_by_brute_force(X, E, sigma, sizes):
    """Relative leave-one-out error of the weighted neighbour mean, every training point."""
    nn = NearestNeighbors(n_neighbors=max(sizes) + 1).fit(X)
    dist, ind = nn.kneighbors(X)
    errors = []
    for s in sizes:
        d, i = dist[:, 1:s + 1], ind[:, 1:s + 1]  # without the point itself
        w = np.exp(-d**2 / (2 * sigma**2))
        pred = np.einsum("bk,bkr->br", w / w.sum(1, keepdims=True), E[i])
        errors.append(((pred - E) ** 2).sum() / ((E - E.mean(0)) ** 2).sum())
    return np.array(errors)


def test_transform_neighbourhood_minimizes_the_leave_one_out_error():
    """n_neighbors_transform_ is the size (k, 2k, 3k, 4k) whose rule best predicts the
    training rows left out one at a time: recomputed here by brute force."""
    X, y = _blobs(120, seed=7)
    model = pl.NPKL(loss="square", knn_method="exact", random_state=0).fit(
        X, pl.PairwiseConstraints.from_labels(y, random_state=0))
    sizes = [5, 10, 15, 20]
    errors = _loo_errors_by_brute_force(X, model.embedding_, model.sigma_, sizes)
    assert model.n_neighbors_transform_ == sizes[int(np.argmin(errors))]


def test_transform_neighbourhood_follows_the_embedding_not_the_labels():
    """Noisy rows are predicted best by a wide neighbourhood, a smooth noise-free
    function of X by the narrowest (the weighted mean then only adds bias)."""
    from psdlearn.graph import NeighborIndex
    from psdlearn.npkl._out_of_sample import select_n_neighbors

    rng = np.random.default_rng(8)
    X = rng.uniform(size=(400, 2))
    index = NeighborIndex(method="exact").fit(X)
    smooth = np.column_stack([np.sin(6 * X[:, 0]), np.cos(6 * X[:, 1])])
    noisy = X[:, :1] + 0.5 * rng.normal(size=(400, 1))
    sigma = 0.05
    assert select_n_neighbors(index, X, smooth, sigma, 5) == 5
    assert select_n_neighbors(index, X, noisy, sigma, 5) == 20
    for E in (smooth, noisy):
        errors = _loo_errors_by_brute_force(X, E, sigma, [5, 10, 15, 20])
        assert select_n_neighbors(index, X, E, sigma, 5) == 5 * (1 + int(np.argmin(errors)))


def test_transform_joint_depends_on_batch_and_transform_does_not():
    X, y = _blobs(120, seed=3)
    model = pl.NPKL(loss="square", random_state=0).fit(
        X[:90], pl.PairwiseConstraints.from_labels(y[:90], random_state=0))
    joint_all, joint_five = model.transform_joint(X[90:]), model.transform_joint(X[90:95])
    assert not np.allclose(joint_all[:5], joint_five)
    assert np.allclose(model.transform(X[90:])[:5], model.transform(X[90:95]))
    model.set_params(out_of_sample="weighted_mean")
    assert np.allclose(model.transform(X[90:])[:5], model.transform(X[90:95]))


def test_kneighbors_transformer_graph_gives_same_fit():
    X, y = _blobs(90, seed=4)
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    # the same problem; the kNN fit starts from the points in the order of their values,
    # the precomputed one in input order: the same kernel at the optimum (square loss)
    solve = {"loss": "square", "random_state": 0, "tol": 1e-10, "max_iter": 2000}
    ref = pl.NPKL(knn_method="exact", **solve).fit(X, C)
    knt = KNeighborsTransformer(n_neighbors=10, mode="distance").fit(X)
    D = knt.transform(X)
    model = pl.NPKL(graph="precomputed_nearest_neighbors", **solve).fit(D, C)
    assert model.sigma_ == pytest.approx(ref.sigma_)
    assert abs(model.laplacian_ - ref.laplacian_).max() < 1e-12
    E, E_ref = model.embedding_, ref.embedding_
    assert np.allclose(E @ E.T, E_ref @ E_ref.T, atol=1e-6)
    Xn = np.random.default_rng(5).normal(size=(7, 4))
    assert np.allclose(model.transform(knt.transform(Xn)) @ E.T,
                       ref.transform(Xn) @ E_ref.T, atol=1e-6)


def test_graph_info_and_approximate_fit_close_to_exact():
    pytest.importorskip("faiss")
    X, y = _blobs(600, seed=6)
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    exact = pl.NPKL(loss="square", knn_method="exact", random_state=0).fit(X, C)
    approx = pl.NPKL(loss="square", knn_method="approximate", random_state=0).fit(X, C)
    assert exact.graph_info_["method"] == "exact" and exact.graph_info_["recall"] == 1.0
    assert approx.graph_info_["backend"] == "hnsw" and approx.graph_info_["recall"] >= 0.9
    f_exact = exact.objective()
    assert abs(approx.objective() - f_exact) <= 0.02 * abs(f_exact)


def test_rank_auto_never_above_n_with_labels():
    X, y = _blobs(60)
    model = pl.NPKL(solver="admm", loss="pcp", max_iter=20).fit(X, y)
    assert model.rank_ <= 60


@pytest.mark.parametrize("loss, solver", [("hinge", "bcd"), ("pcp", "admm")])
def test_rank_auto_from_labels_counts_the_smallest_equivalent_pairs(loss, solver):
    """From labels, rank="auto" counts (l - c) + c (c - 1) / 2 pairs (2 m + n for pcp), not
    the l (l - 1) / 2 implied ones: 90 labelled points in 3 classes give m = 90, r = 12
    (pcp: 2 * 90 + 90 = 270, r = 22); a third of them, m = 30, r = 7 (pcp: 150, r = 16).
    The same pairs given as PairwiseConstraints are counted as given."""
    from psdlearn.npkl.problem import auto_rank, label_pairs

    X, y = _blobs(90)
    kw = dict(loss=loss, solver=solver, max_iter=5, certificate_tol=None)
    extra = 90 if loss == "pcp" else 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = pl.NPKL(**kw).fit(X, y)
        partial_y = np.where(np.arange(90) % 3 == 0, y, -1)
        partial = pl.NPKL(**kw).fit(X, partial_y)
        pairs = pl.NPKL(**kw).fit(X, pl.PairwiseConstraints.from_labels(y, n_must=60,
                                                                        n_cannot=60,
                                                                        random_state=0))
    assert full.rank_ == auto_rank(2 * 90 + extra if extra else 90)
    assert full.rank_ == (22 if loss == "pcp" else 12)
    assert partial.rank_ == (16 if loss == "pcp" else 7)
    assert full.side_info_.n_pairs == 90 * 89 // 2  # the fit still uses every pair
    assert pairs.rank_ == auto_rank(2 * 120 + extra if extra else 120)
    P, S = label_pairs(partial_y)
    assert len(P) == 30 - 3 + 3 and (S > 0).sum() == 27
    assert np.all(partial_y[P[S > 0, 0]] == partial_y[P[S > 0, 1]])
    assert len(np.unique(partial_y[P[S < 0]], axis=0)) == 3


def test_rank_auto_on_iris_labels_and_npklcv_agree():
    from psdlearn.model_selection import NPKLCV

    X, y = pl.datasets.load("iris")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pl.NPKL(max_iter=5, certificate_tol=None).fit(X, y)
        cv = NPKLCV(gammas=[1.0], cv=2, max_iter=5, certificate_tol=None).fit(X, y)
    assert model.rank_ == cv.rank_ == 16


def test_requires_y_and_edges():
    X, y = _blobs(30)
    with pytest.raises(ValueError, match="requires y to be passed"):
        pl.NPKL().fit(X)
    with pytest.warns(UserWarning, match="n_neighbors=200 >= n_samples=30"):
        pl.NPKL(n_neighbors=200, max_iter=5).fit(X, y)
    with pytest.warns(UserWarning, match="all points coincide"):
        pl.NPKL(max_iter=5).fit(np.ones((20, 3)), y[:20])
    with pytest.raises(ValueError, match="graph='precomputed'"):
        model = pl.NPKL(graph="precomputed", max_iter=5).fit(
            pl.graph.knn_laplacian(X), y)
        model.transform(X)


def test_sparse_input_fits():
    X, y = _blobs(60)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    dense = pl.NPKL(loss="square", random_state=0, knn_method="exact").fit(Xs.toarray(), y)
    sparse = pl.NPKL(loss="square", random_state=0, knn_method="exact").fit(Xs, y)
    assert np.allclose(dense.embedding_, sparse.embedding_, atol=1e-8)
    assert np.allclose(dense.transform(Xs[:4].toarray()), sparse.transform(Xs[:4]))


@pytest.mark.parametrize("solver", ["bcd", "admm"])
def test_interrupt_keeps_last_iterate(monkeypatch, solver):
    """A fit from X, stopped by SIGINT during its solver, transforms new points. The signal
    is sent at the solver's third iterate (not after a delay, which a slow machine spends
    before the solver starts)."""
    from psdlearn.npkl import _rounds

    X, y = pl.datasets.make_two_gaussians(6000, n_features=10, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    loss = "square" if solver == "bcd" else "pcp"
    model = pl.NPKL(loss=loss, solver=solver, tol=0.0, max_iter=100000, random_state=0)
    interrupter = Interrupter(after=3)
    interrupter.on_progress(monkeypatch, _rounds)
    with pytest.warns(FitInterruptedWarning, match="interrupted"):
        _, error = interrupter.run(lambda: model.fit(X, C))
    assert error is None
    assert model.converged_ is False
    assert 3 <= model.n_iter_ < 100000
    assert len(model.objective_history_) == model.n_iter_ + 1
    assert model.objective() == pytest.approx(model.objective_history_[-1], rel=1e-9)
    assert np.all(np.isfinite(model.transform(X[:3])))


def test_fits_write_nothing_to_stdout(capfd):
    X, y = _blobs(60)
    for solver, loss in [("bcd", "hinge"), ("admm", "pcp"), ("simplenpkl", "square")]:
        pl.NPKL(solver=solver, loss=loss, max_iter=20).fit(X, y).transform(X[:3])
    assert capfd.readouterr().out == ""


def test_feature_names_and_pandas_output():
    """get_feature_names_out names the rank_ columns npkl0, npkl1, ... (npklcv0, ... for
    NPKLCV), and set_output(transform="pandas") uses them, with the input's index."""
    pd = pytest.importorskip("pandas")
    from sklearn.exceptions import NotFittedError

    from psdlearn.model_selection import NPKLCV

    X, y = _blobs(60, seed=7)
    with pytest.raises(NotFittedError):
        pl.NPKL().get_feature_names_out()
    frame = pd.DataFrame(X, columns=list("abcd"), index=np.arange(100, 160))
    model = pl.NPKL(loss="square", random_state=0).set_output(transform="pandas")
    fitted = model.fit_transform(frame, y)
    names = [f"npkl{i}" for i in range(model.rank_)]
    assert model.get_feature_names_out().tolist() == names
    assert fitted.columns.tolist() == names and fitted.index.tolist() == frame.index.tolist()
    out = model.transform(frame.iloc[:5])
    assert isinstance(out, pd.DataFrame) and out.columns.tolist() == names
    np.testing.assert_array_equal(out.to_numpy(), model.embedding_[:5])
    cv = NPKLCV(loss="square", gammas=[1.0, 10.0], cv=2, random_state=0).fit(X, y)
    assert cv.get_feature_names_out().tolist() == [f"npklcv{i}" for i in range(cv.rank_)]
    cv.set_output(transform="pandas")
    assert cv.transform(X).columns.tolist() == cv.get_feature_names_out().tolist()
    np.testing.assert_array_equal(cv.transform(X).to_numpy(), cv.embedding_)
