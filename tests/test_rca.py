"""RCA (Bar-Hillel et al. 2005): chunklets, whitening of the within-chunklet covariance,
the side-information convention."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import pdist
from sklearn.base import clone
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.estimator_checks import parametrize_with_checks

import psdlearn as pl
from psdlearn.kml._similar import similar_set
from psdlearn.kml.rca import chunklet_covariance


def chunklet_cov_of(Z, groups):
    N = sum(len(g) for g in groups)
    return sum(len(g) * np.cov(Z[g].T, bias=True) for g in groups) / N


def must(pairs, n=60):
    return pl.PairwiseConstraints(pairs, np.ones(len(pairs)), n_samples=n)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4)) * np.array([5.0, 1.0, 0.3, 2.0])
    pairs = np.array([[0, 1], [1, 2], [3, 4], [5, 6], [6, 7], [8, 9], [10, 11], [12, 13]])
    groups = [[0, 1, 2], [3, 4], [5, 6, 7], [8, 9], [10, 11], [12, 13]]
    return X, must(pairs), groups


def test_chunklets_are_the_transitive_closure(data):
    X, C, groups = data
    points, chunklet = similar_set(C, 60, "RCA").chunklets()
    found = {tuple(points[chunklet == c]) for c in np.unique(chunklet)}
    assert found == {tuple(g) for g in groups}
    assert_allclose(chunklet_covariance(X, points, chunklet), chunklet_cov_of(X, groups),
                    rtol=1e-12)


def test_partial_labels_give_one_chunklet_per_class(data):
    X, C, groups = data
    labels = np.full(60, -1)
    for c, g in enumerate(groups):
        labels[g] = c
    labels[20] = 9                       # a class with one labelled point: no chunklet
    by_labels = pl.RCA().fit(X, labels)
    by_pairs = pl.RCA().fit(X, C)
    assert by_labels.n_chunklets_ == len(groups)
    assert_allclose(by_labels.components_, by_pairs.components_, rtol=1e-12)


def test_rca_whitens_the_within_chunklet_covariance(data):
    X, C, groups = data
    model = pl.RCA().fit(X, C)
    assert model.n_chunklets_ == len(groups)
    assert model.rank_ == 4
    Z = model.transform(X)
    assert_allclose(chunklet_cov_of(Z, groups), np.eye(4), atol=1e-10)
    # the Mahalanobis matrix is C^{-1}
    M = model.components_.T @ model.components_
    assert_allclose(M @ chunklet_cov_of(X, groups), np.eye(4), atol=1e-9)


def test_rca_metric_is_invariant_to_invertible_linear_maps(data):
    X, C, _ = data
    A = np.random.default_rng(1).standard_normal((4, 4)) + 3 * np.eye(4)
    d1 = pdist(pl.RCA().fit(X, C).transform(X))
    d2 = pdist(pl.RCA().fit(X @ A, C).transform(X @ A))
    assert_allclose(d1, d2, rtol=1e-8)


def test_rank_deficient_covariance_reduces_dimension():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 10))
    C = must([[0, 1], [2, 3], [4, 5]], 40)           # within-chunklet rank 3
    model = pl.RCA().fit(X, C)
    assert model.components_.shape == (3, 10)
    Z = model.transform(X)
    assert_allclose(chunklet_cov_of(Z, [[0, 1], [2, 3], [4, 5]]), np.eye(3), atol=1e-8)
    assert pl.RCA(rank=2).fit(X, C).transform(X).shape == (40, 2)


# -------------------------------------------------------------- API contract
@parametrize_with_checks([pl.RCA()])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_fit_attributes_of_a_closed_form(data, capsys):
    X, C, _ = data
    model = pl.RCA().fit(X, C)
    assert model.n_iter_ == 1 and model.converged_ is True and model.fit_time_ > 0
    assert_array_equal(pl.RCA().fit_transform(X, C), model.transform(X))
    assert capsys.readouterr().out == ""
    pl.RCA(verbose=1).fit(X, C)
    out = capsys.readouterr()
    assert out.out == ""
    assert "RCA: 6 chunklets of 14 points, within-chunklet covariance of rank 4" in out.err


def test_rca_input_checks(data):
    X, C, _ = data
    rows = np.column_stack([C.pairs, np.r_[np.ones(7), -1]])
    with pytest.warns(UserWarning, match="1 cannot-link pair.*RCA uses similar"):
        pl.RCA().fit(X, rows)
    Xd = X.copy()
    Xd[1] = Xd[0]
    with pytest.raises(ValueError, match="covariance is zero"):
        pl.RCA().fit(Xd, must([[0, 1]]))
    with pytest.raises(ValueError, match="rank=9 exceeds"):
        pl.RCA(rank=9).fit(X, C)
    with pytest.raises(ValueError, match="ambiguous"):
        pl.RCA().fit(X, C.pairs)
    with pytest.raises(ValueError, match="requires y to be passed"):
        pl.RCA().fit(X)
    with pytest.raises(ValueError, match="no class has two labelled"):
        pl.RCA().fit(X, np.arange(60))
    with pytest.raises(TypeError, match="[Ss]parse"):
        pl.RCA().fit(sp.csr_matrix(X), C)
    assert clone(pl.RCA(rank=2, verbose=1)).get_params() == {
        "rank": 2, "verbose": 1, "n_components": "deprecated"}


# -------------------------------------------------------------- renamed names
def test_n_components_is_a_deprecated_alias_of_rank(data):
    X, C, _ = data
    with pytest.warns(FutureWarning, match="n_components is deprecated.*use rank"):
        old = pl.RCA(n_components=2).fit(X, C)
    new = pl.RCA(rank=2).fit(X, C)
    assert_array_equal(old.components_, new.components_)
    assert old.rank_ == 2
    with pytest.warns(FutureWarning, match="n_components_ is deprecated.*rank_"):
        assert old.n_components_ == 2
    with pytest.raises(ValueError, match="rank only"):
        pl.RCA(rank=2, n_components=2).fit(X, C)


def test_side_info_holds_the_similar_pairs_used(data):
    X, C, groups = data
    rows = np.column_stack([np.vstack([C.pairs, [[20, 21]]]), np.r_[np.ones(len(C.pairs)), -1]])
    with pytest.warns(UserWarning, match="cannot-link"):
        model = pl.RCA().fit(X, rows)
    # the must-links as given, the cannot-link dropped
    assert_array_equal(model.side_info_.pairs, C.pairs)
    assert model.side_info_.n_cannot == 0
    # for labels: chains whose closure is each class, so refitting on them is the same fit
    labels = np.full(60, -1)
    for c, g in enumerate(groups):
        labels[g] = c
    by_labels = pl.RCA().fit(X, labels)
    components = by_labels.side_info_.must_link_components()
    for g in groups:
        assert len(set(components[g])) == 1
    assert by_labels.side_info_.n_must == sum(len(g) - 1 for g in groups)
    assert_allclose(pl.RCA().fit(X, by_labels.side_info_).components_, by_labels.components_,
                    rtol=1e-12)


# -------------------------------------------------------------- output API
def test_mahalanobis_matrix_and_metric(data):
    X, C, groups = data
    model = pl.RCA().fit(X, C)
    M = model.get_mahalanobis_matrix()
    assert_array_equal(M, M.T)
    assert np.linalg.eigvalsh(M).min() >= -1e-10 * np.abs(M).max()
    # RCA's metric is the inverse within-chunklet covariance (Bar-Hillel et al. eq. 2)
    assert_allclose(M, np.linalg.inv(chunklet_cov_of(X, groups)), rtol=1e-8)
    metric = model.get_metric()
    u, v = X[3], X[17]
    assert metric(u, v) == pytest.approx(np.sqrt((u - v) @ M @ (u - v)), rel=1e-10)
    # inside NearestNeighbors: the same neighbours and distances as Euclidean on transform
    Z = model.transform(X)
    dist, ind = NearestNeighbors(n_neighbors=5, metric=metric).fit(X).kneighbors(X[:10])
    dist_z, ind_z = NearestNeighbors(n_neighbors=5).fit(Z).kneighbors(Z[:10])
    assert_array_equal(ind, ind_z)
    assert_allclose(dist, dist_z, rtol=1e-8, atol=1e-12)


def test_set_output_pandas_names_the_columns(data):
    pd = pytest.importorskip("pandas")
    X, C, _ = data
    out = pl.RCA(rank=3).set_output(transform="pandas").fit(X, C).transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["rca0", "rca1", "rca2"]
    assert_array_equal(out.to_numpy(), pl.RCA(rank=3).fit(X, C).transform(X))


def test_transform_is_per_row_and_has_no_embedding(data):
    # RCA keeps no embedding_: transform is a linear map, each row from its own point
    X, C, _ = data
    model = pl.RCA().fit(X, C)
    assert not hasattr(model, "embedding_")
    Z = model.transform(X)
    assert_allclose(model.transform(X[7:8]), Z[7:8], rtol=1e-12)
    assert_allclose(model.transform(X[::-1]), Z[::-1], rtol=1e-12)
