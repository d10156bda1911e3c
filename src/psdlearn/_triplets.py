"""Relative triplet constraints ``d(x_i, x_j) < d(x_i, x_k)``: the :class:`Triplets`
table and the triplets drawn from labels or from pairs (exported by
:mod:`psdlearn.constraints`)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from psdlearn._index_tables import _index_rows, _SampleIndexRows, labelled_mask
from psdlearn.graph import NeighborIndex

__all__ = ["Triplets", "triplets_from_constraints", "triplets_from_labels"]


def triplets_from_labels(X, y, n_triplets=None, random_state=None, n_neighbors=1):
    """Triplets of Shen et al. 2008 section 6 from labels, or more per point.

    For each labelled point ``i``: ``j`` = its nearest neighbour in the same class and
    ``k`` = its nearest neighbour in a different class (Euclidean), giving ``(i, j, k)``
    with the intended relation ``d(i, j) < d(i, k)``; with ``n_neighbors = q > 1``, one
    triplet ``(i, j_a, k)`` for each of the ``q`` nearest same-class neighbours ``j_a``
    (the target neighbours of large-margin nearest neighbours), ``k`` the same. Then
    ``n_triplets`` of them are drawn at random without replacement.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Labels, ``-1`` = unlabelled (never used).
    n_triplets : int, optional
        Subsample size; all triplets when None.
    random_state : int, RandomState instance or None
    n_neighbors : int, default=1
        Same-class neighbours per point (fewer in a class of at most ``n_neighbors``
        labelled points); 1 is the paper's rule.

    Returns
    -------
    triplets : ndarray of shape (t, 3), int64
        Ordered by ``i``, then by the rank of ``j``.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
        raise ValueError(f"X (n, d) and y (n,) disagree: {X.shape} vs {y.shape}.")
    if int(n_neighbors) < 1:
        raise ValueError(f"n_neighbors must be at least 1, got {n_neighbors}.")
    rng = check_random_state(random_state)
    labelled = np.flatnonzero(labelled_mask(y))
    classes = np.unique(y[labelled])
    if len(classes) < 2:
        raise ValueError("triplets need labelled points from at least 2 classes.")
    q = int(n_neighbors)
    nearest_same = np.full((len(y), q), -1, dtype=np.int64)
    nearest_diff = np.full(len(y), -1, dtype=np.int64)
    for c in classes:
        inside = labelled[y[labelled] == c]
        outside = labelled[y[labelled] != c]
        k = min(q, len(inside) - 1)
        if k >= 1:
            _, idx = NeighborIndex("exact").fit(X[inside]).kneighbors(n_neighbors=k)
            nearest_same[inside, :k] = inside[idx]
        _, idx = NeighborIndex("exact").fit(X[outside]).kneighbors(X[inside], n_neighbors=1)
        nearest_diff[inside] = outside[idx[:, 0]]
    i = np.repeat(labelled, q)
    j = nearest_same[labelled].ravel()
    ok = j >= 0
    triplets = np.column_stack([i[ok], j[ok], nearest_diff[i[ok]]]).astype(np.int64)
    return _subsample(triplets, n_triplets, rng)


def triplets_from_constraints(constraints, n_triplets=None, random_state=None):
    """Triplets from pairs: must-link ``(i, j)`` and cannot-link ``(i, k)`` give ``(i, j, k)``.

    Parameters
    ----------
    constraints : PairwiseConstraints
    n_triplets : int, optional
        Random subsample size; all triplets when None.
    random_state : int, RandomState instance or None

    Returns
    -------
    triplets : ndarray of shape (t, 3), int64
    """
    rng = check_random_state(random_state)
    n = constraints.n_samples

    def adjacency(p):
        rows = np.concatenate([p[:, 0], p[:, 1]])
        cols = np.concatenate([p[:, 1], p[:, 0]])
        return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))

    must, cannot = adjacency(constraints.must_link), adjacency(constraints.cannot_link)
    out = []
    for i in np.intersect1d(np.flatnonzero(must.getnnz(axis=1)),
                            np.flatnonzero(cannot.getnnz(axis=1))):
        js = must.indices[must.indptr[i]:must.indptr[i + 1]]
        ks = cannot.indices[cannot.indptr[i]:cannot.indptr[i + 1]]
        jj, kk = np.meshgrid(js, ks, indexing="ij")
        out.append(np.column_stack([np.full(jj.size, i), jj.ravel(), kk.ravel()]))
    triplets = np.concatenate(out).astype(np.int64) if out else np.empty((0, 3), np.int64)
    return _subsample(triplets, n_triplets, rng)


def _subsample(triplets, n_triplets, rng):
    if n_triplets is None or n_triplets >= len(triplets):
        return triplets
    if n_triplets < 0:
        raise ValueError(f"n_triplets must be non-negative, got {n_triplets}.")
    pick = np.sort(rng.choice(len(triplets), size=int(n_triplets), replace=False))
    return triplets[pick]


class Triplets(_SampleIndexRows):
    """Relative constraints ``d(x_i, x_j) < d(x_i, x_k)`` over ``n_samples`` points.

    The side information of :class:`psdlearn.PSDBoost`, passed as ``y`` of ``fit`` (see
    the glossary of the documentation). A bare ``(t, 3)`` array would be ambiguous with
    the ``[i, j, +1/-1]`` rows of pairwise constraints, hence this wrapper.

    Parameters
    ----------
    triplets : array-like of shape (t, 3)
        Integer rows ``(i, j, k)`` of three distinct samples. Duplicate rows are merged
        with a :class:`UserWarning`.
    n_samples : int, optional
        Number of points the indices refer to; ``max index + 1`` when omitted.

    Attributes
    ----------
    triplets : ndarray of shape (t, 3), int64
    n_samples : int

    Examples
    --------
    >>> from psdlearn import Triplets
    >>> T = Triplets([[0, 1, 2], [2, 1, 0]], n_samples=3)
    >>> T.n_triplets, len(T)
    (2, 3)
    """

    def __init__(self, triplets, n_samples=None):
        arr, n_samples = _index_rows(triplets, 3, n_samples, "triplets", "t")
        repeated = (arr[:, 0] == arr[:, 1]) | (arr[:, 0] == arr[:, 2]) | (arr[:, 1] == arr[:, 2])
        if repeated.any():
            row = int(np.flatnonzero(repeated)[0])
            raise ValueError(f"triplets row {row} repeats an index: {arr[row].tolist()}; "
                             "(i, j, k) must be three distinct samples.")
        unique, first = np.unique(arr, axis=0, return_index=True)
        if len(unique) < len(arr):
            warnings.warn(f"{len(arr) - len(unique)} duplicate triplets merged.", UserWarning,
                          stacklevel=2)
            arr = arr[np.sort(first)]
        self.triplets = np.ascontiguousarray(arr, dtype=np.int64)
        self.n_samples = n_samples

    @property
    def n_triplets(self):
        """Number of triplets ``t``."""
        return len(self.triplets)

    def __repr__(self):
        return f"Triplets(n_samples={self.n_samples}, n_triplets={self.n_triplets})"
