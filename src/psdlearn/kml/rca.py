"""Relevant Component Analysis (Bar-Hillel, Hertz, Shental & Weinshall, ICML 2003 / JMLR 2005).

The baseline of seed 004. Similar pairs are closed transitively into chunklets (the
connected components of the must-link graph); with ``m_j`` the mean of chunklet ``j`` and
``N`` the number of points in chunklets, the within-chunklet covariance is

.. math::

    C = \\frac{1}{N} \\sum_j \\sum_{i \\in \\text{chunklet } j} (x_i - m_j)(x_i - m_j)^T,

and RCA whitens it: ``x -> C^{-1/2} x``, i.e. the Mahalanobis metric ``C^{-1}``.
When ``C`` is singular (fewer chunklet points than dimensions, as for MNIST with 50
pairs) the data are first projected on their top principal directions, as many as the
rank of ``C`` (the JMLR paper's dimensionality-reduction step, there done by a constrained
Fisher discriminant; PCA here).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigh
from scipy.sparse.csgraph import connected_components
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.decomposition import PCA
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn.kml.estimator import as_similar_pairs

__all__ = ["RCA"]


def chunklet_covariance(X, pairs):
    """Within-chunklet covariance ``C`` and the chunklet of each constrained point.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    pairs : ndarray of shape (s, 2), int

    Returns
    -------
    C : ndarray of shape (d, d)
    points : ndarray of shape (N,)
        Indices of the points in some chunklet.
    chunklet : ndarray of shape (N,)
        Their chunklet numbers.
    """
    n = len(X)
    graph = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    points = np.unique(pairs)
    _, chunklet = np.unique(labels[points], return_inverse=True)
    counts = np.bincount(chunklet)
    means = np.zeros((len(counts), X.shape[1]))
    np.add.at(means, chunklet, X[points])
    means /= counts[:, None]
    Xc = X[points] - means[chunklet]
    return Xc.T @ Xc / len(points), points, chunklet


class RCA(TransformerMixin, BaseEstimator):
    """Relevant Component Analysis: whitening by the within-chunklet covariance.

    Parameters
    ----------
    n_components : int or None, default=None
        Project the data on this many top principal directions before whitening. None:
        no projection when the within-chunklet covariance ``C`` has full rank, else as
        many directions as its rank.

    Attributes
    ----------
    components_ : ndarray of shape (r, n_features)
        ``C_r^{-1/2} P^T`` with ``P`` the projection (identity without one); the learned
        Mahalanobis matrix is ``components_.T @ components_``.
    mean_ : ndarray of shape (n_features,)
        Training mean, subtracted in :meth:`transform`.
    n_chunklets_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn import RCA
    >>> X = np.array([[0.0, 0.0], [0.1, 1.0], [2.0, 0.0], [3.0, 0.2]])
    >>> RCA().fit(X, [[0, 1], [2, 3]]).transform(X).shape
    (4, 2)
    """

    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    def __init__(self, *, n_components=None):
        self.n_components = n_components

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, similar_pairs):
        """Learn the whitening from the chunklets of the similar pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        similar_pairs : PairwiseConstraints, array-like of shape (s, 2), (s, 3) or (n,)
            As in :class:`psdlearn.KernelMetricLearner`.

        Returns
        -------
        self
        """
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        pairs = as_similar_pairs(similar_pairs, len(X))
        C, _, chunklet = chunklet_covariance(X, pairs)
        d = X.shape[1]
        vals = np.linalg.eigvalsh(C)
        rank = int(np.sum(vals > d * np.finfo(float).eps * max(vals[-1], 0.0)))
        if rank == 0:
            raise ValueError("the within-chunklet covariance is zero: every similar pair "
                             "joins identical points.")
        r = self.n_components if self.n_components is not None else rank
        if r > min(X.shape):
            raise ValueError(f"n_components={r} exceeds min(n_samples, n_features)="
                             f"{min(X.shape)}.")
        self.mean_ = X.mean(axis=0)
        if r < d:
            P = PCA(n_components=r, svd_solver="full").fit(X).components_.T
            C = P.T @ C @ P
        else:
            P = np.eye(d)
        s, U = eigh(C)
        if s[0] <= 0:
            raise ValueError("the projected within-chunklet covariance is singular; "
                             "lower n_components.")
        self.components_ = (U / np.sqrt(s)) @ U.T @ P.T
        self.n_chunklets_ = int(chunklet.max()) + 1
        return self

    def transform(self, X):
        """Map ``x -> C^{-1/2} P^T (x - mean_)``.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)

        Returns
        -------
        ndarray of shape (n_new, r)
        """
        check_is_fitted(self, "components_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.mean_) @ self.components_.T
