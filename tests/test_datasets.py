"""Tests of psdlearn.datasets: bundled, generated and external sets, generators, errors."""

import dataclasses
import gzip

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from psdlearn import datasets as ds
from psdlearn.datasets import _common

BUNDLED = {
    "iris": ((150, 4), [50, 50, 50]),
    "wine": ((178, 13), [59, 71, 48]),
    "glass": ((214, 9), [70, 76, 17, 13, 9, 29]),
    "heart": ((270, 13), [150, 120]),
    "sonar": ((208, 60), [111, 97]),
    "soybean": ((47, 35), [10, 10, 10, 17]),
}

# name -> (split, shape, class counts); counts from shared/data/MANIFEST.md
EXTERNAL = {
    "a1a": ("train", (1605, 123), [1210, 395]),
    "a1a-test": ("test", (30956, 123), [23510, 7446]),
    "a2a": ("train", (2265, 123), [1693, 572]),
    "a3a": ("train", (3185, 123), [2412, 773]),
    "a4a": ("train", (4781, 123), [3593, 1188]),
    "a6a": ("train", (11220, 123), [8528, 2692]),
    "a8a": ("train", (22696, 123), [17190, 5506]),
    "a9a": ("train", (32561, 123), [24720, 7841]),
    "a9a-test": ("test", (16281, 123), [12435, 3846]),
    "german.numer": ("train", (1000, 24), [700, 300]),
    "dna": ("train", (2000, 180), [464, 485, 1051]),
    "dna-test": ("test", (1186, 180), [303, 280, 603]),
    "pendigits": ("train", (7494, 16), [780, 779, 780, 719, 780, 720, 720, 778, 719, 719]),
    "svmguide1": ("train", (3089, 4), [1089, 2000]),
    "svmguide1-test": ("test", (4000, 4), [2000, 2000]),
    "satimage": ("train", (4435, 36), [1072, 479, 961, 415, 470, 1038]),
    "usps": ("train", (7291, 256), [1194, 1005, 731, 658, 652, 556, 664, 645, 542, 644]),
    "usps-test": ("test", (2007, 256), [359, 264, 198, 166, 200, 160, 170, 147, 166, 177]),
    "segment": ("train", (2310, 19), [330] * 7),
    "digit1": ("train", (1500, 241), [766, 734]),
    "ssl-usps": ("train", (1500, 241), [1200, 300]),
    "coil2": ("train", (1500, 241), [750, 750]),
    "coil": ("train", (1500, 241), [250] * 6),
    "g241c": ("train", (1500, 241), [750, 750]),
    "g241n": ("train", (1500, 241), [752, 748]),
    "bci": ("train", (400, 117), [200, 200]),
}
SSL = ["digit1", "ssl-usps", "coil", "coil2", "g241c", "g241n", "bci", "text"]


def _check_xy(X, y):
    assert isinstance(X, np.ndarray) and isinstance(y, np.ndarray)
    assert X.dtype == np.float64 and y.dtype == np.int64
    assert X.ndim == 2 and y.shape == (X.shape[0],)
    assert X.flags.c_contiguous
    assert np.all(np.isfinite(X))
    assert y.min() == 0
    assert set(np.unique(y)) == set(range(y.max() + 1))


def _external_or_skip(name):
    info = {i.name: i for i in ds.list_datasets()}[name]
    if not info.available:
        pytest.skip(f"external data file of {name!r} not found under {ds.data_home()}")
    return info


# ----------------------------------------------------------------------------- bundled


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_shape_classes_and_scaling(name):
    shape, counts = BUNDLED[name]
    X, y = ds.load(name)
    _check_xy(X, y)
    assert X.shape == shape
    assert np.bincount(y).tolist() == counts
    assert X.min() >= -1.0 and X.max() <= 1.0
    # min-max scaling reaches both ends on every non-constant feature
    varying = X.max(axis=0) > X.min(axis=0)
    if name != "heart":
        assert np.all(X[:, varying].min(axis=0) == -1.0)
        assert np.all(X[:, varying].max(axis=0) == 1.0)
        assert np.all(X[:, ~varying] == 0.0)


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_raw_features(name):
    X_raw, y_raw = ds.load(name, scale=False)
    X, y = ds.load(name)
    _check_xy(X_raw, y_raw)
    np.testing.assert_array_equal(y, y_raw)
    if name == "heart":  # stored already scaled
        np.testing.assert_array_equal(X, X_raw)
    else:
        np.testing.assert_allclose(X, _common.minmax_scale(X_raw))
        assert not np.allclose(X, X_raw)


def test_bundled_known_values():
    X, y = ds.load("iris", scale=False)
    np.testing.assert_allclose(X[0], [5.1, 3.5, 1.4, 0.2])
    assert y[0] == 0 and y[-1] == 2
    X, y = ds.load("wine", scale=False)  # class is the first column of the file
    np.testing.assert_allclose(X[0, :2], [14.23, 1.71])
    assert y[0] == 0
    X, y = ds.load("glass", scale=False)  # Id column dropped
    np.testing.assert_allclose(X[0, :2], [1.52101, 13.64])
    X, y = ds.load("sonar")
    assert y[0] == 1  # first row is a rock, R sorts after M
    X, y = ds.load("heart")
    assert y[0] == 1 and y[1] == 0  # +1 -> 1, -1 -> 0


def test_names_are_case_insensitive_and_aliases():
    X1, y1 = ds.load("IRIS")
    X2, y2 = ds.load("iris")
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(ds.load("Spiral")[0], ds.load("double-spiral")[0])


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match="unknown data set 'nope'") as err:
        ds.load("nope")
    for name in ("iris", "chessboard", "a1a", "mnist", "ssl-usps"):
        assert name in str(err.value)


def test_bad_split_and_missing_test_split():
    with pytest.raises(ValueError, match="split must be one of"):
        ds.load("iris", split="validation")
    with pytest.raises(ValueError, match="no test split"):
        ds.load("iris", split="test")
    with pytest.raises(ValueError, match="no test split"):
        ds.load("a6a", split="test")


def test_protein_is_not_available():
    with pytest.raises(ds.DatasetNotAvailableError, match="116") as err:
        ds.load("protein")
    assert isinstance(err.value, ValueError)
    assert "Xing" in str(err.value)


def test_list_datasets():
    infos = ds.list_datasets()
    assert all(isinstance(i, ds.DatasetInfo) for i in infos)
    by_name = {i.name: i for i in infos}
    assert len(by_name) == len(infos)
    for name, (shape, counts) in BUNDLED.items():
        info = by_name[name]
        assert (info.n_samples, info.n_features) == shape
        assert info.n_classes == len(counts)
        assert info.source == "bundled" and info.available
    assert by_name["chessboard"].source == "generated"
    assert by_name["protein"].available is False
    assert by_name["a9a"].source == "external"
    assert by_name["a9a"].n_features == 123
    assert set(dataclasses.asdict(by_name["iris"])) >= {
        "name", "n_samples", "n_features", "n_classes", "source", "available", "description"
    }
    for name in ("text", "mnist", "usps", "segment", *SSL):
        assert name in by_name


# --------------------------------------------------------------------------- generated


@pytest.mark.parametrize(("name", "d"), [("chessboard", 2), ("double-spiral", 3)])
def test_generated_sets_fixed(name, d):
    X, y = ds.load(name)
    _check_xy(X, y)
    assert X.shape == (100, d)
    assert np.bincount(y).tolist() == [50, 50]
    X2, y2 = ds.load(name)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_chessboard_labels_follow_squares():
    X, y = ds.make_chessboard(n_samples=201, n_squares=5, random_state=3)
    assert X.shape == (201, 2) and np.bincount(y).tolist() == [101, 100]
    assert np.all((X >= 0) & (X < 1))
    cell = np.floor(X * 5).astype(int)
    np.testing.assert_array_equal(y, cell.sum(axis=1) % 2)


def test_double_spiral_geometry():
    X, y = ds.make_double_spiral(n_samples=400, noise=0.0, random_state=1)
    r = np.hypot(X[:, 0], X[:, 1])
    t = X[:, 2] / 2.0
    np.testing.assert_allclose(r, 0.2 + 0.8 * t)
    theta = np.arctan2(X[:, 1], X[:, 0])
    expected = 2 * np.pi * 1.5 * t + np.pi * y
    np.testing.assert_allclose(np.cos(theta - expected), 1.0, atol=1e-12)
    # the two classes are interleaved: every point's nearest neighbour is of its class
    D = np.linalg.norm(X[:, None] - X[None], axis=-1)
    np.fill_diagonal(D, np.inf)
    assert np.mean(y[D.argmin(axis=1)] == y) > 0.95


def test_two_gaussians():
    X, y = ds.make_two_gaussians(2001, n_features=10, random_state=0)
    _check_xy(X, y)
    assert X.shape == (2001, 10) and np.bincount(y).tolist() == [1001, 1000]
    np.testing.assert_allclose(X[y == 0].mean(axis=0), 1.0, atol=0.15)
    np.testing.assert_allclose(X[y == 1].mean(axis=0), -1.0, atol=0.15)
    np.testing.assert_allclose(X[y == 0].std(axis=0), 1.0, atol=0.1)


def test_xor():
    X, y = ds.make_xor(random_state=0)
    _check_xy(X, y)
    assert X.shape == (400, 2) and np.bincount(y).tolist() == [200, 200]
    np.testing.assert_array_equal(y, (np.sign(X[:, 0]) != np.sign(X[:, 1])).astype(int))
    # the default spread reproduces the input-space J of Table 1 (1.2460) of seed 004
    X, y = ds.make_xor(4000, random_state=1)
    D = pdist(X)
    same = pdist(y[:, None].astype(float)) == 0
    J = D[~same].mean() / D[same].mean()
    assert abs(J - 1.246) < 0.01


def test_triplet_synthetic():
    X, y = ds.make_triplet_synthetic(random_state=0)
    _check_xy(X, y)
    assert X.shape == (600, 24)
    assert np.bincount(y).tolist() == [200, 200, 200]
    # only the informative coordinates separate the class means
    means = np.array([X[y == c].mean(axis=0) for c in range(3)])
    spread = means.max(axis=0) - means.min(axis=0)
    assert spread[:4].max() > 1.0 and spread[4:].max() < 0.5
    X2, y2 = ds.make_triplet_synthetic(n_samples=50, n_features=6, random_state=0,
                                       n_informative=2, n_classes=5)
    assert X2.shape == (50, 6) and np.bincount(y2).tolist() == [10] * 5


@pytest.mark.parametrize(
    "make",
    [
        lambda s: ds.make_chessboard(random_state=s),
        lambda s: ds.make_double_spiral(random_state=s),
        lambda s: ds.make_xor(random_state=s),
        lambda s: ds.make_two_gaussians(60, random_state=s),
        lambda s: ds.make_triplet_synthetic(random_state=s),
    ],
)
def test_generators_deterministic(make):
    X1, y1 = make(7)
    X2, y2 = make(7)
    X3, _ = make(8)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.array_equal(X1, X3)


def test_generator_argument_validation():
    with pytest.raises(ValueError, match="n_samples"):
        ds.make_two_gaussians(1)
    with pytest.raises(TypeError, match="n_squares"):
        ds.make_chessboard(n_squares=2.5)
    with pytest.raises(ValueError, match="noise"):
        ds.make_double_spiral(noise=-1.0)
    with pytest.raises(ValueError, match="cluster_std"):
        ds.make_xor(cluster_std=0.0)
    with pytest.raises(ValueError, match="n_features"):
        ds.make_triplet_synthetic(n_features=3, n_informative=4)


def test_encode_labels():
    np.testing.assert_array_equal(_common.encode_labels([3.0, -1.0, 3.0]), [1, 0, 1])
    np.testing.assert_array_equal(_common.encode_labels([5, 7], classes=[1, 5, 7]), [1, 2])
    with pytest.raises(ValueError, match="unexpected labels"):
        _common.encode_labels([2], classes=[1, 3])
    with pytest.raises(ValueError, match="integers"):
        _common.encode_labels([0.5, 1.0])


# ---------------------------------------------------------------------------- external


def test_data_home_env(monkeypatch, tmp_path):
    monkeypatch.setenv("PSDLEARN_DATA", str(tmp_path))
    assert ds.data_home() == tmp_path


def test_data_home_cache_fallback(monkeypatch, tmp_path):
    monkeypatch.delenv("PSDLEARN_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    home = ds.data_home()
    # either a source checkout's sibling shared/data, or the cache directory
    assert home == tmp_path / "cache" / "psdlearn" or home.parts[-2:] == ("shared", "data")


def test_missing_file_error_names_file_and_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("PSDLEARN_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError) as err:
        ds.load("a1a")
    msg = str(err.value)
    assert "a1a.gz" in msg and str(tmp_path) in msg and "PSDLEARN_DATA" in msg
    with pytest.raises(FileNotFoundError, match="digit1.npz"):
        ds.load_ssl_splits("digit1")
    info = {i.name: i for i in ds.list_datasets()}
    assert info["a1a"].available is False
    assert info["iris"].available is True


def test_external_file_in_custom_directory(monkeypatch, tmp_path):
    (tmp_path / "adult").mkdir()
    lines = ["-1 1:1 5:1", "+1 2:1 123:1", "-1 3:1"]
    with gzip.open(tmp_path / "adult" / "a2a.gz", "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    monkeypatch.setenv("PSDLEARN_DATA", str(tmp_path))
    X, y = ds.load("a2a")
    _check_xy(X, y)
    assert X.shape == (3, 123)
    np.testing.assert_array_equal(y, [0, 1, 0])
    assert X[1, 122] == 1.0 and X[0, 4] == 1.0
    with pytest.raises(FileNotFoundError, match=r"a2a\.t\.gz"):
        ds.load("a2a", split="test")
    # data_dir overrides the environment
    monkeypatch.setenv("PSDLEARN_DATA", str(tmp_path / "elsewhere"))
    assert ds.load("a2a", data_dir=tmp_path)[0].shape == (3, 123)


@pytest.mark.parametrize("key", sorted(EXTERNAL))
def test_external_shapes(key):
    split, shape, counts = EXTERNAL[key]
    name = key.removesuffix("-test")
    _external_or_skip(name)
    X, y = ds.load(name, split=split)
    _check_xy(X, y)
    assert X.shape == shape
    assert np.bincount(y).tolist() == counts


@pytest.mark.parametrize("name", ["german.numer", "segment", "svmguide1"])
def test_external_minmax_scaled(name):
    _external_or_skip(name)
    X, _ = ds.load(name)
    assert X.min() >= -1.0 and X.max() <= 1.0
    X_raw, _ = ds.load(name, scale=False)
    assert X_raw.max() > 1.0
    np.testing.assert_allclose(X, _common.minmax_scale(X_raw))


def test_external_all_split_concatenates():
    _external_or_skip("dna")
    X_all, y_all = ds.load("dna", split="all")
    X_tr, y_tr = ds.load("dna")
    X_te, y_te = ds.load("dna", split="test")
    np.testing.assert_array_equal(X_all, np.vstack([X_tr, X_te]))
    np.testing.assert_array_equal(y_all, np.concatenate([y_tr, y_te]))


@pytest.mark.parametrize("name", SSL)
@pytest.mark.parametrize("n_labeled", [10, 100])
def test_ssl_splits(name, n_labeled):
    info = _external_or_skip(name)
    idx = ds.load_ssl_splits(name, n_labeled=n_labeled)
    assert idx.shape == (12, n_labeled) and idx.dtype == np.int64
    assert idx.min() >= 0 and idx.max() < info.n_samples
    assert all(len(np.unique(row)) == n_labeled for row in idx)


def test_ssl_splits_errors():
    with pytest.raises(ValueError, match="not an SSL-book set"):
        ds.load_ssl_splits("iris")
    with pytest.raises(ValueError, match="n_labeled"):
        ds.load_ssl_splits("digit1", n_labeled=20)


@pytest.mark.slow
def test_text_loads():
    _external_or_skip("text")
    X, y = ds.load("text")
    _check_xy(X, y)
    assert X.shape == (1500, 11960) and np.bincount(y).tolist() == [750, 750]


@pytest.mark.slow
def test_mnist_splits():
    _external_or_skip("mnist")
    X, y = ds.load("mnist", split="test")
    _check_xy(X, y)
    assert X.shape == (10000, 784) and X.min() == 0.0 and X.max() == 1.0
    assert np.bincount(y)[1] == 1135
    X_raw, _ = ds.load("mnist", split="test", scale=False)
    np.testing.assert_allclose(X_raw / 255.0, X)
    X, y = ds.load("mnist")
    assert X.shape == (60000, 784)
    assert ds.load("mnist", split="all")[0].shape == (70000, 784)
