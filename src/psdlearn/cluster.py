"""Clustering with a learned kernel: kernel k-means and the constrained-clustering estimator.

For ``K = E E^T`` the feature map of point ``i`` is the row ``e_i``, so kernel k-means on
``K`` is ordinary k-means on the rows of ``E``: both minimize
``sum_i ||phi(x_i) - mu_{c(i)}||^2`` with ``||phi(x_i) - phi(x_j)||^2 = K_ii + K_jj - 2 K_ij``.
:class:`ConstrainedClustering` learns ``E`` from side information with any psdlearn
learner and clusters it so.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, clone
from sklearn.cluster import KMeans
from sklearn.utils import check_array, check_random_state, get_tags
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn._compat import Interval, _fit_context

__all__ = ["ConstrainedClustering", "kernel_kmeans"]


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


def _default_learner():
    from psdlearn.npkl import NPKL

    return NPKL()


def check_learner(learner, owner):
    """Raise a TypeError unless ``learner`` can be fitted and embed points."""
    if not (hasattr(learner, "fit") and hasattr(learner, "transform")):
        raise TypeError(f"{owner} needs a learner with fit and transform (a psdlearn "
                        f"estimator such as NPKL or RCA); got {type(learner).__name__}.")
    return learner


def _seed_learner(learner, rng):
    """Give a clone whose ``random_state`` is None a seed drawn from ``rng``, so that the
    meta-estimator's ``random_state`` makes the whole fit reproducible."""
    params = learner.get_params(deep=False)
    if "random_state" in params and params["random_state"] is None:
        learner.set_params(random_state=int(rng.randint(np.iinfo(np.int32).max)))
    return learner


def learner_embedding(learner, X):
    """Embedding of the training points ``X`` by a fitted psdlearn learner: its
    ``embedding_`` where it has one (the solution of the constrained problem), else
    ``transform(X)`` (a learned linear map or feature map)."""
    E = getattr(learner, "embedding_", None)
    if E is None:
        E = learner.transform(X)
    return np.asarray(E, dtype=np.float64)


class ConstrainedClustering(ClusterMixin, BaseEstimator):
    """Clustering that respects side information: learn a kernel, then kernel k-means.

    A psdlearn learner (``estimator``, NPKL by default) learns from must-link and
    cannot-link pairs, partial labels or triplets an embedding ``E`` of the training points,
    the factor of a kernel ``K = E E^T`` (or of a Mahalanobis metric for a linear learner).
    The points are then partitioned by kernel k-means on ``K``, which is k-means on the rows
    of ``E`` (Dhillon, Guan & Kulis 2004): with restarts, the partition of lowest

    .. math::

        \\sum_i \\lVert e_i - \\mu_{c(i)} \\rVert^2 , \\qquad
        \\mu_c = \\frac{1}{|c|} \\sum_{i \\in c} e_i ,

    is kept (the evaluation protocol of Hu & Kwok 2013 and 2015). A new point is embedded
    by the learner's out-of-sample map ``transform`` and assigned to the nearest centre
    ``mu_c``; for the training points ``transform`` returns their rows of ``E``, so
    ``predict(X_train)`` equals ``labels_``.

    The constraints shape the kernel, not the assignment: a must-link pair can end in two
    clusters when the learned kernel still separates it. Side information is given as to
    every psdlearn estimator (see the glossary).

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    estimator : psdlearn estimator, default=None
        The learner of the embedding, cloned at fit: any psdlearn estimator with
        ``embedding_`` (NPKL, KernelMetricLearner) or ``transform`` (PSDBoost, RCA,
        GeneralizedNystroem). ``None`` is ``NPKL()``.
    n_init : int, default=10
        k-means restarts; the partition of lowest inertia is kept.
    random_state : int, RandomState instance or None, default=None
        Seeds k-means, and the learner when its own ``random_state`` is None.
    verbose : int, default=0
        Passed to k-means (progress on stderr); the learner keeps its own ``verbose``.

    Attributes
    ----------
    estimator_ : estimator or None
        The fitted learner; None when ``fit`` had no side information and the learner
        needs some (see :meth:`fit`).
    embedding_ : ndarray of shape (n_samples, rank)
        The embedding that was clustered (``X`` itself when ``estimator_`` is None).
    labels_ : ndarray of shape (n_samples,)
        Cluster of each training point, in ``0 .. n_clusters - 1``.
    cluster_centers_ : ndarray of shape (n_clusters, rank)
        Centres ``mu_c`` in the embedding.
    inertia_ : float
        Sum of squared distances of the points to their centres.
    n_iter_ : int
        k-means iterations of the kept restart.
    n_features_in_ : int
        Number of features of ``X``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string column names.

    See Also
    --------
    kernel_kmeans : the clustering step alone, on a given embedding.
    PairsClassifier : the learner applied to pairs (same / not the same).

    References
    ----------
    Dhillon, Guan & Kulis (2004), *Kernel k-means, spectral clustering and normalized cuts*,
    KDD. Hu & Kwok (2015), *Low-rank kernel learning for graph-based clustering*, IEEE TNNLS.

    Examples
    --------
    >>> import psdlearn as pl
    >>> from sklearn.metrics import rand_score
    >>> X, y = pl.datasets.load("iris")
    >>> C = pl.PairwiseConstraints.from_labels(y, n_must=30, n_cannot=30, random_state=0)
    >>> cl = pl.ConstrainedClustering(3, random_state=0).fit(X, C)
    >>> bool(rand_score(y, cl.labels_) > 0.85)
    True
    >>> bool((cl.predict(X) == cl.labels_).all())
    True
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "estimator": "no_validation",
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_clusters=8, *, estimator=None, n_init=10, random_state=None,
                 verbose=0):
        self.n_clusters = n_clusters
        self.estimator = estimator
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose

    def _learner(self):
        return clone(self.estimator) if self.estimator is not None else _default_learner()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self._learner())
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.target_tags.required = False
        return tags

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Learn the embedding from ``(X, y)`` and cluster it.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (all of them, constrained or not: the learner's
            semi-supervised set).
        y : PairwiseConstraints, Triplets, array-like of shape (m, 3) or (n_samples,), \
default=None
            Side information: constraints, ``[i, j, +1/-1]`` rows, or partial labels
            (``-1`` = unlabelled), as the learner takes them. With ``y=None`` a learner
            that works without side information (GeneralizedNystroem: the plain Nystrom
            kernel) is fitted without it; for the others there is nothing to learn a
            kernel from, and ``X`` itself is clustered (plain k-means, with a
            ``UserWarning``; ``estimator_`` is then None).

        Returns
        -------
        self
        """
        rng = check_random_state(self.random_state)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                          ensure_min_samples=2)
        learner = _seed_learner(check_learner(self._learner(), "ConstrainedClustering"), rng)
        if y is None and get_tags(learner).target_tags.required:
            warnings.warn(f"y=None: {type(learner).__name__} learns from side information "
                          "and none was given, so X itself is clustered (plain k-means); "
                          "pass constraints or partial labels to learn a kernel.",
                          UserWarning, stacklevel=2)
            self.estimator_ = None
            E = X
        else:
            self.estimator_ = learner.fit(X, y)
            E = learner_embedding(self.estimator_, X)
        if self.n_clusters > E.shape[0]:
            raise ValueError(f"n_clusters={self.n_clusters} exceeds the number of samples "
                             f"n={E.shape[0]}.")
        km = KMeans(n_clusters=self.n_clusters, n_init=self.n_init,
                    random_state=int(rng.randint(np.iinfo(np.int32).max)),
                    verbose=self.verbose).fit(E)
        self.embedding_ = E
        self.labels_ = km.labels_.astype(np.int64)
        self.cluster_centers_ = km.cluster_centers_
        self.inertia_ = float(km.inertia_)
        self.n_iter_ = int(km.n_iter_)
        self._kmeans = km
        return self

    def fit_predict(self, X, y=None, **kwargs):
        """Fit and return ``labels_``.

        Parameters
        ----------
        X, y
            As in :meth:`fit`.
        **kwargs : dict
            Passed to :meth:`fit`.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.fit(X, y, **kwargs).labels_

    def _embed(self, X):
        """``estimator_.transform(X)``, or ``X`` when ``estimator_`` is None."""
        check_is_fitted(self, "labels_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if self.estimator_ is None:
            return X
        return np.asarray(self.estimator_.transform(X), dtype=np.float64)

    def predict(self, X):
        """Cluster of each point: the nearest centre of its embedding.

        ``c(x) = argmin_c ||e(x) - mu_c||`` with ``e(x)`` the learner's out-of-sample
        embedding (``estimator_.transform``, which gives the training points their rows of
        ``embedding_``; ``X`` itself when ``estimator_`` is None).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_new, n_features)

        Returns
        -------
        labels : ndarray of shape (n_new,)
        """
        E = self._embed(X)
        return self._kmeans.predict(E).astype(np.int64)
