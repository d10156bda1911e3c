"""PairsClassifier: scikit-learn's estimator checks adapted to pairs, thresholds, metric,
kernel, and scikit-learn's model selection and calibration on pairs."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.neighbors import NearestNeighbors
from sklearn.svm import SVC

import psdlearn as pl
from psdlearn.model_selection import NPKLCV, ConstraintKFold
from psdlearn.pairs import calibrated_threshold


def _blobs(n=45, n_classes=3, d=4, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(n_classes, d))
    y = np.arange(n) % n_classes
    return centers[y] + rng.normal(size=(n, d)), y


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


_LEARNERS = {
    "NPKL": lambda: pl.NPKL(random_state=0, max_iter=100),
    "PSDBoost": lambda: pl.PSDBoost(max_iter=50),
    "GeneralizedNystroem": lambda: pl.GeneralizedNystroem(random_state=0),
    "KernelMetricLearner": lambda: pl.KernelMetricLearner(random_state=0),
    "RCA": lambda: pl.RCA(),
}


def _problem(form, seed=0):
    """A classifier and training / test pairs in the given form."""
    X, y = _blobs(seed=seed)
    C = pl.PairwiseConstraints.from_labels(y, 30, 30, random_state=seed)
    T = pl.PairwiseConstraints.from_labels(y, 20, 20, random_state=seed + 1)
    if form == "indices":
        return {"X": X, "pairs": C.pairs, "y": C.signs, "test": T.pairs, "y_test": T.signs,
                "kwargs": {"preprocessor": X}}
    return {"X": X, "pairs": X[C.pairs], "y": C.signs, "test": X[T.pairs],
            "y_test": T.signs, "kwargs": {}}


# ------------------------------------------- scikit-learn's checks, for pairs
def check_params_round_trip_and_clone(clf, p):
    params = clf.get_params()
    assert set(params) >= {"estimator", "preprocessor", "similarity"}
    twin = clone(clf)
    assert twin.get_params(deep=False).keys() == clf.get_params(deep=False).keys()
    assert repr(twin.estimator) == repr(clf.estimator)
    clf.set_params(similarity="distance")
    assert clf.get_params()["similarity"] == "distance"


def check_not_fitted(clf, p):
    for method in ("decision_function", "predict", "pair_distance", "pair_score"):
        with pytest.raises(NotFittedError):
            getattr(clf, method)(p["test"])
    with pytest.raises(NotFittedError):
        clf.get_metric()


def check_fit_returns_self_and_leaves_params_and_input(clf, p):
    params = repr(clf.get_params())
    pairs, y = p["pairs"].copy(), p["y"].copy()
    X = p["X"].copy()
    assert _quiet(clf.fit, p["pairs"], p["y"]) is clf
    assert repr(clf.get_params()) == params
    np.testing.assert_array_equal(p["pairs"], pairs)
    np.testing.assert_array_equal(p["y"], y)
    np.testing.assert_array_equal(p["X"], X)
    assert clf.estimator is None or not hasattr(clf.estimator, "n_features_in_")


def check_fit_idempotent(clf, p):
    first = _quiet(clf.fit, p["pairs"], p["y"]).decision_function(p["test"])
    second = _quiet(clf.fit, p["pairs"], p["y"]).decision_function(p["test"])
    np.testing.assert_allclose(first, second, rtol=1e-9, atol=1e-12)


def check_pickle(clf, p):
    _quiet(clf.fit, p["pairs"], p["y"])
    twin = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(twin.decision_function(p["test"]),
                                  clf.decision_function(p["test"]))
    assert twin.threshold_ == clf.threshold_


def check_outputs(clf, p):
    _quiet(clf.fit, p["pairs"], p["y"])
    pred = clf.predict(p["test"])
    assert set(np.unique(pred)) <= {-1, 1} and pred.shape == (len(p["test"]),)
    np.testing.assert_array_equal(clf.classes_, [-1, 1])
    score = clf.score(p["test"], p["y_test"])
    assert 0.9 < score <= 1.0  # well separated classes: better than chance by far
    np.testing.assert_array_equal(clf.pair_score(p["test"]), clf.decision_function(p["test"]))
    d = clf.pair_distance(p["test"])
    assert d.shape == (len(p["test"]),) and np.all(d >= 0)


def check_order_and_subset_invariance(clf, p):
    _quiet(clf.fit, p["pairs"], p["y"])
    full = clf.decision_function(p["test"])
    perm = np.random.default_rng(0).permutation(len(p["test"]))
    np.testing.assert_allclose(clf.decision_function(p["test"][perm]), full[perm],
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(clf.decision_function(p["test"][:5]), full[:5],
                               rtol=1e-9, atol=1e-12)
    reversed_pairs = p["test"][:, ::-1]  # a pair is unordered
    np.testing.assert_allclose(clf.decision_function(reversed_pairs), full,
                               rtol=1e-9, atol=1e-12)


def check_dtypes(clf, p):
    base = _quiet(clf.fit, p["pairs"], p["y"]).decision_function(p["test"])
    if p["pairs"].ndim == 3:
        lower = _quiet(clf.fit, p["pairs"].astype(np.float32), p["y"])
        out = lower.decision_function(p["test"].astype(np.float32))
        assert out.dtype == np.float64
        np.testing.assert_allclose(out, base, atol=1e-3)
    else:
        other = _quiet(clf.fit, p["pairs"].astype(np.int32), p["y"].astype(np.float64))
        np.testing.assert_allclose(other.decision_function(p["test"].astype(np.int32)),
                                   base, rtol=1e-9, atol=1e-12)


def check_n_features_and_nan(clf, p):
    _quiet(clf.fit, p["pairs"], p["y"])
    assert clf.n_features_in_ == p["X"].shape[1]
    if p["pairs"].ndim == 3:
        with pytest.raises(ValueError, match="X has 3 features, but PairsClassifier is "
                                             "expecting 4 features"):
            clf.decision_function(p["test"][:, :, :3])
        bad = p["pairs"].astype(float)
        bad[0, 0, 0] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            clf.fit(bad, p["y"])
    else:
        X = p["X"].copy()
        X[0, 0] = np.inf
        with pytest.raises(ValueError, match="infinity"):
            clone(clf).set_params(preprocessor=X).fit(p["pairs"], p["y"])


CHECKS = [check_params_round_trip_and_clone, check_not_fitted,
          check_fit_returns_self_and_leaves_params_and_input, check_fit_idempotent,
          check_pickle, check_outputs, check_order_and_subset_invariance, check_dtypes,
          check_n_features_and_nan]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("form", ["indices", "points"])
@pytest.mark.parametrize("learner", list(_LEARNERS))
def test_pairs_estimator_checks(learner, form, check):
    p = _problem(form)
    check(pl.PairsClassifier(_LEARNERS[learner](), **p["kwargs"]), p)


# ---------------------------------------------------------------- input checks
def test_bad_pairs_and_labels_get_clear_errors():
    X, y = _blobs()
    C = pl.PairwiseConstraints.from_labels(y, 20, 20, random_state=0)
    clf = pl.PairsClassifier(pl.RCA(), preprocessor=X)
    with pytest.raises(ValueError, match=r"pair index \[3, 45\] at row 1 is out of range "
                                         "for preprocessor with 45 points"):
        clf.fit(np.array([[0, 1], [3, 45]]), [1, -1])
    with pytest.raises(ValueError, match="out of range"):
        clf.fit(np.array([[0, -1], [3, 4]]), [1, -1])
    with pytest.raises(ValueError, match=r"self-pair \(2, 2\) at row 1"):
        clf.fit(np.array([[0, 1], [2, 2]]), [1, -1])
    with pytest.raises(TypeError, match="indices and must be integers"):
        clf.fit(C.pairs.astype(float), C.signs)
    with pytest.raises(ValueError, match=r"shape \(m, 2, d\)"):
        clf.fit(np.zeros((4, 3), dtype=int), [1, -1, 1, -1])
    with pytest.raises(ValueError, match=r"\+1 \(similar pair\) or -1"):
        clf.fit(C.pairs, (C.signs > 0).astype(int))
    with pytest.raises(ValueError, match="one per pair"):
        clf.fit(C.pairs, C.signs[:-1])
    with pytest.raises(TypeError, match="fit\\(C.pairs, C.signs\\)"):
        clf.fit(C, C.signs)
    with pytest.raises(ValueError, match="preprocessor is None"):
        pl.PairsClassifier(pl.RCA()).fit(C.pairs, C.signs)
    with pytest.raises(ValueError, match="no pair of two different points"):
        pl.PairsClassifier(pl.RCA()).fit(X[np.array([[2, 2], [3, 3]])], [1, -1])
    with pytest.raises(ValueError, match="similarity"):
        pl.PairsClassifier(pl.RCA(), preprocessor=X, similarity="dot").fit(C.pairs, C.signs)
    fitted = pl.PairsClassifier(pl.RCA(), preprocessor=X).fit(C.pairs, C.signs)
    with pytest.raises(ValueError, match="finite number"):
        fitted.set_threshold(np.nan)
    with pytest.raises(ValueError, match="min_rate"):
        fitted.calibrate_threshold(C.pairs, C.signs, strategy="max_tpr")
    with pytest.raises(ValueError, match="strategy"):
        fitted.calibrate_threshold(C.pairs, C.signs, strategy="auc")


def test_indices_fit_the_learner_on_every_point_of_the_preprocessor():
    X, y = _blobs()
    labelled = np.arange(15)
    C = pl.PairwiseConstraints.from_labels(y[labelled], 1.0, 1.0, random_state=0)
    clf = pl.PairsClassifier(pl.NPKL(random_state=0), preprocessor=X).fit(C.pairs, C.signs)
    assert clf.estimator_.embedding_.shape[0] == len(X)  # unlabelled points in the graph
    assert clf.embedding_.shape[0] == len(X)
    # pairs between points that no pair mentioned are scored by the transductive kernel
    T = pl.PairwiseConstraints.from_labels(y, 30, 30, random_state=1)
    unseen = ~np.isin(T.pairs, labelled).any(axis=1)
    assert clf.score(T.pairs[unseen], T.signs[unseen]) > 0.9


def test_pairs_of_equal_points_are_left_out_of_the_fit():
    X, y = _blobs()
    C = pl.PairwiseConstraints.from_labels(y, 20, 20, random_state=0)
    X2 = np.vstack([X, X[:1]])  # point 45 is a copy of point 0
    # (0, copy of 0); (1, 45) with both labels; a training pair again with its label
    extra = np.array([[0, 45], [1, 45], [45, 1], C.pairs[0]])
    s0 = 1 if y[0] == y[1] else -1
    pairs = np.vstack([C.pairs, extra])
    signs = np.r_[C.signs, 1, s0, -s0, C.signs[0]]
    with pytest.warns(UserWarning, match="1 pair\\(s\\) of two equal points and 2 pair"):
        clf = pl.PairsClassifier(pl.RCA()).fit(X2[pairs], signs)
    ref = pl.PairsClassifier(pl.RCA()).fit(X[C.pairs], C.signs)
    assert ref.estimator_.n_chunklets_ == clf.estimator_.n_chunklets_
    np.testing.assert_allclose(clf.decision_function(X[C.pairs]),
                               ref.decision_function(X[C.pairs]), rtol=1e-8)


def test_similarity_auto_and_definitions():
    p = _problem("indices")
    npkl = pl.PairsClassifier(pl.NPKL(random_state=0), **p["kwargs"]).fit(p["pairs"], p["y"])
    rca = pl.PairsClassifier(pl.RCA(), **p["kwargs"]).fit(p["pairs"], p["y"])
    assert npkl.similarity_ == "cosine" and rca.similarity_ == "distance"
    E = npkl.estimator_.embedding_
    i, j = p["test"][:, 0], p["test"][:, 1]
    K = E @ E.T
    np.testing.assert_allclose(npkl.decision_function(p["test"]),
                               K[i, j] / np.sqrt(K[i, i] * K[j, j]), rtol=1e-10)
    np.testing.assert_allclose(npkl.pair_distance(p["test"]),
                               np.sqrt(np.maximum(K[i, i] + K[j, j] - 2 * K[i, j], 0)),
                               rtol=1e-7, atol=1e-10)
    Z = p["X"] @ rca.estimator_.components_.T
    np.testing.assert_allclose(rca.decision_function(p["test"]),
                               -np.linalg.norm(Z[i] - Z[j], axis=1), rtol=1e-10)


# ---------------------------------------------------------------- thresholds
def _brute_force(scores, y, strategy, min_rate=None, beta=1.0):
    """Best achievable value of a strategy over every threshold, by enumeration."""
    best = -np.inf
    for t in np.r_[np.unique(scores), np.inf]:
        value = _value(scores >= t, y, strategy, min_rate, beta)
        best = max(best, value)
    return best


def _value(accept, y, strategy, min_rate, beta):
    pos = y > 0
    tp, fp = np.sum(accept & pos), np.sum(accept & ~pos)
    tpr, tnr = tp / pos.sum(), 1 - fp / (~pos).sum()
    if strategy == "accuracy":
        return np.mean(accept == pos)
    if strategy == "f_beta":
        prec = tp / (tp + fp) if tp + fp else 0.0
        if prec + tpr == 0:
            return 0.0
        return (1 + beta**2) * prec * tpr / (beta**2 * prec + tpr)
    if strategy == "max_tpr":
        return tpr if tnr >= min_rate else -np.inf
    return tnr if tpr >= min_rate else -np.inf


@pytest.mark.parametrize("strategy,min_rate,beta", [
    ("accuracy", None, 1.0), ("f_beta", None, 1.0), ("f_beta", None, 0.3),
    ("f_beta", None, 3.0), ("max_tpr", 0.9, 1.0), ("max_tpr", 0.5, 1.0),
    ("max_tnr", 0.9, 1.0), ("max_tnr", 0.6, 1.0), ("max_tpr", 0.0, 1.0),
    ("max_tnr", 1.0, 1.0)])
@pytest.mark.parametrize("seed", range(4))
def test_calibrated_threshold_is_the_brute_force_optimum(strategy, min_rate, beta, seed):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(60) < 0.4, 1, -1)
    scores = np.round(rng.normal(size=60) + 0.8 * y, 1)  # rounded: ties between scores
    t = calibrated_threshold(scores, y, strategy, min_rate=min_rate, beta=beta)
    got = _value(scores >= t, y, strategy, min_rate, beta)
    assert got == pytest.approx(_brute_force(scores, y, strategy, min_rate, beta))
    assert np.isfinite(got)


@pytest.mark.parametrize("strategy,min_rate", [("accuracy", None), ("f_beta", None),
                                               ("max_tpr", 0.8), ("max_tnr", 0.8)])
def test_calibrate_threshold_sets_the_optimum_of_the_classifier(strategy, min_rate):
    X, y = _blobs(90, d=2, seed=3)  # overlapping classes: no threshold is perfect
    C = pl.PairwiseConstraints.from_labels(y, 40, 40, random_state=0)
    V = pl.PairwiseConstraints.from_labels(y, 60, 60, random_state=1)
    clf = pl.PairsClassifier(pl.RCA(), preprocessor=X).fit(C.pairs, C.signs)
    clf.calibrate_threshold(V.pairs, V.signs, strategy=strategy, min_rate=min_rate)
    got = _value(clf.predict(V.pairs) > 0, V.signs, strategy, min_rate, 1.0)
    best = _brute_force(clf.decision_function(V.pairs), V.signs, strategy, min_rate)
    assert got == pytest.approx(best)


def test_fit_calibrates_for_accuracy_on_the_training_pairs_and_set_threshold():
    p = _problem("points")
    clf = pl.PairsClassifier(pl.RCA()).fit(p["pairs"], p["y"])
    train_acc = np.mean(clf.predict(p["pairs"]) == p["y"])
    assert train_acc == pytest.approx(
        _brute_force(clf.decision_function(p["pairs"]), p["y"], "accuracy"))
    assert np.all(clf.set_threshold(1e9).predict(p["test"]) == -1)
    assert np.all(clf.set_threshold(-1e9).predict(p["test"]) == 1)


# ---------------------------------------------------------------- metric, kernel
@pytest.mark.parametrize("learner", ["RCA", "PSDBoost", "NPKL"])
def test_get_metric_in_nearest_neighbors_equals_transform_and_euclidean(learner):
    X, y = _blobs(30)
    C = pl.PairwiseConstraints.from_labels(y, 20, 20, random_state=0)
    clf = _quiet(pl.PairsClassifier(_LEARNERS[learner](), preprocessor=X).fit,
                 C.pairs, C.signs)
    Xq = X + 0.1  # new points (their transform is the learner's out-of-sample map)
    nn = NearestNeighbors(n_neighbors=4, metric=clf.get_metric(), algorithm="brute").fit(X)
    dist, ind = nn.kneighbors(Xq)
    Z, Zq = clf.estimator_.transform(X), clf.estimator_.transform(Xq)
    ref_dist, ref_ind = NearestNeighbors(n_neighbors=4).fit(Z).kneighbors(Zq)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(ind, ref_ind)


def test_kernel_for_a_precomputed_svc():
    X, y = _blobs(60, seed=1)
    C = pl.PairwiseConstraints.from_labels(y[:40], 30, 30, random_state=0)
    clf = pl.PairsClassifier(pl.NPKL(random_state=0), preprocessor=X[:40]).fit(C.pairs,
                                                                               C.signs)
    K = clf.kernel(X[:40])
    Z = clf.estimator_.transform(X[:40])
    np.testing.assert_allclose(K, Z @ Z.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-8  # a PSD kernel
    svc = SVC(kernel="precomputed").fit(K, y[:40])
    K_new = clf.kernel(X[40:], X[:40])
    assert K_new.shape == (20, 40)
    assert np.mean(svc.predict(K_new) == y[40:]) >= 0.85  # chance: 1/3


# ----------------------------------------------- model selection and calibration
def _npkl_pairs(n=90, seed=0):
    X, y = _blobs(n, seed=seed)
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=seed)
    return X, y, C


def test_gridsearch_over_n_neighbors_with_component_folds_does_not_leak():
    X, y, C = _npkl_pairs()
    cv = ConstraintKFold(3, groups="components")
    for train, test in cv.split(C.pairs, C.signs):
        assert np.intersect1d(train, test).size == 0
        train_set = pl.PairwiseConstraints(C.pairs[train], C.signs[train], len(X))
        implied = {tuple(q) for q in train_set.closure().pairs.tolist()}
        assert not any(tuple(q) in implied for q in C.pairs[test].tolist())
        # no held-out must-link touches a training must-link component
        ml_points = np.unique(train_set.must_link)
        assert not np.isin(C.pairs[test][C.signs[test] > 0], ml_points).any()
    grid = {"estimator__n_neighbors": [3, 8]}
    search = _quiet(GridSearchCV(pl.PairsClassifier(pl.NPKL(random_state=0),
                                                    preprocessor=X), grid, cv=cv).fit,
                    C.pairs, C.signs)
    assert search.best_params_["estimator__n_neighbors"] in (3, 8)
    assert search.best_estimator_.estimator_.n_neighbors == search.best_params_[
        "estimator__n_neighbors"]
    # each split's score is that of a fit on its training pairs alone
    for k, (train, test) in enumerate(cv.split(C.pairs, C.signs)):
        clf = pl.PairsClassifier(pl.NPKL(random_state=0, n_neighbors=3), preprocessor=X)
        _quiet(clf.fit, C.pairs[train], C.signs[train])
        assert search.cv_results_[f"split{k}_test_score"][0] == pytest.approx(
            clf.score(C.pairs[test], C.signs[test]))
    scores = _quiet(cross_val_score, pl.PairsClassifier(pl.RCA(), preprocessor=X),
                    C.pairs, C.signs, cv=cv)
    assert scores.shape == (3,) and np.all(scores > 0.8)


def test_gridsearch_over_gamma_chooses_what_npklcv_chooses():
    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    gammas = [0.1, 1.0, 10.0, 100.0]
    cv = ConstraintKFold(3, groups="components")
    common = {"rank": 10, "random_state": 0, "tol": 1e-5}
    ref = _quiet(NPKLCV(gammas=gammas, cv=cv, cv_tol=1e-5, **common).fit, X, C)
    search = _quiet(GridSearchCV(pl.PairsClassifier(pl.NPKL(**common), preprocessor=X),
                                 {"estimator__gamma": gammas}, cv=cv).fit,
                    C.pairs, C.signs)
    assert search.best_params_["estimator__gamma"] == ref.gamma_
    table = np.column_stack([search.cv_results_[f"split{k}_test_score"] for k in range(3)])
    np.testing.assert_allclose(table, ref.scores_, atol=0.02)


@pytest.mark.parametrize("form", ["indices", "points"])
def test_calibrated_classifier_cv_on_pairs(form):
    p = _problem(form, seed=2)
    cal = CalibratedClassifierCV(pl.PairsClassifier(pl.RCA(), **p["kwargs"]), cv=3)
    cal.fit(p["pairs"], p["y"])
    proba = cal.predict_proba(p["test"])
    assert proba.shape == (len(p["test"]), 2)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # calibrated probability of "similar" ranks the pairs as the decision values do
    assert np.mean(cal.predict(p["test"]) == p["y_test"]) > 0.8
    np.testing.assert_array_equal(cal.classes_, [-1, 1])


def test_the_default_tolerance_ranks_pairs_as_the_tight_solve():
    """The default learner's tol=1e-3 against NPKL's own 1e-5: the same held-out AUC to
    half a point."""
    X, y = pl.datasets.load("iris")
    C = pl.PairwiseConstraints.from_labels(y, 60, 60, random_state=0)
    test = pl.PairwiseConstraints.from_labels(y, 200, 200, random_state=10)
    aucs = [pl.PairsClassifier(pl.NPKL(certificate_tol=None, tol=tol, random_state=0),
                               preprocessor=X).fit(C.pairs, C.signs).score(test.pairs,
                                                                           test.signs)
            for tol in (1e-3, 1e-5)]
    assert aucs[0] == pytest.approx(aucs[1], abs=0.005)
