"""Locally linear reconstruction weights in a kernel feature space (Yeung et al. 2007, 3.3).

For a point ``x`` and its ``K`` nearest landmarks ``N`` in feature space, the weights
minimize the reconstruction error (9)-(10)

.. math::

    E(w) = \\Big\\| \\phi(x) - \\sum_{j \\in N} w_j \\phi(x_j) \\Big\\|^2 = w^T G w,
    \\qquad \\text{s.t. } 1^T w = 1,

with the local Gram matrix (11) ``G_jk = k(x, x) + k(x_j, x_k) - k(x, x_j) - k(x, x_k)``.
The Lagrangian (12) gives ``w = G^{-1} 1 / (1^T G^{-1} 1)``, computed by solving
``G w_hat = 1`` and normalizing. ``G`` is singular when ``phi(x)`` lies in the affine span
of its neighbours (or ``K`` exceeds the feature dimension), so ``reg * tr(G) / K`` is added
to its diagonal (footnote 4; the LLE convention). A point that coincides with a landmark in
feature space gets that landmark's indicator (eq. 8).

:func:`local_weights` runs one numba loop per point (selection of the ``K`` nearest by
insertion, ``G``, Gaussian elimination with partial pivoting), parallel over points, each
thread owning its rows; :func:`local_weights_reference` is the batched NumPy version it is
tested against (4-7x slower: fancy-indexing temporaries and per-system LAPACK calls).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["COINCIDE_RTOL", "local_weights", "local_weights_reference"]

#: ``x`` coincides with a landmark when their squared feature distance is at most
#: ``COINCIDE_RTOL * (k(x, x) + k(x_j, x_j))`` (round-off of the kernel evaluation).
COINCIDE_RTOL = 1e-9


def local_weights_reference(kxx, Kxl, Kll, n_neighbors, reg):
    """Nearest landmarks in feature space and locally linear weights of a block of points.

    Parameters
    ----------
    kxx : ndarray of shape (b,)
        ``k(x, x)`` of the points.
    Kxl : ndarray of shape (b, m)
        ``k(x, x_j)`` against the landmarks.
    Kll : ndarray of shape (m, m)
        Kernel among the landmarks, the same kernel as ``kxx`` and ``Kxl``.
    n_neighbors : int
        ``K``; at most ``m`` are used.
    reg : float
        Relative ridge of ``G`` (> 0).

    Returns
    -------
    indices : ndarray of shape (b, K), int64
        Landmark positions (columns of ``Kxl``), nearest first.
    weights : ndarray of shape (b, K)
        Rows sum to one.
    errors : ndarray of shape (b,)
        Reconstruction errors ``E(w) = w^T G w`` (9)-(10), ``G`` without the ridge.
    """
    b, m = Kxl.shape
    k = min(int(n_neighbors), m)
    diag_l = np.diag(Kll)
    d2 = kxx[:, None] + diag_l[None, :] - 2.0 * Kxl
    if k < m:
        idx = np.argpartition(d2, k - 1, axis=1)[:, :k]
    else:
        idx = np.broadcast_to(np.arange(m), (b, m)).copy()
    rows = np.arange(b)[:, None]
    order = np.argsort(d2[rows, idx], axis=1, kind="stable")
    idx = np.ascontiguousarray(idx[rows, order], dtype=np.int64)
    kin = Kxl[rows, idx]
    G = (kxx[:, None, None] + Kll[idx[:, :, None], idx[:, None, :]]
         - kin[:, :, None] - kin[:, None, :])
    G = 0.5 * (G + G.transpose(0, 2, 1))
    trace = np.einsum("bii->b", G)
    scale = np.maximum(kxx[:, None] + diag_l[idx], np.finfo(float).tiny)
    coincide = d2[rows[:, 0], idx[:, 0]] <= COINCIDE_RTOL * scale[:, 0]
    ridge = reg * trace / k
    # a zero G (every neighbour coincides with x) is handled by the indicator below
    ridge = np.where(ridge > 0, ridge, 1.0)
    G[:, np.arange(k), np.arange(k)] += ridge[:, None]
    w_hat = np.linalg.solve(G, np.ones((b, k, 1)))[:, :, 0]
    weights = w_hat / w_hat.sum(axis=1, keepdims=True)
    if coincide.any():
        weights[coincide] = 0.0
        weights[coincide, 0] = 1.0
    G[:, np.arange(k), np.arange(k)] -= ridge[:, None]
    errors = np.maximum(np.einsum("bi,bij,bj->b", weights, G, weights), 0.0)
    return idx, weights, errors


@njit(cache=True, parallel=True)
def _local_weights_kernel(kxx, Kxl, Kll, reg, rtol, idx, weights, errors):
    """Numba kernel of :func:`local_weights`.

    IN: kxx (b,), Kxl (b, m), Kll (m, m) float64; reg, rtol float.
    OUT: idx (b, K) int64, weights (b, K) float64 (K = idx.shape[1] <= m), errors (b,).
    """
    b, m = Kxl.shape
    k = idx.shape[1]
    diag = np.empty(m)  # contiguous copy: the strided diagonal would miss cache
    for j in range(m):
        diag[j] = Kll[j, j]
    for i in prange(b):
        dist = np.empty(k)
        near = np.empty(k, dtype=np.int64)
        filled = 0
        for j in range(m):
            d = kxx[i] + diag[j] - 2.0 * Kxl[i, j]
            if filled == k and d >= dist[k - 1]:
                continue
            pos = filled if filled < k else k - 1
            while pos > 0 and dist[pos - 1] > d:
                if pos < k:
                    dist[pos] = dist[pos - 1]
                    near[pos] = near[pos - 1]
                pos -= 1
            dist[pos] = d
            near[pos] = j
            if filled < k:
                filled += 1
        for a in range(k):
            idx[i, a] = near[a]
            weights[i, a] = 0.0
        if dist[0] <= rtol * max(kxx[i] + diag[near[0]], 1e-300):
            weights[i, 0] = 1.0
            errors[i] = max(dist[0], 0.0)
            continue
        # augmented system [G + ridge I | 1]
        G = np.empty((k, k + 1))
        trace = 0.0
        for a in range(k):
            for c in range(a, k):
                g = kxx[i] + Kll[near[a], near[c]] - Kxl[i, near[a]] - Kxl[i, near[c]]
                G[a, c] = g
                G[c, a] = g
            trace += G[a, a]
            G[a, k] = 1.0
        ridge = reg * trace / k
        if ridge <= 0.0:
            ridge = 1.0
        for a in range(k):
            G[a, a] += ridge
        for col in range(k):
            piv = col
            for r in range(col + 1, k):
                if abs(G[r, col]) > abs(G[piv, col]):
                    piv = r
            if piv != col:
                for c in range(col, k + 1):
                    tmp = G[col, c]
                    G[col, c] = G[piv, c]
                    G[piv, c] = tmp
            for r in range(col + 1, k):
                f = G[r, col] / G[col, col]
                for c in range(col, k + 1):
                    G[r, c] -= f * G[col, c]
        total = 0.0
        for a in range(k - 1, -1, -1):
            acc = G[a, k]
            for c in range(a + 1, k):
                acc -= G[a, c] * weights[i, c]
            weights[i, a] = acc / G[a, a]
            total += weights[i, a]
        for a in range(k):
            weights[i, a] /= total
        # E(w) = w^T G w with G of (11), recomputed: the elimination overwrote it
        err = 0.0
        for a in range(k):
            for c in range(k):
                err += weights[i, a] * weights[i, c] * (
                    kxx[i] + Kll[near[a], near[c]] - Kxl[i, near[a]] - Kxl[i, near[c]])
        errors[i] = max(err, 0.0)


def local_weights(kxx, Kxl, Kll, n_neighbors, reg):
    """Nearest landmarks in feature space and locally linear weights of a block of points.

    Same contract as :func:`local_weights_reference`, computed by a compiled loop.

    Parameters
    ----------
    kxx : ndarray of shape (b,)
    Kxl : ndarray of shape (b, m)
    Kll : ndarray of shape (m, m)
    n_neighbors : int
    reg : float

    Returns
    -------
    indices : ndarray of shape (b, K), int64
    weights : ndarray of shape (b, K)
    errors : ndarray of shape (b,)
    """
    b, m = Kxl.shape
    k = min(int(n_neighbors), m)
    idx = np.empty((b, k), dtype=np.int64)
    weights = np.empty((b, k))
    errors = np.empty(b)
    _local_weights_kernel(np.ascontiguousarray(kxx, dtype=np.float64),
                          np.ascontiguousarray(Kxl, dtype=np.float64),
                          np.ascontiguousarray(Kll, dtype=np.float64), float(reg),
                          COINCIDE_RTOL, idx, weights, errors)
    return idx, weights, errors
