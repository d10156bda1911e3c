"""The data manifold: a symmetric kNN graph and its normalized Laplacian.

Every NPKL method (seeds 000, 001 and the SimpleNPKL baseline) regularizes the learned
kernel ``K`` by ``tr(L K)``, where ``L`` is the normalized graph Laplacian of seed 000
eq. (1),

.. math::

    L = (1 + \\delta) I - D^{-1/2} S D^{-1/2},
    \\qquad S_{ij} = \\exp(-\\|x_i - x_j\\|^2 / (2 \\sigma^2)),

with ``S`` supported on the symmetrized k-nearest-neighbour graph and ``D`` the diagonal
degree matrix. The eigenvalues of ``D^{-1/2} S D^{-1/2}`` lie in ``[-1, 1]``, so those of
``L`` lie in ``[delta, 2 + delta]``: ``L`` is positive definite for ``delta > 0``.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array

__all__ = ["DEFAULT_DELTA", "knn_graph", "knn_laplacian", "normalized_laplacian", "sigma_rule"]

#: Default ridge ``delta`` of the normalized Laplacian. Seed 000 only asks for
#: ``delta > 0``. ``0.01`` leaves the spectrum of the plain normalized Laplacian
#: (in ``[0, 2]``) essentially unchanged while bounding the condition number of ``L`` by
#: ``(2 + delta) / delta = 201`` and the Jacobi contraction factor of seed 000 Prop. 1 by
#: ``1 / (1 + delta)``.
DEFAULT_DELTA = 0.01

#: Number of neighbours used by the sigma rule of seed 001 section 4.
SIGMA_NEIGHBORS = 10


def sigma_rule(distances):
    """Gaussian width of seed 001 section 4: half the mean distance to the 10 nearest neighbours.

    Parameters
    ----------
    distances : ndarray of shape (n_samples, k)
        Distances of each point to its ``k >= 1`` nearest other points (sorted).

    Returns
    -------
    sigma : float
        ``0.5 * mean(distances[:, :10])``; ``1.0`` when every distance is zero (all points
        coincide), so that the Gaussian weights stay finite.
    """
    sigma = 0.5 * float(np.mean(distances[:, :SIGMA_NEIGHBORS]))
    return sigma if sigma > 0 else 1.0


def knn_graph(X, n_neighbors=5, sigma="auto", metric="euclidean", n_jobs=None):
    """Symmetric kNN similarity graph with Gaussian weights.

    ``S_ij = exp(-d(x_i, x_j)^2 / (2 sigma^2))`` when ``j`` is among the ``n_neighbors``
    nearest neighbours of ``i`` or ``i`` among those of ``j``, else 0; ``S_ii = 0``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data points; ``n_samples >= 2``.
    n_neighbors : int, default=5
        Neighbours per point (capped at ``n_samples - 1``).
    sigma : float or "auto", default="auto"
        Gaussian width; ``"auto"`` applies :func:`sigma_rule`.
    metric : str, default="euclidean"
        Any metric accepted by :class:`sklearn.neighbors.NearestNeighbors`.
    n_jobs : int, optional
        Parallel jobs of the neighbour search (scikit-learn convention).

    Returns
    -------
    S : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric non-negative weights with zero diagonal.
    sigma : float
        The width used.
    """
    X = check_array(X, dtype=np.float64, input_name="X")
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"X must have at least 2 samples to build a graph, got {n}.")
    if not isinstance(n_neighbors, numbers.Integral) or n_neighbors < 1:
        raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}.")
    k = min(int(n_neighbors), n - 1)
    k_query = min(max(k, SIGMA_NEIGHBORS), n - 1)
    nn = NearestNeighbors(n_neighbors=k_query, metric=metric, n_jobs=n_jobs).fit(X)
    # Querying with X=None excludes each point from its own neighbour list, even when
    # duplicates exist (a duplicate then appears as a neighbour at distance 0).
    dist, ind = nn.kneighbors()
    if isinstance(sigma, str):
        if sigma != "auto":
            raise ValueError(f"sigma must be a positive float or 'auto', got {sigma!r}.")
        sigma = sigma_rule(dist)
    elif not (isinstance(sigma, numbers.Real) and np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive float or 'auto', got {sigma!r}.")
    sigma = float(sigma)
    d_k, i_k = dist[:, :k], ind[:, :k]
    weights = np.exp(-(d_k**2) / (2.0 * sigma**2))
    rows = np.repeat(np.arange(n), k)
    W = sp.csr_matrix((weights.ravel(), (rows, i_k.ravel())), shape=(n, n))
    S = W.maximum(W.T).tocsr()
    S.setdiag(0.0)
    S.eliminate_zeros()
    S.sort_indices()
    return S, sigma


def knn_laplacian(X, n_neighbors=5, sigma="auto", delta=DEFAULT_DELTA, metric="euclidean",
                  n_jobs=None):
    """Normalized Laplacian ``(1 + delta) I - D^-1/2 S D^-1/2`` of the kNN graph (seed 000 eq. 1).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data points.
    n_neighbors : int, default=5
        Neighbours per point; the papers use 5, and 50 for the adult sets.
    sigma : float or "auto", default="auto"
        Gaussian width; ``"auto"`` is half the mean distance of each point to its 10
        nearest neighbours (seed 001 section 4).
    delta : float, default=DEFAULT_DELTA (0.01)
        Ridge that makes ``L`` positive definite; eigenvalues of ``L`` lie in
        ``[delta, 2 + delta]``.
    metric : str, default="euclidean"
        Metric for the neighbour search.
    n_jobs : int, optional
        Parallel jobs of the neighbour search.

    Returns
    -------
    L : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric, float64, diagonal ``1 + delta``, sorted indices. A point whose weights
        all underflow to zero (isolated) gets the row ``(1 + delta) e_i``: no NaN or inf.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn.graph import knn_laplacian
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> L = knn_laplacian(X, n_neighbors=5)
    >>> L.shape, float(L.diagonal().min())
    ((50, 50), 1.01)
    """
    if not (isinstance(delta, numbers.Real) and np.isfinite(delta) and delta > 0):
        raise ValueError(f"delta must be a positive float, got {delta!r}.")
    S, _ = knn_graph(X, n_neighbors=n_neighbors, sigma=sigma, metric=metric, n_jobs=n_jobs)
    return normalized_laplacian(S, delta)


def normalized_laplacian(S, delta=DEFAULT_DELTA):
    """``(1 + delta) I - D^-1/2 S D^-1/2`` for a symmetric non-negative sparse ``S``.

    Parameters
    ----------
    S : sparse matrix of shape (n, n)
        Symmetric similarity weights with zero diagonal.
    delta : float
        Positive ridge.

    Returns
    -------
    L : scipy.sparse.csr_matrix of shape (n, n)
    """
    S = sp.csr_matrix(S, dtype=np.float64)
    n = S.shape[0]
    deg = np.asarray(S.sum(axis=1)).ravel()
    inv_sqrt = np.zeros(n)
    pos = deg > 0
    inv_sqrt[pos] = 1.0 / np.sqrt(deg[pos])
    Dm = sp.diags(inv_sqrt)
    A = Dm @ S @ Dm
    # Symmetrize exactly: the two triple products differ by rounding otherwise.
    A = 0.5 * (A + A.T)
    L = ((1.0 + delta) * sp.identity(n, format="csr") - A).tocsr()
    L.sort_indices()
    return L
