"""Kernel k-means on a learned low-rank kernel.

For ``K = E E^T`` the feature map of point ``i`` is the row ``e_i``, so kernel k-means on
``K`` is ordinary k-means on the rows of ``E``: both minimize
``sum_i ||phi(x_i) - mu_{c(i)}||^2`` with ``||phi(x_i) - phi(x_j)||^2 = K_ii + K_jj - 2 K_ij``.
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans
from sklearn.utils import check_array

__all__ = ["kernel_kmeans"]


def kernel_kmeans(E, n_clusters, n_init=20, random_state=None):
    """Cluster the points of the kernel ``K = E E^T`` by k-means on the rows of ``E``.

    Parameters
    ----------
    E : array-like of shape (n_samples, rank)
        Embedding (e.g. ``NPKL.embedding_``).
    n_clusters : int
        Number of clusters (the papers use the true number of classes).
    n_init : int, default=20
        Random restarts; the best inertia is kept (the papers' 20 restarts).
    random_state : int, RandomState instance or None

    Returns
    -------
    labels : ndarray of shape (n_samples,), int64
        Cluster index of each point.
    """
    E = check_array(E, dtype=np.float64, input_name="E")
    if not 1 <= n_clusters <= E.shape[0]:
        raise ValueError(f"n_clusters must be in [1, {E.shape[0]}], got {n_clusters}.")
    km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=random_state)
    return km.fit_predict(E).astype(np.int64)
