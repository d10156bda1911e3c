"""The one neighbour search (psdlearn.graph.NeighborIndex) and the graphs built from it."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.neighbors import KNeighborsTransformer, NearestNeighbors

from psdlearn import graph
from psdlearn._order import ZORDER_BITS, spatial_order, zorder
from psdlearn.graph import (
    NeighborIndex,
    knn_graph,
    knn_laplacian,
    neighbors_from_distance_graph,
)


def _same_neighbours(ind_a, dist_a, ind_b, dist_b):
    """Equal lists up to ties: same distances, and the same indices strictly inside the
    k-th distance (a tie at the k-th distance may pick any of the tied points)."""
    assert np.allclose(dist_a, dist_b, atol=1e-7)
    # distances from BLAS products carry rounding of order 1e-8 near ties
    for ia, da, ib in zip(ind_a, dist_a, ind_b, strict=True):
        inner = da < da[-1] - 1e-6
        assert set(ia[inner]) == set(ib[inner])


@pytest.mark.parametrize(("n", "d"), [(1000, 3), (300, 3), (300, 20)])  # tree, brute
def test_exact_matches_sklearn_dense(n, d):
    X = np.random.default_rng(d).normal(size=(n, d))
    index = NeighborIndex("exact").fit(X)
    assert index.backend_ == ("kd_tree" if d <= 6 and n >= 1000 else "brute")
    dist, ind = index.kneighbors(n_neighbors=7)
    ref_d, ref_i = NearestNeighbors(n_neighbors=7).fit(X).kneighbors()
    _same_neighbours(ind, dist, ref_i, ref_d)
    Q = np.random.default_rng(99).normal(size=(40, d))
    dist, ind = index.kneighbors(Q, n_neighbors=5)
    ref_d, ref_i = NearestNeighbors(n_neighbors=5).fit(X).kneighbors(Q)
    _same_neighbours(ind, dist, ref_i, ref_d)
    assert np.all(np.diff(dist, axis=1) >= 0)


def test_exact_matches_sklearn_sparse_binary():
    """LIBSVM-like binary sparse input stays sparse and gives the exact neighbours."""
    rng = np.random.default_rng(0)
    X = sp.random(400, 120, density=0.1, random_state=1, format="csr")
    X.data[:] = 1.0
    index = NeighborIndex("exact").fit(X)
    assert index.backend_ == "brute" and sp.issparse(index._X)
    dist, ind = index.kneighbors(n_neighbors=6)
    ref_d, ref_i = NearestNeighbors(n_neighbors=6).fit(X.toarray()).kneighbors()
    _same_neighbours(ind, dist, ref_i, ref_d)
    Q = sp.csr_matrix((rng.random((10, 120)) < 0.1).astype(float))
    dist, ind = index.kneighbors(Q, n_neighbors=4)
    ref_d, ref_i = NearestNeighbors(n_neighbors=4).fit(X.toarray()).kneighbors(Q.toarray())
    _same_neighbours(ind, dist, ref_i, ref_d)


def test_self_excluded_even_with_duplicates():
    X = np.repeat(np.arange(20.0)[:, None], 3, axis=0)  # every point three times
    dist, ind = NeighborIndex("exact").fit(X).kneighbors(n_neighbors=2)
    assert np.all(ind != np.arange(len(X))[:, None])
    assert np.all(dist == 0.0)  # the two other copies


def test_zorder_halves_the_box_recursively_and_keeps_neighbours_close():
    P = np.random.default_rng(0).random((4000, 3))
    order = zorder(P)
    assert np.array_equal(np.sort(order), np.arange(len(P)))
    # the leading bit of the code is the top bit of the last axis: its lower half first,
    # then within each half the top bit of the next axis, and so on
    cells = np.minimum(((P - P.min(0)) * ((1 << ZORDER_BITS) - 1)
                        / np.ptp(P, 0).max()).astype(int), (1 << ZORDER_BITS) - 1)
    top = cells[order] >> (ZORDER_BITS - 1)
    assert np.all(np.diff(top[:, 2]) >= 0)
    for half in (0, 1):
        assert np.all(np.diff(top[top[:, 2] == half, 1]) >= 0)
    # what it is for: the 5 nearest neighbours of a point sit close to it in the order
    _, knn = NearestNeighbors(n_neighbors=6).fit(P).kneighbors(P)
    pos = np.empty(len(P), dtype=int)
    pos[order] = np.arange(len(P))
    gap = np.median(np.abs(pos[knn[:, 1:]] - pos[:, None]))
    assert gap < 0.05 * len(P)          # in the input (random) order it is about n / 3



def test_spatial_order_in_blocks_is_the_order_of_the_principal_axes():
    """The blocked mean, scatter and projection give the Z-order of the projection on the
    three leading principal axes, computed here in one piece."""
    from psdlearn._order import ZORDER_AXES

    X = np.random.default_rng(2).normal(size=(5000, 8)) * np.arange(1, 9)
    Xc = X - X.mean(axis=0)
    axes = np.linalg.eigh(Xc.T @ Xc)[1][:, ::-1][:, :ZORDER_AXES]
    expected = zorder(Xc @ axes)
    assert np.array_equal(spatial_order(X, block_entries=777 * 8), expected)
    assert np.array_equal(spatial_order(X), expected)
    # the same values in a CSR container: the same order, bit for bit
    X[np.abs(X) < 1.0] = 0.0
    assert np.array_equal(spatial_order(sp.csr_matrix(X), block_entries=777 * 8),
                          spatial_order(X, block_entries=777 * 8))

def _by_distance_then_index(X, Q, k, own):
    """Reference lists: the ``k`` first points in (distance, index) order, by a full sort
    of the distances (exact on integer coordinates)."""
    D2 = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=-1)
    if own:
        np.fill_diagonal(D2, np.inf)
    ind = np.array([np.lexsort((np.arange(len(X)), row))[:k] for row in D2])
    return np.sqrt(np.take_along_axis(D2, ind, axis=1)), ind


@pytest.mark.parametrize("n", [150, 999])
def test_small_sets_searched_by_brute_force_give_the_tree_lists(n, monkeypatch):
    """Below KD_TREE_MIN_SAMPLES a low-dimensional set is searched by brute force (the
    cheaper search there); the lists, ties included, and the distances are those of the
    kd-tree to the bit."""
    rng = np.random.default_rng(n)
    X = rng.integers(0, 5, size=(n, 3)) + rng.normal(scale=1e-3, size=(n, 3)) * (
        rng.random((n, 1)) < 0.3)   # ties and near-ties
    Q = rng.integers(0, 5, size=(60, 3)).astype(float)
    brute = NeighborIndex("exact").fit(X)
    assert brute.backend_ == "brute"
    monkeypatch.setattr(graph, "KD_TREE_MIN_SAMPLES", 0)
    tree = NeighborIndex("exact").fit(X)
    assert tree.backend_ == "kd_tree"
    for queries in (None, Q):
        d_b, i_b = brute.kneighbors(queries, n_neighbors=10)
        d_t, i_t = tree.kneighbors(queries, n_neighbors=10)
        assert np.array_equal(i_b, i_t)
        assert np.array_equal(d_b, d_t)


@pytest.mark.parametrize("d", [3, 5])   # the coordinates, the leading principal axes
def test_tree_answers_in_spatial_order_keep_distance_index_order(d):
    """The kd-tree takes its queries in Z-order (speed only): the lists, ties included,
    are the first points in (distance, index) order, as in input order."""
    rng = np.random.default_rng(d)
    X = rng.integers(0, 4, size=(1200, d)).astype(float)   # many ties and duplicates
    X[::7] += rng.normal(scale=1e-3, size=X[::7].shape)
    order = spatial_order(X)
    assert np.array_equal(np.sort(order), np.arange(len(X)))
    assert not np.array_equal(order, np.arange(len(X)))
    index = NeighborIndex("exact").fit(X)
    assert index.backend_ == "kd_tree"
    dist, ind = index.kneighbors(n_neighbors=8)
    ref_d, ref_i = _by_distance_then_index(X, X, 8, own=True)
    assert np.array_equal(ind, ref_i)
    assert np.allclose(dist, ref_d, rtol=1e-12, atol=0)
    Q = rng.integers(0, 4, size=(300, d)).astype(float)   # new points, ties again
    dist, ind = index.kneighbors(Q, n_neighbors=8)
    ref_d, ref_i = _by_distance_then_index(X, Q, 8, own=False)
    assert np.array_equal(ind, ref_i)
    assert np.allclose(dist, ref_d, rtol=1e-12, atol=0)
    # sparse new points against the dense tree: the same lists, bit for bit
    dist_s, ind_s = index.kneighbors(sp.csr_matrix(Q), n_neighbors=8)
    assert np.array_equal(ind_s, ind) and np.array_equal(dist_s, dist)


def test_approximate_recall_on_fixed_problem():
    pytest.importorskip("faiss")
    X = np.random.default_rng(0).normal(size=(3000, 10))
    index = NeighborIndex("approximate", random_state=0).fit(X)
    assert index.method_ == "approximate" and index.backend_ == "hnsw"
    _, ind = index.kneighbors(n_neighbors=10)
    _, ref = NearestNeighbors(n_neighbors=10).fit(X).kneighbors()
    recall = np.mean([len(np.intersect1d(a, b)) / 10 for a, b in zip(ind, ref, strict=True)])
    assert recall >= 0.9
    assert np.all(ind != np.arange(len(X))[:, None])
    # the estimate from 256 sampled points agrees with the full measurement
    assert abs(index.estimate_recall(10, random_state=0) - recall) < 0.05




def test_approximate_in_spatial_order_answers_in_row_indices(monkeypatch):
    """From ``HNSW_SPATIAL_MIN_SAMPLES`` points the graph's nodes are the rows in Z-order;
    every answer must still name rows of ``X``: the distances recomputed from the rows,
    each point's own row excluded, the recall of the input-order graph, queries of new
    points, the recall estimate and a pickled index."""
    pytest.importorskip("faiss")
    import pickle

    X = np.random.default_rng(1).normal(size=(3000, 10))
    _, ref = NearestNeighbors(n_neighbors=10).fit(X).kneighbors()

    def recall(ind):
        return np.mean([len(np.intersect1d(a, b)) / 10 for a, b in zip(ind, ref, strict=True)])

    plain = NeighborIndex("approximate", random_state=0, n_jobs=1).fit(X)
    monkeypatch.setattr(graph, "HNSW_SPATIAL_MIN_SAMPLES", 1000)
    index = NeighborIndex("approximate", random_state=0, n_jobs=1).fit(X)
    assert plain._hnsw.first is None
    order = index._hnsw.first
    assert np.array_equal(np.sort(order), np.arange(len(X)))
    assert not np.array_equal(order, np.arange(len(X)))
    dist, ind = index.kneighbors(n_neighbors=10)
    assert np.all(ind != np.arange(len(X))[:, None])
    assert np.allclose(dist, np.linalg.norm(X[ind] - X[:, None, :], axis=2), atol=1e-5)
    assert np.all(np.diff(dist, axis=1) >= 0)
    assert recall(ind) >= 0.95 and recall(ind) >= recall(plain.kneighbors(n_neighbors=10)[1]) - 0.03
    assert abs(index.estimate_recall(10, random_state=0) - recall(ind)) < 0.05
    Q = X[:40] + 0.01
    d_q, i_q = index.kneighbors(Q, n_neighbors=5)
    assert np.allclose(d_q, np.linalg.norm(X[i_q] - Q[:, None, :], axis=2), atol=1e-5)
    assert np.mean(i_q[:, 0] == np.arange(40)) >= 0.95
    copy = pickle.loads(pickle.dumps(index))
    assert np.array_equal(copy.kneighbors(Q, n_neighbors=5)[1], i_q)
    # the same values in a CSR container: the same insertion order, the same lists
    sparse = NeighborIndex("approximate", random_state=0, n_jobs=1).fit(sp.csr_matrix(X))
    assert np.array_equal(sparse._hnsw.first, order)
    assert np.array_equal(sparse.kneighbors(n_neighbors=10)[1], ind)


def test_visited_array_sets_and_restores_faiss_threshold():
    faiss = pytest.importorskip("faiss")
    from psdlearn._compat import visited_array

    if not hasattr(getattr(faiss, "cvar", None), "visited_table_hashset_threshold"):
        pytest.skip("this faiss has no visited-table threshold")
    saved = faiss.cvar.visited_table_hashset_threshold
    with visited_array(faiss):
        assert faiss.cvar.visited_table_hashset_threshold >= 2**62
    assert faiss.cvar.visited_table_hashset_threshold == saved
    with pytest.raises(RuntimeError), visited_array(faiss):
        raise RuntimeError
    assert faiss.cvar.visited_table_hashset_threshold == saved


def test_approximate_keeps_lowest_indices_among_ties():
    # integer data: many points tie at the k-th distance. Where every point within that
    # distance fits among the search's 1.5 k candidates, the approximate search must keep
    # the same points as a full sort by (distance, index), not its traversal's order.
    pytest.importorskip("faiss")
    X = np.random.default_rng(1).integers(0, 3, size=(400, 5)).astype(float)
    k = 5
    _, ind = NeighborIndex("approximate", random_state=0).fit(X).kneighbors(n_neighbors=k)
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    n = len(X)
    canonical = np.lexsort((np.broadcast_to(np.arange(n), (n, n)), D))[:, :k]
    kth = np.take_along_axis(D, canonical[:, -1:], axis=1)
    within = (D <= kth).sum(axis=1)
    fits = within <= int(np.ceil(1.5 * (k + 1))) - 1  # the candidates left after self
    straddles = within > k  # a tie crosses the cut: the order of ties decides
    assert np.sum(fits & straddles) >= 40
    assert np.array_equal(np.sort(ind[fits], axis=1), np.sort(canonical[fits], axis=1))


def _canonical_neighbors(X, k):
    """Exact neighbours by a full sort on (squared distance, index), self excluded."""
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    n = len(X)
    order = np.lexsort((np.broadcast_to(np.arange(n), (n, n)), D))[:, :k]
    return order, np.take_along_axis(D, order, axis=1)


@pytest.mark.parametrize("bias", [graph.HNSW_INDEX_BIAS, 0.0])
def test_approximate_searches_by_distance_then_index_on_integer_data(monkeypatch, bias):
    # binary data: a point's ball up to its k-th distance holds far more than the 1.5 k
    # candidates, so re-sorting candidates cannot find the low-index tied points; the
    # index-bias coordinate makes the traversal itself rank by (distance, index)
    pytest.importorskip("faiss")
    monkeypatch.setattr(graph, "HNSW_INDEX_BIAS", bias)
    X = np.random.default_rng(3).integers(0, 2, size=(2000, 10)).astype(float)
    k = 10
    dist, ind = NeighborIndex("approximate", random_state=0).fit(X).kneighbors(n_neighbors=k)
    canonical, _ = _canonical_neighbors(X, k)
    same = np.mean([set(a) == set(b) for a, b in zip(ind, canonical, strict=True)])
    # distances are the true ones (the bias is removed), whatever points were kept
    true = ((X[:, None, :] - X[ind]) ** 2).sum(-1)
    assert np.allclose(dist ** 2, true, atol=1e-9)
    if bias:  # measured: 0.97 of the rows, 0.997 of the neighbours
        assert same >= 0.9
        overlap = np.mean([len(set(a) & set(b)) for a, b in zip(ind, canonical, strict=True)])
        assert overlap >= 0.99 * k
    else:  # without it the traversal's order of ties decides (measured 0.23 of the rows)
        assert same < 0.5


def test_distinct_rows_and_index_bias_only_on_integer_data():
    pytest.importorskip("faiss")
    X = np.random.default_rng(0).normal(size=(500, 4))
    assert not NeighborIndex("approximate", random_state=0).fit(X)._hnsw.integer
    Xi = np.rint(X)
    for data in (Xi, sp.csr_matrix(Xi)):
        hnsw = NeighborIndex("approximate", random_state=0).fit(data)._hnsw
        assert hnsw.integer and hnsw.n_nodes == len(np.unique(Xi, axis=0))
        # every point is the copy of a node with its row, each node's copies ascend
        assert np.array_equal(Xi[hnsw.first[hnsw.inverse]], Xi)
        assert np.all(np.diff(hnsw.members)[np.diff(hnsw.inverse[hnsw.members]) == 0] > 0)


def test_auto_is_exact_on_small_data():
    X = np.random.default_rng(0).normal(size=(500, 8))
    S, sigma, index, info = knn_graph(X, 5, return_index=True)
    assert info == {"method": "exact", "backend": "brute", "n_neighbors": 5, "recall": 1.0}
    assert index.method_ == "exact"


def test_graph_equals_definition_and_sigma_from_same_search():
    X = np.random.default_rng(1).normal(size=(200, 4))
    S, sigma = knn_graph(X, n_neighbors=5, knn_method="exact")
    dist, ind = NearestNeighbors(n_neighbors=10).fit(X).kneighbors()
    assert sigma == pytest.approx(0.5 * dist.mean())
    W = np.zeros((200, 200))
    for i in range(200):
        W[i, ind[i, :5]] = np.exp(-dist[i, :5] ** 2 / (2 * sigma**2))
    assert np.allclose(S.toarray(), np.maximum(W, W.T))
    assert S.nnz <= 2 * 5 * 200


def test_duplicates_and_isolated_points_give_no_nan():
    rng = np.random.default_rng(2)
    X = np.vstack([np.repeat(rng.normal(size=(10, 3)), 4, axis=0), [[1e6, 1e6, 1e6]]])
    L = knn_laplacian(X, n_neighbors=3, sigma=0.5)
    assert np.all(np.isfinite(L.data))
    assert L[len(X) - 1, len(X) - 1] == pytest.approx(1.01)
    assert L[len(X) - 1].nnz == 1  # the isolated point keeps only its diagonal


def test_edges_warn():
    X = np.random.default_rng(3).normal(size=(12, 2))
    with pytest.warns(UserWarning, match=r"n_neighbors=20 >= n_samples=12.*all 11 others"):
        S, _ = knn_graph(X, n_neighbors=20)
    assert S.nnz == 12 * 11
    with pytest.warns(UserWarning, match="all points coincide"):
        S, sigma = knn_graph(np.ones((10, 3)), n_neighbors=3)
    assert sigma == 1.0 and np.allclose(S.data, 1.0)


def test_distance_graph_input_matches_internal_search():
    X = np.random.default_rng(4).normal(size=(150, 6))
    D = KNeighborsTransformer(n_neighbors=8, mode="distance").fit_transform(X)
    dist, ind = neighbors_from_distance_graph(D, n_neighbors=8)
    ref_d, ref_i = NeighborIndex("exact").fit(X).kneighbors(n_neighbors=8)
    _same_neighbours(ind, dist, ref_i, ref_d)
    with pytest.raises(ValueError, match="at least 9 neighbours"):
        neighbors_from_distance_graph(D, n_neighbors=9)
    with pytest.raises(TypeError, match="scipy.sparse"):
        neighbors_from_distance_graph(D.toarray())


def test_bad_method_and_unfitted():
    with pytest.raises(ValueError, match="knn_method must be one of"):
        NeighborIndex("fast").fit(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="not fitted"):
        NeighborIndex().kneighbors(n_neighbors=1)
    with pytest.raises(ValueError, match=r"n_neighbors must lie in \[1, 2\]"):
        NeighborIndex().fit(np.eye(3)).kneighbors(n_neighbors=3)


def test_approximate_is_deterministic_and_pickles():
    pytest.importorskip("faiss")
    import pickle

    X = np.random.default_rng(5).normal(size=(4000, 12))
    # one thread: the guaranteed case (faiss does not promise its threaded insertion order)
    a = NeighborIndex("approximate", random_state=3, n_jobs=1).fit(X)
    b = NeighborIndex("approximate", random_state=3, n_jobs=1).fit(X)
    d_a, i_a = a.kneighbors(n_neighbors=8)
    d_b, i_b = b.kneighbors(n_neighbors=8)
    assert np.array_equal(i_a, i_b) and np.array_equal(d_a, d_b)
    c = pickle.loads(pickle.dumps(a))
    Q = X[:50] + 0.01
    assert np.array_equal(c.kneighbors(Q, n_neighbors=5)[1], a.kneighbors(Q, n_neighbors=5)[1])


@pytest.mark.parametrize("integer", [False, True])
def test_arrays_handed_to_faiss_outlive_its_search(integer):
    """``faiss.swig_ptr`` keeps no reference to its array: every array whose pointer the
    search of the indexed points passes must still exist when faiss reads it (a temporary
    freed before the call gave garbage entry distances, and neighbour lists that changed
    from process to process)."""
    import weakref

    faiss = pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(3000, 6)).astype(float) if integer else rng.normal(
        size=(3000, 6))
    index = NeighborIndex("approximate", random_state=0, n_jobs=1).fit(X)
    hnsw = index._hnsw
    assert hnsw.integer == integer
    handed, calls = [], []

    class Recorder:
        def __init__(self, module):
            self._module = module

        def __getattr__(self, name):
            return getattr(self._module, name)

        def swig_ptr(self, array):
            handed.append(weakref.ref(array))
            return faiss.swig_ptr(array)

    class Guard:
        def __init__(self, index):
            self._index = index

        def __getattr__(self, name):
            return getattr(self._index, name)

        def search_level_0(self, *args):
            calls.append([ref() is not None for ref in handed])
            handed.clear()
            return self._index.search_level_0(*args)

    expected = index.kneighbors(n_neighbors=5)
    hnsw._faiss, hnsw.index = Recorder(faiss), Guard(hnsw.index)
    dist, ind = index.kneighbors(n_neighbors=5)
    assert calls and all(len(alive) == 5 and all(alive) for alive in calls)
    assert np.array_equal(ind, expected[1]) and np.array_equal(dist, expected[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_permute_rows_in_place_is_fancy_indexing(dtype):
    from psdlearn._order import permute_rows

    rng = np.random.default_rng(0)
    for perm in (np.arange(7), np.roll(np.arange(7), 1), rng.permutation(1000),
                 np.array([0]), np.array([1, 0, 3, 2])):
        A = rng.standard_normal((len(perm), 3)).astype(dtype)
        expected = A[perm]
        assert permute_rows(A, perm) is A
        np.testing.assert_array_equal(A, expected)
    with pytest.raises(ValueError, match="C-contiguous"):
        permute_rows(np.zeros((4, 3)).T, np.arange(3))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_the_searches_reject_non_finite_points(bad):
    # a validated float64 matrix skips scikit-learn's checks: not one with a NaN or inf
    X = np.random.default_rng(0).normal(size=(30, 3))
    X[4, 1] = bad
    for call in (lambda: NeighborIndex().fit(X), lambda: knn_graph(X, 5)):
        with pytest.raises(ValueError, match="NaN|infinity"):
            call()
    # another dtype is converted, as check_array converts it
    S32, _ = knn_graph(np.nan_to_num(X, posinf=0.0).astype(np.float32), 5)
    S64, _ = knn_graph(np.nan_to_num(X, posinf=0.0), 5)
    assert abs(S32 - S64).max() < 1e-6

