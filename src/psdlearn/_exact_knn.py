"""Exact k-nearest-neighbour lists that depend on the values of the points only.

The exact backends of :class:`psdlearn.graph.NeighborIndex` find candidates fast (BLAS
products for brute force, scikit-learn's kd-tree) and then rank them exactly:

1. **Canonical distances.** The squared distance of two rows is recomputed as the sum of
   ``(x_c - y_c)^2`` over the columns ``c`` in increasing order, one addition at a time.
   Adding the ``0.0`` of a column where both rows are zero leaves the sum unchanged, so
   the same values give bit-identical distances whether the rows are dense or sparse,
   C- or F-ordered, float32 or float64 holding the same numbers.
2. **Ties by index.** The ``k`` neighbours are the first ``k`` in (distance, index) order.
3. **Complete candidates.** A fast distance ``a`` of a pair differs from its canonical
   value ``e`` by at most ``tau`` (below). With ``a_k`` the fast ``k``-th smallest, the
   canonical ``k``-th smallest is at most ``a_k + tau`` and every point at most that far
   has ``a <= a_k + 2 tau``: those are the candidates, a superset of the answer.

For the brute-force products ``a = |q|^2 + |x|^2 - 2 q.x``, the rounding error of each
dot product of ``d`` terms is at most ``d u |q| |x|`` (``u`` the unit roundoff; Higham
2002, eq. 3.5, any summation order), so ``tau = BRUTE_ERROR_FACTOR (d + 2) u
(|q|^2 + max |x|^2)`` covers the sum with a margin. The kd-tree sums the same squares in
another association: ``|a - e| <= (d + 2) u e``.

Reference: Higham, N. J. (2002). Accuracy and Stability of Numerical Algorithms, 2nd ed.
SIAM, section 3.1.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit, prange
from sklearn.utils.extmath import row_norms, safe_sparse_dot

from psdlearn._linalg import PARALLEL_MIN_WORK

#: Safety factor on the rounding bound ``(d + 2) u (|q|^2 + |x|^2)`` of a brute-force
#: squared distance: a wider margin only adds candidates, never changes the answer.
BRUTE_ERROR_FACTOR = 4.0
#: The same for the kd-tree's squared distances, relative to their value.
TREE_ERROR_FACTOR = 4.0
_U = np.finfo(np.float64).eps / 2
#: Dense data in at most this many features is searched by canonical distances to every
#: point directly: a BLAS product gains little at this width.
DIRECT_MAX_FEATURES = 16
#: Entries of the fast distance block of one chunk of queries (64 MiB of float64).
_BLOCK_ENTRIES = 1 << 23


def _call(kernel, *args):
    """``kernel(*args)``; a Ctrl-C that arrives while a parallel numba kernel runs comes
    back from numba as a ``SystemError`` chained to the ``KeyboardInterrupt``: raise the
    interrupt itself, so that callers see what the user did."""
    try:
        return kernel(*args)
    except SystemError as exc:
        cause = exc
        while cause is not None and not isinstance(cause, KeyboardInterrupt):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            raise
        raise KeyboardInterrupt from exc


@njit(cache=True, parallel=True)
def _sqdist_dense(Q, X, rows, cols):
    """``sum_c (Q[rows[t], c] - X[cols[t], c])^2``, columns in order, one add at a time."""
    out = np.empty(len(rows))
    d = Q.shape[1]
    for t in prange(len(rows)):
        q, x = rows[t], cols[t]
        s = 0.0
        for c in range(d):
            diff = Q[q, c] - X[x, c]
            s += diff * diff
        out[t] = s
    return out


@njit(cache=True, parallel=True)
def _sqdist_csr(q_data, q_ind, q_ptr, x_data, x_ind, x_ptr, rows, cols):
    """:func:`_sqdist_dense` over CSR rows (sorted, no duplicates): the stored columns
    merged in increasing order; a column missing from one row is its 0."""
    out = np.empty(len(rows))
    for t in prange(len(rows)):
        a, a_end = q_ptr[rows[t]], q_ptr[rows[t] + 1]
        b, b_end = x_ptr[cols[t]], x_ptr[cols[t] + 1]
        s = 0.0
        while a < a_end or b < b_end:
            if b >= b_end or (a < a_end and q_ind[a] < x_ind[b]):
                diff = q_data[a]
                a += 1
            elif a >= a_end or x_ind[b] < q_ind[a]:
                diff = -x_data[b]
                b += 1
            else:
                diff = q_data[a] - x_data[b]
                a += 1
                b += 1
            s += diff * diff
        out[t] = s
    return out


def canonical(X):
    """``X`` (float64, from validation) in the layout the exact kernels read: dense rows
    contiguous, CSR with sorted column indices and no duplicates. A copy only when needed;
    the caller's matrix is never modified."""
    if sp.issparse(X):
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        return X
    return np.ascontiguousarray(X)


def squared_distances(Q, X, rows, cols):
    """Canonical squared distances of the pairs ``(Q[rows[t]], X[cols[t]])``.

    ``Q`` and ``X`` as returned by :func:`canonical`, both dense or both CSR.
    """
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    if sp.issparse(X):
        return _call(_sqdist_csr, Q.data, Q.indices, Q.indptr, X.data, X.indices,
                     X.indptr, rows, cols)
    return _call(_sqdist_dense, Q, X, rows, cols)


@njit(cache=True, inline="always")
def _insert(best_d, best_i, dv, cv):
    """Insert candidate ``cv`` at squared distance ``dv`` into the buffers ``best_d``,
    ``best_i`` kept sorted in (distance, index) order; the last entry drops out."""
    k = len(best_d)
    if dv < best_d[k - 1] or (dv == best_d[k - 1] and cv < best_i[k - 1]):
        pos = k - 1
        while pos > 0 and (best_d[pos - 1] > dv
                           or (best_d[pos - 1] == dv and best_i[pos - 1] > cv)):
            best_d[pos] = best_d[pos - 1]
            best_i[pos] = best_i[pos - 1]
            pos -= 1
        best_d[pos] = dv
        best_i[pos] = cv


@njit(cache=True, parallel=True)
def _first_k(ptr, cols, d2, k):
    """For each row (candidates ``ptr[i]:ptr[i + 1]``), the ``k`` first candidates in
    (squared distance, index) order, by insertion into a sorted buffer."""
    n_q = len(ptr) - 1
    out_d = np.empty((n_q, k))
    out_i = np.empty((n_q, k), dtype=np.int64)
    for i in prange(n_q):
        best_d = np.full(k, np.inf)
        best_i = np.full(k, np.iinfo(np.int64).max)
        for t in range(ptr[i], ptr[i + 1]):
            _insert(best_d, best_i, d2[t], cols[t])
        out_d[i] = np.sqrt(best_d)
        out_i[i] = best_i
    return out_d, out_i


def rank_candidates(Q, X, rows, cols, n_queries, k):
    """The ``k`` first candidates of each query in (canonical distance, index) order.

    ``rows``, ``cols``: candidate pairs, at least ``k`` distinct per query. Returns
    ``(distances, indices)`` of shape ``(n_queries, k)``: Euclidean distances (square roots
    of the canonical squared distances) and int64 indices.
    """
    if len(rows) > 1 and np.any(rows[1:] < rows[:-1]):
        order = np.argsort(rows, kind="stable")
        rows, cols = rows[order], cols[order]
    d2 = squared_distances(Q, X, rows, cols)
    ptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_queries), out=ptr[1:])
    return _call(_first_k, ptr, cols, d2, k)


@njit(cache=True, parallel=True)
def _brute_candidates(G, q_norms, x_norms, k, tau):
    """Candidates of each row of a block: the ``j`` with ``a_ij <= a_(k) + 2 tau_i``,
    ``a_ij = |q_i|^2 + |x_j|^2 - 2 G_ij`` the fast squared distances and ``a_(k)`` the
    ``k``-th smallest of row ``i``. Returns ``(rows, cols)``."""
    b, n = G.shape
    thresholds = np.empty(b)
    counts = np.zeros(b + 1, dtype=np.int64)
    for i in prange(b):
        best = np.full(k, np.inf)   # the k smallest so far; worst at best[top]
        top = 0
        for j in range(n):
            a = q_norms[i] + x_norms[j] - 2.0 * G[i, j]
            if a < best[top]:
                best[top] = a
                for t in range(k):
                    if best[t] > best[top]:
                        top = t
        thresholds[i] = best[top] + 2.0 * tau[i]
        c = 0
        for j in range(n):
            if q_norms[i] + x_norms[j] - 2.0 * G[i, j] <= thresholds[i]:
                c += 1
        counts[i + 1] = c
    offsets = np.cumsum(counts)
    rows = np.empty(offsets[-1], dtype=np.int64)
    cols = np.empty(offsets[-1], dtype=np.int64)
    for i in prange(b):
        at = offsets[i]
        for j in range(n):
            if q_norms[i] + x_norms[j] - 2.0 * G[i, j] <= thresholds[i]:
                rows[at] = i
                cols[at] = j
                at += 1
    return rows, cols


@njit(cache=True, parallel=True)
def _brute_direct(Q, X, k):
    """Exact ``k`` nearest rows of the dense ``X`` for each dense row of ``Q``: canonical
    squared distances to every row, the ``k`` first in (distance, index) order kept by
    insertion."""
    n_q, n, d = Q.shape[0], X.shape[0], X.shape[1]
    out_d = np.empty((n_q, k))
    out_i = np.empty((n_q, k), dtype=np.int64)
    for i in prange(n_q):
        best_d = np.full(k, np.inf)
        best_i = np.full(k, np.iinfo(np.int64).max)
        for j in range(n):
            s = 0.0
            for c in range(d):
                diff = Q[i, c] - X[j, c]
                s += diff * diff
            _insert(best_d, best_i, s, j)
        out_d[i] = np.sqrt(best_d)
        out_i[i] = best_i
    return out_d, out_i


def brute_force(Q, X, x_norms, k):
    """Exact ``k`` nearest rows of ``X`` for each row of ``Q``, ties by index (both
    :func:`canonical`, both dense or both CSR; ``x_norms``: the squared row norms of
    ``X``). One BLAS product per block of queries gives the fast distances and the
    candidates (module docstring), which are then ranked exactly; dense data in at most
    ``DIRECT_MAX_FEATURES`` features skips the product."""
    n_q, n, d = Q.shape[0], X.shape[0], X.shape[1]
    if n_q * n * d < PARALLEL_MIN_WORK:
        # a small search: waking numba's threads costs more than they save (far more on
        # a busy machine, where they spin)
        before = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            return _brute_force(Q, X, x_norms, k)
        finally:
            numba.set_num_threads(before)
    return _brute_force(Q, X, x_norms, k)


def _brute_force(Q, X, x_norms, k):
    n_q, n, d = Q.shape[0], X.shape[0], X.shape[1]
    if not sp.issparse(X) and d <= DIRECT_MAX_FEATURES:
        return _call(_brute_direct, Q, X, k)
    tau_scale = BRUTE_ERROR_FACTOR * (d + 2) * _U
    x_max = float(x_norms.max())
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    dist = np.empty((n_q, k))
    ind = np.empty((n_q, k), dtype=np.int64)
    for start in range(0, n_q, step):
        block = Q[start:start + step]
        q_norms = row_norms(block, squared=True)
        G = np.ascontiguousarray(safe_sparse_dot(block, X.T, dense_output=True))
        rows, cols = _call(_brute_candidates, G, q_norms, x_norms, k,
                           tau_scale * (q_norms + x_max))
        stop = start + block.shape[0]
        dist[start:stop], ind[start:stop] = rank_candidates(block, X, rows, cols,
                                                            block.shape[0], k)
    return dist, ind


def tree_search(nn, Q, X, k):
    """Exact ``k`` nearest rows of the dense ``X`` for each dense row of ``Q``, ties by
    index, with scikit-learn's kd-tree ``NearestNeighbors`` ``nn`` fitted on ``X``.

    ``nn`` returns ``k + 1`` neighbours; a query whose ``(k + 1)``-th lies beyond the
    candidate radius has all its candidates among them, the others (ties or near-ties
    across the ``k``-th place) ask the tree for every point within the radius, grouped
    by radius (integer data has few).
    """
    n_q, n, d = Q.shape[0], X.shape[0], X.shape[1]
    k_nn = min(k + 1, n)
    dist, ind = nn.kneighbors(Q, n_neighbors=k_nn)
    # tree distances: square roots of sums within a relative (d + 2) u of the canonical
    # ones; the last factor covers the square roots' own rounding
    radius = dist[:, k - 1] * (1.0 + TREE_ERROR_FACTOR * (d + 2) * _U) * (1.0 + 8.0 * _U)
    inside = dist <= radius[:, None]
    crossing = inside[:, -1] if k_nn > k else np.zeros(n_q, dtype=bool)
    rows, cols = np.nonzero(inside & ~crossing[:, None])
    parts_r, parts_c = [rows], [ind[rows, cols]]
    which = np.flatnonzero(crossing)
    for r in np.unique(radius[which]):
        group = which[radius[which] == r]
        found = nn.radius_neighbors(Q[group], radius=r, return_distance=False)
        parts_r.append(np.repeat(group, [len(f) for f in found]))
        parts_c.extend(found)
    rows = np.concatenate(parts_r).astype(np.int64)
    cols = np.concatenate(parts_c).astype(np.int64)
    return rank_candidates(Q, X, rows, cols, n_q, k)


#: Seed of the fixed directions of :func:`value_order` (any fixed value: the order only
#: has to be the same from one call to the next).
_ORDER_SEED = 20_151_009
#: Number of fixed directions: rows are sorted by their projection on the first, ties
#: (equal rows, or a coincidence of the first sums) by the next.
_ORDER_KEYS = 2


@njit(cache=True)
def _project_dense(X, W):
    out = np.empty((X.shape[0], W.shape[1]))
    for i in range(X.shape[0]):
        for j in range(W.shape[1]):
            s = 0.0
            for c in range(X.shape[1]):
                s += X[i, c] * W[c, j]
            out[i, j] = s
    return out


@njit(cache=True)
def _project_csr(data, ind, ptr, W):
    out = np.empty((len(ptr) - 1, W.shape[1]))
    for i in range(len(ptr) - 1):
        for j in range(W.shape[1]):
            s = 0.0
            for t in range(ptr[i], ptr[i + 1]):
                s += data[t] * W[ind[t], j]
            out[i, j] = s
    return out


#: Up to this many entries of a dense ``X``, :func:`value_order` computes its keys in NumPy
#: while the numba kernel is not loaded in the process: about 11 ns an entry against 2 ns,
#: but the kernel's first call loads numba's compiler (about 0.25 CPU s), more than a
#: small fit of an estimator that calls no other numba code costs. The two meet near 3e7.
NUMPY_ORDER_MAX_ENTRIES = 1 << 24
#: Rows per block of the NumPy keys (the products of a block are held at once).
_ORDER_BLOCK_ROWS = 4096


def _numpy_keys(X, W):
    """The keys of :func:`_project_dense` in NumPy: the products ``x_ic w_cj`` rounded one
    by one and added left to right (``np.add.accumulate`` is sequential), the additions of
    the kernel's loop in its order, hence the same keys to the bit."""
    keys = np.zeros((X.shape[0], W.shape[1]))
    if X.shape[1] == 0:
        return keys
    for start in range(0, X.shape[0], _ORDER_BLOCK_ROWS):
        block = X[start:start + _ORDER_BLOCK_ROWS]
        for j in range(W.shape[1]):
            # the loop's s = 0.0 + p_0 is p_0 (or +0.0 for p_0 = -0.0: an equal key)
            keys[start:start + _ORDER_BLOCK_ROWS, j] = np.add.accumulate(
                block * W[:, j], axis=1)[:, -1]
    return keys


def value_order(X):
    """An order of the rows of ``X`` set by their values, not by their positions.

    Rows are sorted by their projections on fixed pseudo-random directions, summed over
    the columns in increasing order one addition at a time (a stored or a missing zero
    adds ``0.0``): the same rows in any order, in any container, get the same keys, so
    ``X[value_order(X)]`` is the same matrix for every row permutation of ``X``, except
    among equal rows, which keep their input order. A small dense ``X`` is projected in
    NumPy until the numba kernel is loaded (:data:`NUMPY_ORDER_MAX_ENTRIES`; the same keys).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features), float64

    Returns
    -------
    order : ndarray of shape (n_samples,), int64
    """
    W = np.random.default_rng(_ORDER_SEED).standard_normal((X.shape[1], _ORDER_KEYS))
    X = canonical(sp.csr_matrix(X) if sp.issparse(X) else X)
    if sp.issparse(X):
        keys = _call(_project_csr, X.data, X.indices, X.indptr, W)
    elif X.size <= NUMPY_ORDER_MAX_ENTRIES and not _project_dense.signatures:
        keys = _numpy_keys(X, W)
    else:
        keys = _call(_project_dense, X, W)
    return np.lexsort(keys.T[::-1]).astype(np.int64)
