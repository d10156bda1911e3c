r"""Relevant Component Analysis (Bar-Hillel, Hertz, Shental & Weinshall 2005).

The linear baseline of Yeung, Chang & Dai (2007). Similar pairs are closed transitively
into chunklets (the connected components of the must-link graph; for partial labels, the
labelled points of each class); with ``m_j`` the mean of chunklet ``j`` and ``N`` the number
of points in chunklets, the within-chunklet covariance is

.. math::

    C = \frac{1}{N} \sum_j \sum_{i \in \text{chunklet } j} (x_i - m_j)(x_i - m_j)^T,

and RCA whitens it: ``x -> C^{-1/2} x``, i.e. the Mahalanobis metric ``C^{-1}``.
When ``C`` is singular (fewer chunklet points than dimensions) the data are first
projected on their top principal directions, as many as the rank of ``C`` (the
dimensionality-reduction step of Bar-Hillel et al., there done by a constrained Fisher
discriminant; PCA here).
"""

from __future__ import annotations

import numbers
import sys
import time
import warnings

import numpy as np
from scipy.linalg import eigh
from sklearn.base import TransformerMixin
from sklearn.decomposition import PCA
from sklearn.utils import deprecated
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn._compat import BaseEstimator, Hidden, Interval, StrOptions, _fit_context
from psdlearn._mahalanobis import MahalanobisMixin
from psdlearn.constraints import PairwiseConstraints
from psdlearn.kml._similar import similar_set

__all__ = ["RCA", "chunklet_covariance"]


def chunklet_covariance(X, points, chunklet):
    """Within-chunklet covariance ``C``.

    ``C = (1 / N) sum_j sum_{i in chunklet j} (x_i - m_j)(x_i - m_j)^T`` with ``m_j`` the
    mean of chunklet ``j`` and ``N = len(points)`` (Bar-Hillel et al. 2005, eq. 1).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The points.
    points : ndarray of shape (N,), int
        Indices of the points in some chunklet.
    chunklet : ndarray of shape (N,), int
        Their chunklet numbers, ``0 .. n_chunklets - 1``.

    Returns
    -------
    ndarray of shape (d, d)
        The symmetric positive semidefinite matrix ``C``.
    """
    counts = np.bincount(chunklet)
    means = np.zeros((len(counts), X.shape[1]))
    np.add.at(means, chunklet, X[points])
    means /= counts[:, None]
    Xc = X[points] - means[chunklet]
    return Xc.T @ Xc / len(points)


def _chunklet_pairs(points, chunklet, n_samples):
    """Must-link pairs joining consecutive members of each chunklet: the fewest pairs whose
    transitive closure gives these chunklets."""
    order = np.lexsort((points, chunklet))
    p, c = points[order], chunklet[order]
    same = c[1:] == c[:-1]
    pairs = np.column_stack([p[:-1][same], p[1:][same]])
    return PairwiseConstraints(pairs, np.ones(len(pairs)), n_samples=n_samples)


class RCA(MahalanobisMixin, TransformerMixin, BaseEstimator):
    r"""Relevant Component Analysis: whitening by the within-chunklet covariance.

    Learns a Mahalanobis metric from similar pairs alone. The similar pairs are closed
    transitively into chunklets (groups of points known to share a class); RCA whitens
    the within-chunklet covariance ``C``, so that directions along which points of one
    chunklet vary (irrelevant variability) are shrunk and the others stretched:

    .. math::

        C = \frac{1}{N} \sum_j \sum_{i \in \text{chunklet } j}
            (x_i - m_j)(x_i - m_j)^T, \qquad
        d(x, z)^2 = (x - z)^T C^{-1} (x - z),

    with ``m_j`` the mean of chunklet ``j`` and ``N`` the number of points in chunklets
    (Bar-Hillel et al. 2005, eqs. 1-2). ``C^{-1}`` is the maximum-likelihood metric for
    Gaussian classes of a shared covariance, and the optimum of the information-theoretic
    criterion of that paper. When ``C`` has rank ``r < D`` (fewer chunklet points than
    features), the data are first projected on their top ``r`` principal directions
    ``P`` (D, r), and ``C`` is replaced by ``C_r = P^T C P``. The fit is closed form: one
    covariance and one eigendecomposition, ``O(N D^2 + D^3)``.

    Parameters
    ----------
    rank : int or None, default=None
        Output dimension ``r``: project the data on this many top principal directions
        before whitening. None: no projection when ``C`` has full rank, else as many
        directions as its rank.
    verbose : int, default=0
        ``>= 1``: one line on stderr with the chunklets, the rank of ``C`` and the time.
    n_components : int or None
        Deprecated alias of ``rank``: it gives the same fit, with a
        :class:`FutureWarning`. It will be removed in the next release.

    Attributes
    ----------
    components_ : ndarray of shape (``rank_``, ``n_features_in_``)
        ``L = C_r^{-1/2} P^T`` with ``P`` the projection (identity without one);
        ``transform(X) = (X - mean_) @ components_.T``.
    rank_ : int
        Output dimension ``r``.
    mean_ : ndarray of shape (``n_features_in_``,)
        Training mean, subtracted in :meth:`transform`.
    n_chunklets_ : int
        Number of chunklets (of two points or more).
    side_info_ : PairwiseConstraints
        The similar pairs the fit used: the must-link pairs of ``y`` (cannot-links
        dropped), or, for partial labels, pairs chaining the labelled points of each
        class. ``fit(X, side_info_)`` gives the same metric.
    n_iter_ : int
        Always 1: the fit is one closed-form solve.
    converged_ : bool
        Always True: there is no iteration and no stopping test.
    fit_time_ : float
        Seconds spent in :meth:`fit`.
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Feature names, when ``X`` has string column names.

    See Also
    --------
    KernelMetricLearner : The kernel metric learned from the same similar pairs.
    PSDBoost : A Mahalanobis metric from triplets.

    References
    ----------
    Bar-Hillel, A., Hertz, T., Shental, N. & Weinshall, D. (2005). Learning a Mahalanobis
    metric from equivalence constraints. Journal of Machine Learning Research 6, 937-965.

    Yeung, D.-Y., Chang, H. & Dai, G. (2007). A scalable kernel-based algorithm for
    semi-supervised metric learning. IJCAI.

    Examples
    --------
    >>> import numpy as np
    >>> from psdlearn import RCA
    >>> X = np.array([[0.0, 0.0], [0.1, 1.0], [2.0, 0.0], [3.0, 0.2]])
    >>> rca = RCA().fit(X, [0, 0, 1, 1])
    >>> rca.transform(X).shape
    (4, 2)
    >>> rca.get_feature_names_out().tolist()
    ['rca0', 'rca1']
    """

    _parameter_constraints = {
        "rank": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "verbose": ["verbose"],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left"), None,
                         Hidden(StrOptions({"deprecated"}))],
    }

    def __init__(self, *, rank=None, verbose=0, n_components="deprecated"):
        self.rank = rank
        self.verbose = verbose
        self.n_components = n_components

    def _resolve_rank(self):
        """``rank``, or the deprecated ``n_components`` with a FutureWarning."""
        if isinstance(self.n_components, str) and self.n_components == "deprecated":
            return self.rank
        if self.rank is not None:
            raise ValueError("RCA: pass rank only; n_components is its deprecated alias.")
        warnings.warn("RCA: the parameter n_components is deprecated and will be removed in "
                      "the next release; use rank instead (same meaning).", FutureWarning,
                      stacklevel=4)
        return self.n_components

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the whitening from the chunklets of the similar pairs in ``y``.

        The similar pairs are read as by :class:`KernelMetricLearner`: cannot-links are
        dropped with a warning, RCA has no term for them. The chunklets are the connected
        components of the must-link pairs; for partial labels, one per class: its
        labelled points (classes with one labelled point are left out).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense features (sparse input is rejected).
        y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
            Must-link pairs (``[i, j, +1]`` rows) or partial labels (``-1`` =
            unlabelled); required. An ``(s, 2)`` array of index pairs is refused: it
            reads as two target columns.

        Returns
        -------
        self : RCA
            Fitted estimator.

        Raises
        ------
        ValueError
            ``y`` is missing or gives no similar pair; every similar pair joins identical
            points; ``rank`` exceeds ``min(n_samples, n_features)``.
        """
        start = time.perf_counter()
        requested = self._resolve_rank()
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        similar = similar_set(y, len(X), "RCA")
        points, chunklet = similar.chunklets()
        C = chunklet_covariance(X, points, chunklet)
        d = X.shape[1]
        vals = np.linalg.eigvalsh(C)
        rank = int(np.sum(vals > d * np.finfo(float).eps * max(vals[-1], 0.0)))
        if rank == 0:
            raise ValueError("RCA: the within-chunklet covariance is zero: every similar "
                             "pair joins identical points.")
        r = requested if requested is not None else rank
        if r > min(X.shape):
            raise ValueError(f"rank={r} exceeds min(n_samples, n_features)={min(X.shape)}.")
        self.mean_ = X.mean(axis=0)
        if r < d:
            P = PCA(n_components=r, svd_solver="full").fit(X).components_.T
            C = P.T @ C @ P
        else:
            P = np.eye(d)
        s, U = eigh(C)
        if s[0] <= 0:
            raise ValueError("RCA: the projected within-chunklet covariance is singular; "
                             "lower rank.")
        self.components_ = (U / np.sqrt(s)) @ U.T @ P.T
        self.rank_ = r
        self.n_chunklets_ = int(chunklet.max()) + 1
        if similar.pairs is not None:
            self.side_info_ = PairwiseConstraints(similar.pairs, np.ones(len(similar.pairs)),
                                                  n_samples=len(X))
        else:
            self.side_info_ = _chunklet_pairs(points, chunklet, len(X))
        self.n_iter_, self.converged_ = 1, True
        self.fit_time_ = time.perf_counter() - start
        if self.verbose:
            print(f"RCA: {self.n_chunklets_} chunklets of {len(points)} points, "
                  f"within-chunklet covariance of rank {rank}, {r} components, "
                  f"{self.fit_time_:.3g} s.", file=sys.stderr)
        return self

    def transform(self, X):
        """Map ``x -> C_r^{-1/2} P^T (x - mean_)``.

        Euclidean distances between the rows returned are the learned metric. Each row
        depends on its own point only.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_features_in_``)
            Points to map, seen in :meth:`fit` or new.

        Returns
        -------
        ndarray of shape (n_samples, ``rank_``)
            ``(X - mean_) @ components_.T``.
        """
        check_is_fitted(self, "components_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.mean_) @ self.components_.T

    @deprecated("the attribute n_components_ is deprecated and will be removed in the next "
                "release; use rank_ instead.")
    @property
    def n_components_(self):
        """Deprecated alias of ``rank_``."""
        return self.rank_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = False  # validate_data rejects sparse X
        return tags
