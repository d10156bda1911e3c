"""Small problems shared by the GeneralizedNystroem tests (test_nystroem*.py)."""

import numpy as np

import psdlearn as pl
from psdlearn.nystroem import QuadraticData
from psdlearn.nystroem import estimator as estimator_module


def one_hot(values):
    """One-hot rows of the labels ``values`` (the estimator's own coding)."""
    return estimator_module._one_hot(values)[1]


def small_problem(m=8, n_lab=12, n_classes=3, seed=0):
    """Random ``E_l``, labels, PSD prior and the labels data term."""
    rng = np.random.default_rng(seed)
    E_l = rng.uniform(size=(n_lab, m))
    y = np.arange(n_lab) % n_classes
    Y = one_hot(y)
    G = rng.normal(size=(m, m))
    prior = G @ G.T / m
    s = E_l.T @ Y
    data = QuadraticData([E_l.T @ E_l], s @ s.T, float(np.sum(Y.sum(0) ** 2)))
    return E_l, Y, prior, data


def two_blobs(n=120, d=5, seed=0):
    """Two classes that differ in 2 of ``d`` dimensions; the rest is wide noise."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, d)) * np.r_[0.6, 0.6, 3.0 * np.ones(d - 2)]
    X[:, :2] += 1.5 * (2 * y[:, None] - 1)
    return X, y


def partial_labels(y, per_class=6, seed=0):
    rng = np.random.default_rng(seed)
    yp = np.full_like(y, -1)
    for c in np.unique(y):
        idx = rng.choice(np.flatnonzero(y == c), per_class, replace=False)
        yp[idx] = c
    return yp


def chain_must_links(groups, n):
    """Must-link pairs joining consecutive members of each group."""
    pairs = [(members[k], members[k + 1]) for g in np.unique(groups[groups >= 0])
             for members in [np.flatnonzero(groups == g)] for k in range(len(members) - 1)]
    return pl.PairwiseConstraints(pairs, np.ones(len(pairs)), n_samples=n)


def multiple_problem():
    """Three random feature blocks ``F_j`` (10 x 4) and the one-hot labels ``Y`` of two
    classes, then the arguments of ``solve_multiple`` around lambda: priors
    ``(j + 1) I``, the cross products ``F_a^T F_b``, ``s_j = F_j^T Y`` and ``c``, the sum
    of squared class sizes."""
    rng = np.random.default_rng(9)
    F = [rng.uniform(size=(10, 4)) for _ in range(3)]
    Y = one_hot(np.arange(10) % 2)
    priors = [np.eye(4) * (j + 1) for j in range(3)]
    cross = [[a.T @ b for b in F] for a in F]
    s = [a.T @ Y for a in F]
    return F, Y, priors, cross, s, float(np.sum(Y.sum(0) ** 2))
