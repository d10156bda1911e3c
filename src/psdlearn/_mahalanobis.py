"""What the linear metric learners (PSDBoost, RCA) share: the Mahalanobis matrix, the
distance as a callable, and scikit-learn's output feature names.

A linear metric learner holds ``components_ = L`` of shape (r, D); its metric is
``d(u, v) = ||L (u - v)|| = sqrt((u - v)^T M (u - v))`` with ``M = L^T L``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin
from sklearn.utils.validation import check_is_fitted

__all__ = ["MahalanobisDistance", "MahalanobisMixin"]


class MahalanobisDistance:
    """The distance ``d(u, v) = ||L (u - v)||`` of a linear map ``L`` of shape (r, D).

    A class rather than a closure so that it pickles (``n_jobs`` in scikit-learn).

    Parameters
    ----------
    components : ndarray of shape (r, D)
        The map ``L``; ``M = L^T L``.
    """

    def __init__(self, components):
        self.components = np.array(components, dtype=np.float64)

    def __call__(self, u, v):
        """``sqrt((u - v)^T M (u - v))`` for two points of shape (D,).

        Parameters
        ----------
        u, v : array-like of shape (D,)

        Returns
        -------
        float
        """
        diff = np.asarray(u, dtype=np.float64) - np.asarray(v, dtype=np.float64)
        return float(np.linalg.norm(self.components @ diff))

    def __repr__(self):
        r, D = self.components.shape
        return f"MahalanobisDistance(rank={r}, n_features={D})"


class MahalanobisMixin(ClassNamePrefixFeaturesOutMixin):
    """``get_mahalanobis_matrix``, ``get_metric`` and ``get_feature_names_out`` from
    ``components_``; output features are named ``<classname>0, <classname>1, ...``."""

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def get_mahalanobis_matrix(self):
        """The learned Mahalanobis matrix ``M = components_.T @ components_``.

        Returns
        -------
        M : ndarray of shape (``n_features_in_``, ``n_features_in_``)
            Symmetric positive semidefinite; ``d(x, z)^2 = (x - z)^T M (x - z)``.
        """
        check_is_fitted(self, "components_")
        L = self.components_
        M = L.T @ L
        return (M + M.T) / 2

    def get_metric(self):
        """The learned distance as a function of two points.

        It returns ``sqrt((u - v)^T M (u - v))`` with ``M`` of
        :meth:`get_mahalanobis_matrix`, computed as ``||components_ (u - v)||``; the
        Euclidean distance between ``transform(u)`` and ``transform(v)``. It can be passed
        to scikit-learn as ``NearestNeighbors(metric=...)`` or ``DBSCAN(metric=...)``.
        It is a copy: refitting the estimator does not change it.

        Returns
        -------
        metric : callable
            ``metric(u, v) -> float`` for arrays ``u``, ``v`` of shape (``n_features_in_``,).
        """
        check_is_fitted(self, "components_")
        return MahalanobisDistance(self.components_)
