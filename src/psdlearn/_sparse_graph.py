"""Compiled builders of the kNN similarity graph and of its normalized Laplacian.

They return the CSR arrays that scipy's sparse operations give for the same formulas
(``max(W, W^T)`` with zeros dropped; ``(1 + delta) I - A`` with zero results dropped),
entry for entry and bit for bit, in one pass each. A graph of a few hundred points is then
a few microseconds instead of the half millisecond of several sparse products, each of
which allocates and validates: at that size the graph was a sixth of a whole fit.

They serve graphs of up to :data:`COMPILED_MAX_ENTRIES` stored weights. Larger graphs keep
scipy's operations: there the cost is the search, not these passes, and the memory model
of :mod:`psdlearn._memory` (measured up to 10^7 points) describes scipy's temporaries, not
these int64 ones.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["COMPILED_MAX_ENTRIES", "laplacian_arrays", "symmetric_maximum"]

#: Largest graph (stored weights of the neighbour lists, or of ``S``) built here.
COMPILED_MAX_ENTRIES = 1 << 20


@njit(cache=True)
def _row_sort(cols, vals, lo, hi):
    """Insertion sort of ``cols[lo:hi]`` (with ``vals``) by column; rows are short."""
    for a in range(lo + 1, hi):
        c, v = cols[a], vals[a]
        b = a - 1
        while b >= lo and cols[b] > c:
            cols[b + 1] = cols[b]
            vals[b + 1] = vals[b]
            b -= 1
        cols[b + 1] = c
        vals[b + 1] = v


@njit(cache=True)
def _symmetric_maximum(indices, weights):
    n, k = indices.shape
    count = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        for t in range(k):
            j = indices[i, t]
            count[i + 1] += 1
            count[j + 1] += 1
    for i in range(n):
        count[i + 1] += count[i]
    fill = count[:-1].copy()
    cols = np.empty(count[n], dtype=np.int64)
    vals = np.empty(count[n])
    for i in range(n):
        for t in range(k):
            j = indices[i, t]
            w = weights[i, t]
            cols[fill[i]] = j
            vals[fill[i]] = w
            fill[i] += 1
            cols[fill[j]] = i
            vals[fill[j]] = w
            fill[j] += 1
    indptr = np.zeros(n + 1, dtype=np.int64)
    out_cols = np.empty(count[n], dtype=np.int64)
    out_vals = np.empty(count[n])
    nnz = 0
    for i in range(n):
        lo, hi = count[i], count[i + 1]
        _row_sort(cols, vals, lo, hi)
        a = lo
        while a < hi:
            # (i, j) appears at most twice: from the list of i and from that of j. A third
            # copy is a list holding j twice, which scipy would have summed
            b = a + 1
            while b < hi and cols[b] == cols[a]:
                b += 1
            if b - a > 2:
                return indptr, out_cols, out_vals, False
            v = vals[a] if b - a == 1 else max(vals[a], vals[a + 1])
            if v != 0.0:
                out_cols[nnz] = cols[a]
                out_vals[nnz] = v
                nnz += 1
            a = b
        indptr[i + 1] = nnz
    return indptr, out_cols[:nnz], out_vals[:nnz], True


def symmetric_maximum(indices, weights):
    """CSR arrays of ``max(W, W^T)`` for the graph ``W_{i, indices[i, t]} = weights[i, t]``.

    Parameters
    ----------
    indices : ndarray of shape (n, k), int64
        Each row's neighbours, distinct within a row, in ``[0, n)``.
    weights : ndarray of shape (n, k), float64
        Non-negative weights; zero results are not stored.

    Returns
    -------
    (indptr, indices, data) or None
        Sorted columns; ``None`` where a row repeats a neighbour, an index lies outside
        ``[0, n)`` or the lists hold more than :data:`COMPILED_MAX_ENTRIES` weights (the
        caller then takes the general path).
    """
    n = len(indices)
    if indices.size > COMPILED_MAX_ENTRIES:
        return None
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        return None  # not a graph on these points: the general path says so
    indptr, cols, vals, ok = _symmetric_maximum(np.ascontiguousarray(indices, np.int64),
                                                np.ascontiguousarray(weights, np.float64))
    return (indptr, cols, vals) if ok else None


@njit(cache=True)
def _laplacian_arrays(indptr, indices, data, inv_sqrt, diagonal):
    n = len(indptr) - 1
    # A_ij = S_ij (d_i^-1/2 d_j^-1/2); exactly symmetric when S is (the product of the two
    # scales commutes), checked on A as the general path does
    A = np.empty(len(data))
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            A[p] = data[p] * (inv_sqrt[i] * inv_sqrt[indices[p]])
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            lo, hi = indptr[j], indptr[j + 1]
            while lo < hi:  # i in the sorted row j
                mid = (lo + hi) // 2
                if indices[mid] < i:
                    lo = mid + 1
                else:
                    hi = mid
            if lo == indptr[j + 1] or indices[lo] != i or A[lo] != A[p]:
                return indptr, indices, A, False
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    out_cols = np.empty(len(data) + n, dtype=np.int64)
    out_vals = np.empty(len(data) + n)
    nnz = 0
    for i in range(n):
        placed = False
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if not placed and j >= i:
                placed = True
                v = diagonal - A[p] if j == i else diagonal
                if v != 0.0:
                    out_cols[nnz] = i
                    out_vals[nnz] = v
                    nnz += 1
                if j == i:
                    continue
            v = -A[p]
            if v != 0.0:
                out_cols[nnz] = j
                out_vals[nnz] = v
                nnz += 1
        if not placed and diagonal != 0.0:
            out_cols[nnz] = i
            out_vals[nnz] = diagonal
            nnz += 1
        out_ptr[i + 1] = nnz
    return out_ptr, out_cols[:nnz], out_vals[:nnz], True


def laplacian_arrays(S, inv_sqrt, diagonal):
    """CSR arrays of ``diagonal * I - D^-1/2 S D^-1/2`` for a CSR ``S`` in canonical form.

    Parameters
    ----------
    S : scipy.sparse.csr_matrix of shape (n, n)
        Sorted indices, no duplicates.
    inv_sqrt : ndarray of shape (n,)
        ``d_i^-1/2`` (0 for an isolated point).
    diagonal : float
        ``1 + delta``.

    Returns
    -------
    (indptr, indices, data) or None
        ``None`` where ``D^-1/2 S D^-1/2`` is not exactly symmetric (the caller then
        symmetrizes it) or ``S`` stores more than :data:`COMPILED_MAX_ENTRIES` entries.
    """
    if S.nnz > COMPILED_MAX_ENTRIES:
        return None
    indptr, cols, vals, ok = _laplacian_arrays(
        S.indptr.astype(np.int64), S.indices.astype(np.int64), S.data, inv_sqrt,
        float(diagonal))
    return (indptr, cols, vals) if ok else None
