"""NPKL.constraint_scores_ and suspicious_constraints: constraints the data contradicts."""

import warnings

import numpy as np
import pytest

import psdlearn as pl


@pytest.fixture(scope="module")
def separable():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0.0, 0.3, (40, 2)), rng.normal(4.0, 0.3, (40, 2))])
    y = np.repeat([0, 1], 40)
    return X, y, pl.PairwiseConstraints.from_labels(y, 20, 20, random_state=0)


@pytest.mark.parametrize("loss", ["hinge", "square"])
def test_planted_contradiction_is_ranked_first(separable, loss):
    X, y, C = separable
    a, b = 3, 57  # different clusters, marked must-link
    assert y[a] != y[b]
    noisy = C.union([[a, b, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pl.NPKL(loss=loss, random_state=0).fit(X, noisy)
    scores = model.constraint_scores_
    assert scores.shape == (noisy.n_pairs,)
    planted = int(np.flatnonzero((noisy.pairs == [a, b]).all(axis=1))[0])
    idx, rows = model.suspicious_constraints(k=3)
    assert idx[0] == planted
    assert rows[0].tolist() == [a, b, 1]
    assert np.all(np.diff(scores[idx]) <= 0)
    # the correct constraints are satisfied by the kernel: negative scores
    assert np.all(np.delete(scores, planted) < 0)


def test_scores_are_bounded_signed_and_flip_with_the_sign(separable):
    X, y, C = separable
    model = pl.NPKL(loss="square", random_state=0).fit(X, C)
    s = model.constraint_scores_
    assert np.all(np.abs(s) <= 1 + 1e-12)
    # a fit on clean separable constraints agrees with each of them
    assert np.all(s < 0)
    # the same kernel read with every sign reversed: scores change sign exactly
    from psdlearn.npkl._suspicious import constraint_scores

    flipped = constraint_scores(model.embedding_, model.laplacian_, C.pairs, -C.signs)
    np.testing.assert_allclose(flipped, -s)
    # scale of the kernel (gamma changes it) does not matter
    scaled = constraint_scores(3.0 * model.embedding_, model.laplacian_, C.pairs, C.signs)
    np.testing.assert_allclose(scaled, s)
    assert model.suspicious_constraints(k=10 ** 6)[0].shape == (C.n_pairs,)


def test_partial_fit_updates_the_scores(separable):
    X, y, C = separable
    model = pl.NPKL(loss="square", random_state=0).fit(X, C)
    assert model.constraint_scores_.shape == (C.n_pairs,)  # read, and kept, before the update
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.partial_fit(X, [[3, 57, 1]])
    assert model.constraint_scores_.shape == (C.n_pairs + 1,)
    idx, rows = model.suspicious_constraints(k=1)
    assert rows[0].tolist() == [3, 57, 1]


def test_scores_are_those_of_the_last_fit_whenever_read(separable):
    # the scores are computed on first read: a refit, or a copy taken before the read,
    # must score its own kernel
    import pickle

    from psdlearn.npkl._suspicious import constraint_scores

    X, y, C = separable
    model = pl.NPKL(loss="square", random_state=0).fit(X, C)
    first = model.constraint_scores_
    assert not hasattr(pl.NPKL(), "constraint_scores_")
    other = pl.PairwiseConstraints.from_labels(y, 5, 5, random_state=3)
    copy = pickle.loads(pickle.dumps(model.fit(X, other)))
    for fitted in (model, copy):
        np.testing.assert_array_equal(
            fitted.constraint_scores_,
            constraint_scores(fitted.embedding_, fitted.laplacian_, other.pairs, other.signs))
    assert first.shape == (C.n_pairs,) != model.constraint_scores_.shape


class _FixedFolds:
    """Folds of constraint rows that do not depend on the signs (ConstraintKFold's do)."""

    def __init__(self, n_splits):
        self.n_splits = n_splits

    def split(self, constraints):
        rows = np.arange(constraints.n_pairs)
        for f in range(self.n_splits):
            yield rows[rows % self.n_splits != f], rows[rows % self.n_splits == f]


def test_cross_val_scores_rank_a_planted_contradiction_first(separable):
    from psdlearn.model_selection import cross_val_constraint_scores

    X, y, C = separable
    a, b = 3, 57  # different clusters, marked must-link
    rows = np.vstack([C.to_array(), [[a, b, 1]]])[::-1]  # unsorted input rows
    scores = cross_val_constraint_scores(pl.NPKL(loss="square", random_state=0), X, rows,
                                         random_state=0)
    noisy = pl.PairwiseConstraints.from_array(rows)
    planted = int(np.flatnonzero((noisy.pairs == [a, b]).all(axis=1))[0])
    assert scores.shape == (noisy.n_pairs,)
    assert int(np.argmax(scores)) == planted
    assert scores[planted] > 0  # learned without it, the kernel contradicts it
    assert np.all(np.abs(scores) <= 1 + 1e-12)


def test_cross_val_scores_never_see_the_pair_they_judge(separable):
    """Out of fold: reversing one pair's sign reverses its score exactly and leaves the
    other pairs of its fold alone (an in-fit score moves with the kernel)."""
    from psdlearn.model_selection import cross_val_constraint_scores

    X, y, C = separable
    npkl = pl.NPKL(loss="square", random_state=0)
    base = cross_val_constraint_scores(npkl, X, C, cv=_FixedFolds(4))
    p = 5
    signs = C.signs.copy()
    signs[p] = -signs[p]
    moved = cross_val_constraint_scores(npkl, X, pl.PairwiseConstraints(C.pairs, signs),
                                        cv=_FixedFolds(4))
    np.testing.assert_allclose(moved[p], -base[p], rtol=1e-10)
    same_fold = np.flatnonzero(np.arange(C.n_pairs) % 4 == p % 4)
    np.testing.assert_allclose(moved[same_fold[same_fold != p]],
                               base[same_fold[same_fold != p]], rtol=1e-10)
    # the pair's sign did reach the other folds' kernels
    assert not np.allclose(moved[np.arange(C.n_pairs) % 4 != p % 4],
                           base[np.arange(C.n_pairs) % 4 != p % 4], rtol=1e-10, atol=0)


def test_cross_val_scores_reject_bad_arguments(separable):
    from sklearn.cluster import KMeans

    from psdlearn.model_selection import cross_val_constraint_scores

    X, y, C = separable
    with pytest.raises(TypeError, match="estimator"):
        cross_val_constraint_scores(KMeans(2), X, C)
    with pytest.raises(TypeError, match="cv"):
        cross_val_constraint_scores(pl.NPKL(), X, C, cv="five")

    class OneFold:
        def split(self, constraints):
            rows = np.arange(constraints.n_pairs)
            yield rows[rows >= 3], rows[rows < 3]

    with pytest.raises(ValueError, match="partition"):
        cross_val_constraint_scores(pl.NPKL(loss="square"), X, C, cv=OneFold())
