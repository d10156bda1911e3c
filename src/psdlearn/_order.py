"""Orders of rows: spatial orders, where rows close in space get close positions, and
the reordering of an array's rows in place.

The spatial orders are used where the order of rows decides the memory traffic, not the
result: the queries of the exact kd-tree search (:class:`psdlearn.graph.NeighborIndex`)
and the rows of a slab of the distributed problem (:mod:`psdlearn.npkl.distributed`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

#: Bits per axis of the Z-order cells (10 bits on 3 axes: 2^30 cells).
ZORDER_BITS = 10
#: Leading principal axes that :func:`spatial_order` orders along.
ZORDER_AXES = 3


def zorder(P):
    """Order of the rows of ``P`` (n, a) along the Z-order (Morton) curve.

    The bounding box of ``P`` is cut into ``2^ZORDER_BITS`` cells per axis (one cell size
    for all axes) and the rows are sorted by the interleaved bits of their cells, so rows
    close in ``P`` get close positions. ``a * ZORDER_BITS`` must be at most 64.

    Returns
    -------
    order : ndarray of shape (n,), int64
        ``P[order]`` is in Z-order; ties (rows in one cell) keep their input order.
    """
    lo = P.min(axis=0)
    span = float(np.max(P.max(axis=0) - lo))
    top = (1 << ZORDER_BITS) - 1
    cells = np.zeros(P.shape, dtype=np.uint64) if span == 0 else \
        np.minimum((P - lo) * (top / span), top).astype(np.uint64)
    code = np.zeros(len(P), dtype=np.uint64)
    a = P.shape[1]
    for bit in range(ZORDER_BITS):
        for j in range(a):
            code |= ((cells[:, j] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(a * bit + j)
    return np.argsort(code, kind="stable")


def leading_axes(scatter):
    """The eigenvectors of the symmetric ``scatter`` (d, d) (a covariance or scatter
    matrix) with the ``ZORDER_AXES`` largest eigenvalues, largest first, as columns."""
    return np.linalg.eigh(scatter)[1][:, ::-1][:, :ZORDER_AXES]


def spatial_order(X, block_entries=2**22):
    """Z-order of the rows ``X`` (n, d), dense or CSR, on their ``ZORDER_AXES`` leading
    principal axes (on the coordinates themselves when ``d <= ZORDER_AXES``).

    The mean, the scatter and the projection are taken a block of rows at a time (about
    ``block_entries`` entries), each block as a dense array, so the order needs
    ``O(n ZORDER_AXES + d^2)`` memory beside ``X``, and the same values give the same
    order in either container.
    """
    n, d = X.shape
    step = max(1, block_entries // max(d, 1))

    def blocks():
        for start in range(0, n, step):
            part = X[start:start + step]
            yield start, part.toarray() if sp.issparse(part) else np.asarray(part)

    if d <= ZORDER_AXES:
        return zorder(X.toarray() if sp.issparse(X) else X)
    mean = np.zeros(d)
    for _, part in blocks():
        mean += part.sum(axis=0)
    mean /= n
    scatter = np.zeros((d, d))
    for _, part in blocks():
        part = part - mean
        scatter += part.T @ part
    axes = leading_axes(scatter)
    P = np.empty((n, ZORDER_AXES))
    for start, part in blocks():
        P[start:start + len(part)] = (part - mean) @ axes
    return zorder(P)


@njit(cache=True)
def _permute_rows(A, perm):  # pragma: no cover - compiled
    n = A.shape[0]
    done = np.zeros(n, dtype=np.bool_)
    row = np.empty(A.shape[1], dtype=A.dtype)
    for start in range(n):
        if done[start]:
            continue
        # the cycle start -> perm[start] -> ...: each row takes the next one's values
        row[:] = A[start]
        i = start
        while True:
            done[i] = True
            j = perm[i]
            if j == start:
                A[i] = row
                break
            A[i] = A[j]
            i = j


def permute_rows(A, perm):
    """Reorder the rows of ``A`` in place: afterwards row ``i`` holds what row ``perm[i]``
    held, as ``A[perm]`` would return.

    It follows the cycles of ``perm`` with one row of buffer, so it needs ``n`` bytes
    beside ``A`` instead of a second array of its size (4 GB for an embedding of 10^7
    points at rank 50).

    Parameters
    ----------
    A : ndarray of shape (n, m)
        C-contiguous; overwritten.
    perm : ndarray of shape (n,), int
        A permutation of ``0 .. n - 1`` (not checked).

    Returns
    -------
    A : ndarray of shape (n, m)
        The same array.
    """
    if A.ndim != 2 or not A.flags.c_contiguous or not A.flags.writeable:
        raise ValueError("permute_rows needs a writeable C-contiguous 2-d array.")
    _permute_rows(A, np.asarray(perm, dtype=np.int64))
    return A
