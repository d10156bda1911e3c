"""Recognising training rows: an exact-match lookup of a fit's input.

A training point has a known answer: its row of ``embedding_`` (``NPKL.transform``,
``KernelMetricLearner.transform``) or its fitted label (``ConstrainedClustering.predict``).
Those methods return it for every row of ``X`` equal to a training row and compute the
out-of-sample answer for the others. The lookup hashes every row once at fit time (a
64-bit hash per row: each nonzero entry's bits, xor a per-column salt, through the
splitmix64 finalizer, summed modulo ``2^64``; zeros contribute nothing, so a dense and a
sparse copy of a row hash alike) and keeps the sorted hashes. A query row is hashed the
same way, looked up by binary search, and the candidate is confirmed by comparing the
values, so a match is exact and a hash collision can only miss a match, never invent one.
Cost: ``O(n)`` memory for the hashes, ``O(nnz + n_new log n)`` per query. With duplicated
training rows the one with the smallest index answers.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
#: Entries hashed at a time (dense input): a few MB of temporaries.
_CHUNK = 1 << 18


def _mix(z):
    """splitmix64's finalizer, elementwise on uint64 (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def _salt(n_columns):
    return _mix(np.arange(1, n_columns + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))


def _bits(values):
    # + 0.0 maps -0.0 to 0.0, so equal values have equal bits
    return (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)


def row_hashes(X):
    """One uint64 per row of a dense or sparse 2-D ``X`` (see the module docstring)."""
    salt = _salt(X.shape[1])
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        X.eliminate_zeros()
        z = _mix(_bits(X.data) ^ salt[X.indices])
        cumulative = np.concatenate([np.zeros(1, np.uint64), np.cumsum(z, dtype=np.uint64)])
        return cumulative[X.indptr[1:]] - cumulative[X.indptr[:-1]]
    out = np.empty(X.shape[0], dtype=np.uint64)
    step = max(1, _CHUNK // max(X.shape[1], 1))  # bounded temporaries on large inputs
    for start in range(0, X.shape[0], step):
        B = np.ascontiguousarray(_bits(X[start:start + step]))
        z = _mix(B ^ salt[None, :])
        z[B == 0] = 0
        out[start:start + step] = z.sum(axis=1, dtype=np.uint64)
    return out


def _equal_rows(A, B):
    """Elementwise over rows: whether ``A[t] == B[t]`` (same shapes, dense or sparse)."""
    if sp.issparse(A) or sp.issparse(B):
        differ = sp.csr_matrix(A, dtype=np.float64) != sp.csr_matrix(B, dtype=np.float64)
        return differ.getnnz(axis=1) == 0
    return np.all(A == B, axis=1)


class TrainingRows:
    """The rows given to ``fit``, recognisable in later inputs.

    Parameters
    ----------
    rows : ndarray or sparse matrix of shape (n_samples, n_columns)
        The fit's input, kept by reference (not copied) to confirm matches.
    """

    def __init__(self, rows):
        self.rows = rows
        hashes = row_hashes(rows)
        self.order = np.argsort(hashes, kind="stable")
        self.sorted_hashes = hashes[self.order]

    def match(self, X):
        """Index of the training row equal to each row of ``X``, ``-1`` where none is.

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_new, n_columns)

        Returns
        -------
        ndarray of shape (n_new,), int64
        """
        found = np.full(X.shape[0], -1, dtype=np.int64)
        if X.shape[0] == 0 or X.shape[1] != self.rows.shape[1]:
            return found
        h = row_hashes(X)
        pos = np.searchsorted(self.sorted_hashes, h)
        hit = np.flatnonzero(pos < len(self.order))
        hit = hit[self.sorted_hashes[pos[hit]] == h[hit]]
        if hit.size:
            candidates = self.order[pos[hit]]
            same = _equal_rows(X[hit], self.rows[candidates])
            found[hit[same]] = candidates[same]
        return found
