"""Property-based tests of every estimator's ``fit`` and its fitted methods.

Generated ``X`` (any shape, dtype, container, NaN / inf, constant and duplicated rows)
and side information (constraints with duplicated, contradictory, self and out-of-range
pairs, partial labels with empty and one-sample classes, triplets). Whatever the input:
only ``ValueError`` / ``TypeError`` naming the argument, nothing on stdout, the inputs
unchanged; after a successful fit, finite float64 outputs of the documented shapes,
and the same outputs from the unpickled model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp
from _fuzz import (
    Rejected,
    call,
    check_output,
    fuzz_settings,
    matrices,
    partial_labels,
    roundtrip,
    side_information,
    well_formed,
)
from hypothesis import given
from hypothesis import strategies as st

import psdlearn as pl


def _npkl(**kw):
    return pl.NPKL(n_neighbors=3, max_iter=15, random_state=0, **kw)


@dataclass
class Spec:
    make: object
    kinds: tuple
    sparse: bool = False


SPECS = {
    "NPKL": Spec(lambda: _npkl(), ("pairs", "array", "labels"), sparse=True),
    "NPKL-square-rank2": Spec(lambda: _npkl(loss="square", rank=2, certificate_tol=None),
                              ("pairs", "array", "labels"), sparse=True),
    "NPKLCV": Spec(lambda: pl.NPKLCV(gammas=2, cv=2, n_neighbors=3, max_iter=10,
                                     certificate_tol=None, random_state=0),
                   ("pairs", "array", "labels"), sparse=True),
    "GeneralizedNystroem": Spec(
        lambda: pl.GeneralizedNystroem(n_landmarks=0.5, landmarks="random",
                                       lambdas=(0.1, 10.0), max_iter=10, random_state=0),
        ("pairs", "array", "labels")),
    "KernelMetricLearner": Spec(lambda: pl.KernelMetricLearner(n_landmarks=1.0,
                                                               random_state=0),
                                ("pairs", "array", "labels")),
    "RCA": Spec(lambda: pl.RCA(), ("pairs", "array", "labels")),
    "PSDBoost": Spec(lambda: pl.PSDBoost(max_iter=5), ("labels", "triplets")),
    "ConstrainedClustering": Spec(
        lambda: pl.ConstrainedClustering(2, estimator=_npkl(certificate_tol=None),
                                         n_init=2, random_state=0),
        ("pairs", "array", "labels"), sparse=True),
    "ConstrainedClustering-constrained": Spec(
        lambda: pl.ConstrainedClustering(2, estimator=pl.RCA(), n_init=2,
                                         assign="constrained", random_state=0),
        ("pairs", "array", "labels")),
}


@st.composite
def fit_inputs(draw, spec):
    """Well-formed points with valid side information in six cases out of ten (so that
    fits succeed and their outputs are checked), with any side information in two, and
    anything in the last two."""
    case = draw(st.integers(0, 9))
    if case < 8:
        n = draw(st.integers(4, 24))
        d = draw(st.integers(1, 4))
        X = well_formed(n, d, np.random.default_rng(draw(st.integers(0, 99))))
        form = draw(st.sampled_from(["float64", "float32", "int", "fortran", "list"]))
        X = {"float64": X, "float32": X.astype(np.float32),
             "int": np.round(X * 2).astype(np.int64), "fortran": np.asfortranarray(X),
             "list": X.tolist()}[form]
        y = draw(side_information(n, spec.kinds, valid=case < 6))
        return X, y
    X = draw(matrices(sparse=spec.sparse))
    n = len(X) if isinstance(X, list) else X.shape[0]
    return X, draw(side_information(n, spec.kinds))


def _n_rows(X):
    return len(X) if isinstance(X, list) else X.shape[0]


def _outputs(model, X):
    """The fitted model's outputs on its training points."""
    if isinstance(model, pl.ConstrainedClustering):
        return {"predict": model.predict(X)}
    out = {"transform": model.transform(X)}
    if hasattr(model, "get_mahalanobis_matrix"):
        out["metric"] = model.get_mahalanobis_matrix()
    return out


def _check_training_labels(model, X, predicted):
    """``predict(X_fit) == labels_`` (the documented contract) where the training rows
    are distinct; a repeated row gets the label of its first occurrence."""
    rows = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    assert np.array_equal(predicted, model.labels_[first][inverse.ravel()])


@pytest.mark.parametrize("name", sorted(SPECS))
@fuzz_settings(1.0)
@given(data=st.data())
def test_fit_and_fitted_methods(name, data):
    spec = SPECS[name]
    X, y = data.draw(fit_inputs(spec), label="X, y")
    model = spec.make()
    try:
        call(model.fit, X, y)
    except Rejected:
        return
    n = _n_rows(X)
    out = _outputs(model, X)
    if isinstance(model, pl.ConstrainedClustering):
        labels = out["predict"]
        assert labels.shape == (n,) and labels.dtype.kind == "i"
        _check_training_labels(model, X, labels)
        assert labels.min() >= 0 and labels.max() < model.n_clusters
        check_output(model.cluster_centers_, model.n_clusters)
    else:
        Z = out["transform"]
        check_output(Z, n)
        assert Z.shape[1] == len(model.get_feature_names_out())
        if "metric" in out:
            M = out["metric"]
            check_output(M, model.n_features_in_)
            assert np.allclose(M, M.T) and np.linalg.eigvalsh(M).min() > -1e-8 * max(
                1.0, np.abs(M).max())
    # new points: any matrix, the fitted number of columns or not
    X_new = data.draw(matrices(min_cols=model.n_features_in_ if data.draw(st.booleans())
                               else 0, max_cols=model.n_features_in_, sparse=spec.sparse),
                      label="X_new")
    method = model.predict if isinstance(model, pl.ConstrainedClustering) else \
        model.transform
    try:
        new = call(method, X_new)
    except Rejected:
        new = None
    if new is not None:
        assert new.shape[0] == _n_rows(X_new) and np.all(np.isfinite(new))
    if hasattr(model, "score") and not isinstance(model, pl.ConstrainedClustering):
        y_score = data.draw(side_information(n, ("pairs", "array", "labels")),
                            label="y_score")
        try:
            s = call(model.score, X, y_score)
        except Rejected:
            pass
        else:
            assert np.isscalar(s) and (np.isnan(s) or 0.0 <= s <= 1.0)
    again = roundtrip(model)
    for key, value in _outputs(again, X).items():
        assert np.array_equal(value, out[key]), key


@fuzz_settings(1.0)
@given(data=st.data())
def test_fit_predict_of_constrained_clustering(data):
    X, y = data.draw(fit_inputs(SPECS["ConstrainedClustering"]), label="X, y")
    model = SPECS["ConstrainedClustering"].make()
    try:
        labels = call(model.fit_predict, X, y)
    except Rejected:
        return
    assert np.array_equal(labels, model.labels_)
    _check_training_labels(model, X, model.predict(X))


@fuzz_settings(1.0)
@given(data=st.data())
def test_kernel_kmeans(data):
    E = data.draw(matrices(max_rows=10, max_cols=3, sparse=False), label="E")
    k = data.draw(st.sampled_from([0, 1, 2, 3, 20, -1, 2.5]), label="n_clusters")
    try:
        labels = call(pl.kernel_kmeans, E, k, n_init=2, random_state=0)
    except Rejected:
        return
    n = _n_rows(E)
    assert labels.shape == (n,) and labels.min() >= 0 and labels.max() < k


# ------------------------------------------------------------- PairsClassifier
@st.composite
def pair_tables(draw, n, d):
    """``pairs`` of ``fit``: ``(m, 2)`` indices into the preprocessor (in range or not,
    integers or not) or ``(m, 2, d)`` points; and their labels."""
    m = draw(st.integers(0, 10))
    if draw(st.booleans()):
        hi = n + 1 if draw(st.integers(0, 4)) == 0 else n - 1
        pairs = np.array(draw(st.lists(st.tuples(st.integers(-1 if hi > n else 0, hi),
                                                 st.integers(0, max(hi, 0))),
                                       min_size=m, max_size=m)), dtype=np.int64).reshape(-1, 2)
        pairs = draw(st.sampled_from([pairs, pairs, pairs.astype(np.float64),
                                      pairs.astype(object), pairs[:, :1]]))
    else:
        rng = np.random.default_rng(draw(st.integers(0, 99)))
        pairs = rng.normal(size=(m, 2, draw(st.sampled_from([d, d, d + 1]))))
        if m and draw(st.integers(0, 4)) == 0:
            pairs[0, 0, 0] = np.nan
    labels = draw(st.lists(st.sampled_from([1, -1, 1, -1, 0]), min_size=m, max_size=m))
    y = np.array(labels, dtype=np.int64)
    if draw(st.integers(0, 5)) == 0:
        y = y[:-1]
    return pairs, y


@fuzz_settings(1.0)
@given(data=st.data())
def test_pairs_classifier(data):
    n = data.draw(st.integers(2, 16), label="n")
    d = data.draw(st.integers(1, 3), label="d")
    X = well_formed(n, d, np.random.default_rng(data.draw(st.integers(0, 99))))
    pairs, y = data.draw(pair_tables(n, d), label="pairs, y")
    learner = data.draw(st.sampled_from(["npkl", "rca"]), label="learner")
    estimator = pl.RCA() if learner == "rca" else _npkl(certificate_tol=None)
    clf = pl.PairsClassifier(estimator, preprocessor=X)
    try:
        call(clf.fit, pairs, y)
    except Rejected:
        return
    scores = call(clf.decision_function, pairs)
    assert scores.shape == (len(pairs),) and np.all(np.isfinite(scores))
    predicted = call(clf.predict, pairs)
    assert set(np.unique(predicted)) <= {-1, 1}
    try:
        auc = call(clf.score, pairs, y)
    except Rejected:
        pass
    else:
        assert 0.0 <= auc <= 1.0
    other, y_other = data.draw(pair_tables(n, d), label="other pairs")
    try:
        call(clf.decision_function, other)
    except Rejected:
        pass
    try:
        call(clf.calibrate_threshold, other, y_other,
             strategy=data.draw(st.sampled_from(["accuracy", "f_beta", "max_tpr",
                                                 "max_tnr"])))
    except Rejected:
        pass
    assert np.isfinite(clf.threshold_)
    assert np.array_equal(roundtrip(clf).decision_function(pairs), clf.decision_function(pairs))


# ------------------------------------------------------------ partial_fit
@fuzz_settings(0.6)
@given(data=st.data())
def test_npkl_partial_fit(data):
    n = data.draw(st.integers(6, 20), label="n")
    X = well_formed(n, 2, np.random.default_rng(0))
    y0 = data.draw(partial_labels(n, valid=True), label="y0")
    model = _npkl(certificate_tol=None)
    try:
        call(model.fit, X, y0)
    except Rejected:
        return
    y1 = data.draw(side_information(n, ("pairs", "array", "labels")), label="y1")
    try:
        call(model.partial_fit, X, y1)
    except Rejected:
        return
    check_output(model.transform(X), n)
