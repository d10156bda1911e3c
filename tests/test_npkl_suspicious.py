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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.partial_fit(X, [[3, 57, 1]])
    assert model.constraint_scores_.shape == (C.n_pairs + 1,)
    idx, rows = model.suspicious_constraints(k=1)
    assert rows[0].tolist() == [3, 57, 1]
