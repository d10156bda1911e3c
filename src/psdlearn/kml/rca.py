"""Relevant Component Analysis (Bar-Hillel, Hertz, Shental & Weinshall 2005).

The linear baseline of Yeung, Chang & Dai (2007). Similar pairs are closed transitively
into chunklets (the connected components of the must-link graph; for partial labels, the
labelled points of each class); with ``m_j`` the mean of chunklet ``j`` and ``N`` the number
of points in chunklets, the within-chunklet covariance is

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
import sys
import time

import numpy as np
from scipy.linalg import eigh
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import PCA
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn._compat import Interval, _fit_context
from psdlearn.kml._similar import similar_set

__all__ = ["RCA", "chunklet_covariance"]


def chunklet_covariance(X, points, chunklet):
    """Within-chunklet covariance ``C``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    points : ndarray of shape (N,), int
        Indices of the points in some chunklet.
    chunklet : ndarray of shape (N,), int
        Their chunklet numbers, ``0 .. n_chunklets - 1``.

    Returns
    -------
    ndarray of shape (d, d)
    """
    counts = np.bincount(chunklet)
    means = np.zeros((len(counts), X.shape[1]))
    np.add.at(means, chunklet, X[points])
    means /= counts[:, None]
    Xc = X[points] - means[chunklet]
    return Xc.T @ Xc / len(points)


class RCA(TransformerMixin, BaseEstimator):
    """Relevant Component Analysis: whitening by the within-chunklet covariance.

    A closed form: one covariance, one eigendecomposition, no iteration.

    Parameters
    ----------
    n_components : int or None, default=None
        Project the data on this many top principal directions before whitening. None:
        no projection when the within-chunklet covariance ``C`` has full rank, else as
        many directions as its rank.
    verbose : int, default=0
        ``>= 1``: one line on stderr with the chunklets, the rank of ``C`` and the time.

    Attributes
    ----------
    components_ : ndarray of shape (n_components_, n_features)
        ``C_r^{-1/2} P^T`` with ``P`` the projection (identity without one); the learned
        Mahalanobis matrix is ``components_.T @ components_``.
    n_components_ : int
        Output dimension ``r``.
    mean_ : ndarray of shape (n_features,)
        Training mean, subtracted in :meth:`transform`.
    n_chunklets_ : int
        Number of chunklets (of two points or more).
    n_iter_ : int
        Always 1: the fit is one closed-form solve (kept for the common API).
    converged_ : bool
        Always True: there is no iteration and no stopping test.
    fit_time_ : float
        Seconds spent in :meth:`fit`.
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` has string column names.

    See Also
    --------
    KernelMetricLearner : the kernel metric learned from the same similar pairs.

    References
    ----------
    Bar-Hillel, A., Hertz, T., Shental, N. & Weinshall, D. (2005). Learning a Mahalanobis
    metric from equivalence constraints. Journal of Machine Learning Research 6, 937-965.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn import RCA
    >>> X = np.array([[0.0, 0.0], [0.1, 1.0], [2.0, 0.0], [3.0, 0.2]])
    >>> RCA().fit(X, [0, 0, 1, 1]).transform(X).shape
    (4, 2)
    """

    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "verbose": ["verbose"],
    }

    def __init__(self, *, n_components=None, verbose=0):
        self.n_components = n_components
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the whitening from the chunklets of the similar pairs in ``y``.

        The similar pairs are read as by :class:`KernelMetricLearner` (``docs/glossary.md``;
        cannot-links are dropped with a warning, RCA has no term for them). Their chunklets
        are the connected components of the must-link pairs; for partial labels, one per
        class: its labelled points (classes with one labelled point are left out).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense features (sparse input is rejected).
        y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
            Must-link pairs or partial labels (``-1`` = unlabelled); required. An
            ``(s, 2)`` array of index pairs is refused: it reads as two target columns.

        Returns
        -------
        self : RCA
            Fitted estimator.

        Raises
        ------
        ValueError
            ``y`` is missing or gives no similar pair; every similar pair joins identical
            points; ``n_components`` exceeds ``min(n_samples, n_features)``.
        """
        start = time.perf_counter()
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        points, chunklet = similar_set(y, len(X), "RCA").chunklets()
        C = chunklet_covariance(X, points, chunklet)
        d = X.shape[1]
        vals = np.linalg.eigvalsh(C)
        rank = int(np.sum(vals > d * np.finfo(float).eps * max(vals[-1], 0.0)))
        if rank == 0:
            raise ValueError("RCA: the within-chunklet covariance is zero: every similar "
                             "pair joins identical points.")
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
            raise ValueError("RCA: the projected within-chunklet covariance is singular; "
                             "lower n_components.")
        self.components_ = (U / np.sqrt(s)) @ U.T @ P.T
        self.n_components_ = r
        self.n_chunklets_ = int(chunklet.max()) + 1
        self.n_iter_, self.converged_ = 1, True
        self.fit_time_ = time.perf_counter() - start
        if self.verbose:
            print(f"RCA: {self.n_chunklets_} chunklets of {len(points)} points, "
                  f"within-chunklet covariance of rank {rank}, {r} components, "
                  f"{self.fit_time_:.3g} s.", file=sys.stderr)
        return self

    def transform(self, X):
        """Map ``x -> C^{-1/2} P^T (x - mean_)``.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)

        Returns
        -------
        ndarray of shape (n_new, n_components_)
        """
        check_is_fitted(self, "components_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.mean_) @ self.components_.T

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = False  # validate_data rejects sparse X
        return tags
