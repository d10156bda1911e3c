"""NPKL.partial_fit: new pairs over the same points, warm-started, same optimum as a refit."""

import numpy as np
import pytest

import psdlearn as pl
from psdlearn.constraints import ConstraintConflictWarning
from psdlearn.graph import NeighborIndex


def _split(C, first, seed=0):
    perm = np.random.default_rng(seed).permutation(C.n_pairs)
    part = [np.sort(perm[:first]), np.sort(perm[first:])]
    return [pl.PairwiseConstraints(C.pairs[p], C.signs[p], C.n_samples) for p in part]


@pytest.fixture(scope="module")
def iris():
    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    return X, C, *_split(C, 150)


@pytest.mark.parametrize("loss,solver", [("square", "bcd"), ("hinge", "bcd"),
                                         ("square", "admm"), ("pcp", "admm")])
def test_partial_fit_reaches_the_optimum_of_a_fresh_fit_on_the_union(iris, loss, solver):
    X, C, A, B = iris
    kw = dict(loss=loss, solver=solver, tol=1e-8, max_iter=20000, random_state=0)
    model = pl.NPKL(**kw).fit(X, A)
    gamma, rank = model.gamma_, model.rank_
    model.partial_fit(X, B)
    assert model.gamma_ == gamma and model.rank_ == rank
    assert model.side_info_.to_array().tolist() == C.to_array().tolist()
    fresh = pl.NPKL(**{**kw, "gamma": gamma, "rank": rank}).fit(X, C)
    # both are certified optima of the same convex problem
    assert model.certificate_.certified
    assert fresh.certificate_.certified
    assert model.objective() == pytest.approx(fresh.objective(), rel=1e-6)
    # and the partial fit's problem really has the new pairs: the old optimum is worse there
    before = pl.NPKL(**kw).fit(X, A)
    assert model.objective(before.embedding_) > model.objective() * (1 + 1e-3)


def test_partial_fit_keeps_the_graph_and_the_index(iris, monkeypatch):
    X, C, A, B = iris
    model = pl.NPKL(loss="square", random_state=0).fit(X, A)
    L, index = model.laplacian_, model.neighbor_index_

    def forbidden(*args, **kwargs):
        raise AssertionError("the neighbour search ran again")

    monkeypatch.setattr(NeighborIndex, "fit", forbidden)
    monkeypatch.setattr(NeighborIndex, "kneighbors", forbidden)
    monkeypatch.setattr("psdlearn.npkl.estimator.build_laplacian", forbidden)
    model.partial_fit(X, B)
    assert model.laplacian_ is L and model.neighbor_index_ is index
    assert model.side_info_.n_pairs == C.n_pairs


def test_partial_fit_on_an_unfitted_estimator_is_fit(iris):
    X, C, A, _ = iris
    a = pl.NPKL(loss="square", random_state=0).partial_fit(X, A)
    b = pl.NPKL(loss="square", random_state=0).fit(X, A)
    np.testing.assert_array_equal(a.embedding_, b.embedding_)


def test_partial_fit_checks_x_and_the_new_pairs(iris):
    X, C, A, B = iris
    model = pl.NPKL(loss="square", random_state=0).fit(X, A)
    with pytest.raises(ValueError, match="X must be the X passed to fit"):
        model.partial_fit(X[:-1], B)
    with pytest.raises(ValueError, match="X must be the X passed to fit"):
        model.partial_fit(X + 1.0, B)
    i, j = A.pairs[0]
    with pytest.raises(ValueError, match=rf"both must-link and cannot-link: \({i}, {j}\)"):
        model.partial_fit(X, [[i, j, -A.signs[0]]])
    assert model.side_info_.n_pairs == A.n_pairs  # a refused call changes nothing
    with pytest.warns(UserWarning, match=rf"merged: \({i}, {j}\)"):
        model.partial_fit(X, [[j, i, A.signs[0]]])
    assert model.side_info_.n_pairs == A.n_pairs
    # new pairs that close a must-link chain a - b - k with a cannot-link a - k are named
    a, b = A.must_link[0]
    k = next(k for k in range(len(X)) if k not in set(A.pairs.ravel().tolist()))
    with pytest.warns(ConstraintConflictWarning, match=rf"\({min(a, k)}, {max(a, k)}\)"):
        model.partial_fit(X, [[b, k, 1], [a, k, -1]])
