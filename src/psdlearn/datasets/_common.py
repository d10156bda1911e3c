"""Small helpers shared by the data set loaders: label coding, scaling, output format."""

from __future__ import annotations

import numpy as np

__all__ = [
    "DatasetNotAvailableError",
    "encode_labels",
    "finalize",
    "minmax_scale",
]


class DatasetNotAvailableError(ValueError):
    """Raised when a data set is known to psdlearn but no copy of it exists.

    It subclasses :class:`ValueError`, so ``except ValueError`` also catches it.
    """


def encode_labels(y_raw, classes=None):
    """Re-code labels to ``0 .. C-1`` in sorted order of the original labels.

    Parameters
    ----------
    y_raw : array-like of shape (n,)
        Original labels (numbers or strings).
    classes : array-like of shape (C,), optional
        The sorted original labels of the whole data set. Give it when ``y_raw`` is only
        one split (a test split may lack a class, which would shift the codes). If None,
        the sorted unique values of ``y_raw`` are used.

    Returns
    -------
    y : ndarray of shape (n,), dtype int64
        ``y[i] = k`` where ``classes[k] == y_raw[i]``.

    Raises
    ------
    ValueError
        If a label of ``y_raw`` is not in ``classes``.
    """
    y_raw = np.asarray(y_raw)
    if y_raw.dtype.kind == "f":
        rounded = np.rint(y_raw)
        if not np.array_equal(rounded, y_raw):
            raise ValueError("labels must be integers; got non-integral values")
        y_raw = rounded.astype(np.int64)
    classes = np.unique(y_raw) if classes is None else np.sort(np.asarray(classes))
    codes = np.searchsorted(classes, y_raw)
    codes = np.minimum(codes, len(classes) - 1)
    bad = classes[codes] != y_raw
    if np.any(bad):
        raise ValueError(
            f"unexpected labels {np.unique(y_raw[bad])[:10].tolist()}; "
            f"expected one of {classes.tolist()}"
        )
    return codes.astype(np.int64)


def minmax_scale(X, reference=None):
    """Scale each feature linearly to ``[-1, 1]`` (the rule of LIBSVM's ``svm-scale``).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features to scale.
    reference : ndarray of shape (m, d), optional
        Data whose per-feature minimum and maximum define the map (the training split when
        ``X`` is a test split; test values may then fall slightly outside ``[-1, 1]``).
        Defaults to ``X`` itself.

    Returns
    -------
    X_scaled : ndarray of shape (n, d), dtype float64
        ``2 (x - min) / (max - min) - 1`` per feature; features that are constant in
        ``reference`` are set to 0.
    """
    X = np.asarray(X, dtype=np.float64)
    ref = X if reference is None else np.asarray(reference, dtype=np.float64)
    if ref.shape[0] == 0:
        return np.zeros_like(X)
    lo = ref.min(axis=0)
    span = ref.max(axis=0) - lo
    out = np.zeros_like(X)
    keep = span > 0
    out[:, keep] = 2.0 * (X[:, keep] - lo[keep]) / span[keep] - 1.0
    if reference is None:
        np.clip(out, -1.0, 1.0, out=out)
    return out


def finalize(X, y):
    """Return ``(X, y)`` as a C-contiguous float64 matrix and an int64 vector.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Features.
    y : array-like of shape (n,)
        Integer labels.

    Returns
    -------
    X : ndarray of shape (n, d), dtype float64, C-contiguous
    y : ndarray of shape (n,), dtype int64
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"inconsistent shapes X {X.shape}, y {y.shape}")
    return X, y
