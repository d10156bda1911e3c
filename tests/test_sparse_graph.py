"""The compiled graph builders give scipy's sparse results entry for entry and bit for bit:
``max(W, W^T)`` of the neighbour lists, and ``(1 + delta) I - D^-1/2 S D^-1/2``."""

import numpy as np
import pytest
import scipy.sparse as sp

from psdlearn._sparse_graph import laplacian_arrays, symmetric_maximum
from psdlearn.graph import graph_from_neighbors, normalized_laplacian


def _scipy_maximum(indices, weights):
    n, k = indices.shape
    W = sp.csr_matrix((weights.ravel(), indices.ravel(), np.arange(0, n * k + 1, k)),
                      shape=(n, n))
    S = W.maximum(W.T).tocsr()
    S.eliminate_zeros()
    S.sort_indices()
    return S


def _scipy_laplacian(S, delta):
    deg = np.asarray(S.sum(axis=1)).ravel()
    inv = np.zeros(len(deg))
    inv[deg > 0] = 1.0 / np.sqrt(deg[deg > 0])
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    A = sp.csr_matrix((S.data * (inv[rows] * inv[S.indices]), S.indices, S.indptr),
                      shape=S.shape)
    if (A != A.T).nnz:
        A = 0.5 * (A + A.T)
    L = ((1.0 + delta) * sp.identity(S.shape[0], format="csr") - A).tocsr()
    L.sort_indices()
    return L


def _same(A, B):
    """Same CSR structure and the same values to the bit."""
    assert A.shape == B.shape
    assert np.array_equal(A.indptr, B.indptr)
    assert np.array_equal(A.indices, B.indices)
    assert np.array_equal(A.data.view(np.int64), B.data.view(np.int64))


def _lists(rng, n, k, self_loops=False):
    indices = np.stack([rng.choice(n, size=k, replace=False) for _ in range(n)])
    if not self_loops:
        for i in range(n):  # neighbours other than the point itself
            indices[i] = rng.choice(np.setdiff1d(np.arange(n), [i]), size=k, replace=False)
    weights = rng.uniform(0.0, 1.0, size=(n, k))
    weights[rng.random((n, k)) < 0.1] = 0.0  # underflowed weights are dropped
    weights[indices == np.arange(n)[:, None]] = 0.0
    return indices.astype(np.int64), weights


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n, k", [(2, 1), (7, 3), (60, 5), (300, 12)])
def test_symmetric_maximum_is_scipys(seed, n, k):
    indices, weights = _lists(np.random.default_rng(seed), n, k, self_loops=seed % 2 == 1)
    ptr, cols, vals = symmetric_maximum(indices, weights)
    _same(sp.csr_matrix((vals, cols, ptr), shape=(n, n)), _scipy_maximum(indices, weights))
    distances = np.random.default_rng(seed).uniform(0.0, 40.0, size=(n, k))  # some underflow
    expected = np.exp(-(distances ** 2) / (2.0 * 1.5 ** 2))
    expected[indices == np.arange(n)[:, None]] = 0.0
    _same(graph_from_neighbors(distances, indices, 1.5), _scipy_maximum(indices, expected))


def test_symmetric_maximum_leaves_odd_lists_to_scipy():
    # a row that lists a neighbour twice (scipy sums such entries) or an index outside
    # the points: the general path decides
    assert symmetric_maximum(np.array([[1, 1], [0, 2], [0, 1]]), np.ones((3, 2))) is None
    assert symmetric_maximum(np.array([[1], [3]]), np.ones((2, 1))) is None
    assert symmetric_maximum(np.array([[1], [-1]]), np.ones((2, 1))) is None
    indices = np.array([[1, 1], [0, 2], [0, 1]])
    _same(graph_from_neighbors(np.ones((3, 2)), indices, 1.0),
          _scipy_maximum(indices, np.full((3, 2), np.exp(-0.5))))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("delta", [0.01, 1.0])
def test_normalized_laplacian_is_scipys(seed, delta):
    rng = np.random.default_rng(seed)
    indices, weights = _lists(rng, 80, 6)
    S = _scipy_maximum(indices, weights)
    if seed == 1:  # an isolated point: its row is (1 + delta) e_i
        S = S.tolil()
        S[3, :] = 0
        S[:, 3] = 0
        S = S.tocsr()
        S.eliminate_zeros()
    if seed == 2:  # stored zeros and a diagonal entry
        S = S.tolil()
        S[5, 5] = 0.25
        S = S.tocsr()
        S = S + S.T  # symmetric, with the diagonal entry
        S.sort_indices()
        S.data[(S.indices[:, None] == [7, 9]).any(axis=1) & (S.indices >= 0)] = 0.0
        S = S.maximum(S.T)  # stored zeros where both directions were zeroed
        S.sort_indices()
    _same(normalized_laplacian(S, delta), _scipy_laplacian(S, delta))


def test_asymmetric_similarity_is_symmetrized_as_before():
    rng = np.random.default_rng(3)
    S = _scipy_maximum(*_lists(rng, 40, 4))
    S.data = S.data * (1.0 + 1e-15 * rng.standard_normal(S.nnz))  # asymmetric by rounding
    inv = 1.0 / np.sqrt(np.asarray(S.sum(axis=1)).ravel())
    assert laplacian_arrays(S, inv, 1.01) is None
    L = normalized_laplacian(S, 0.01)
    _same(L, _scipy_laplacian(S, 0.01))
    assert abs(L - L.T).max() == 0.0


def test_laplacian_of_unsorted_similarity():
    rng = np.random.default_rng(4)
    S = _scipy_maximum(*_lists(rng, 30, 3))
    order = rng.permutation(S.nnz)
    T = sp.coo_matrix(S)
    U = sp.csr_matrix((T.data[order], (T.row[order], T.col[order])), shape=S.shape)
    U.has_sorted_indices = False
    _same(normalized_laplacian(U, 0.01), _scipy_laplacian(S, 0.01))


def test_large_graphs_keep_scipys_path(monkeypatch):
    import psdlearn._sparse_graph as sg

    indices, weights = _lists(np.random.default_rng(5), 50, 4)
    monkeypatch.setattr(sg, "COMPILED_MAX_ENTRIES", 199)
    assert symmetric_maximum(indices, weights) is None
    S = graph_from_neighbors(np.sqrt(-2.0 * np.log(np.maximum(weights, 1e-300))), indices, 1.0)
    assert S.nnz > 199
    assert laplacian_arrays(S, np.ones(50), 1.01) is None
    _same(normalized_laplacian(S, 0.01), _scipy_laplacian(S, 0.01))
