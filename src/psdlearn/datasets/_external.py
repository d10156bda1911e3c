"""Benchmark sets read from a data directory (never downloaded).

The directory is :func:`data_home`, with ``adult/`` (the adult sets a1a-a9a), ``libsvm/``
(the other LIBSVM-format sets) and ``ssl/`` (the Chapelle SSL-book sets) sub-folders. A
file is also accepted directly in the data directory, without the sub-folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._common import encode_labels, minmax_scale
from ._libsvm import read_libsvm

__all__ = ["ENV_VAR", "EXTERNAL", "ExternalSpec", "data_home", "read_external", "ssl_splits"]

ENV_VAR = "PSDLEARN_DATA"


def data_home():
    """Directory from which the external benchmark sets are read.

    The first of these that applies:

    1. ``$PSDLEARN_DATA`` when the variable is set (even if the directory does not exist);
    2. ``../shared/data`` relative to the current working directory, if it is a directory;
    3. ``<repo>/../shared/data``, where ``<repo>`` is the first parent directory of this
       file that holds a ``pyproject.toml`` (a source checkout), if it is a directory;
    4. the user cache directory ``$XDG_CACHE_HOME/psdlearn`` (default
       ``~/.cache/psdlearn``), which may not exist.

    Nothing is ever downloaded into it.

    Returns
    -------
    path : pathlib.Path
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    candidate = Path.cwd() / ".." / "shared" / "data"
    if candidate.is_dir():
        return candidate.resolve()
    for parent in Path(__file__).resolve().parents:
        if (parent / "pyproject.toml").is_file():
            candidate = parent.parent / "shared" / "data"
            if candidate.is_dir():
                return candidate
            break
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache).expanduser() / "psdlearn"


def _find(relpath, data_dir=None):
    """Locate ``relpath`` (e.g. ``adult/a1a.gz``) in the data directory.

    Raises
    ------
    FileNotFoundError
        Naming the file, the directory searched and ``PSDLEARN_DATA``.
    """
    root = Path(data_dir).expanduser() if data_dir is not None else data_home()
    rel = Path(relpath)
    for candidate in (root / rel, root / rel.name):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"data file {str(rel)!r} not found in the data directory {str(root)!r} "
        f"(also looked for {rel.name!r} directly in it). Set the {ENV_VAR} environment "
        "variable to the folder that holds the data files (sub-folders adult/, libsvm/, "
        "ssl/). Nothing is downloaded."
    )


def is_available(spec, data_dir=None):
    """Whether the training file of ``spec`` can be found."""
    try:
        _find(spec.train, data_dir)
    except FileNotFoundError:
        return False
    return True


@dataclass(frozen=True)
class ExternalSpec:
    """Description of one external data set.

    Attributes
    ----------
    name : str
        Canonical name.
    kind : {"libsvm", "usps", "segment", "mnist", "ssl"}
        File format.
    train : str
        Path of the training (or only) file relative to the data directory.
    test : str or None
        Path of the test file, None when there is none.
    n_samples, n_features, n_classes : int
        Training-split shape and number of classes.
    scaling : {"none", "minmax", "div255"}
        What ``scale=True`` does.
    classes : tuple or None
        Sorted original labels of the whole set (None: inferred from the file).
    description : str
        One line for :func:`psdlearn.datasets.list_datasets`.
    """

    name: str
    kind: str
    train: str
    test: str | None
    n_samples: int
    n_features: int
    n_classes: int
    scaling: str
    classes: tuple | None
    description: str


_ADULT_SIZES = {"a1a": 1605, "a2a": 2265, "a3a": 3185, "a4a": 4781, "a6a": 11220,
                "a8a": 22696, "a9a": 32561}
_SSL = {
    "digit1": ("digit1.npz", 2, "Digit1"),
    "ssl-usps": ("usps.npz", 2, "USPS (SSL-book version, imbalanced 2-class subset, 1200:300)"),
    "coil2": ("coil2.npz", 2, "COIL2"),
    "bci": ("bci.npz", 2, "BCI"),
    "g241c": ("g241c.npz", 2, "g241c"),
    "coil": ("coil.npz", 6, "COIL (6 classes)"),
    "g241n": ("g241n.npz", 2, "g241n"),
    "text": ("text.npz", 2, "Text (stored dense, about 143 MB as float64)"),
}
_SSL_SHAPES = {"bci": (400, 117), "text": (1500, 11960)}


def _build_specs():
    specs = []
    for name, n in _ADULT_SIZES.items():
        test = None if name == "a6a" else f"adult/{name}.t.gz"
        specs.append(ExternalSpec(
            name, "libsvm", f"adult/{name}.gz", test, n, 123, 2, "none", (-1, 1),
            f"LIBSVM Adult {name} (UCI Adult, 123 binary features, used as is)"
            + ("; no test split stored" if test is None else "")))
    specs += [
        ExternalSpec("german.numer", "libsvm", "libsvm/german.numer.gz", None, 1000, 24, 2,
                     "minmax", (-1, 1), "Statlog German credit, LIBSVM numeric version; "
                     "min-max scaled to [-1, 1] (as LIBSVM's german.numer_scale)"),
        ExternalSpec("dna", "libsvm", "libsvm/dna.scale.gz", "libsvm/dna.scale.t.gz", 2000,
                     180, 3, "none", (1, 2, 3), "Statlog DNA, LIBSVM dna.scale, used as is"),
        ExternalSpec("pendigits", "libsvm", "libsvm/pendigits.scale.gz",
                     "libsvm/pendigits.scale.t.gz", 7494, 16, 10, "none", tuple(range(1, 11)),
                     "UCI pen-based digits, LIBSVM pendigits.scale, used as is"),
        ExternalSpec("svmguide1", "libsvm", "libsvm/svmguide1.gz", "libsvm/svmguide1.t.gz",
                     3089, 4, 2, "minmax", (0, 1), "LIBSVM svmguide1; min-max scaled to "
                     "[-1, 1] (test split with the training ranges)"),
        ExternalSpec("satimage", "libsvm", "libsvm/satimage.scale.gz",
                     "libsvm/satimage.scale.t.gz", 4435, 36, 6, "none", tuple(range(1, 7)),
                     "Statlog Landsat, LIBSVM satimage.scale, used as is"),
        ExternalSpec("usps", "usps", "libsvm/usps.zip.train.gz", "libsvm/usps.zip.test.gz",
                     7291, 256, 10, "none", tuple(range(10)),
                     "USPS digits (ESL zip.train/zip.test, values in [-1, 1], used as is)"),
        ExternalSpec("segment", "segment", "libsvm/segmentation.pmlb.tsv.gz", None, 2310, 19,
                     7, "minmax", tuple(range(7)), "UCI/Statlog image segmentation (PMLB copy, "
                     "unscaled); min-max scaled to [-1, 1]"),
        ExternalSpec("mnist", "mnist", "libsvm/mnist.npz", "libsvm/mnist.npz", 60000, 784, 10,
                     "div255", tuple(range(10)), "MNIST digits; pixels divided by 255"),
    ]
    for name, (fname, n_classes, title) in _SSL.items():
        n, d = _SSL_SHAPES.get(name, (1500, 241))
        specs.append(ExternalSpec(
            name, "ssl", f"ssl/{fname}", None, n, d, n_classes, "none", None,
            f"Chapelle SSL-book benchmark {title}, used as is; 12 official labelled splits"))
    return {spec.name: spec for spec in specs}


EXTERNAL = _build_specs()


def _read_libsvm_file(spec, relpath, data_dir):
    return read_libsvm(_find(relpath, data_dir), n_features=spec.n_features)


def _read_usps(spec, relpath, data_dir):
    data = np.loadtxt(_find(relpath, data_dir), dtype=np.float64)
    return data[:, 1:], data[:, 0]


def _read_segment(spec, relpath, data_dir):
    data = np.loadtxt(_find(relpath, data_dir), dtype=np.float64, delimiter="\t", skiprows=1)
    return data[:, :-1], data[:, -1]


def _read_one(spec, which, data_dir):
    """Raw ``(X, y_raw)`` of the ``"train"`` or ``"test"`` file of a file-per-split set."""
    relpath = spec.train if which == "train" else spec.test
    reader = {"libsvm": _read_libsvm_file, "usps": _read_usps, "segment": _read_segment}
    X, y = reader[spec.kind](spec, relpath, data_dir)
    if X.shape[1] != spec.n_features:
        raise ValueError(f"{relpath} has {X.shape[1]} features, expected {spec.n_features}")
    return X, y


def _load_npz(spec, data_dir):
    path = _find(spec.train, data_dir)
    with np.load(path) as archive:
        return {key: archive[key] for key in archive.files}


def read_external(spec, split="train", scale=True, data_dir=None):
    """Load an external set with labels re-coded and the documented preprocessing.

    Parameters
    ----------
    spec : ExternalSpec
        The set.
    split : {"train", "test", "all"}
        ``"all"`` is train followed by test. Sets without a test file have one split,
        the whole set, returned by ``"train"`` and ``"all"``.
    scale : bool
        Apply ``spec.scaling`` (min-max ranges always come from the training split).
    data_dir : path-like, optional
        Overrides :func:`data_home`.

    Returns
    -------
    X : ndarray of shape (n, d), dtype float64
    y : ndarray of shape (n,), dtype int64
    """
    if split == "test" and spec.test is None:
        raise ValueError(
            f"data set {spec.name!r} has no test split; use split='train' (the whole set)"
        )
    if spec.kind in ("mnist", "ssl"):
        arrays = _load_npz(spec, data_dir)
        X, y_raw = arrays["X"], arrays["y"]
        if spec.kind == "mnist" and split != "all":
            rows = arrays["split"] == (0 if split == "train" else 1)
            X, y_raw = X[rows], y_raw[rows]
        X = np.asarray(X, dtype=np.float64)
        if scale and spec.scaling == "div255":
            X /= 255.0
        return X, encode_labels(y_raw, spec.classes)

    parts = ["train", "test"] if split == "all" and spec.test is not None else [split]
    if split == "all" and spec.test is None:
        parts = ["train"]
    need_train = "train" in parts or (scale and spec.scaling == "minmax")
    loaded = {}
    if need_train:
        loaded["train"] = _read_one(spec, "train", data_dir)
    if "test" in parts:
        loaded["test"] = _read_one(spec, "test", data_dir)
    Xs, ys = [], []
    for part in parts:
        X, y_raw = loaded[part]
        if scale and spec.scaling == "minmax":
            X = minmax_scale(X, reference=None if part == "train" else loaded["train"][0])
        Xs.append(X)
        ys.append(encode_labels(y_raw, spec.classes))
    if len(parts) == 1:
        return Xs[0], ys[0]
    return np.vstack(Xs), np.concatenate(ys)


def ssl_splits(spec, n_labeled=10, data_dir=None):
    """The 12 official labelled index sets of a Chapelle SSL-book benchmark.

    Parameters
    ----------
    spec : ExternalSpec
        An SSL set (``kind == "ssl"``).
    n_labeled : {10, 100}
        Labelled points per split.
    data_dir : path-like, optional
        Overrides :func:`data_home`.

    Returns
    -------
    idx : ndarray of shape (12, n_labeled), dtype int64
        0-based row indices into ``load(name)``.
    """
    if n_labeled not in (10, 100) or isinstance(n_labeled, bool):
        raise ValueError(f"n_labeled must be 10 or 100, got {n_labeled!r}")
    path = _find(spec.train, data_dir)
    with np.load(path) as archive:
        idx = archive[f"idx_labeled_{n_labeled}"]
    return np.ascontiguousarray(idx, dtype=np.int64)
