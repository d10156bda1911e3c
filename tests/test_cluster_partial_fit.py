"""ConstrainedClustering.partial_fit: the learner's update, then the clustering of fit."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import rand_score

import psdlearn as pl
from psdlearn.active import LabelOracle, active_learning


def _tight(gamma=None, rank=None):
    # a tolerance at which two solves of one problem from different starts agree on the
    # optimal value to 1e-6
    return pl.NPKL(certificate_tol=None, tol=1e-8, max_iter=5000, gamma=gamma or "auto",
                   rank=rank or "auto", random_state=0)


@pytest.fixture(scope="module")
def blobs():
    X, y = pl.datasets.make_two_gaussians(200, n_features=4, random_state=3)
    first = pl.PairwiseConstraints.from_labels(y, n_must=15, n_cannot=15, random_state=0)
    more = pl.PairwiseConstraints.from_labels(y, n_must=15, n_cannot=15, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pairs drawn twice are merged, with a warning
        union = first.union(more)
    new = pl.PairwiseConstraints(more.pairs, more.signs, len(X))
    return X, y, first, new, union


def test_partial_fit_is_fit_on_all_the_side_information(blobs):
    X, y, first, new, union = blobs
    cl = pl.ConstrainedClustering(2, estimator=_tight(), random_state=0).fit(X, first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cl.partial_fit(X, new)
    inner = cl.estimator_
    assert inner.side_info_.n_pairs == union.n_pairs
    fresh = pl.ConstrainedClustering(
        2, estimator=_tight(inner.gamma_, inner.rank_), random_state=0).fit(X, union)
    # the optimal value is unique, the optimal kernel need not be (the hinge's kinks)
    f, f0 = inner.objective(), fresh.estimator_.objective()
    assert abs(f - f0) <= 1e-6 * abs(f0)
    assert rand_score(cl.labels_, fresh.labels_) == 1.0
    assert cl.assign_ == fresh.assign_
    assert (cl.predict(X) == cl.labels_).all()


def test_partial_fit_keeps_the_graph_and_chooses_gamma_from_all_the_pairs(blobs):
    X, _, first, new, union = blobs
    cl = pl.ConstrainedClustering(2, random_state=0).fit(X, first)
    L = cl.estimator_.laplacian_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cl.partial_fit(X, new)
        fresh = pl.ConstrainedClustering(2, random_state=0).fit(X, union)
    assert cl.estimator_.laplacian_ is L
    assert cl.estimator_.gamma_ == fresh.estimator_.gamma_
    assert cl.estimator_.rank_ == fresh.estimator_.rank_


def test_partial_fit_of_an_unfitted_estimator_is_fit(blobs):
    X, _, first, _, _ = blobs
    a = pl.ConstrainedClustering(2, random_state=0).partial_fit(X, first)
    b = pl.ConstrainedClustering(2, random_state=0).fit(X, first)
    assert (a.labels_ == b.labels_).all()
    assert np.allclose(a.embedding_, b.embedding_, rtol=0, atol=1e-12)


def test_partial_fit_needs_the_training_points(blobs):
    X, _, first, new, _ = blobs
    cl = pl.ConstrainedClustering(2, random_state=0).fit(X, first)
    with pytest.raises(ValueError, match="X must be the X passed to fit"):
        cl.partial_fit(X + 1.0, new)
    with pytest.raises(ValueError, match="features"):
        cl.partial_fit(X[:, :-1], new)


def test_partial_fit_only_where_the_learner_has_it():
    assert hasattr(pl.ConstrainedClustering(2), "partial_fit")
    assert not hasattr(pl.ConstrainedClustering(2, estimator=pl.PSDBoost()), "partial_fit")
    assert not hasattr(pl.ConstrainedClustering(2, estimator=pl.RCA()), "partial_fit")


def test_the_query_loop_updates_a_clustering_instead_of_refitting(blobs):
    X, y, _, _, _ = blobs
    graphs = []
    res = active_learning(pl.ConstrainedClustering(2, random_state=0), X,
                          LabelOracle(y, random_state=0), strategy="random", budget=60,
                          batch_size=20, random_state=0,
                          callback=lambda model, C: graphs.append(model.estimator_.laplacian_))
    assert len(graphs) == 3
    assert graphs[1] is graphs[0] and graphs[2] is graphs[0]
    assert res.estimator.estimator_.side_info_.n_pairs == res.constraints.n_pairs
