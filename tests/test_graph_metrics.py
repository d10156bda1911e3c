import numpy as np
import pytest
import scipy.sparse as sp

from psdlearn import kernel_kmeans
from psdlearn.graph import knn_graph, knn_laplacian
from psdlearn.metrics import centered_alignment, class_separation, pairwise_accuracy


@pytest.fixture(params=[0, 1])
def blobs(request):
    rng = np.random.default_rng(request.param)
    centers = rng.normal(scale=4, size=(3, 4))
    y = rng.integers(0, 3, size=120)
    return centers[y] + rng.normal(size=(120, 4)), y


@pytest.mark.parametrize("delta", [0.01, 0.5])
def test_laplacian_spectrum_symmetry_diagonal(blobs, delta):
    X, _ = blobs
    L = knn_laplacian(X, n_neighbors=5, delta=delta)
    assert sp.isspmatrix_csr(L) or isinstance(L, sp.csr_array)
    dense = L.toarray()
    assert np.array_equal(dense, dense.T)
    assert np.allclose(np.diag(dense), 1 + delta)
    ev = np.linalg.eigvalsh(dense)
    assert ev.min() >= delta - 1e-10
    assert ev.max() <= 2 + delta + 1e-10
    # a connected kNN graph has the eigenvalue delta exactly (D^1/2 1 is in the kernel)
    assert ev.min() == pytest.approx(delta, abs=1e-8)


def test_jacobi_spectral_radius_below_contraction_bound(blobs):
    """Seed 000 Prop. 1: rho(G_U D_UU^-1) <= 1 / (1 + delta) < 1 for any subset U."""
    X, _ = blobs
    delta = 0.05
    L = knn_laplacian(X, n_neighbors=5, delta=delta).toarray()
    rng = np.random.default_rng(3)
    for _ in range(5):
        U = np.sort(rng.choice(len(X), size=70, replace=False))
        G_U = -(L - np.diag(np.diag(L)))[np.ix_(U, U)]
        J = G_U / np.diag(L)[U][None, :]
        rho = np.abs(np.linalg.eigvals(J)).max()
        assert rho <= 1 / (1 + delta) + 1e-12


def test_knn_graph_sigma_rule_and_symmetry():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    S, sigma = knn_graph(X, n_neighbors=3)
    D = np.linalg.norm(X[:, None] - X[None], axis=2)
    np.fill_diagonal(D, np.inf)
    expected = 0.5 * np.sort(D, axis=1)[:, :10].mean()
    assert sigma == pytest.approx(expected)
    S = S.toarray()
    assert np.array_equal(S, S.T) and np.all(np.diag(S) == 0)
    # each point keeps at least its 3 nearest neighbours with the Gaussian weight
    i = 7
    nn = np.argsort(D[i])[:3]
    assert np.allclose(S[i, nn], np.exp(-D[i, nn] ** 2 / (2 * sigma**2)))


def test_duplicates_and_isolated_points_are_finite():
    X = np.vstack([np.zeros((6, 2)), [[1e6, 1e6]], np.ones((3, 2))])
    L = knn_laplacian(X, n_neighbors=2)
    assert np.all(np.isfinite(L.data))
    ev = np.linalg.eigvalsh(L.toarray())
    assert ev.min() >= 0.01 - 1e-10 and ev.max() <= 2.01 + 1e-10
    with pytest.raises(ValueError, match="at least 2"):
        knn_laplacian(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="delta"):
        knn_laplacian(X, delta=0)
    with pytest.raises(ValueError):
        knn_laplacian(np.array([[0.0, np.nan], [1.0, 2.0]]))


def _dense_alignment(K1, K2):
    n = len(K1)
    H = np.eye(n) - np.ones((n, n)) / n
    A, B = H @ K1 @ H, H @ K2 @ H
    return np.sum(A * B) / np.linalg.norm(A) / np.linalg.norm(B)


def test_centered_alignment_matches_dense_and_factors():
    rng = np.random.default_rng(0)
    E1, E2 = rng.normal(size=(30, 4)), rng.normal(size=(30, 6))
    K1, K2 = E1 @ E1.T, E2 @ E2.T
    ref = _dense_alignment(K1, K2)
    assert centered_alignment(K1, K2) == pytest.approx(ref, rel=1e-12)
    assert centered_alignment(E1, E2) == pytest.approx(ref, rel=1e-10)
    assert centered_alignment(K1, E2) == pytest.approx(ref, rel=1e-10)
    assert centered_alignment(E1, K2) == pytest.approx(ref, rel=1e-10)
    assert centered_alignment(3.5 * K1, 0.2 * K2) == pytest.approx(ref, rel=1e-12)
    assert centered_alignment(K1, K1) == pytest.approx(1.0)
    assert centered_alignment(E1, E1) == pytest.approx(1.0)
    # square factor: forced interpretation
    E3 = rng.normal(size=(30, 30))
    assert centered_alignment(E3, K2, factors=(True, False)) == pytest.approx(
        _dense_alignment(E3 @ E3.T, K2), rel=1e-10)


def test_class_separation_exact_and_sampled():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, size=300)
    Z = rng.normal(size=(300, 3)) + 3 * y[:, None]
    D = np.linalg.norm(Z[:, None] - Z[None], axis=2)
    same = y[:, None] == y[None]
    off = ~np.eye(300, dtype=bool)
    ref = D[~same].mean() / D[same & off].mean()
    assert class_separation(Z, y) == pytest.approx(ref, rel=1e-10)
    approx = class_separation(Z, y, max_exact=10, n_pairs=400_000, random_state=0)
    assert approx == pytest.approx(ref, rel=2e-2)
    assert class_separation(2.0 * Z, y) == pytest.approx(ref, rel=1e-10)


def test_pairwise_accuracy_is_rand_index():
    y = np.array([0, 0, 1, 1])
    assert pairwise_accuracy(y, [1, 1, 0, 0]) == 1.0
    # pairs: (01 same/same ok) (23 ok) cross pairs 4 different/same-> clusters all one
    assert pairwise_accuracy(y, [0, 0, 0, 0]) == pytest.approx(2 / 6)


def test_kernel_kmeans_recovers_separated_clusters():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 30)
    E = np.eye(3)[y] * 10 + rng.normal(scale=0.1, size=(90, 3))
    labels = kernel_kmeans(E, 3, n_init=5, random_state=0)
    assert pairwise_accuracy(y, labels) == 1.0
    with pytest.raises(ValueError):
        kernel_kmeans(E, 0)
