"""The same data gives the same graph and the same model, whatever the container or the
order of the rows (issue 38, item 1).

- Exact search: dense (C or F order), CSR, CSC, pandas, float32 or float64 input holding
  the same values give bit-identical neighbour lists, Laplacians and objectives; ties at
  the k-th distance resolve by (distance, index).
- Permuting the rows (constraints relabelled to match) permutes the model: the learned
  kernel agrees entry by entry, since the solver sees the points in an order set by their
  values (data without ties or duplicate rows).
- Approximate search (HNSW): identical lists across containers; a permutation changes the
  insertion order, and the lists then overlap up to the search's recall.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import psdlearn as pl
from psdlearn.graph import NeighborIndex


def _containers(X):
    """The same values in every container a user may pass."""
    return {
        "dense": X,
        "fortran": np.asfortranarray(X),
        "csr": sp.csr_matrix(X),
        "csc": sp.csc_matrix(X),
        "float32": X.astype(np.float32),
        "pandas": pd.DataFrame(X),
    }


def _binary(n, d, seed):
    """Binary features in three groups: many ties at the k-th distance, duplicate rows."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = (rng.random((n, d)) < 0.25).astype(np.float64)
    X[y == 1, : d // 3] = (rng.random((np.sum(y == 1), d // 3)) < 0.7)
    X[y == 2, d // 3: 2 * d // 3] = (rng.random((np.sum(y == 2), d // 3)) < 0.7)
    return X, y


def _by_distance_then_index(X, Q, k, own):
    D2 = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=-1)   # exact on 0/1 data
    if own:
        np.fill_diagonal(D2, np.inf)
    ind = np.array([np.lexsort((np.arange(len(X)), row))[:k] for row in D2])
    return np.sqrt(np.take_along_axis(D2, ind, axis=1)), ind


# kd-tree (dense), direct canonical distances (dense, few features), BLAS candidates
@pytest.mark.parametrize("d", [3, 12, 30])
def test_exact_lists_identical_in_every_container(d):
    X, _ = _binary(300, d, seed=d)
    Q = _binary(40, d, seed=d + 1)[0]
    ref_d, ref_i = _by_distance_then_index(X, X, 7, own=True)
    new_d, new_i = _by_distance_then_index(X, Q, 7, own=False)
    ties = np.sum(np.sum(np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1)) <= ref_d[:, -1:],
                         axis=1) - 1 > 7)
    assert ties > 50   # the k-th distance is shared beyond the list in many rows
    for name, Z in _containers(X).items():
        index = NeighborIndex("exact").fit(Z)
        dist, ind = index.kneighbors(n_neighbors=7)
        assert np.array_equal(ind, ref_i), name
        assert np.array_equal(dist, ref_d), name
        for q_name, Zq in _containers(Q).items():
            dist, ind = index.kneighbors(Zq, n_neighbors=7)
            assert np.array_equal(ind, new_i), (name, q_name)
            assert np.array_equal(dist, new_d), (name, q_name)


def test_exact_lists_continuous_values_identical_across_containers():
    """Non-integer values: BLAS products of dense and sparse rows round differently, the
    canonical distances do not."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(250, 20)) * (rng.random((250, 20)) < 0.3)
    X[100:110] = X[0]      # duplicates: ties at distance 0
    results = [NeighborIndex("exact").fit(Z).kneighbors(n_neighbors=9)
               for name, Z in _containers(X).items() if name != "float32"]
    for dist, ind in results[1:]:
        assert np.array_equal(ind, results[0][1]) and np.array_equal(dist, results[0][0])
    # duplicates of point 0 list each other first, lowest index first
    assert list(results[0][1][0, :9]) == list(range(100, 109))


def test_npkl_sparse_and_dense_a1a_same_model():
    """The issue's case on a subset of a1a (binary features, ties at the 10th distance):
    before the fix the Laplacians differed in thousands of entries."""
    X, y = pl.datasets.load("a1a")
    X, y = X[:240], y[:240]
    C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=0)
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, Z in _containers(X).items():
            fits[name] = pl.NPKL(loss="square", n_neighbors=10, random_state=0).fit(Z, C)
    ref = fits["dense"]
    for name, model in fits.items():
        assert (model.laplacian_ != ref.laplacian_).nnz == 0, name
        assert model.sigma_ == ref.sigma_ and model.gamma_ == ref.gamma_, name
        assert model.objective() == pytest.approx(ref.objective(), rel=1e-9), name
        assert np.allclose(model.embedding_, ref.embedding_, rtol=0, atol=1e-9), name


def test_float32_input_is_float64_of_its_values():
    """float32 input is read as the float64 numbers it holds: the model of the float64
    array of the same values; the original float64 data differs by float32 rounding."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 6))
    y = np.repeat([0, 1, 2], 50)
    X[y == 1] += 3.0
    C = pl.PairwiseConstraints.from_labels(y, n_must=0.4, n_cannot=0.4, random_state=0)
    X32 = X.astype(np.float32)
    a = pl.NPKL(loss="square", random_state=0).fit(X32, C)
    b = pl.NPKL(loss="square", random_state=0).fit(X32.astype(np.float64), C)
    assert np.array_equal(a.embedding_, b.embedding_)
    c = pl.NPKL(loss="square", random_state=0).fit(X, C)
    assert c.sigma_ == pytest.approx(a.sigma_, rel=1e-6)
    assert c.objective() == pytest.approx(a.objective(), rel=1e-5)


def _continuous(n, seed):
    """Points without ties: Gaussian blobs in 5-d."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 5)) + 3.0 * np.eye(5)[y]
    return X, y


def test_in_order_is_the_permuted_laplacian():
    """``in_order`` renames rows and columns: ``L_o[a, b] = L[order[a], order[b]]``, in
    canonical CSR (sorted indices), the pairs renamed and kept ``i < j``."""
    from psdlearn.npkl._fit_graph import in_order

    X, y = _continuous(60, seed=3)
    L = pl.graph.knn_laplacian(X, n_neighbors=4)
    order = np.random.default_rng(2).permutation(len(X))
    pairs = np.array([[0, 5], [3, 59], [10, 11]])
    L_o, pairs_o = in_order(L, pairs, order)
    assert L_o.has_sorted_indices and L_o.nnz == L.nnz
    assert np.array_equal(L_o.toarray(), L.toarray()[order][:, order])
    where = np.argsort(order)
    assert np.array_equal(pairs_o, np.sort(where[pairs], axis=1))


@pytest.mark.parametrize("loss,solver", [("square", "bcd"), ("hinge", "bcd"),
                                         ("pcp", "admm")])
def test_row_permutation_permutes_the_model(loss, solver):
    """n above 400: gamma_0 by LOBPCG, whose random start is drawn in the value order."""
    X, y = _continuous(420, seed=1)
    C = pl.PairwiseConstraints.from_labels(y, n_must=0.2, n_cannot=0.2, random_state=0)
    perm = np.random.default_rng(7).permutation(len(X))
    where = np.argsort(perm)   # old point i is new point where[i]
    Cp = pl.PairwiseConstraints(where[C.pairs], C.signs)
    kw = {"loss": loss, "solver": solver, "random_state": 0, "max_iter": 200}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = pl.NPKL(**kw).fit(X, C)
        b = pl.NPKL(**kw).fit(X[perm], Cp)
    assert abs(b.laplacian_[where][:, where] - a.laplacian_).max() <= 1e-14
    assert b.gamma_ == pytest.approx(a.gamma_, rel=1e-9)
    assert b.n_neighbors_transform_ == a.n_neighbors_transform_
    K_a = a.embedding_ @ a.embedding_.T
    K_b = (b.embedding_ @ b.embedding_.T)[where][:, where]
    assert np.abs(K_a - K_b).max() <= 1e-6 * np.abs(K_a).max()
    assert b.objective() == pytest.approx(a.objective(), rel=1e-9)
    Xn = _continuous(5, seed=9)[0]
    assert np.allclose(a.transform(Xn) @ a.embedding_.T,
                       (b.transform(Xn) @ b.embedding_.T)[:, where], rtol=0,
                       atol=1e-6 * np.abs(K_a).max())


def test_kernel_metric_learner_row_permutation_permutes_the_model():
    """Landmarks and the width sample are drawn from the rows in value order: n above
    the width sample (1000) and above n_landmarks, so both draws happen."""
    X, y = _continuous(1100, seed=2)
    C = pl.PairwiseConstraints.from_labels(y, n_must=30, n_cannot=30, random_state=0)
    perm = np.random.default_rng(3).permutation(len(X))
    where = np.argsort(perm)
    Cp = pl.PairwiseConstraints(where[C.pairs], C.signs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = pl.KernelMetricLearner(n_landmarks=150, random_state=0).fit(X, C)
        b = pl.KernelMetricLearner(n_landmarks=150, random_state=0).fit(X[perm], Cp)
    assert np.array_equal(np.sort(where[a.landmark_indices_]), b.landmark_indices_)
    assert b.kernel_gamma_ == pytest.approx(a.kernel_gamma_, rel=1e-12)
    Za, Zb = a.transform(X), b.transform(X)
    K_a, K_b = Za @ Za.T, Zb @ Zb.T
    assert np.abs(K_a - K_b).max() <= 1e-8 * np.abs(K_a).max()


@pytest.mark.parametrize("landmarks", ["kmeans", "random"])
def test_generalized_nystroem_row_permutation_permutes_the_model(landmarks):
    """Landmarks and the lambda cross-validation folds are drawn in value order."""
    X, y = _continuous(300, seed=4)
    y_partial = np.where(np.random.default_rng(1).random(len(y)) < 0.7, -1, y)
    perm = np.random.default_rng(5).permutation(len(X))
    kw = {"n_landmarks": 30, "landmarks": landmarks, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = pl.GeneralizedNystroem(**kw).fit(X, y_partial)
        b = pl.GeneralizedNystroem(**kw).fit(X[perm], y_partial[perm])
    assert np.array_equal(a.landmarks_, b.landmarks_)
    assert b.lambda_ == a.lambda_
    Za, Zb = a.transform(X), b.transform(X)
    assert np.abs(Za @ Za.T - Zb @ Zb.T).max() <= 1e-8 * np.abs(Za @ Za.T).max()


def test_other_estimators_same_model_in_every_container():
    X, y = _binary(120, 12, seed=5)
    y_partial = np.where(np.random.default_rng(0).random(len(y)) < 0.7, -1, y)
    C = pl.PairwiseConstraints.from_labels(y, n_must=0.3, n_cannot=0.3, random_state=0)
    same, other = C.pairs[C.signs > 0], C.pairs[C.signs < 0]
    triplets = np.column_stack([same[:40], other[:40, 1]])
    triplets = triplets[triplets[:, 0] != triplets[:, 2]]
    cases = [
        (lambda: pl.GeneralizedNystroem(n_landmarks=15, lambdas=[1.0], random_state=0),
         y_partial,
         lambda m, Z: m.transform(Z), True),
        (lambda: pl.ConstrainedClustering(n_clusters=3, n_init=2, random_state=0), C,
         lambda m, Z: m.labels_, True),
        (lambda: pl.KernelMetricLearner(n_landmarks=100, random_state=0), C,
         lambda m, Z: m.transform(Z), False),
        (lambda: pl.PSDBoost(max_iter=15), pl.Triplets(triplets),
         lambda m, Z: m.transform(Z), False),
        (lambda: pl.RCA(), C, lambda m, Z: m.transform(Z), False),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make, side, output, sparse in cases:
            ref = None
            for name, Z in _containers(X).items():
                if sp.issparse(Z) and not sparse:
                    continue
                out = np.asarray(output(make().fit(Z, side), Z))
                ref = out if ref is None else ref
                assert np.array_equal(out, ref), (type(make()).__name__, name)


def test_permutation_with_ties_keeps_each_points_distances():
    """With ties the index decides which tied points a list keeps, so a permutation may
    keep others; the distances of each point's list, and sigma, do not change."""
    X, _ = _binary(200, 12, seed=2)
    perm = np.random.default_rng(1).permutation(len(X))
    d_a, i_a = NeighborIndex("exact").fit(X).kneighbors(n_neighbors=10)
    d_b, i_b = NeighborIndex("exact").fit(X[perm]).kneighbors(n_neighbors=10)
    assert np.array_equal(d_a[perm], d_b)
    assert not np.array_equal(np.sort(perm[i_b], axis=1), np.sort(i_a[perm], axis=1))
    _, sigma_a = pl.graph.knn_graph(X, n_neighbors=10, knn_method="exact")
    _, sigma_b = pl.graph.knn_graph(X[perm], n_neighbors=10, knn_method="exact")
    assert sigma_a == pytest.approx(sigma_b, rel=1e-12)


def test_ctrl_c_in_the_exact_search_raises_keyboard_interrupt():
    """A Ctrl-C that lands in a compiled kernel of the search is the user's interrupt,
    not a SystemError."""
    import _thread
    import threading

    X = np.random.default_rng(0).normal(size=(60_000, 10))
    NeighborIndex("exact").fit(X[:50]).kneighbors(n_neighbors=3)   # compiled already
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            NeighborIndex("exact").fit(X).kneighbors(n_neighbors=10)
    finally:
        timer.cancel()


def test_approximate_lists_same_across_containers_and_close_under_permutation():
    """HNSW (one thread, fixed seed): every container gives the same lists; a row
    permutation changes the insertion order, so the lists may differ, but they overlap
    with the unpermuted ones at least as much as the recall allows (see the invariance
    page of the user guide for the measured overlap)."""
    pytest.importorskip("faiss")
    X, _ = _continuous(3000, seed=4)
    X = np.hstack([X, np.random.default_rng(4).normal(size=(3000, 5))])
    fit = {name: NeighborIndex("approximate", n_jobs=1, random_state=0).fit(Z)
           for name, Z in _containers(X.astype(np.float32).astype(np.float64)).items()}
    ref_d, ref_i = fit["dense"].kneighbors(n_neighbors=10)
    for name, index in fit.items():
        dist, ind = index.kneighbors(n_neighbors=10)
        assert np.array_equal(ind, ref_i) and np.array_equal(dist, ref_d), name
    perm = np.random.default_rng(1).permutation(len(X))
    where = np.argsort(perm)
    _, ind_p = NeighborIndex("approximate", n_jobs=1, random_state=0).fit(
        X[perm]).kneighbors(n_neighbors=10)
    ind_p = perm[ind_p][where]   # back to the original numbering, original rows
    overlap = np.mean([len(np.intersect1d(a, b)) / 10
                       for a, b in zip(ref_i, ind_p, strict=True)])
    assert overlap >= 0.95
