"""How NPKLCV chooses gamma from its table of held-out scores: the one-standard-error rule
(select_gamma) and the held-out clustering score (ClusteringScorer)."""

import warnings

import numpy as np
import pytest

import psdlearn as pl
from psdlearn.graph import knn_laplacian
from psdlearn.model_selection import NPKLCV, ClusteringScorer, ConstraintKFold, select_gamma
from psdlearn.npkl.gamma import critical_gamma


def _blobs(n=90, n_classes=3, d=3, seed=0, scale=2.5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=scale, size=(n_classes, d))
    y = np.arange(n) % n_classes
    return centers[y] + rng.normal(size=(n, d)), y


# ------------------------------------------------------------------- select_gamma
#: rows: gammas (increasing), columns: 3 folds. Means 0.70, 0.80, 0.86, 0.88, 0.88;
#: the best (ties: the largest gamma) is row 4, its fold std 0.04, SE 0.04 / sqrt(3).
TABLE = np.array([[0.70, 0.70, 0.70],
                  [0.80, 0.80, 0.80],
                  [0.86, 0.86, 0.86],
                  [0.88, 0.88, 0.88],
                  [0.84, 0.88, 0.92]])


def test_best_takes_the_largest_mean_and_ties_go_to_the_largest_gamma():
    assert select_gamma(TABLE, "best") == 4
    assert select_gamma(TABLE[:4], "best") == 3
    assert select_gamma([[0.1, 0.3], [0.4, 0.2], [0.0, 0.1]], "best") == 1


def test_one_se_takes_the_smallest_gamma_within_one_standard_error_of_the_best():
    se = np.std(TABLE[4], ddof=1) / np.sqrt(3)
    assert 0.80 < 0.88 - se < 0.86  # row 2 lies within one SE of the best, row 1 not
    assert select_gamma(TABLE, "one_se") == 2
    # without spread at the best the rule only breaks ties, toward the smaller gamma
    assert select_gamma(TABLE[:4], "one_se") == 3
    plateau = np.array([[0.5, 0.5], [0.9, 0.9], [0.9, 0.9], [0.9, 0.9]])
    assert select_gamma(plateau, "best") == 3 and select_gamma(plateau, "one_se") == 1
    # one fold: no standard error, the smallest of the tied best
    assert select_gamma(plateau[:, :1], "one_se") == 1
    # a wide spread at the best reaches down the grid
    noisy = np.array([[0.80, 0.80, 0.80], [0.70, 0.90, 1.00]])
    assert select_gamma(noisy, "one_se") == 0


def test_select_gamma_rejects_bad_input():
    with pytest.raises(ValueError, match="rule"):
        select_gamma(TABLE, "largest")
    with pytest.raises(ValueError, match="table"):
        select_gamma(np.ones(3))


def test_npklcv_selection_applies_the_rule_to_its_score_table():
    X, y = _blobs(60)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    grid = np.array([0.2, 0.5, 1.0, 2.0, 4.0])
    folds = list(ConstraintKFold(3).split(C))
    # a scorer that reads TABLE: fold f of the fit at grid[g] scores TABLE[g, f]
    calls = {"n": 0}

    def scorer(est, X_, C_):
        g = int(np.flatnonzero(np.isclose(grid, est.gamma))[0])
        f = calls["n"] // len(grid)
        calls["n"] += 1
        return TABLE[g, f]

    chosen = {}
    for rule in ("best", "one_se"):
        calls["n"] = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cv = NPKLCV(gammas=grid, cv=folds, scoring=scorer, selection=rule,
                        graph="precomputed", random_state=0).fit(L, C)
        assert np.array_equal(cv.scores_, TABLE)
        chosen[rule] = cv.gamma_
        assert cv.get_params()["selection"] == rule
    assert chosen == {"best": 4.0, "one_se": 1.0}


# --------------------------------------------------------------- ClusteringScorer
def test_clustering_scorer_is_the_balanced_held_out_pair_accuracy():
    X, y = _blobs(90)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    held = pl.PairwiseConstraints.from_labels(y, 60, 30, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pl.NPKL(gamma=1.0, random_state=0).fit(X, C)
    scorer = ClusteringScorer(3)
    model.embedding_ = np.eye(3)[y] * 5.0  # one direction per class: a perfect partition
    assert scorer(model, X, held) == 1.0
    flipped = pl.PairwiseConstraints(held.pairs, -held.signs, held.n_samples)
    assert scorer(model, None, flipped) == 0.0
    # one cluster: every must-link right, every cannot-link wrong, whatever their mix
    assert ClusteringScorer(1)(model, X, held) == 0.5
    # merging two classes: the cannot-links between them go wrong
    model.embedding_ = np.eye(3)[np.minimum(y, 1)] * 5.0
    cl = held.cannot_link
    between = np.mean(np.minimum(y[cl[:, 0]], 1) == np.minimum(y[cl[:, 1]], 1))
    assert 0 < between < 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # k-means: 2 distinct points for 3 clusters
        merged = scorer(model, X, held)
    assert merged == pytest.approx(0.5 * (1.0 + 1.0 - between))
    # a zero kernel partitions nothing
    model.embedding_ = np.zeros((90, 4))
    assert scorer(model, X, held) == 0.5
    with pytest.raises(ValueError, match="must-links and cannot-links"):
        scorer(model, X, pl.PairwiseConstraints(held.must_link, np.ones(held.n_must), 90))
    with pytest.raises(ValueError, match="n_clusters"):
        ClusteringScorer(0)


def test_npklcv_with_the_clustering_scorer_rejects_the_zero_kernel():
    X, y = _blobs(90)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    folds = list(ConstraintKFold(3).split(C))
    # below the gamma_0 of every training fold K = 0 is optimal: one cluster, score 1/2
    low = 0.5 * min(critical_gamma(L, C.pairs[tr], C.signs[tr], "hinge") for tr, _ in folds)
    high = 30 * critical_gamma(L, C.pairs, C.signs, "hinge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = NPKLCV(gammas=[low, high], cv=folds, scoring=ClusteringScorer(3),
                    selection="one_se", graph="precomputed", cv_tol=1e-9,
                    random_state=0).fit(L, C)
    assert np.allclose(cv.scores_[0], 0.5)
    assert np.all(cv.scores_[1] > 0.7)
    assert cv.gamma_ == pytest.approx(high)


# ------------------------------------------------------------- require_convergence
def test_require_convergence_chooses_among_the_gammas_the_budget_solves():
    X, y = _blobs(60)
    L = knn_laplacian(X)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    folds = list(ConstraintKFold(3).split(C))
    grid = [3.0, 10.0, 30.0, 1e4]
    fits = {}
    for max_iter in (30, 50):
        for require in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fits[max_iter, require] = NPKLCV(
                    gammas=grid, cv=folds, loss="pcp", solver="admm", max_iter=max_iter,
                    graph="precomputed", random_state=0,
                    require_convergence=require).fit(L, C)
    # ADMM at 50 iterations: the stiff top of the grid stops at the cap, some gamma not
    cv = fits[50, True]
    ok = cv.cv_converged_.all(axis=1)
    assert cv.cv_converged_.shape == (4, 3) and ok.any() and not ok[-1]
    assert np.array_equal(cv.cv_converged_, cv.cv_n_iter_ < 50)
    mean = cv.scores_.mean(axis=1)
    assert np.argmax(mean) == 3  # the held-out score alone would take the top
    assert fits[50, False].gamma_ == 1e4
    rows = np.flatnonzero(ok)
    assert cv.gamma_ == grid[rows[np.argmax(mean[rows])]]
    assert cv.cv_converged_[grid.index(cv.gamma_)].all()
    # no gamma solved on every fold: the requirement cannot choose, all are candidates
    none = fits[30, True]
    assert not none.cv_converged_.all(axis=1).any()
    assert none.gamma_ == fits[30, False].gamma_
