"""RCA (Bar-Hillel et al.): chunklets, whitening of the within-chunklet covariance."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.spatial.distance import pdist

import psdlearn as pl
from psdlearn.kml.rca import chunklet_covariance


def chunklet_cov_of(Z, groups):
    N = sum(len(g) for g in groups)
    return sum(len(g) * np.cov(Z[g].T, bias=True) for g in groups) / N


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4)) * np.array([5.0, 1.0, 0.3, 2.0])
    pairs = np.array([[0, 1], [1, 2], [3, 4], [5, 6], [6, 7], [8, 9], [10, 11], [12, 13]])
    groups = [[0, 1, 2], [3, 4], [5, 6, 7], [8, 9], [10, 11], [12, 13]]
    return X, pairs, groups


def test_chunklets_are_the_transitive_closure(data):
    X, pairs, groups = data
    C, points, chunklet = chunklet_covariance(X, pairs)
    found = {tuple(points[chunklet == c]) for c in np.unique(chunklet)}
    assert found == {tuple(g) for g in groups}
    assert_allclose(C, chunklet_cov_of(X, groups), rtol=1e-12)


def test_rca_whitens_the_within_chunklet_covariance(data):
    X, pairs, groups = data
    model = pl.RCA().fit(X, pairs)
    assert model.n_chunklets_ == len(groups)
    Z = model.transform(X)
    assert_allclose(chunklet_cov_of(Z, groups), np.eye(4), atol=1e-10)
    # the Mahalanobis matrix is C^{-1}
    M = model.components_.T @ model.components_
    assert_allclose(M @ chunklet_cov_of(X, groups), np.eye(4), atol=1e-9)


def test_rca_metric_is_invariant_to_invertible_linear_maps(data):
    X, pairs, _ = data
    A = np.random.default_rng(1).standard_normal((4, 4)) + 3 * np.eye(4)
    d1 = pdist(pl.RCA().fit(X, pairs).transform(X))
    d2 = pdist(pl.RCA().fit(X @ A, pairs).transform(X @ A))
    assert_allclose(d1, d2, rtol=1e-8)


def test_rank_deficient_covariance_reduces_dimension():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 10))
    pairs = np.array([[0, 1], [2, 3], [4, 5]])           # within-chunklet rank 3
    model = pl.RCA().fit(X, pairs)
    assert model.components_.shape == (3, 10)
    Z = model.transform(X)
    assert_allclose(chunklet_cov_of(Z, [[0, 1], [2, 3], [4, 5]]), np.eye(3), atol=1e-8)
    assert pl.RCA(n_components=2).fit(X, pairs).transform(X).shape == (40, 2)


def test_rca_input_checks(data):
    X, pairs, _ = data
    with pytest.warns(UserWarning, match="cannot-link"):
        pl.RCA().fit(X, np.column_stack([pairs, np.r_[np.ones(7), -1]]))
    Xd = X.copy()
    Xd[1] = Xd[0]
    with pytest.raises(ValueError, match="zero"):
        pl.RCA().fit(Xd, [[0, 1]])
    with pytest.raises(ValueError, match="n_components"):
        pl.RCA(n_components=9).fit(X, pairs)
