"""KernelMetricLearner (Yeung, Chang & Dai 2007): closed-form beta, landmarks, LLE weights,
out-of-sample, the side-information convention, quiet and interruptible fits."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.metrics import rand_score
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

import psdlearn as pl
from psdlearn._linalg import center_kernel
from psdlearn._progress import FitInterruptedWarning
from psdlearn.kml import _lle
from psdlearn.kml._lle import local_weights, local_weights_reference
from psdlearn.kml._similar import SimilarSet, similar_set
from psdlearn.kml.beta import centered_eigenpairs, optimal_beta, participation_ratio


@pytest.fixture(scope="module")
def xor():
    X, y = pl.datasets.make_xor(240, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=20, n_cannot=0, random_state=1)
    return X, y, C


def similar_sq_dist(Z, pairs):
    diff = Z[pairs[:, 0]] - Z[pairs[:, 1]]
    return float(np.mean(np.sum(diff * diff, axis=1)))


def dispersion(A, pairs):
    """D_S of eq. 2 by its definition, pair by pair."""
    return np.mean([(A[i] - A[j]) ** 2 for i, j in pairs], axis=0)


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


@pytest.mark.parametrize("n_landmarks", [None, 120])
def test_fitted_beta_is_the_closed_form_of_its_D_S(xor, n_landmarks):
    X, _, C = xor
    model = pl.KernelMetricLearner(n_landmarks=n_landmarks, eps=0.0, random_state=0).fit(X, C)
    pos = np.searchsorted(model.landmark_indices_, C.must_link)
    d = dispersion(model.eigenvectors_, pos)
    assert model.n_similar_pairs_ == C.n_must
    assert_allclose(model.beta_.sum(), np.sqrt(model.eigenvalues_).sum(), rtol=1e-12)
    assert_allclose(d * model.beta_, np.full(len(d), (d * model.beta_)[0]), rtol=1e-8)
    # J_S of the learned embedding is beta^T D_S beta (eq. 1)
    assert_allclose(similar_sq_dist(model.embedding_, C.must_link),
                    model.beta_ @ (d * model.beta_), rtol=1e-10)


def test_dispersion_of_pairs_matches_definition():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((20, 4))
    pairs = np.array([[0, 3], [5, 7], [2, 19]])
    S = SimilarSet(20, pairs=pairs)
    assert_allclose(S.dispersion(A, np.arange(20)), dispersion(A, pairs), rtol=1e-14)
    # rows of A for a subset of the samples (the landmarks): indices are mapped
    rows = np.array([0, 2, 3, 5, 7, 19])
    assert_allclose(S.dispersion(A[rows], rows), dispersion(A, pairs), rtol=1e-14)


def test_dispersion_of_labels_is_the_mean_over_every_within_class_pair():
    """The class-scatter form equals D_S over the sum_c n_c (n_c - 1) / 2 listed pairs."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, size=40)
    y[rng.choice(40, 12, replace=False)] = -1
    y[np.flatnonzero(y == 2)[1:]] = -1            # class 2 keeps one labelled point
    A = rng.standard_normal((40, 5))
    S = similar_set(y, 40, "test")
    pairs = np.array([(i, j) for i in range(40) for j in range(i + 1, 40)
                      if y[i] == y[j] != -1])
    assert S.n_pairs == len(pairs)
    assert_array_equal(S.points, np.unique(pairs))
    assert_allclose(S.dispersion(A, np.arange(40)), dispersion(A, pairs), rtol=1e-12)


def test_centered_eigenpairs_lanczos_agrees_with_dense(xor):
    X = xor[0]
    Kc = center_kernel(rbf_kernel(X, gamma=0.5))
    lam, V = centered_eigenpairs(Kc)
    lam5, V5 = centered_eigenpairs(Kc, rank=5)
    assert_allclose(lam5, lam[:5], rtol=1e-9)
    # both solvers sign the eigenvectors the same way
    assert_allclose(V5, V[:, :5], atol=1e-6)
    # eigenvectors of a centered kernel are orthogonal to the constant vector, up to the
    # round-off eps * lambda_max / lambda_r of each eigenvector
    assert_allclose(V.sum(axis=0) * lam, 0.0, atol=1e-12 * lam[0])
    assert_allclose(Kc @ V, V * lam, atol=1e-9 * lam[0])


def test_participation_ratio_counts_effective_eigenvalues():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((30, 30)))
    for spectrum, expected in (([5.0], 1), ([2.0] * 7, 7), ([4.0, 1.0, 1.0], 2)):
        lam = np.zeros(30)
        lam[:len(spectrum)] = spectrum
        K = (Q * lam) @ Q.T
        # ceil((sum lambda)^2 / sum lambda^2): 36 / 18 = 2 for (4, 1, 1)
        assert participation_ratio(K) == expected
    assert participation_ratio(np.zeros((4, 4))) == 1


def test_default_keeps_the_participation_ratio_of_the_spectrum(xor):
    X, _, C = xor
    model = pl.KernelMetricLearner().fit(X, C)
    Kc = center_kernel(rbf_kernel(X, gamma=model.kernel_gamma_))
    assert model.rank_ == participation_ratio(Kc) == len(model.beta_)
    every = pl.KernelMetricLearner(rank=None).fit(X, C)
    assert every.rank_ > model.rank_
    assert_allclose(every.eigenvalues_[:model.rank_], model.eigenvalues_, rtol=1e-8)


def test_default_does_not_let_near_null_eigenvectors_dominate():
    """Keeping every eigenvector lets 1 / D_S weight noise: the default clusters better."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    scores, shares = {"auto": [], None: []}, []
    for seed in (1, 2):
        C = pl.PairwiseConstraints.from_labels(y, n_must=50, n_cannot=0, random_state=seed)
        for q in scores:
            model = pl.KernelMetricLearner(n_landmarks=300, rank=q,
                                           random_state=0).fit(X, C)
            labels = KMeans(10, n_init=3, random_state=0).fit_predict(model.embedding_)
            scores[q].append(rand_score(y, labels))
        b2, lam = model.beta_**2, model.eigenvalues_
        shares.append(b2[lam < 1e-3 * lam[0]].sum() / b2.sum())
    # with every eigenvector (the paper's choice), up to 62% of the weight sits on
    # eigenvalues below 1e-3 lambda_max; measured Rand 0.94 (auto) against 0.77
    assert max(shares) > 0.5
    assert np.mean(scores["auto"]) > np.mean(scores[None]) + 0.05


def test_default_rbf_width_is_half_the_median_heuristic(xor):
    """sigma = the median distance in exp(-d^2 / (2 sigma^2)); other kernels unchanged."""
    from psdlearn.kml.estimator import median_heuristic_kernel_gamma

    X, _, C = xor
    model = pl.KernelMetricLearner().fit(X, C)
    assert model.kernel_gamma_ == pytest.approx(0.5 * median_heuristic_kernel_gamma(X))
    lap = pl.KernelMetricLearner(kernel="laplacian").fit(X, C)
    assert lap.kernel_gamma_ == pytest.approx(median_heuristic_kernel_gamma(X, "laplacian"))
    assert pl.KernelMetricLearner(kernel_gamma=0.3).fit(X, C).kernel_gamma_ == 0.3


def test_default_width_clusters_glass_better_than_the_inputs():
    """benchmarks/results/defaults_kml.md: with 50 similar pairs, k-means on the default
    embedding beats k-means on X on glass (Rand 0.69 against 0.67 at seed 0); the former
    width 1 / median(d^2) did not (0.65)."""
    X, y = pl.datasets.load("glass")
    C = pl.PairwiseConstraints.from_labels(y, n_must=50, n_cannot=0, random_state=0)

    def rand(Z):
        labels = KMeans(6, n_init=10, random_state=0).fit_predict(Z)
        return rand_score(y, labels)

    model = pl.KernelMetricLearner(random_state=0).fit(X, C)
    former = pl.KernelMetricLearner(kernel_gamma=2.0 * model.kernel_gamma_,
                                    random_state=0).fit(X, C)
    assert rand(model.embedding_) > rand(X) + 0.01 > rand(former.embedding_) + 0.02


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
    model = pl.KernelMetricLearner(kernel_gamma=0.5, rank=None).fit(X, xor[2])
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
    idx, w, err = local_weights(np.einsum("ij,ij->i", X, X), X @ landmarks.T,
                                landmarks @ landmarks.T, 4, reg=1e-12)
    assert set(idx[0]) == {5, 6, 7, 8}
    assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)
    assert_allclose(w[0] @ landmarks[idx[0]], x, atol=1e-6)
    order = np.argsort(idx[0])
    assert_allclose(w[0][order], a, atol=1e-5)
    assert err[0] < 1e-10


def test_local_weights_minimize_the_local_error():
    """Weights solve min w^T G w s.t. 1^T w = 1 (eq. 12): better than any feasible step."""
    rng = np.random.default_rng(1)
    L = rng.standard_normal((30, 3))
    X = rng.standard_normal((5, 3))
    Kll, Kxl = rbf_kernel(L, gamma=0.7), rbf_kernel(X, L, gamma=0.7)
    reg = 1e-9
    idx, w, err = local_weights(np.ones(5), Kxl, Kll, 6, reg=reg)
    assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)
    for i in range(5):
        N = idx[i]
        G = 1.0 + Kll[np.ix_(N, N)] - Kxl[i, N][:, None] - Kxl[i, N][None, :]
        # the reported error is E(w) = w^T G w of (10), without the ridge
        assert_allclose(err[i], w[i] @ G @ w[i], rtol=1e-8, atol=1e-14)
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
    idx, w, err = local_weights(np.ones(len(X)), Kxl, Kll, n_neighbors, reg)
    idx_ref, w_ref, err_ref = local_weights_reference(np.ones(len(X)), Kxl, Kll,
                                                      n_neighbors, reg)
    assert_array_equal(idx, idx_ref)
    assert_allclose(w, w_ref, rtol=1e-7, atol=1e-9)
    assert_allclose(err, err_ref, rtol=1e-7, atol=1e-12)
    assert_allclose(w[-2:], np.eye(1, min(n_neighbors, 40)).repeat(2, axis=0))
    assert_array_equal(idx[-2:, 0], [2, 17])
    assert_allclose(err[-2:], 0.0, atol=1e-12)


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


@pytest.mark.parametrize("n_landmarks", [None, 100])
def test_a_batch_embeds_as_its_points_one_at_a_time(xor, n_landmarks):
    X, _, C = xor
    Xn = pl.datasets.make_xor(12, random_state=7)[0]
    model = pl.KernelMetricLearner(n_landmarks=n_landmarks, n_iter=2,
                                   random_state=0).fit(X, C)
    single = np.vstack([model.transform(Xn[i:i + 1]) for i in range(len(Xn))])
    # up to round-off relative to the embedding's scale (a near-zero entry differs in its
    # last digits between a BLAS product over 12 rows and over one)
    assert_allclose(model.transform(Xn), single, rtol=1e-12,
                    atol=1e-12 * np.abs(single).max())


def test_full_out_of_sample_is_the_kpca_projection(xor):
    """A new point's learned coordinates are beta_r / sqrt(lambda_r) times its KPCA ones."""
    X, _, C = xor
    Xn = pl.datasets.make_xor(20, random_state=5)[0]
    model = pl.KernelMetricLearner(kernel_gamma=0.5, rank=8).fit(X, C)
    from sklearn.decomposition import KernelPCA

    kpca = KernelPCA(n_components=8, kernel="rbf", gamma=0.5, eigen_solver="dense").fit(X)
    P = kpca.transform(Xn)
    Z = model.transform(Xn) * np.sqrt(model.eigenvalues_) / model.beta_
    assert_allclose(np.abs(Z), np.abs(P), atol=1e-7)


# -------------------------------------------------- iterative extension (section 3.3)
def test_iterative_extension_keeps_beta_and_changes_weights(xor):
    X, _, C = xor
    one = pl.KernelMetricLearner(n_landmarks=100, n_iter=1, random_state=0).fit(X, C)
    three = pl.KernelMetricLearner(n_landmarks=100, n_iter=3, random_state=0).fit(X, C)
    assert three.n_iter_ == 3 and one.n_iter_ == 1
    assert three.converged_ and one.converged_
    assert_allclose(three.beta_, one.beta_, rtol=1e-12)
    # fixed point: the centered learned landmark kernel gives back beta
    E = one.eigenvectors_ * one.beta_
    mu, A = centered_eigenpairs(center_kernel(E @ E.T), len(one.beta_))
    pos = np.searchsorted(one.landmark_indices_, C.must_link)
    beta2 = optimal_beta(dispersion(A, pos), float(np.sqrt(mu).sum()), one.eps)
    assert_allclose(np.sort(beta2), np.sort(one.beta_), rtol=1e-6)
    assert (three.weights_ != one.weights_).nnz > 0
    # the first repetition is the same computation in both fits
    assert three.objective_history_[0] == one.objective_history_[0]


def test_objective_history_is_the_mean_reconstruction_error_per_repetition(xor):
    X, _, C = xor
    model = pl.KernelMetricLearner(n_landmarks=100, n_iter=3, random_state=0).fit(X, C)
    assert model.objective_history_.shape == (3,)
    assert np.all(model.objective_history_ > 0)
    rest = np.setdiff1d(np.arange(len(X)), model.landmark_indices_)
    # repetition 1: E(w) in the RBF feature space of the base kernel
    one = pl.KernelMetricLearner(n_landmarks=100, random_state=0).fit(X, C)
    Wr = one.weights_[rest].toarray()
    L = model.landmarks_
    g = model.kernel_gamma_
    err = (1.0 - 2.0 * np.sum(Wr * rbf_kernel(X[rest], L, gamma=g), axis=1)
           + np.einsum("ij,jk,ik->i", Wr, rbf_kernel(L, gamma=g), Wr))
    assert_allclose(model.objective_history_[0], err.mean(), rtol=1e-8)
    # repetition 3: E(w) in the learned feature space, z_i of repetition 2 against E
    two = pl.KernelMetricLearner(n_landmarks=100, n_iter=2, random_state=0).fit(X, C)
    E = model.eigenvectors_ * model.beta_
    residual = two.embedding_[rest] - model.weights_[rest] @ E
    assert_allclose(model.objective_history_[2], np.mean(np.sum(residual**2, axis=1)),
                    rtol=1e-8)
    full = pl.KernelMetricLearner().fit(X, C)
    assert_array_equal(full.objective_history_, [0.0])
    assert full.n_iter_ == 1 and full.converged_


# ----------------------------------------------------------- metric quality
@pytest.mark.parametrize("n_landmarks", [None, 120])
def test_learned_metric_shrinks_similar_pairs_relative_to_rbf(xor, n_landmarks):
    X, y, C = xor
    model = pl.KernelMetricLearner(n_landmarks=n_landmarks, kernel_gamma=0.5,
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
@parametrize_with_checks([pl.KernelMetricLearner(random_state=0),
                          pl.KernelMetricLearner(n_landmarks=1.0, n_iter=2, random_state=0)])
def test_sklearn_estimator_checks(estimator, check):
    # the checks pass full labels: every labelled point is in S, hence a landmark, so the
    # scalable instance takes every point (n_landmarks=1.0); partial side information is
    # tested on the landmark path below
    check(estimator)


def test_fit_transform_is_fit_then_transform(xor):
    X, _, C = xor
    for params in ({}, {"n_landmarks": 100, "n_iter": 2}):
        est = pl.KernelMetricLearner(random_state=0, **params)
        Z = clone(est).fit_transform(X, C)
        model = clone(est).fit(X, C)
        assert_allclose(Z, model.embedding_, rtol=1e-12)
        assert_allclose(Z, model.transform(X), atol=1e-6 * np.abs(Z).max())


def test_side_information_forms_agree(xor):
    X, y, C = xor
    ref = pl.KernelMetricLearner(n_landmarks=80, random_state=0).fit(X, C)
    rows = pl.KernelMetricLearner(n_landmarks=80, random_state=0).fit(X, C.to_array())
    assert_allclose(rows.embedding_, ref.embedding_)
    i, j = 0, int(np.flatnonzero(y != y[0])[0])
    mixed = pl.PairwiseConstraints(np.vstack([C.must_link, [[i, j]]]),
                                   np.r_[np.ones(C.n_pairs), -1], n_samples=len(X))
    with pytest.warns(UserWarning, match="1 cannot-link pair.*ignored.*at least 3"):
        ignored = pl.KernelMetricLearner(n_landmarks=80, random_state=0).fit(X, mixed)
    assert_allclose(ignored.embedding_, ref.embedding_)


def test_partial_labels_are_every_within_class_pair(xor):
    X, y, _ = xor
    labels = np.full(len(y), -1)
    labels[:30] = y[:30]
    pairs = np.array([(i, j) for i in range(30) for j in range(i + 1, 30) if y[i] == y[j]])
    listed = pl.PairwiseConstraints(pairs, np.ones(len(pairs)), n_samples=len(X))
    # an explicit width: the labels also give cannot-links, which would choose it
    for m in (None, 60):
        a = pl.KernelMetricLearner(kernel_gamma=0.3, n_landmarks=m,
                                   random_state=0).fit(X, labels)
        b = pl.KernelMetricLearner(kernel_gamma=0.3, n_landmarks=m,
                                   random_state=0).fit(X, listed)
        assert a.n_similar_pairs_ == len(pairs)
        assert_array_equal(a.landmark_indices_, b.landmark_indices_)
        assert_allclose(a.embedding_, b.embedding_, rtol=1e-9, atol=1e-12)
    # string labels, "-1" unlabelled
    text = np.where(labels == -1, "-1", np.where(labels == 1, "b", "a"))
    c = pl.KernelMetricLearner(random_state=0).fit(X, text)
    assert_allclose(c.embedding_,
                    pl.KernelMetricLearner(random_state=0).fit(X, labels).embedding_)


@pytest.mark.parametrize("y, match", [
    (None, "requires y to be passed"),
    (np.array([[0, 1], [2, 3]]), r"shape \(2, 2\) is ambiguous.*PairwiseConstraints"),
    (pl.PairwiseConstraints([[0, 1]], [-1], 240), "no similar"),
    (np.r_[0, 1, 2, np.full(237, -1)], "no class has two labelled"),
    (np.array([[3, 3, 1]]), "self-pair"),
    (np.zeros(5), "length 5"),
])
@pytest.mark.filterwarnings("ignore:1 cannot-link pair")
def test_side_information_errors(xor, y, match):
    with pytest.raises(ValueError, match=match):
        pl.KernelMetricLearner().fit(xor[0], y)


def test_edge_cases_are_errors_or_say_what_was_used(xor):
    X, _, C = xor
    with pytest.raises(ValueError, match="fewer than the .* points in similar pairs"):
        pl.KernelMetricLearner(n_landmarks=5).fit(X, C)
    with pytest.warns(UserWarning, match="exceeds n_samples=240: every sample is a landmark"):
        model = pl.KernelMetricLearner(n_landmarks=500).fit(X, C)
    assert len(model.landmark_indices_) == 240
    with pytest.warns(UserWarning, match="n_neighbors=90 exceeds the 80 landmarks"):
        model = pl.KernelMetricLearner(n_landmarks=80, n_neighbors=90,
                                       random_state=0).fit(X, C)
    assert model.weights_.shape == (240, 80)
    half = pl.KernelMetricLearner(n_landmarks=0.5, random_state=0).fit(X, C)
    assert len(half.landmark_indices_) == 120
    same = np.ones((20, 2))
    pairs = pl.PairwiseConstraints([[0, 1]], [1], 20)
    with pytest.raises(ValueError, match="all points coincide"):
        pl.KernelMetricLearner().fit(same, pairs)
    with pytest.raises(ValueError, match="no positive eigenvalue"):
        pl.KernelMetricLearner(kernel_gamma=1.0).fit(same, pairs)
    with pytest.raises(TypeError, match="[Ss]parse"):
        pl.KernelMetricLearner().fit(sp.csr_matrix(X), C)
    Xbad = X.copy()
    Xbad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        pl.KernelMetricLearner().fit(Xbad, C)
    with pytest.raises(ValueError, match="n_iter"):
        pl.KernelMetricLearner(n_iter=0).fit(X, C)
    model = pl.KernelMetricLearner(n_landmarks=80, random_state=0).fit(X, C)
    with pytest.raises(ValueError, match="features"):
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
    from reproductions.experiments.yeung_xor import rbf_class_separation

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


# ---------------------------------------------------------- quiet and interruptible
def test_quiet_by_default_and_verbose_on_stderr(xor, capsys):
    X, _, C = xor
    quiet = pl.KernelMetricLearner(n_landmarks=100, n_iter=2, random_state=0).fit(X, C)
    pl.KernelMetricLearner().fit(X, C).transform(X[:5])
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    loud = pl.KernelMetricLearner(n_landmarks=100, n_iter=2, random_state=0,
                                  verbose=1).fit(X, C)
    pl.KernelMetricLearner(verbose=1).fit(X, C)
    out = capsys.readouterr()
    assert out.out == ""
    assert "scalable version" in out.err and "full version" in out.err
    assert "repetition=2" in out.err
    assert_array_equal(loud.embedding_, quiet.embedding_)
    assert loud.fit_time_ > 0


# Every fit and transform of the five estimators, run in a fresh interpreter: the HiGHS
# banner was printed by the first PSDBoost fit of a process, which an earlier test of this
# session would already have made. A line on stderr shows that the script ran to its end.
_ALL_FITS = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    import psdlearn as pl
    X, y = pl.datasets.make_xor(120, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=20, n_cannot=10, random_state=0)
    partial = np.where(np.arange(120) % 4 == 0, y, -1)
    for solver, loss in [("bcd", "hinge"), ("admm", "pcp")]:
        pl.NPKL(solver=solver, loss=loss, max_iter=20, random_state=0).fit(X, C).transform(X)
    pl.KernelMetricLearner().fit(X, C).transform(X)
    pl.KernelMetricLearner(n_landmarks=60, n_iter=2, random_state=0).fit(X, C).transform(X)
    pl.RCA().fit(X, C).transform(X)
    for side in (partial, C, None):
        pl.GeneralizedNystroem(n_landmarks=20, random_state=0).fit(X, side).transform(X)
    for solver in ("column-generation", "interior-point", "subspace", "working-set"):
        pl.PSDBoost(solver=solver, random_state=0).fit(X, y).transform(X)
    print("all fits done", file=sys.stderr)
""")


def test_no_estimator_writes_to_stdout():
    env = dict(os.environ, PYTHONPATH=str(Path(pl.__file__).parents[1]))
    run = subprocess.run([sys.executable, "-c", _ALL_FITS], capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "all fits done" in run.stderr
    assert run.stdout == ""


def _slow_fit():
    X, y = pl.datasets.make_xor(20_000, random_state=0)
    C = pl.PairwiseConstraints.from_labels(y, n_must=20, n_cannot=0, random_state=0)
    model = pl.KernelMetricLearner(n_landmarks=100, n_iter=100_000, random_state=0)
    warm = pl.PairwiseConstraints.from_labels(y[:500], n_must=20, n_cannot=0, random_state=0)
    clone(model).set_params(n_iter=2).fit(X[:500], warm)
    return X, C, model


def test_sigint_from_a_timer_keeps_the_last_complete_repetition():
    X, C, model = _slow_fit()        # compiled and warm: the timer falls in the repetitions
    kill = (threading.main_thread().ident, signal.SIGINT)
    timer = threading.Timer(0.5, signal.pthread_kill, args=kill)
    # a second signal at 30 s turns a lost first one into a failure below, not a hang
    watchdog = threading.Timer(30.0, signal.pthread_kill, args=kill)
    repetitions = model._repetitions
    started = []

    def timed(*args):
        # the timer starts once the first repetition is complete, so a loaded machine,
        # where that repetition takes longer, cannot turn the test into the no-repetition
        # case (a re-raised KeyboardInterrupt, tested below)
        for out in repetitions(*args):
            yield out
            if not started:
                started.append(time.perf_counter())
                timer.start()
                watchdog.start()

    model._repetitions = timed
    try:
        with pytest.warns(FitInterruptedWarning, match="complete repetitions"):
            model.fit(X, C)
    finally:
        timer.cancel()
        watchdog.cancel()
    assert time.perf_counter() - started[0] < 0.5 + 10.0   # it stopped soon after the signal
    assert model.converged_ is False
    assert 0 < model.n_iter_ < model.n_iter
    assert model.objective_history_.shape == (model.n_iter_,)
    # a usable model whose transform replays the repetitions that ran
    assert_allclose(model.transform(X[:200]), model.embedding_[:200],
                    atol=1e-6 * np.abs(model.embedding_).max())


def test_interrupt_keeps_the_repetition_before_it_and_reraises_without_one(xor,
                                                                           monkeypatch):
    X, _, C = xor
    est = pl.KernelMetricLearner(n_landmarks=100, n_iter=5, random_state=0)
    reference = clone(est).set_params(n_iter=2).fit(X, C)
    calls, compiled = [], _lle.local_weights

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 3:               # one block per repetition here: the third
            raise KeyboardInterrupt
        return compiled(*args)

    from psdlearn.kml import estimator

    monkeypatch.setattr(estimator, "local_weights", interrupted)
    with pytest.warns(FitInterruptedWarning, match="after 2 complete repetitions"):
        model = clone(est).fit(X, C)
    assert model.n_iter_ == 2 and model.converged_ is False
    assert_array_equal(model.objective_history_, reference.objective_history_)
    assert_array_equal(model.embedding_, reference.embedding_)
    calls.clear()
    calls.extend([1, 1])                  # the next call is the third: the first repetition
    with pytest.raises(KeyboardInterrupt):
        clone(est).fit(X, C)


def test_an_interrupt_at_any_line_of_the_repetition_loop_keeps_a_consistent_model(xor):
    """A Ctrl-C arrives between any two lines: raised by a line tracer at each line event
    of the fit's loop in turn, it must leave ``n_iter_``, ``objective_history_`` and
    ``embedding_`` of one and the same repetition (transform replays ``n_iter_`` of them)."""
    from psdlearn.kml import estimator

    X, _, C = xor
    est = pl.KernelMetricLearner(n_landmarks=100, n_iter=4, random_state=0)
    code, previous = estimator.KernelMetricLearner._fit_landmarks.__code__, sys.gettrace()

    def fit_stopped_at(event):
        seen = [0]

        def local(frame, kind, arg):
            if kind == "line":
                seen[0] += 1
                if seen[0] == event:
                    raise KeyboardInterrupt
            return local

        sys.settrace(lambda frame, kind, arg: local if frame.f_code is code else None)
        try:
            return clone(est).fit(X, C), seen[0]
        except KeyboardInterrupt:
            return None, seen[0]
        finally:
            sys.settrace(previous)

    _, n_lines = fit_stopped_at(0)
    rest = np.setdiff1d(np.arange(len(X)), fit_stopped_at(0)[0].landmark_indices_)
    kept = set()
    for event in range(1, n_lines + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitInterruptedWarning)
            model, _ = fit_stopped_at(event)
        if model is None:
            continue
        kept.add(model.n_iter_)
        assert model.objective_history_.shape == (model.n_iter_,)
        # an out-of-sample copy of the rows: transform replays n_iter_ repetitions
        shifted = X[rest[:40]] + 1e-9
        assert_allclose(model.transform(shifted), model.embedding_[rest[:40]], atol=1e-6)
    assert kept >= {1, 2, 3, 4}  # the interrupt fell in every repetition


# ------------------------------------------------- width by cross-validation
@pytest.fixture(scope="module")
def iris_signed():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    C = pl.PairwiseConstraints.from_labels(y, n_must=40, n_cannot=40, random_state=0)
    return X, y, C


def _must_only(C):
    return pl.PairwiseConstraints(C.must_link, np.ones(C.n_must), n_samples=C.n_samples)


def test_held_out_auc_is_the_roc_auc_of_minus_the_learned_distance():
    from sklearn.metrics import roc_auc_score

    from psdlearn.kml._width_cv import held_out_auc

    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(50, 30, replace=False))
    B, beta = rng.standard_normal((30, 4)), rng.uniform(0.5, 2.0, 4)
    pairs = rows[rng.integers(0, 30, (40, 2))]
    similar = rng.random(40) < 0.5
    local = np.searchsorted(rows, pairs)
    d2 = np.sum(((B[local[:, 0]] - B[local[:, 1]]) * beta) ** 2, axis=1)
    d2[:6] = d2[6]  # ties count half
    B2 = B.copy()
    assert_allclose(held_out_auc(B2, rows, beta, pairs[6:], similar[6:]),
                    roc_auc_score(similar[6:], -d2[6:]), rtol=1e-12)
    assert np.isnan(held_out_auc(B, rows, beta, pairs, np.ones(40, dtype=bool)))


def test_cv_scores_are_held_out_aucs_of_fits_on_the_training_pairs(iris_signed, monkeypatch):
    """Every entry of cv_scores_ is recomputed from a fit with that width on the fold's
    training must-links alone, scored by scikit-learn's ROC AUC on its held-out pairs."""
    from sklearn.metrics import roc_auc_score

    import psdlearn.kml.estimator as kml_estimator

    X, _, C = iris_signed
    original, seen = kml_estimator.constraint_folds, []

    def recording(*args):
        seen.append(original(*args))
        return seen[-1]

    monkeypatch.setattr(kml_estimator, "constraint_folds", recording)
    model = pl.KernelMetricLearner(random_state=0).fit(X, C)
    (folds,) = seen
    assert model.cv_scores_.shape == (5, 3)
    assert_allclose(model.cv_kernel_gammas_ / model.cv_kernel_gammas_[2],
                    [0.25, 0.5, 1.0, 2.0, 4.0])
    for g, gamma in enumerate(model.cv_kernel_gammas_):
        for f, (train, pairs, similar) in enumerate(folds):
            S = pl.PairwiseConstraints(train.pairs, np.ones(len(train.pairs)), len(X))
            Z = pl.KernelMetricLearner(kernel_gamma=gamma).fit(X, S).embedding_
            d2 = np.sum((Z[pairs[:, 0]] - Z[pairs[:, 1]]) ** 2, axis=1)
            assert_allclose(model.cv_scores_[g, f], roc_auc_score(similar, -d2),
                            rtol=1e-9)
    best = np.argmax(model.cv_scores_.mean(axis=1))
    assert model.kernel_gamma_ == model.cv_kernel_gammas_[best]
    # the held-out folds partition the pairs, and hold both signs
    held = np.vstack([pairs for _, pairs, _ in folds])
    assert len(held) == C.n_pairs and len(np.unique(held, axis=0)) == C.n_pairs
    assert all(s.any() and not s.all() for _, _, s in folds)


def test_width_cv_on_iris_widens_the_kernel_and_clusters_better(iris_signed):
    """Iris asks for a wider kernel than the label-free width (its 3 classes overlap);
    the cannot-links find it, and k-means on the embedding gains."""
    X, y, C = iris_signed
    signed = pl.KernelMetricLearner(random_state=0).fit(X, C)
    free = pl.KernelMetricLearner(random_state=0).fit(X, _must_only(C))
    assert free.cv_scores_ is None and free.cv_kernel_gammas_ is None
    assert signed.kernel_gamma_ < free.kernel_gamma_
    assert_array_equal(signed.side_info_.pairs, C.pairs)

    def rand(Z):
        return rand_score(y, KMeans(3, n_init=10, random_state=0).fit_predict(Z))

    assert rand(signed.embedding_) > rand(free.embedding_)


def test_width_cv_from_partial_labels_and_the_scalable_version(iris_signed):
    X, y, _ = iris_signed
    labels = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    for n_landmarks in (None, 100):
        model = pl.KernelMetricLearner(n_landmarks=n_landmarks, random_state=0).fit(X,
                                                                                   labels)
        assert model.cv_scores_.shape == (5, 3)
        assert np.all((model.cv_scores_ > 0.5) & (model.cv_scores_ <= 1.0))
        best = np.argmax(model.cv_scores_.mean(axis=1))
        assert model.kernel_gamma_ == model.cv_kernel_gammas_[best]
        assert_array_equal(model.side_info_, labels)
    # one labelled class gives no dissimilar pair: the label-free width
    one = np.where(y == 0, 0, -1)
    model = pl.KernelMetricLearner(random_state=0).fit(X, one)
    assert model.cv_scores_ is None
    assert_allclose(model.kernel_gamma_, pl.KernelMetricLearner(random_state=0).fit(
        X, _must_only(pl.PairwiseConstraints.from_labels(one, 5, 0, random_state=0))
    ).kernel_gamma_)


def test_cannot_links_are_ignored_with_a_warning_when_they_choose_nothing(iris_signed):
    X, _, C = iris_signed
    for params in ({"kernel_gamma": 0.2}, {"kernel": "poly"}, {"kernel": "linear"}):
        with pytest.warns(UserWarning, match="40 cannot-link pair.*ignored"):
            model = pl.KernelMetricLearner(**params).fit(X, C)
        assert model.cv_scores_ is None
        ref = pl.KernelMetricLearner(**params).fit(X, _must_only(C))
        assert_array_equal(model.embedding_, ref.embedding_)


# ----------------------------------------------------- renamed parameters
def test_n_components_is_a_deprecated_alias_of_rank(xor):
    X, _, C = xor
    for value in (None, 4, "auto"):
        with pytest.warns(FutureWarning, match="n_components was renamed rank"):
            old = pl.KernelMetricLearner(n_components=value, random_state=0).fit(X, C)
        new = pl.KernelMetricLearner(rank=value, random_state=0).fit(X, C)
        assert_array_equal(old.embedding_, new.embedding_)
        with pytest.warns(FutureWarning, match="rank_"):
            assert old.n_components_ == new.rank_


def test_kernel_gamma_none_is_a_deprecated_spelling_of_auto(iris_signed):
    X, _, C = iris_signed
    with pytest.warns(FutureWarning, match="kernel_gamma=None is deprecated"):
        old = pl.KernelMetricLearner(kernel_gamma=None, random_state=0).fit(X, C)
    new = pl.KernelMetricLearner(random_state=0).fit(X, C)
    assert old.kernel_gamma_ == new.kernel_gamma_
    assert_array_equal(old.embedding_, new.embedding_)


def test_feature_names_and_pandas_output(xor):
    pd = pytest.importorskip("pandas")
    X, _, C = xor
    frame = pd.DataFrame(X, columns=["a", "b"])
    model = pl.KernelMetricLearner(random_state=0).set_output(transform="pandas")
    out = model.fit(frame, C).transform(frame.iloc[:5])
    names = [f"kernelmetriclearner{i}" for i in range(model.rank_)]
    assert list(model.get_feature_names_out()) == names
    assert isinstance(out, pd.DataFrame) and list(out.columns) == names
    assert_allclose(out.to_numpy(), model.embedding_[:5])


@pytest.mark.parametrize("n_landmarks, n_iter", [(None, 1), (90, 1), (90, 3)])
def test_transform_of_the_training_rows_is_the_fitted_embedding(xor, n_landmarks, n_iter):
    """The learned kernel of transform(X_fit) is that of embedding_ to 1e-8, and rows are
    embedded one at a time: a training row inside a batch of new points still gets its
    row of embedding_, the new points their out-of-sample embedding."""
    X, _, C = xor
    model = pl.KernelMetricLearner(n_landmarks=n_landmarks, n_iter=n_iter,
                                   random_state=0).fit(X, C)
    E, T = model.embedding_, model.transform(X)
    assert np.abs(T @ T.T - E @ E.T).max() <= 1e-8
    Xn = pl.datasets.make_xor(6, random_state=5)[0]
    mixed = np.vstack([Xn[:3], X[[7, 100]], -0.0 + Xn[3:]])
    out = model.transform(mixed)
    assert_array_equal(out[3:5], E[[7, 100]])
    alone = np.vstack([model.transform(Xn[i:i + 1]) for i in range(len(Xn))])
    assert_allclose(np.delete(out, [3, 4], axis=0), alone, rtol=1e-12,
                    atol=1e-12 * np.abs(alone).max())
