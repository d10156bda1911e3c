"""KernelMetricLearner (seed 004): closed-form beta, landmarks, LLE weights, out-of-sample."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.metrics.pairwise import rbf_kernel

import psdlearn as pl
from psdlearn.kml._beta import (
    center_kernel,
    centered_eigenpairs,
    optimal_beta,
    pair_dispersion,
)
from psdlearn.kml._lle import local_weights, local_weights_reference


@pytest.fixture(scope="module")
def xor():
    X, y = pl.datasets.make_xor(240, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=20, n_cannot=0, random_state=1)
    return X, y, C


def similar_sq_dist(Z, pairs):
    diff = Z[pairs[:, 0]] - Z[pairs[:, 1]]
    return float(np.mean(np.sum(diff * diff, axis=1)))


# ------------------------------------------------------------------ beta (eqs. 1-4)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beta_minimizes_JS_under_sum_constraint(seed):
    rng = np.random.default_rng(seed)
    d = rng.uniform(0.01, 2.0, size=12)
    c = 3.7
    beta = optimal_beta(d, c)
    # KKT of (3): D beta = rho 1 and 1^T beta = c
    assert_allclose(beta.sum(), c, rtol=1e-12)
    assert_allclose(d * beta, np.full(12, (d * beta)[0]), rtol=1e-10)
    # a generic constrained solver reaches the same minimum
    res = minimize(lambda b: b @ (d * b), np.full(12, c / 12), jac=lambda b: 2 * d * b,
                   constraints=[{"type": "eq", "fun": lambda b: b.sum() - c,
                                 "jac": lambda b: np.ones_like(b)}],
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    assert res.success
    assert_allclose(beta @ (d * beta), res.fun, rtol=1e-7)
    assert_allclose(beta, res.x, atol=1e-5)


def test_beta_ridge_and_singular_D():
    d = np.array([0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="eps"):
        optimal_beta(d, 1.0, eps=0.0)
    beta = optimal_beta(d, 1.0, eps=1e-6)
    assert beta.argmax() == 0
    assert_allclose(beta.sum(), 1.0)


def test_fitted_beta_is_the_closed_form_of_its_D_S(xor):
    X, _, C = xor
    for m in (None, 120):
        model = pl.KernelMetricLearner(n_landmarks=m, eps=0.0, random_state=0).fit(X, C)
        pos = np.searchsorted(model.landmark_indices_, model.similar_pairs_)
        d = pair_dispersion(model.eigenvectors_, pos)
        assert_allclose(model.beta_.sum(), np.sqrt(model.eigenvalues_).sum(), rtol=1e-12)
        assert_allclose(d * model.beta_, np.full(len(d), (d * model.beta_)[0]), rtol=1e-8)
        # J_S of the learned embedding is beta^T D_S beta (eq. 1)
        assert_allclose(similar_sq_dist(model.embedding_, model.similar_pairs_),
                        model.beta_ @ (d * model.beta_), rtol=1e-10)


def test_pair_dispersion_matches_definition():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((20, 4))
    pairs = np.array([[0, 3], [5, 7], [2, 19]])
    expected = np.mean([(A[i] - A[j]) ** 2 for i, j in pairs], axis=0)
    assert_allclose(pair_dispersion(A, pairs), expected, rtol=1e-14)


def test_centered_eigenpairs_lanczos_agrees_with_dense(xor):
    X = xor[0]
    Kc = center_kernel(rbf_kernel(X, gamma=0.5))
    lam, V = centered_eigenpairs(Kc)
    lam5, V5 = centered_eigenpairs(Kc, n_components=5)
    assert_allclose(lam5, lam[:5], rtol=1e-9)
    assert_allclose(np.abs(V5.T @ V[:, :5]), np.eye(5), atol=1e-6)
    # eigenvectors of a centered kernel are orthogonal to the constant vector, up to the
    # round-off eps * lambda_max / lambda_r of each eigenvector
    assert_allclose(V.sum(axis=0) * lam, 0.0, atol=1e-12 * lam[0])
    assert_allclose(Kc @ V, V * lam, atol=1e-9 * lam[0])


# ------------------------------------------------------------- full vs scalable
def test_all_points_as_landmarks_equals_full_version(xor):
    X, _, C = xor
    full = pl.KernelMetricLearner(random_state=0).fit(X, C)
    scal = pl.KernelMetricLearner(n_landmarks=len(X), random_state=0).fit(X, C)
    assert_array_equal(scal.landmark_indices_, np.arange(len(X)))
    assert (scal.weights_ != sp.identity(len(X), format="csr")).nnz == 0
    # same matrix H K H, centered in a different order: equal up to round-off
    assert_allclose(scal.eigenvalues_, full.eigenvalues_, atol=1e-12 * full.eigenvalues_[0])
    assert_allclose(scal.beta_, full.beta_, rtol=1e-5)
    K_full = full.embedding_ @ full.embedding_.T
    K_scal = scal.embedding_ @ scal.embedding_.T
    assert_allclose(K_scal, K_full, atol=1e-8 * np.abs(K_full).max())


def test_rbf_weights_reproduce_the_centered_kernel(xor):
    """beta_r = sqrt(lambda_r) is the unmodified kernel: V diag(lambda) V^T = H K H."""
    X = xor[0]
    model = pl.KernelMetricLearner(gamma=0.5).fit(X, xor[2])
    V, lam = model.eigenvectors_, model.eigenvalues_
    Kc = center_kernel(rbf_kernel(X, gamma=0.5))
    assert_allclose((V * lam) @ V.T, Kc, atol=1e-8)


# ---------------------------------------------------------- locally linear weights
def test_local_weights_reconstruct_a_point_in_the_span_of_its_neighbours():
    rng = np.random.default_rng(0)
    near = rng.standard_normal((4, 6))           # 4 landmarks close to x
    far = 50.0 + rng.standard_normal((10, 6))    # others far away
    landmarks = np.vstack([far[:5], near, far[5:]])
    a = np.array([0.1, 0.5, 0.3, 0.1])
    x = a @ near                                  # in the affine span of its neighbours
    X = x[None, :]
    idx, w = local_weights(np.einsum("ij,ij->i", X, X), X @ landmarks.T,
                           landmarks @ landmarks.T, 4, reg=1e-12)
    assert set(idx[0]) == {5, 6, 7, 8}
    assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)
    assert_allclose(w[0] @ landmarks[idx[0]], x, atol=1e-6)
    order = np.argsort(idx[0])
    assert_allclose(w[0][order], a, atol=1e-5)


def test_local_weights_minimize_the_local_error():
    """Weights solve min w^T G w s.t. 1^T w = 1 (eq. 12): better than any feasible step."""
    rng = np.random.default_rng(1)
    L = rng.standard_normal((30, 3))
    X = rng.standard_normal((5, 3))
    Kll, Kxl = rbf_kernel(L, gamma=0.7), rbf_kernel(X, L, gamma=0.7)
    reg = 1e-9
    idx, w = local_weights(np.ones(5), Kxl, Kll, 6, reg=reg)
    assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)
    for i in range(5):
        N = idx[i]
        G = 1.0 + Kll[np.ix_(N, N)] - Kxl[i, N][:, None] - Kxl[i, N][None, :]
        G += reg * np.trace(G) / 6 * np.eye(6)
        best = w[i] @ G @ w[i]
        for _ in range(20):
            step = rng.standard_normal(6)
            step -= step.mean()
            trial = w[i] + 1e-3 * step
            assert trial @ G @ trial >= best - 1e-15
        # the K nearest landmarks in feature space are the K largest kernel values
        assert set(N) == set(np.argsort(-Kxl[i])[:6])


@pytest.mark.parametrize("n_neighbors, reg", [(1, 1e-3), (6, 1e-3), (15, 1e-8), (40, 1e-2)])
def test_compiled_local_weights_match_the_numpy_reference(n_neighbors, reg):
    rng = np.random.default_rng(3)
    L = rng.standard_normal((40, 3))
    X = np.vstack([rng.standard_normal((60, 3)), L[[2, 17]]])   # two rows are landmarks
    Kll, Kxl = rbf_kernel(L, gamma=0.4), rbf_kernel(X, L, gamma=0.4)
    idx, w = local_weights(np.ones(len(X)), Kxl, Kll, n_neighbors, reg)
    idx_ref, w_ref = local_weights_reference(np.ones(len(X)), Kxl, Kll, n_neighbors, reg)
    assert_array_equal(idx, idx_ref)
    assert_allclose(w, w_ref, rtol=1e-7, atol=1e-9)
    assert_allclose(w[-2:], np.eye(1, min(n_neighbors, 40)).repeat(2, axis=0))
    assert_array_equal(idx[-2:, 0], [2, 17])


def test_weights_matrix_structure(xor):
    X, _, C = xor
    model = pl.KernelMetricLearner(n_landmarks=100, n_neighbors=7, n_iter=2,
                                   random_state=0).fit(X, C)
    W = model.weights_
    assert sp.issparse(W) and W.shape == (len(X), 100)
    assert_allclose(np.asarray(W.sum(axis=1)).ravel(), 1.0, rtol=1e-12)
    assert np.diff(W.indptr).max() <= 7
    lm = model.landmark_indices_
    assert_array_equal(W[lm].toarray(), np.eye(100))
    assert set(np.unique(C.must_link)) <= set(lm)
    assert_allclose(model.embedding_, W @ (model.eigenvectors_ * model.beta_), atol=1e-12)


# ------------------------------------------------------------- out-of-sample
@pytest.mark.parametrize("n_landmarks, n_iter", [(None, 1), (100, 1), (100, 3)])
def test_out_of_sample_of_training_points_equals_in_sample(xor, n_landmarks, n_iter):
    X, _, C = xor
    model = pl.KernelMetricLearner(n_landmarks=n_landmarks, n_iter=n_iter,
                                   random_state=0).fit(X, C)
    Z = model.transform(X)
    assert Z.shape == model.embedding_.shape
    assert_allclose(Z, model.embedding_, atol=1e-6 * np.abs(model.embedding_).max())


def test_full_out_of_sample_is_the_kpca_projection(xor):
    """A new point's learned coordinates are beta_r / sqrt(lambda_r) times its KPCA ones."""
    X, _, C = xor
    Xn = pl.datasets.make_xor(20, random_state=5)[0]
    model = pl.KernelMetricLearner(gamma=0.5, n_components=8).fit(X, C)
    from sklearn.decomposition import KernelPCA

    kpca = KernelPCA(n_components=8, kernel="rbf", gamma=0.5, eigen_solver="dense").fit(X)
    P = kpca.transform(Xn)
    Z = model.transform(Xn) * np.sqrt(model.eigenvalues_) / model.beta_
    assert_allclose(np.abs(Z), np.abs(P), atol=1e-7)


def test_iterative_extension_keeps_beta_and_changes_weights(xor):
    X, _, C = xor
    one = pl.KernelMetricLearner(n_landmarks=100, n_iter=1, random_state=0).fit(X, C)
    three = pl.KernelMetricLearner(n_landmarks=100, n_iter=3, random_state=0).fit(X, C)
    assert three.n_iter_ == 3
    assert_allclose(three.beta_, one.beta_, rtol=1e-12)
    # fixed point: the centered learned landmark kernel gives back beta
    E = one.eigenvectors_ * one.beta_
    mu, A = centered_eigenpairs(center_kernel(E @ E.T))
    pos = np.searchsorted(one.landmark_indices_, one.similar_pairs_)
    beta2 = optimal_beta(pair_dispersion(A, pos), float(np.sqrt(mu).sum()), one.eps)
    assert_allclose(np.sort(beta2), np.sort(one.beta_), rtol=1e-6)
    assert (three.weights_ != one.weights_).nnz > 0


# ----------------------------------------------------------- metric quality
@pytest.mark.parametrize("n_landmarks", [None, 120])
def test_learned_metric_shrinks_similar_pairs_relative_to_rbf(xor, n_landmarks):
    X, y, C = xor
    model = pl.KernelMetricLearner(n_landmarks=n_landmarks, gamma=0.5,
                                   random_state=0).fit(X, C)
    pairs = C.must_link
    K = rbf_kernel(X, gamma=0.5)
    rbf = float(np.mean(2.0 - 2.0 * K[pairs[:, 0], pairs[:, 1]]))
    learned = similar_sq_dist(model.embedding_, pairs)
    assert learned < rbf
    # and it separates the classes better than the RBF feature space (J of eq. 17)
    J_rbf = pl.metrics.class_separation(
        model.eigenvectors_ * np.sqrt(model.eigenvalues_), y[model.landmark_indices_])
    J_learned = pl.metrics.class_separation(model.embedding_, y)
    assert J_learned > J_rbf


# -------------------------------------------------------------- API contract
def test_side_information_forms_agree(xor):
    X, y, C = xor
    ref = pl.KernelMetricLearner(n_landmarks=80, random_state=0).fit(X, C)
    from_pairs = pl.KernelMetricLearner(n_landmarks=80, random_state=0).fit(X, C.must_link)
    assert_allclose(from_pairs.embedding_, ref.embedding_)
    i, j = 0, int(np.flatnonzero(y != y[0])[0])
    mixed = pl.PairwiseConstraints(np.vstack([C.must_link, [[i, j]]]),
                                   np.r_[np.ones(C.n_pairs), -1], n_samples=len(X))
    with pytest.warns(UserWarning, match="1 cannot-link pair"):
        ignored = pl.KernelMetricLearner(n_landmarks=80, random_state=0).fit(X, mixed)
    assert_allclose(ignored.embedding_, ref.embedding_)
    labels = np.full(len(y), -1)
    labels[:6] = y[:6]
    m = pl.KernelMetricLearner().fit(X, labels)
    expected = {(i, j) for i in range(6) for j in range(i + 1, 6) if y[i] == y[j]}
    assert set(map(tuple, m.similar_pairs_.tolist())) == expected


def test_bad_input_is_rejected(xor):
    X, _, C = xor
    with pytest.raises(ValueError, match="smaller than"):
        pl.KernelMetricLearner(n_landmarks=5).fit(X, C)
    with pytest.raises(ValueError, match="no similar"), pytest.warns(UserWarning):
        pl.KernelMetricLearner().fit(X, pl.PairwiseConstraints([[0, 1]], [-1], len(X)))
    Xbad = X.copy()
    Xbad[0, 0] = np.nan
    with pytest.raises(ValueError):
        pl.KernelMetricLearner().fit(Xbad, C)
    with pytest.raises(ValueError, match="self-pair"):
        pl.KernelMetricLearner().fit(X, [[3, 3]])
    with pytest.raises(ValueError):
        pl.KernelMetricLearner(n_iter=0).fit(X, C)
    model = pl.KernelMetricLearner(n_landmarks=80, random_state=0).fit(X, C)
    with pytest.raises(ValueError):
        model.transform(np.ones((3, 5)))


def test_params_round_trip_and_determinism(xor):
    X, _, C = xor
    est = pl.KernelMetricLearner(kernel="laplacian", n_landmarks=90, n_neighbors=4,
                                 n_iter=2, eps=1e-6, reg=1e-2, random_state=3)
    assert clone(est).get_params() == est.get_params()
    a = clone(est).fit(X, C)
    b = clone(est).fit(X, C)
    assert_array_equal(a.landmark_indices_, b.landmark_indices_)
    assert_array_equal(a.embedding_, b.embedding_)
    Xc = X.copy()
    clone(est).fit(Xc, C)
    assert_array_equal(Xc, X)


@pytest.mark.parametrize("kernel", ["linear", "poly", "laplacian"])
def test_other_kernels_fit_and_embed(xor, kernel):
    X, _, C = xor
    model = pl.KernelMetricLearner(kernel=kernel, n_landmarks=80, random_state=0).fit(X, C)
    assert np.all(np.isfinite(model.transform(X[:10])))
    assert_allclose(model.beta_.sum(), np.sqrt(model.eigenvalues_).sum(), rtol=1e-12)


def test_rbf_class_separation_is_J_in_the_rbf_feature_space(xor):
    """The blocked J of the reproductions equals J of an exact RBF feature embedding."""
    from psdlearn.experiments.yeung_xor import rbf_class_separation

    X, y, _ = xor
    s, U = np.linalg.eigh(rbf_kernel(X, gamma=0.5))
    Z = U * np.sqrt(np.maximum(s, 0.0))        # Z Z^T = K: feature distances are exact
    assert_allclose(rbf_class_separation(X, y, 0.5), pl.metrics.class_separation(Z, y),
                    rtol=1e-6)


def test_scalable_fit_never_allocates_n_by_n():
    import tracemalloc

    X, y = pl.datasets.make_xor(20_000, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=20, n_cannot=0, random_state=0)
    model = pl.KernelMetricLearner(n_landmarks=60, n_iter=2, random_state=0)
    tracemalloc.start()
    try:
        model.fit(X, C)
        model.transform(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 48 * 2**20           # measured 22 MiB; one n x n array would be 3.2 GB
