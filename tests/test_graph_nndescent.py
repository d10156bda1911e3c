"""The NN-descent backend of psdlearn.graph.NeighborIndex (many continuous points)."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from psdlearn import graph
from psdlearn._nndescent import NNDescentGraph
from psdlearn.graph import NeighborIndex, knn_graph

pytest.importorskip("pynndescent")


@pytest.fixture
def nndescent(monkeypatch):
    """Make the approximate search take NN-descent from 500 points on."""
    monkeypatch.setattr(graph, "NNDESCENT_MIN_SAMPLES", 500)


def _mixture(n, seed):
    centres = np.random.default_rng(0).normal(scale=4.0, size=(5, 6))
    rng = np.random.default_rng(seed)
    return centres[rng.integers(0, 5, n)] + rng.normal(size=(n, 6))


@pytest.fixture(scope="module")
def points():
    return _mixture(3000, seed=1)


def _recall(ind, ref):
    return np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(ind, ref, strict=True)])


def test_lists_of_the_indexed_points_are_near_exact(nndescent, points):
    index = NeighborIndex("approximate", n_jobs=2, random_state=0).fit(points)
    assert index.backend_ == "nndescent"
    dist, ind = index.kneighbors(n_neighbors=8)
    _, ref = NearestNeighbors(n_neighbors=8).fit(points).kneighbors()
    assert _recall(ind, ref) >= 0.95
    rows = np.arange(len(points))[:, None]
    assert not np.any(ind == rows)  # each point is left out of its own list
    assert np.all(np.diff(dist, axis=1) >= 0)
    # the distances are those of the listed points (float32 arithmetic)
    true = np.linalg.norm(points[ind] - points[:, None, :], axis=2)
    assert np.allclose(dist, true, rtol=1e-5, atol=1e-5)
    # the recall estimate reads the same lists
    assert abs(index.estimate_recall(8, n_queries=500) - _recall(ind, ref)) < 0.05


def test_same_values_in_another_container_give_the_same_lists(nndescent, points):
    """... and the same seed the same lists, on two threads."""
    def lists(X):
        index = NeighborIndex("approximate", n_jobs=2, random_state=3).fit(X)
        return index.kneighbors(n_neighbors=5)

    a, b, c = lists(points), lists(sp.csr_matrix(points)), lists(np.asfortranarray(points))
    for other in (b, c):
        assert np.array_equal(a[1], other[1]) and np.array_equal(a[0], other[0])


def test_longer_lists_than_built_are_built_again(nndescent, points):
    # more threads than cores are asked for: numba's limit caps them
    index = NeighborIndex("approximate", n_jobs=64, random_state=0).fit(points)
    _, short = index.kneighbors(n_neighbors=5)
    built = index._nnd.n_neighbors
    k = built + 4  # more than the first lists hold
    dist, ind = index.kneighbors(n_neighbors=k)
    assert ind.shape == (len(points), k) and index._nnd.n_neighbors > k
    _, ref = NearestNeighbors(n_neighbors=k).fit(points).kneighbors()
    assert _recall(ind, ref) >= 0.95


def test_new_points_and_a_pickled_index(nndescent, points):
    index = NeighborIndex("approximate", random_state=0).fit(points)
    own = index.kneighbors(n_neighbors=6)
    Q = _mixture(300, seed=2)  # new points of the same distribution
    dist, ind = index.kneighbors(Q, n_neighbors=4)
    _, ref = NearestNeighbors(n_neighbors=4).fit(points).kneighbors(Q)
    assert _recall(ind, ref) >= 0.95
    assert np.all(np.diff(dist, axis=1) >= 0)
    assert np.allclose(dist, np.linalg.norm(points[ind] - Q[:, None, :], axis=2),
                       rtol=1e-5, atol=1e-5)
    loaded = pickle.loads(pickle.dumps(index))
    for a, b in zip(own, loaded.kneighbors(n_neighbors=6), strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(ind, loaded.kneighbors(Q, n_neighbors=4)[1])


def test_integer_data_and_small_sets_keep_the_hnsw_graph(monkeypatch, points):
    pytest.importorskip("faiss")
    assert NeighborIndex("approximate").fit(points).backend_ == "hnsw"  # below the size
    monkeypatch.setattr(graph, "NNDESCENT_MIN_SAMPLES", 500)
    binary = (points > 0).astype(float)  # ties by index: the HNSW path's order
    assert NeighborIndex("approximate").fit(binary).backend_ == "hnsw"


def test_knn_graph_through_nn_descent(nndescent, points):
    S, sigma, index, info = knn_graph(points, n_neighbors=5, knn_method="approximate",
                                      random_state=0, return_index=True)
    assert info["backend"] == "nndescent" and info["recall"] >= 0.95
    assert abs(S - S.T).max() == 0 and S.diagonal().max() == 0
    exact, sigma_exact = knn_graph(points, n_neighbors=5, knn_method="exact")
    assert abs(sigma - sigma_exact) < 1e-3 * sigma_exact
    assert abs(S.nnz - exact.nnz) <= 0.05 * exact.nnz


def test_ties_are_put_in_index_order():
    dist = np.array([[0.0, 1.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0]], dtype=np.float32)
    ind = np.array([[4, 9, 2, 7], [1, 8, 3, 5]], dtype=np.int32)
    # the two first entries: the tie at the cut keeps the lower index
    d, i = NNDescentGraph.own((ind, dist), np.arange(2), 1)
    assert np.array_equal(i, [[4, 2], [1, 8]])
    assert np.array_equal(d, dist[:, :2])


def test_npkl_fit_transform_and_pickle_through_nn_descent(nndescent, points):
    import psdlearn as pl

    labels = np.random.default_rng(0).integers(0, 2, len(points))
    C = pl.PairwiseConstraints.from_labels(labels, n_must=30, n_cannot=30, random_state=0)
    model = pl.NPKL(loss="square", rank=5, knn_method="approximate", certificate_tol=None,
                    random_state=0).fit(points, C)
    assert model.graph_info_["backend"] == "nndescent"
    E = model.embedding_
    # the training points map to their rows of the embedding
    assert np.allclose(model.transform(points) @ model.transform(points).T, E @ E.T,
                       atol=1e-8)
    new = _mixture(50, seed=5)
    T = model.transform(new)
    assert T.shape == (50, E.shape[1]) and np.all(np.isfinite(T))
    loaded = pickle.loads(pickle.dumps(model))
    assert np.allclose(loaded.transform(new), T, atol=1e-12)
