"""Tables of sample indices (pairs, triplets) and label arrays: validation shared by
:mod:`psdlearn.constraints` and :mod:`psdlearn._triplets`."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["labelled_mask"]


def _as_index_array(values, name):
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or inf.")
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integer indices, got non-integer values.")
    elif arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}.")
    return arr.astype(np.int64)


def _index_rows(values, width, n_samples, name, rows):
    """Validate an integer table of sample indices with ``width`` columns.

    Returns the table as int64 (an empty input reshaped to ``(0, width)``) and
    ``n_samples``, inferred as ``max index + 1`` when None.

    Raises
    ------
    ValueError
        On a wrong shape, NaN, non-integer or negative entries, an invalid ``n_samples``
        or an index at or above it (naming the first offending row).
    """
    arr = _as_index_array(values, name)
    if arr.size == 0:
        arr = arr.reshape(0, width)
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(f"{name} must have shape ({rows}, {width}), got {arr.shape}.")
    if (arr < 0).any():
        raise ValueError(f"{name} contains negative indices.")
    if n_samples is None:
        n_samples = int(arr.max()) + 1 if arr.size else 0
    elif not isinstance(n_samples, numbers.Integral) or n_samples < 0:
        raise ValueError(f"n_samples must be a non-negative integer, got {n_samples!r}.")
    n_samples = int(n_samples)
    if arr.size and arr.max() >= n_samples:
        row = int(np.flatnonzero((arr >= n_samples).any(axis=1))[0])
        raise ValueError(f"{name} index out of range [0, {n_samples}) in row {row}: "
                         f"{arr[row].tolist()}.")
    return arr, n_samples


class _SampleIndexRows:
    """Base of the side-information tables of sample indices (pairs, triplets)."""

    n_samples: int

    def __len__(self):
        # scikit-learn's length of ``y``: the number of samples it describes, so that
        # ``check_consistent_length(X, y)`` and Pipelines accept the table as ``y``.
        return self.n_samples


def _resolve_count(value, n, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float fraction of n or an int count, got {value!r}.")
    if isinstance(value, numbers.Integral):
        if value < 0:
            raise ValueError(f"{name} must be non-negative, got {value}.")
        return int(value)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative finite fraction, got {value}.")
    return int(round(value * n))


def labelled_mask(labels):
    """Boolean mask of the labelled entries of a partial label vector (``-1`` = unlabelled)."""
    labels = np.asarray(labels)
    if labels.dtype.kind in "OUS":
        return np.array([str(v) != "-1" for v in labels], dtype=bool)
    return labels != -1
