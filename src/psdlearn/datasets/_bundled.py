"""The six small UCI sets shipped inside the package (``psdlearn/datasets/data/*.gz``).

These are the real-data sets of the NPKL experiments (Hoi et al., ICML 2007; Zhuang et al.,
JMLR 2011; Hu & Kwok, IJCAI 2013 / TNNLS 2015). Each reader returns the raw features and the
original labels; :func:`psdlearn.datasets.load` re-codes the labels and scales the features.
"""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass
from importlib import resources

import numpy as np

from ._libsvm import read_libsvm

__all__ = ["BUNDLED", "BundledSpec", "read_bundled"]


@dataclass(frozen=True)
class BundledSpec:
    """Description of one bundled data set.

    Attributes
    ----------
    name : str
        Canonical name.
    filename : str
        File under ``psdlearn/datasets/data/``.
    n_samples, n_features, n_classes : int
        Shape and number of classes.
    prescaled : bool
        True when the stored features are already in ``[-1, 1]`` (heart).
    description : str
        One line for :func:`psdlearn.datasets.list_datasets`.
    """

    name: str
    filename: str
    n_samples: int
    n_features: int
    n_classes: int
    prescaled: bool
    description: str


BUNDLED = {
    spec.name: spec
    for spec in (
        BundledSpec("iris", "iris.csv.gz", 150, 4, 3, False,
                    "UCI Iris (UCI text with its 2 known errata); classes in sorted name order"),
        BundledSpec("wine", "wine.data.gz", 178, 13, 3, False,
                    "UCI Wine recognition; class (1-3) read from the first column"),
        BundledSpec("glass", "glass.data.gz", 214, 9, 6, False,
                    "UCI Glass identification; Id column dropped; classes 1,2,3,5,6,7"),
        BundledSpec("heart", "heart_scale.gz", 270, 13, 2, True,
                    "Statlog Heart as LIBSVM heart_scale (already in [-1, 1]); -1 -> 0, +1 -> 1"),
        BundledSpec("sonar", "sonar.csv.gz", 208, 60, 2, False,
                    "UCI Sonar, mines vs rocks; M -> 0, R -> 1"),
        BundledSpec("soybean", "soybean-small.data.gz", 47, 35, 4, False,
                    "UCI Soybean (small), 35 nominal attributes coded as integers; D1..D4"),
    )
}


def _open_text(filename):
    """Return the decompressed text of a bundled gzip file."""
    data = resources.files("psdlearn.datasets").joinpath("data", filename).read_bytes()
    return gzip.decompress(data).decode("ascii")


def _read_csv(filename, label_column, drop_columns=(), label_type=str):
    """Parse a comma-separated bundled file into features and labels.

    Parameters
    ----------
    filename : str
        File under ``data/``.
    label_column : int
        Column holding the class (negative counts from the end).
    drop_columns : tuple of int
        Other columns to discard (e.g. a row Id).
    label_type : callable
        Converts the label field (``str`` or ``int``).

    Returns
    -------
    X : ndarray of shape (n, d), dtype float64
    y : ndarray of shape (n,)
        Original labels.
    """
    rows = [row for row in csv.reader(io.StringIO(_open_text(filename))) if row]
    n_cols = len(rows[0])
    label_column %= n_cols
    drop = {c % n_cols for c in drop_columns} | {label_column}
    feature_columns = [c for c in range(n_cols) if c not in drop]
    if any(len(row) != n_cols for row in rows):
        raise ValueError(f"bundled file {filename} has rows of unequal length")
    X = np.array([[float(row[c]) for c in feature_columns] for row in rows], dtype=np.float64)
    y = np.array([label_type(row[label_column].strip()) for row in rows])
    return X, y


def read_bundled(name):
    """Read a bundled data set as stored.

    Parameters
    ----------
    name : str
        A key of ``BUNDLED``.

    Returns
    -------
    X : ndarray of shape (n, d), dtype float64
        Raw features (no scaling).
    y : ndarray of shape (n,)
        Original labels (strings for iris, sonar and soybean; integers otherwise).
    """
    spec = BUNDLED[name]
    if name == "heart":
        raw = resources.files("psdlearn.datasets").joinpath("data", spec.filename).read_bytes()
        X, y = read_libsvm(io.BytesIO(gzip.decompress(raw)), n_features=spec.n_features)
    elif name == "wine":
        X, y = _read_csv(spec.filename, label_column=0, label_type=int)
    elif name == "glass":
        X, y = _read_csv(spec.filename, label_column=-1, drop_columns=(0,), label_type=int)
    else:
        X, y = _read_csv(spec.filename, label_column=-1)
    if X.shape != (spec.n_samples, spec.n_features):
        raise ValueError(
            f"bundled {name} has shape {X.shape}, expected {(spec.n_samples, spec.n_features)}"
        )
    return X, y
