"""Reader for LIBSVM / svmlight text files (plain or gzipped), returning dense arrays."""

from __future__ import annotations

import os

import numpy as np
from sklearn.datasets import load_svmlight_file

__all__ = ["read_libsvm"]


def read_libsvm(f, n_features=None):
    """Read a LIBSVM-format file into a dense matrix.

    Parameters
    ----------
    f : str, path-like or binary file object
        The file. Paths ending in ``.gz`` or ``.bz2`` are decompressed on the fly
        (by :func:`sklearn.datasets.load_svmlight_file`); an open file object must yield
        the decompressed bytes.
    n_features : int, optional
        Number of features. Pass it whenever it is known: a file may never use its
        highest feature indices (several Adult files never use index 123), and the
        width would then be inferred too small. Indices in the file are 1-based.

    Returns
    -------
    X : ndarray of shape (n, n_features), dtype float64, C-contiguous
        Dense features; absent entries are 0. The sets psdlearn reads this way are small
        enough to be held densely.
    y : ndarray of shape (n,), dtype float64
        The labels as written in the file (not re-coded).

    Raises
    ------
    ValueError
        Naming the file (``f`` for a file object) when it is not valid LIBSVM text.
    """
    if isinstance(f, os.PathLike):
        f = os.fspath(f)
    try:
        X, y = load_svmlight_file(f, n_features=n_features, dtype=np.float64,
                                  zero_based=False)
    except ValueError as exc:
        where = f if isinstance(f, str) else "f (a file object)"
        raise ValueError(f"{where}: not a valid LIBSVM file ({exc}).") from None
    return np.ascontiguousarray(X.toarray(), dtype=np.float64), np.asarray(y, dtype=np.float64)
