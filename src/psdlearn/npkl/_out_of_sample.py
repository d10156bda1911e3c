r"""Per-point out-of-sample rows of NPKL, and the size of their neighbourhood.

**The default: Hu & Kwok (2015) section III-E for one new point.** The training embedding
``E`` stays fixed; a new point ``x`` is attached to the training graph alone (no edge to
another new point) by edges ``s_j = exp(-||x - x_j||^2 / (2 sigma^2))`` to its ``k'``
nearest training points ``j``, and its row minimizes ``tr([E; e]^T L' [E; e])``, ``L'`` the
normalized Laplacian ``(1 + delta) I - D'^{-1/2} S' D'^{-1/2}`` of that ``(n + 1)``-point
graph. The terms with ``e`` are
``sum_j s_j ||e / sqrt(d_x) - e_j / sqrt(D_jj + s_j)||^2 + delta ||e||^2``
(``d_x = sum_j s_j``; the training points' other terms do not involve ``e``), so the
minimizer is the update (13) of the paper for that one row, :func:`normalized_rows`:

.. math::

    e(x) = \frac{1}{1 + \delta} \sum_j \frac{s_j}{\sqrt{d_x (D_{jj} + s_j)}}\, e_j .

It is a closed form per point, so a batch gives the rows of its points one at a time. Its
scale follows ``sqrt(d_x)``, the density of training points at ``x``, as the fitted rows
follow ``sqrt(D_ii)`` (an unconstrained training row at the fixed point of the fit is
``e_i = sum_j S_ij e_j / ((1 + delta) sqrt(D_ii D_jj))``, the same formula over its own
graph edges). What the paper leaves open is the new point's edges: here its ``k'``
nearest training points (``k'`` below), not also the training points that would count
``x`` among their ``k`` nearest (the other half of a symmetrized kNN graph over
training and new points together, which would change with the training lists).

**The option: the Gaussian-weighted mean** (:func:`harmonic_rows`, ``NPKL(out_of_sample=
"weighted_mean")``), the minimizer of ``sum_j s_j ||e - e_j||^2`` (the random-walk
weights ``s_j / d_x``):

.. math::

    e(x) = \frac{\sum_j s_j e_j}{\sum_j s_j} .

It drops the density scale; the default follows the paper, the weighted mean stays
available (the method notes of the documentation compare both with the joint extension).

**Choosing ``k'`` without labels** (both rules use the same ``k'``). ``k'`` is chosen once
per fit (on the first use of ``n_neighbors_transform_``, so that a fit whose points are
never extended does not pay for the search; the sample is drawn in the fit) among
``k, 2k, 3k, 4k`` as the one whose weighted mean best predicts the training rows
themselves, left out one at a time:

.. math::

    k' = \arg\min_{k'} \frac{\sum_{i \in I} \|e_i - \hat e_{-i}^{(k')}\|^2}
                           {\sum_{i \in I} \|e_i - \bar e\|^2},

with ``\hat e_{-i}`` the weighted mean over the ``k'`` nearest *other* training points of
``x_i`` and ``I`` a random sample of at most ``LOO_SAMPLE`` training points. It reads ``X``
and the fitted embedding only (no label, no constraint). The criterion scores the
weighted mean rather than the normalized row because the two differ by the density scale
(``sqrt(d_x)`` grows with ``k'``, which would favour the ``k'`` whose ``d_x`` matches
``D_ii`` rather than the one whose neighbours predict the row); the direction of the
normalized row is a weighted mean of ``e_j / sqrt(D_jj + s_j)``, close to that of the
weighted mean where the degrees vary slowly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LOO_SAMPLE", "NEIGHBOR_FACTORS", "harmonic_rows", "loo_errors", "loo_sample",
           "normalized_rows", "select_n_neighbors"]

#: Candidate neighbourhoods of :func:`select_n_neighbors`, in multiples of ``k``.
NEIGHBOR_FACTORS = (1, 2, 3, 4)
#: Training points left out (at most) to score them.
LOO_SAMPLE = 2000


def harmonic_rows(dist, ind, embedding, sigma):
    """Rows ``e = sum_j s_j e_j / sum_j s_j`` over the given neighbours.

    Parameters
    ----------
    dist, ind : ndarray of shape (n_new, k')
        Distances to, and indices of, training points.
    embedding : ndarray of shape (n_samples, rank)
    sigma : float

    Returns
    -------
    ndarray of shape (n_new, rank)
        A row whose weights all underflow (far from every training point) is 0.
    """
    s = np.exp(-(dist**2) / (2.0 * sigma**2))
    total = s.sum(axis=1, keepdims=True)
    return _combine(np.divide(s, total, out=np.zeros_like(s), where=total > 0), ind, embedding)


def _combine(coef, ind, embedding):
    """``out_b = sum_k coef_bk E[ind_bk]``, in blocks that bound the ``(b, k', r)`` gather."""
    out = np.empty((len(ind), embedding.shape[1]))
    step = max(1, 2**22 // max(ind.shape[1] * embedding.shape[1], 1))
    for start in range(0, len(ind), step):
        sl = slice(start, start + step)
        out[sl] = np.einsum("bk,bkr->br", coef[sl], embedding[ind[sl]])
    return out


def normalized_rows(dist, ind, embedding, degrees, sigma, delta):
    """Rows ``e = sum_j s_j e_j / ((1 + delta) sqrt(d_x (D_jj + s_j)))`` (module docstring).

    Parameters
    ----------
    dist, ind : ndarray of shape (n_new, k')
        Distances to, and indices of, training points.
    embedding : ndarray of shape (n_samples, rank)
    degrees : ndarray of shape (n_samples,)
        ``D_jj``, the degrees of the training graph (``NPKL.degrees_``).
    sigma, delta : float
        The training graph's Gaussian width and ridge.

    Returns
    -------
    ndarray of shape (n_new, rank)
        A row whose weights all underflow (far from every training point) is 0.
    """
    s = np.exp(-(dist**2) / (2.0 * sigma**2))
    d_x = s.sum(axis=1, keepdims=True)
    denom = np.sqrt(d_x * (degrees[ind] + s))
    return _combine(np.divide(s, (1.0 + delta) * denom, out=np.zeros_like(s), where=denom > 0),
                    ind, embedding)


def loo_errors(dist, ind, rows, embedding, sigma, sizes):
    """Relative leave-one-out error of :func:`harmonic_rows` for each neighbourhood size.

    Parameters
    ----------
    dist, ind : ndarray of shape (n_left_out, >= max(sizes))
        Nearest *other* training points of each left-out point, nearest first.
    rows : ndarray of shape (n_left_out,)
        Indices of the left-out points.
    embedding : ndarray of shape (n_samples, rank)
    sigma : float
    sizes : sequence of int

    Returns
    -------
    ndarray of shape (len(sizes),)
    """
    E = embedding[rows]
    spread = float(np.sum((E - embedding.mean(axis=0)) ** 2))
    spread = spread if spread > 0 else 1.0  # a constant embedding: every size is exact
    return np.array([np.sum((harmonic_rows(dist[:, :s], ind[:, :s], embedding, sigma) - E)
                            ** 2) / spread for s in sizes])


def loo_sample(n, random_state=0, order=None):
    """The training points :func:`select_n_neighbors` leaves out: at most
    :data:`LOO_SAMPLE` of the ``n``, sorted.

    Parameters
    ----------
    n : int
    random_state : int, RandomState instance or None
    order : ndarray of shape (n,), optional
        The points in an order set by their values: the sample is drawn among positions
        in it, so that the same points are drawn whatever the order of the rows.

    Returns
    -------
    ndarray of shape (min(n, LOO_SAMPLE),)
    """
    rng = np.random.default_rng(
        random_state if not isinstance(random_state, np.random.RandomState)
        else random_state.randint(2**31))
    rows = rng.choice(n, size=min(n, LOO_SAMPLE), replace=False)
    return np.sort(rows if order is None else order[rows])


def select_n_neighbors(index, X, embedding, sigma, n_neighbors, random_state=0,
                       order=None, rows=None):
    """``k'`` of :meth:`psdlearn.NPKL.transform` (see the module docstring).

    Parameters
    ----------
    index : psdlearn.graph.NeighborIndex
        The search index over the training points ``X``.
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    embedding : ndarray of shape (n_samples, rank)
    sigma : float
    n_neighbors : int
        ``k`` of the training graph.
    random_state : int, RandomState instance or None
    order : ndarray of shape (n_samples,), optional
        See :func:`loo_sample`.
    rows : ndarray of int, optional
        The points left out, drawn beforehand by :func:`loo_sample` (then
        ``random_state`` and ``order`` are not read).

    Returns
    -------
    int
    """
    n = embedding.shape[0]
    sizes = [f * n_neighbors for f in NEIGHBOR_FACTORS if f * n_neighbors < n]
    if len(sizes) <= 1:
        return n_neighbors
    if rows is None:
        rows = loo_sample(n, random_state, order)
    dist, ind = index.kneighbors(X[rows], n_neighbors=sizes[-1] + 1)
    # drop each point itself (not always the first column when points coincide); where
    # the search missed it, drop the farthest
    is_self = ind == rows[:, None]
    drop = np.where(is_self.any(axis=1), is_self.argmax(axis=1), ind.shape[1] - 1)
    keep = np.ones(ind.shape, dtype=bool)
    keep[np.arange(len(rows)), drop] = False
    dist = dist[keep].reshape(len(rows), -1)
    ind = ind[keep].reshape(len(rows), -1)
    return sizes[int(np.argmin(loo_errors(dist, ind, rows, embedding, sigma, sizes)))]
