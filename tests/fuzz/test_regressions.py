"""The findings of the property-based tests (``tests/fuzz``), each pinned by an explicit
example: every test here failed before its fix."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import psdlearn as pl
from psdlearn import active, graph, metrics, model_selection
from psdlearn.cli import main


# ------------------------------------------------------------ constraint files
def test_from_csv_skips_a_byte_order_mark(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_bytes("i,j,label\n0,1,must\n1,2,-1\n".encode("utf-8-sig"))
    C = pl.PairwiseConstraints.from_csv(path, n_samples=3)
    assert C.pairs.tolist() == [[0, 1], [1, 2]] and C.signs.tolist() == [1, -1]


def test_from_csv_names_the_file_when_it_is_not_utf8(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_bytes("0,1,must\n".encode("utf-16"))
    with pytest.raises(ValueError, match=f"{path}: not a CSV file of UTF-8 text"):
        pl.PairwiseConstraints.from_csv(path)


@pytest.mark.parametrize("rows, message", [
    ("0,0,must\n", "self-pair"),
    ("0,1,must\n1,0,cannot\n", "marked both must-link and cannot-link"),
    ("0,100000000000000000000,must\n", "int"),
])
def test_from_csv_names_the_file_for_pairs_the_constructor_refuses(tmp_path, rows, message):
    path = tmp_path / "pairs.csv"
    path.write_text(rows, encoding="utf-8")
    with pytest.raises(ValueError, match=message) as info:
        pl.PairwiseConstraints.from_csv(path)
    assert str(info.value).startswith(f"{path}: ")


# ------------------------------------------------------------------ LIBSVM
@pytest.mark.parametrize("text", ["1 1:a\n", "1 0:1\n", "1 2:1 1:1\n", "1 1:1 qid:1\n"])
def test_read_libsvm_names_the_file(tmp_path, text):
    path = tmp_path / "data.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="not a valid LIBSVM file") as info:
        pl.datasets.read_libsvm(path)
    assert str(info.value).startswith(str(path))
    with pytest.raises(ValueError, match=r"^f \(a file object\): not a valid LIBSVM"):
        pl.datasets.read_libsvm(io.BytesIO(text.encode()))


# -------------------------------------------------------------- command line
def _run(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(argv)
    return status, err.getvalue()


def _features_npy(tmp_path, array, truncate=False):
    buffer = io.BytesIO()
    np.save(buffer, array)
    raw = buffer.getvalue()
    path = tmp_path / "features.npy"
    path.write_bytes(raw[:len(raw) // 2] if truncate else raw)
    return path


def _pairs(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("0,1,must\n0,5,cannot\n", encoding="utf-8")
    return path


X6 = np.array([[0.0, 0.1], [0.2, 0.0], [0.1, 0.3], [4.0, 4.1], [4.2, 4.0], [4.1, 4.3]])


@pytest.mark.parametrize("features, message", [
    (lambda tmp: _features_npy(tmp, X6, truncate=True), "not a valid .npy file"),
    (lambda tmp: _features_npy(tmp, X6.astype(np.complex128)), "real numbers"),
    (lambda tmp: _features_npy(tmp, X6.astype(str)), "real numbers"),
])
def test_cli_names_a_bad_npy_file(tmp_path, features, message):
    path = features(tmp_path)
    status, err = _run(["cluster", str(path), str(_pairs(tmp_path)), "-k", "2", "-o",
                        str(tmp_path / "labels.csv"), "-q"])
    assert status == 2 and f"{path}: " in err and message in err


def test_cli_names_a_libsvm_file_with_inf(tmp_path):
    path = tmp_path / "features.svm"
    path.write_text("".join(f"0 1:{a} 2:{b}\n" for a, b in X6).replace("0.1", "inf", 1))
    status, err = _run(["cluster", str(path), str(_pairs(tmp_path)), "-k", "2", "-o",
                        str(tmp_path / "labels.csv"), "-q"])
    assert status == 2 and f"{path}: every feature must be a finite number" in err


def test_cli_reads_a_csv_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "features.csv"
    path.write_bytes("".join(f"{a},{b}\n" for a, b in X6).encode("utf-8-sig"))
    out = tmp_path / "labels.csv"
    status, err = _run(["cluster", str(path), str(_pairs(tmp_path)), "-k", "2", "-o",
                        str(out), "-q"])
    assert status == 0, err
    assert np.loadtxt(out, dtype=np.int64).shape == (6,)


# ------------------------------------------------------------------ estimators
def test_pairs_classifier_score_refuses_one_class():
    clf = pl.PairsClassifier(pl.RCA(), preprocessor=X6).fit([[0, 1], [0, 5], [3, 4]],
                                                            [1, -1, 1])
    with pytest.raises(ValueError, match="similar .* and dissimilar"):
        clf.score([[0, 1], [3, 4]], [1, 1])


def test_constrained_clustering_without_a_learner_on_sparse_x():
    X = sp.csr_matrix(X6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = pl.ConstrainedClustering(2, n_init=2, random_state=0).fit(X)
    assert np.array_equal(model.predict(X), model.labels_)
    assert len(set(model.labels_[:3])) == 1 and model.labels_[0] != model.labels_[3]


def test_constrained_clustering_predicts_the_label_of_a_repeated_training_row():
    # rows 3 and 4 are equal; the must-link (1, 4) moves row 4 to row 1's cluster
    X = np.array([[-4.0], [-6.0], [10.0], [11.0], [11.0]])
    y = np.array([-1, 0, -1, -1, 0])
    model = pl.ConstrainedClustering(2, estimator=pl.RCA(), n_init=2, assign="constrained",
                                     random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    assert model.labels_[1] == model.labels_[4] != model.labels_[3]
    predicted = model.predict(X)
    assert np.array_equal(predicted[:4], model.labels_[:4]) and predicted[4] == predicted[3]


# ------------------------------------------------------------------- functions
@pytest.mark.parametrize("S, delta, match", [
    (np.ones((1, 2)), 1e-4, "S must be a square"),
    (np.array([[0.0, -1.0], [-1.0, 0.0]]), 1e-4, "non-negative"),
    (np.array([[0.0, np.nan], [np.nan, 0.0]]), 1e-4, "finite"),
    (np.array([[0.0, 1.0], [1.0, 0.0]]), np.inf, "delta"),
])
def test_normalized_laplacian_checks_its_input(S, delta, match):
    with pytest.raises(ValueError, match=match):
        graph.normalized_laplacian(sp.csr_matrix(S), delta=delta)


def test_sigma_rule_refuses_infinite_distances():
    with pytest.raises(ValueError, match="distances"):
        graph.sigma_rule(np.array([[np.inf]]))


def test_select_gamma_refuses_nan_scores():
    with pytest.raises(ValueError, match="scores contains NaN"):
        model_selection.select_gamma([[np.nan, 1.0]])


def test_metrics_refuse_nan():
    with pytest.raises(ValueError, match="y_pred contains NaN"):
        metrics.pairwise_accuracy([0, 1], [0.0, np.nan])
    with pytest.raises(ValueError, match="y_true must be 1-D"):
        metrics.pairwise_accuracy(np.zeros((2, 1)), [0, 1])
    with pytest.raises(ValueError, match="K1 and K2 must hold finite"):
        metrics.centered_alignment([[np.nan]], [[1.0]])
    with pytest.raises(ValueError, match="Z contains NaN"):
        metrics.class_separation([[np.nan], [0.0], [1.0]], [0, 0, 1])


def test_label_oracle_names_an_index_out_of_range():
    oracle = active.LabelOracle([0, 0, 1])
    with pytest.raises(ValueError, match="i=0, j=3: the oracle knows the labels of 3"):
        oracle.query(0, 3)
    assert oracle.n_queries_ == 0


def test_kneighbors_refuses_a_non_integer_n_neighbors():
    index = graph.NeighborIndex("exact").fit(X6)
    for k in (None, 2.5):
        with pytest.raises(TypeError, match="n_neighbors must be an integer"):
            index.kneighbors(n_neighbors=k)


def test_labels_as_a_column_are_refused_by_name():
    y = np.array([[0], [0], [1], [1]])
    with pytest.raises(ValueError, match="y"):
        metrics.class_separation(np.zeros((4, 1)), y)
    with pytest.raises(ValueError, match="y"):
        pl.triplets_from_labels(np.zeros((4, 1)), y)


def test_query_strategies_name_x_with_nan():
    X = X6.copy()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        active.ExploreConsolidate(2).select(X, None, 1, random_state=0)


def test_string_labels_minus_one_are_unlabelled():
    y = np.array(["-1", "-1", "0", "0", "1"])
    C = pl.PairwiseConstraints.from_labels(y, n_must=1, n_cannot=2, random_state=0)
    assert set(C.pairs.ravel().tolist()) <= {2, 3, 4}
    X = np.array([[0.0], [0.1], [1.0], [1.1], [5.0]])
    T = pl.triplets_from_labels(X, y)
    assert set(T.ravel().tolist()) <= {2, 3, 4}
