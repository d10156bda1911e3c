"""LIBLINEAR's -C search: the exact dual SVM, the start C, the choice of C."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import LinearSVC

from reproductions.baselines.linear_svm import (
    MAX_C,
    liblinear_c,
    liblinear_start_c,
    squared_hinge_dual,
)


def _data(seed=0, n=60, classes=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    X = rng.standard_normal((n, 6))
    X[:, 0] += 1.5 * y
    return X, y


@pytest.mark.parametrize("C", [1e-3, 1.0, 100.0])
def test_dual_solution_is_linearsvc_with_its_intercept(C):
    X, y = _data()
    svc = LinearSVC(C=C, tol=1e-10, max_iter=200_000).fit(X, y)
    beta = squared_hinge_dual(X @ X.T + 1.0, np.where(y == 1, 1.0, -1.0), C)
    # w = sum_i beta_i x_i, intercept = sum_i beta_i (the constant feature 1)
    np.testing.assert_allclose(X.T @ beta, svc.coef_[0], atol=1e-6)
    assert beta.sum() == pytest.approx(svc.intercept_[0], abs=1e-6)


def test_dual_solution_satisfies_the_kkt_conditions():
    X, y = _data(seed=1)
    s = np.where(y == 1, 1.0, -1.0)
    C = 0.5
    alpha = squared_hinge_dual(X @ X.T, s, C) * s
    # min 1/2 a^T H a - 1^T a, a >= 0: gradient >= 0, complementary with a
    grad = (np.outer(s, s) * (X @ X.T) + np.eye(len(s)) / (2 * C)) @ alpha - 1.0
    assert np.all(alpha >= 0)
    assert np.all(grad >= -1e-8)
    assert np.max(np.abs(alpha * grad)) <= 1e-8


def test_start_c_is_liblinears_power_of_two():
    G = np.diag([2.0, 8.0, 3.0, 1.0])
    # 1 / (2 l max G_ii) = 1 / 64 = 2^-6 exactly; one more point lowers it by a power of 2
    assert liblinear_start_c(G) == 2.0 ** -6
    assert liblinear_start_c(np.diag([8.0] * 5)) == 2.0 ** -7
    assert liblinear_start_c(np.diag([1e-9] * 3)) == MAX_C


def _cv_accuracy(X, y, C, seed):
    folds = StratifiedKFold(5, shuffle=True, random_state=seed).split(X, y)
    hits = 0
    for tr, te in folds:
        svc = LinearSVC(C=C, tol=1e-10, max_iter=200_000).fit(X[tr], y[tr])
        hits += int(np.sum(svc.predict(X[te]) == y[te]))
    return hits / len(y)


@pytest.mark.parametrize("classes", [2, 3])
def test_search_path_is_cross_validated_linearsvc_and_keeps_the_smallest_best(classes):
    X, y = _data(seed=2, classes=classes)
    C, path = liblinear_c(X, y, random_state=0, return_path=True)
    Cs = np.array([c for c, _ in path])
    acc = np.array([a for _, a in path])
    # doubling from the start C up to MAX_C
    assert Cs[0] == liblinear_start_c(X @ X.T + 1.0)
    np.testing.assert_allclose(Cs[1:] / Cs[:-1], 2.0)
    assert Cs[-1] <= MAX_C < 2 * Cs[-1]
    # the smallest C of the highest accuracy
    assert C == Cs[np.flatnonzero(acc == acc.max())[0]]
    # each accuracy is LinearSVC's 5-fold CV accuracy on the same folds
    for c, a in path[::6]:
        assert a == pytest.approx(_cv_accuracy(X, y, c, 0))


def test_search_starts_below_a_fixed_grid_for_large_features():
    # features of norm ~ 300 (as generalized Nystrom's at small lambda): the start C is
    # 2^floor(log2(1 / (2 l max ||x||^2))), far below a fixed 2^-10
    X, y = _data(seed=3)
    X = 100.0 * X
    C, path = liblinear_c(X, y, random_state=0, return_path=True)
    start = path[0][0]
    assert start == 2.0 ** np.floor(np.log2(1.0 / (2 * len(y) * np.max(np.sum(X**2, 1) + 1))))
    assert start < 2.0 ** -20
    assert len(path) == int(np.log2(MAX_C / start)) + 1
    assert start <= C <= MAX_C
