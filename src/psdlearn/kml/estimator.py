"""Kernel-based semi-supervised metric learning with landmarks (Yeung, Chang & Dai 2007).

The centered kernel ``K = H K_hat H`` is written ``K = sum_r lambda_r v_r v_r^T`` and only
its eigenvalues are learned: ``K_beta = sum_r beta_r^2 v_r v_r^T``, with ``beta`` minimizing
the mean squared feature distance over the similar pairs ``S`` under ``1^T beta = c``
(closed form (4), see :mod:`psdlearn.kml.beta`).

The scalable version (section 3) replaces ``K`` by ``W L W^T`` (5): ``L = H L_hat H`` is
the centered kernel of ``m`` landmarks (every point of ``S`` plus random others),
``L = V_alpha D_mu V_alpha^T`` (6), and row ``i`` of the sparse ``W`` holds the locally
linear weights of ``phi(x_i)`` on its ``K`` nearest landmarks in feature space (8)-(12).
The embedding (13)-(14) of a point with weights ``w`` is ``D_beta^{1/2} V_alpha^T w``, so
squared distances in it are the learned metric (16).

The ``K`` nearest landmarks are selected inside the compiled kernel of
:mod:`psdlearn.kml._lle`, by brute force over the ``m`` landmarks, from the kernel row
``k(x, x_j)`` that the local Gram matrix (11) needs anyway: a Euclidean neighbour index
would apply to the RBF kernel only, and over a few hundred landmarks it costs more than
the ``O(m)`` scan it would replace.

The default width (``kernel_gamma="auto"``) is chosen by cross-validation over the side
information when it holds dissimilar pairs (:mod:`psdlearn.kml._width_cv`).
"""

from __future__ import annotations

import math
import numbers
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.metrics.pairwise import (
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)
from sklearn.utils import check_random_state, deprecated
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn._compat import BaseEstimator, Interval, RealNotInt, StrOptions, _fit_context
from psdlearn._exact_knn import value_order
from psdlearn._interrupt import fitting, phase
from psdlearn._linalg import center_kernel
from psdlearn._progress import progress_bar, warn_interrupted
from psdlearn._training_rows import TrainingRows
from psdlearn.constraints import check_side_info
from psdlearn.kml._lle import local_weights
from psdlearn.kml._median_width import median_heuristic_kernel_gamma
from psdlearn.kml._similar import similar_set
from psdlearn.kml._width_cv import CV_FACTORS, constraint_folds, held_out_auc
from psdlearn.kml.beta import centered_eigenpairs, optimal_beta, participation_ratio

__all__ = ["KernelMetricLearner", "median_heuristic_kernel_gamma"]

KERNELS = ("rbf", "laplacian", "linear", "poly")
#: Kernels whose ``kernel_gamma="auto"`` is chosen by cross-validation when the side
#: information holds dissimilar pairs (the kernels with a width).
CV_KERNELS = ("rbf", "laplacian")
#: ``kernel_gamma="auto"`` with the RBF kernel: this times the median heuristic, i.e.
#: ``exp(-||x - z||^2 / (2 sigma^2))`` with ``sigma`` the median distance between points.
RBF_WIDTH_FACTOR = 0.5
#: Elements of one kernel block (rows x columns) evaluated at a time.
_BLOCK_ELEMENTS = 1 << 20
#: Default of the deprecated ``n_components``: not passed.
_UNSET = "deprecated"


def _sparse_rows(indices, weights, n_columns):
    """CSR matrix with ``weights[i, a]`` at ``(i, indices[i, a])``, explicit zeros dropped."""
    n, k = indices.shape
    W = sp.csr_matrix((weights.ravel(), indices.ravel(), np.arange(0, n * k + 1, k)),
                      shape=(n, n_columns))
    W.eliminate_zeros()
    W.sum_duplicates()
    return W




class KernelMetricLearner(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Kernel metric learned from similar pairs by reweighting kernel eigenvectors.

    The method of Yeung, Chang & Dai (2007). It keeps the eigenvectors of a base kernel
    and learns new eigenvalues so that the points of similar (must-link) pairs come close.
    :meth:`transform` returns an embedding in which the Euclidean distance is the learned
    metric, for k-means, nearest neighbours or any method that takes features.

    **Full version** (``n_landmarks=None``). Let
    ``K = H K_hat H = sum_{r=1}^q lambda_r v_r v_r^T`` be the centered base kernel of the
    ``n`` training points (``H = I - 1 1^T / n``), ``S`` the similar pairs and
    ``K_beta = sum_r beta_r^2 v_r v_r^T`` the learned kernel. ``beta`` solves (eqs. 1-4)

    .. math::

        \\min_\\beta \\; J_S(\\beta) = \\frac{1}{|S|} \\sum_{(i, j) \\in S}
        \\|z_i - z_j\\|^2 = \\beta^T D_S \\beta
        \\quad \\text{s.t.} \\quad 1^T \\beta = c,
        \\qquad (D_S)_{rr} = \\frac{1}{|S|} \\sum_{(i, j) \\in S} (v_{ri} - v_{rj})^2,

    with ``z_i = (beta_r v_ri)_r`` the embedding of point ``i``, in closed form

    .. math::

        \\beta = \\frac{c\\, D_S^{-1} 1}{1^T D_S^{-1} 1}, \\qquad
        c = \\sum_r \\sqrt{\\lambda_r}.

    A new point is projected as in kernel PCA with the training centering,
    ``z_r(x) = (beta_r / lambda_r) sum_j v_rj k_c(x, x_j)``.

    **Scalable version** (``n_landmarks=m``). ``K`` is approximated by ``W L W^T`` (5),
    with ``L = H L_hat H = V_alpha D_mu V_alpha^T`` (6) the centered kernel of ``m``
    landmarks (every point of ``S`` plus points drawn at random). Row ``i`` of the sparse
    ``W`` is an indicator for a landmark (8) and otherwise the locally linear weights of
    ``phi(x_i)`` on its ``K`` nearest landmarks in feature space (9)-(12):

    .. math::

        w_i = \\arg\\min_{1^T w = 1} \\Big\\| \\phi(x_i) - \\sum_{j \\in N_i} w_j
        \\phi(x_j) \\Big\\|^2 = \\frac{G_i^{-1} 1}{1^T G_i^{-1} 1},
        \\qquad (G_i)_{jk} = k(x_i, x_i) + k(x_j, x_k) - k(x_i, x_j) - k(x_i, x_k).

    ``beta`` is the same closed form with ``v_r`` replaced by ``W alpha_r`` and
    ``c = sum_r sqrt(mu_r)`` (7). The embedding of a point with weights ``w``, training
    point or new one, is ``z = D_beta^{1/2} V_alpha^T w`` (13)-(14),
    ``D_beta = diag(beta_r^2)``, so that squared distances between embeddings are the
    learned metric (16)

    .. math::

        d_\\beta^2(x_i, x) = (W^T b_i - w)^T V_\\alpha D_\\beta V_\\alpha^T (W^T b_i - w).

    **Eigenpairs kept.** ``beta_r`` depends on ``lambda_r`` only through ``c``: a kept
    eigenvector of tiny eigenvalue can still take a large weight when it varies little
    over ``S``. The default ``rank="auto"`` therefore keeps the participation ratio of the
    spectrum, ``ceil((sum_r lambda_r)^2 / sum_r lambda_r^2)`` eigenpairs (1 for a rank-one
    kernel, ``q`` for ``q`` equal eigenvalues); ``rank=None`` keeps every positive
    eigenvalue, as in the paper.

    **Kernel width** (``kernel_gamma="auto"``; the paper sets none). The label-free width
    ``gamma_0`` is, for ``"rbf"``, ``1 / (2 sigma^2)`` with ``sigma`` the median distance
    between points, and :func:`median_heuristic_kernel_gamma` for the other kernels. When
    ``y`` also holds dissimilar information (at least 3 similar and 3 dissimilar pairs,
    or partial labels with at least two classes of 3 labelled points) and the kernel is
    ``"rbf"`` or ``"laplacian"``, the width is chosen among ``gamma_0`` times 1/4, 1/2, 1,
    2 and 4 by 3-fold cross-validation over ``y`` only: each fold learns ``beta`` from its
    training similar pairs and scores its held-out pairs by the ROC AUC of the learned
    distance ``-d_beta^2`` (similar pairs should be nearer than dissimilar ones); the best
    mean score wins, ties going to the width nearest ``gamma_0``. This is an extension of
    the method, which uses similar pairs alone: the dissimilar pairs choose the width and
    have no other effect. With similar pairs alone, ``gamma_0`` is used; on some data sets
    k-means on its embedding then clusters worse than k-means on the inputs.

    Parameters
    ----------
    kernel : {"rbf", "laplacian", "linear", "poly"}, default="rbf"
        Base kernel ``k_hat`` (scikit-learn's pairwise kernels).
    kernel_gamma : "auto" or float, default="auto"
        Kernel coefficient, ``exp(-kernel_gamma ||x - z||^2)`` for ``"rbf"``,
        ``exp(-kernel_gamma ||x - z||_1)`` for ``"laplacian"``, the scale of ``<x, z>``
        for ``"poly"``; ignored by ``"linear"``. ``"auto"``: chosen from the data and
        ``y`` as described above. None is deprecated and means ``"auto"``.
    degree : int, default=3
        Degree of ``"poly"``.
    coef0 : float, default=1.0
        Constant of ``"poly"``.
    n_landmarks : int, float or None, default=None
        None: the full version, which forms the ``n x n`` kernel. An int ``m`` (or a
        fraction of ``n_samples``, rounded up): the scalable version with ``m`` landmarks,
        every point of a similar pair plus random others. ``m >= n_samples`` makes every
        point a landmark (``W = I``), with a warning.
    n_neighbors : int, default=10
        ``K``, the number of nearest landmarks in the locally linear fit; at most ``m``,
        with a warning above it.
    n_iter : int, default=1
        Repetitions of the locally linear fit in the scalable version (the iterative
        extension of the paper's section 3.3, which uses 3): repetition ``t > 1``
        recomputes every point's neighbourhood and weights in the learned kernel of
        repetition ``t - 1``. A fixed count with no stopping test. ``beta`` is a fixed
        point of the repetitions (the centered learned landmark kernel has eigenpairs
        ``(beta_r^2, alpha_r)``), so only ``W`` changes. Ignored by the full version.
    rank : "auto", int or None, default="auto"
        Eigenpairs kept, ``q``. ``"auto"``: the participation ratio of the centered
        kernel (full) or landmark kernel (scalable), see above. An int: at most that many,
        the largest. None: every eigenvalue above ``1e-10`` times the largest.
    eps : float, default=1e-8
        Ridge ``eps * mean(D_S)`` added to ``D_S`` (the paper's footnote 3).
    reg : float, default=1e-3
        Ridge ``reg * tr(G_i) / K`` added to each local Gram matrix (footnote 4).
    random_state : int, RandomState instance or None, default=None
        Draws the extra landmarks, the sample of the median heuristic and the folds of the
        width cross-validation.
    verbose : int, default=0
        ``>= 1``: a progress bar over the blocks of each repetition, with the mean
        reconstruction error, and a summary of the eigen-step, on stderr.
    n_components : "auto", int or None, default="deprecated"
        Deprecated alias of ``rank``; passing it emits a FutureWarning.

    Attributes
    ----------
    beta_ : ndarray of shape (q,)
        Learned weights; ``beta_.sum()`` equals ``sqrt(eigenvalues_).sum()``.
    eigenvalues_ : ndarray of shape (q,)
        Positive eigenvalues of the centered kernel (full) or landmark kernel (scalable),
        decreasing.
    eigenvectors_ : ndarray of shape (n_samples or m, q)
        The matching ``v_r`` (full) or ``alpha_r`` (scalable).
    rank_ : int
        ``q``, the number of eigenpairs kept (the width of the embedding).
    kernel_gamma_ : float or None
        Kernel coefficient used.
    cv_kernel_gammas_ : ndarray of shape (5,) or None
        The widths the cross-validation compared, increasing; None when it did not run.
    cv_scores_ : ndarray of shape (5, 3) or None
        Held-out ROC AUC of each width (rows) in each fold (columns); NaN for a fold whose
        held-out pairs are of one kind. None when the cross-validation did not run.
    side_info_ : PairwiseConstraints or ndarray of shape (n_samples,)
        The side information used: the validated pairs, or the partial labels.
    n_similar_pairs_ : int
        ``|S|``, the number of similar pairs used (for partial labels, every pair of
        labelled points of one class, counted without being listed).
    landmark_indices_ : ndarray of shape (m,)
        Sorted training indices of the landmarks (every point in the full version).
    weights_ : scipy.sparse.csr_matrix of shape (n_samples, m)
        ``W`` of the last complete repetition (the identity in the full version).
    embedding_ : ndarray of shape (n_samples, q)
        Learned embedding of the training points, ``K_beta = embedding_ @ embedding_.T``.
    landmarks_ : ndarray of shape (m, n_features)
        The landmark points (scalable version only).
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training points, kept for the out-of-sample projection (full version only).
    objective_history_ : ndarray of shape (n_iter_,)
        Per repetition, the mean locally linear reconstruction error (9)-(10)
        ``||phi(x_i) - sum_j w_ij phi(x_j)||^2`` of the non-landmark training points, in
        the feature space of that repetition: the objective its weights minimize.
        ``beta``'s objective ``J_S`` is the same in every repetition. ``[0.0]`` in the
        full version, where every point is its own landmark.
    n_iter_ : int
        Repetitions that ran: ``n_iter`` after a complete scalable fit, fewer after an
        interrupt; 1 in the full version. :meth:`transform` replays as many.
    converged_ : bool
        True when the fit ran to the end; False after a Ctrl-C, which keeps the last
        complete repetition.
    fit_time_ : float
        Seconds spent in :meth:`fit`.
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` has string column names.

    See Also
    --------
    RCA : The linear metric learned from the same similar pairs (the paper's baseline).
    psdlearn.NPKL : A nonparametric kernel learned from similar and dissimilar pairs.

    Notes
    -----
    The full version costs ``O(n^2)`` memory and an eigendecomposition of the ``n x n``
    kernel (Lanczos for the few eigenpairs of ``rank="auto"``); the scalable version
    ``O(n m)`` time and ``O(n K + m^2)`` memory. The width cross-validation repeats the
    eigendecomposition for each of its 5 widths; its folds reuse it.

    References
    ----------
    Yeung, D.-Y., Chang, H. & Dai, G. (2007). A scalable kernel-based algorithm for
    semi-supervised metric learning. Proceedings of the 20th International Joint
    Conference on Artificial Intelligence (IJCAI), 1138-1143.

    Schölkopf, B., Smola, A. & Müller, K.-R. (1998). Nonlinear component analysis as a
    kernel eigenvalue problem. Neural Computation, 10(5), 1299-1319.

    Examples
    --------
    >>> import psdlearn as pl
    >>> X, y = pl.datasets.make_xor(400, random_state=0)
    >>> C = pl.PairwiseConstraints.from_labels(y, n_must=50, n_cannot=50, random_state=0)
    >>> model = pl.KernelMetricLearner(n_landmarks=150, random_state=0).fit(X, C)
    >>> model.transform(X[:3]).shape == (3, model.rank_)
    True
    >>> model.cv_scores_.shape
    (5, 3)
    """

    _parameter_constraints = {
        "kernel": [StrOptions(set(KERNELS))],
        "kernel_gamma": [StrOptions({"auto"}), Interval(numbers.Real, 0, None,
                                                        closed="neither"), None],
        "degree": [Interval(numbers.Integral, 1, None, closed="left")],
        "coef0": [Interval(numbers.Real, 0, None, closed="left")],
        "n_landmarks": [Interval(numbers.Integral, 2, None, closed="left"),
                        Interval(RealNotInt, 0, 1, closed="right"), None],
        "n_neighbors": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "rank": [StrOptions({"auto"}), Interval(numbers.Integral, 1, None, closed="left"),
                 None],
        "eps": [Interval(numbers.Real, 0, None, closed="left")],
        "reg": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "n_components": [StrOptions({"auto", _UNSET}),
                         Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    def __init__(self, *, kernel="rbf", kernel_gamma="auto", degree=3, coef0=1.0,
                 n_landmarks=None, n_neighbors=10, n_iter=1, rank="auto", eps=1e-8,
                 reg=1e-3, random_state=None, verbose=0, n_components=_UNSET):
        self.kernel = kernel
        self.kernel_gamma = kernel_gamma
        self.degree = degree
        self.coef0 = coef0
        self.n_landmarks = n_landmarks
        self.n_neighbors = n_neighbors
        self.n_iter = n_iter
        self.rank = rank
        self.eps = eps
        self.reg = reg
        self.random_state = random_state
        self.verbose = verbose
        self.n_components = n_components

    @deprecated("n_components_ is deprecated and will be removed in the next release; "
                "use rank_.")
    @property
    def n_components_(self):
        """Number of eigenpairs kept; deprecated alias of ``rank_``."""
        return self.rank_

    @property
    def _n_features_out(self):
        return self.rank_

    # ------------------------------------------------------------- kernel
    def _kernel(self, A, B):
        if self.kernel == "rbf":
            return rbf_kernel(A, B, gamma=self.kernel_gamma_)
        if self.kernel == "laplacian":
            return laplacian_kernel(A, B, gamma=self.kernel_gamma_)
        if self.kernel == "linear":
            return linear_kernel(A, B)
        return polynomial_kernel(A, B, degree=self.degree, gamma=self.kernel_gamma_,
                                 coef0=self.coef0)

    def _kernel_diag(self, A):
        if self.kernel in ("rbf", "laplacian"):
            return np.ones(len(A))
        sq = np.einsum("ij,ij->i", A, A)
        if self.kernel == "linear":
            return sq
        return (self.kernel_gamma_ * sq + self.coef0) ** self.degree

    @staticmethod
    def _eigenpairs(Kc, rank):
        """Eigenpairs of a centered kernel, as many as ``rank`` asks."""
        return centered_eigenpairs(Kc, participation_ratio(Kc) if rank == "auto" else rank)

    def _log(self, message):
        if self.verbose:
            print(f"KernelMetricLearner: {message}", file=sys.stderr)

    # ---------------------------------------------------------------- fit
    def _resolved_params(self):
        """``(kernel_gamma, rank)`` with the deprecated spellings translated."""
        gamma, rank = self.kernel_gamma, self.rank
        if gamma is None:
            warnings.warn("kernel_gamma=None is deprecated and will be removed in the next "
                          "release; use kernel_gamma='auto' (the same rule).",
                          FutureWarning, stacklevel=4)
            gamma = "auto"
        if not (isinstance(self.n_components, str) and self.n_components == _UNSET):
            warnings.warn("n_components was renamed rank and will be removed in the next "
                          f"release; pass rank={self.n_components!r}.", FutureWarning,
                          stacklevel=4)
            rank = self.n_components
        return gamma, rank

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn ``beta`` (and the landmark weights) from the side information ``y``.

        ``y`` takes the forms every psdlearn estimator takes. The similar set ``S`` is:

        - for a :class:`psdlearn.PairwiseConstraints` or an ``(m, 3)`` array of
          ``[i, j, +1/-1]`` rows: the must-link pairs. The cannot-links serve only to
          choose ``kernel_gamma="auto"`` (see the class description); otherwise they are
          dropped with a warning.
        - for partial labels of shape ``(n_samples,)``, ``-1`` for unlabelled: every pair
          of labelled points of one class. There are ``sum_c n_c (n_c - 1) / 2`` of them,
          so they are never listed: ``D_S`` is the within-class scatter
          ``sum_c n_c sum_{i in c} (v_ri - mean_c v_r)^2 / |S|``, exactly the mean over
          those pairs, in ``O(n_labelled)`` per eigenvector.

        An ``(s, 2)`` array of index pairs is refused (it reads as two target columns):
        pass ``PairwiseConstraints(pairs, np.ones(s))``. In the scalable version every
        point of ``S`` is a landmark.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense features (sparse input is rejected).
        y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
            Side information, as above; required.

        Returns
        -------
        self : KernelMetricLearner
            Fitted estimator.

        Raises
        ------
        ValueError
            ``y`` is missing, gives no similar pair, or has more points in ``S`` than
            ``n_landmarks``; the centered kernel has no positive eigenvalue.
        """
        with fitting(self):
            start = time.perf_counter()
            X = validate_data(self, X, dtype=np.float64, order="C", ensure_min_samples=2)
            gamma, rank = self._resolved_params()
            n = X.shape[0]
            similar = similar_set(y, n, "KernelMetricLearner", warn_cannot=False)
            side = check_side_info(y, n, accept=("labels", "pairs"))
            self.side_info_ = side.constraints if side.kind == "pairs" else side.labels
            rng = check_random_state(self.random_state)
            if gamma == "auto":
                with phase("the kernel width (median heuristic)"):
                    base = median_heuristic_kernel_gamma(X, self.kernel, rng)
                if self.kernel == "rbf":
                    base *= RBF_WIDTH_FACTOR
            else:
                base = float(gamma)
            landmarks = (None if self.n_landmarks is None
                         else self._landmarks(X, similar, rng))
            folds = None
            if gamma == "auto" and self.kernel in CV_KERNELS:
                folds = constraint_folds(y, n, rng)
            if side.kind == "pairs" and side.constraints.n_cannot and folds is None:
                warnings.warn(f"{side.constraints.n_cannot} cannot-link pair(s) ignored: "
                              "KernelMetricLearner learns from similar (must-link) pairs and "
                              "uses cannot-links only to choose kernel_gamma='auto' for the "
                              f"{' and '.join(CV_KERNELS)} kernels, from at least 3 of each.",
                              UserWarning, stacklevel=3)
            self.n_similar_pairs_ = similar.n_pairs
            self.cv_kernel_gammas_ = self.cv_scores_ = None
            self.kernel_gamma_ = base
            with phase("the kernel eigen-solve" if folds is None
                       else "the kernel eigen-solves of the width cross-validation"):
                if folds is None:
                    basis = self._basis(X, landmarks, rank)
                else:
                    basis = self._cross_validate_width(X, landmarks, rank, folds, base)
            with phase("the reweighting" if landmarks is None
                       else "the reweighting and landmark weights"):
                if landmarks is None:
                    self._fit_full(X, similar, basis)
                else:
                    self._fit_landmarks(X, similar, landmarks, basis)
            self.rank_ = len(self.beta_)
            train = X if landmarks is None else self.landmarks_
            self._training = TrainingRows(train)
            self._training_index = np.arange(n) if landmarks is None else landmarks
            self.fit_time_ = time.perf_counter() - start
        return self

    def fit_transform(self, X, y=None, **fit_params):
        """Fit and return ``embedding_``, the learned embedding of ``X``.

        Equal to ``fit(X, y).transform(X)``, without recomputing it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points.
        y : PairwiseConstraints, array-like of shape (m, 3) or (n_samples,)
            Side information, as in :meth:`fit`.
        **fit_params : dict
            Passed to :meth:`fit` (which takes none).

        Returns
        -------
        ndarray of shape (n_samples, rank_)
            The learned embedding.
        """
        return self.fit(X, y, **fit_params).embedding_.copy()

    def _basis(self, X, landmarks, rank):
        """Eigenpairs of the centered kernel at ``kernel_gamma_``: of the training points
        (full version, with the centering means) or of the landmarks (scalable)."""
        if landmarks is None:
            K = self._kernel(X, X)
            col_mean = K.mean(axis=0)
            all_mean = float(col_mean.mean())
            K -= col_mean[None, :]
            K -= col_mean[:, None]
            K += all_mean
            lam, V = self._eigenpairs(K, rank)
            return {"lam": lam, "V": V, "col_mean": col_mean, "all_mean": all_mean}
        L_hat = self._kernel(X[landmarks], X[landmarks])
        lam, V = self._eigenpairs(center_kernel(L_hat), rank)
        return {"lam": lam, "V": V, "L_hat": L_hat}

    def _unweighted_features(self, X, basis, landmarks, rows):
        """``B`` with the embedding of the samples ``rows`` equal to ``B * beta``: rows of
        ``v_r`` (full), or ``W alpha_r`` with the first repetition's weights (scalable)."""
        V = basis["V"]
        if landmarks is None:
            return V[rows]
        pos = np.minimum(np.searchsorted(landmarks, rows), len(landmarks) - 1)
        is_landmark = landmarks[pos] == rows
        B = np.empty((len(rows), V.shape[1]))
        B[is_landmark] = V[pos[is_landmark]]
        others = rows[~is_landmark]
        if len(others):
            idx, w, _ = local_weights(self._kernel_diag(X[others]),
                                      self._kernel(X[others], X[landmarks]), basis["L_hat"],
                                      min(self.n_neighbors, len(landmarks)), self.reg)
            B[~is_landmark] = np.einsum("bk,bkq->bq", w, V[idx])
        return B

    def _cross_validate_width(self, X, landmarks, rank, folds, base):
        """Score each width of ``CV_FACTORS * base`` on the folds; set ``kernel_gamma_``,
        ``cv_kernel_gammas_``, ``cv_scores_`` and return the chosen width's basis."""
        rows = np.unique(np.concatenate([np.concatenate([train.points, pairs.ravel()])
                                         for train, pairs, _ in folds]))
        scores = np.full((len(CV_FACTORS), len(folds)), np.nan)
        chosen = best = None
        for g, factor in enumerate(CV_FACTORS):
            self.kernel_gamma_ = factor * base
            try:
                basis = self._basis(X, landmarks, rank)
            except ValueError:  # no positive eigenvalue at this width
                continue
            B = self._unweighted_features(X, basis, landmarks, rows)
            c = float(np.sqrt(basis["lam"]).sum())
            for f, (train, pairs, same) in enumerate(folds):
                try:
                    beta = optimal_beta(train.dispersion(B, rows), c, self.eps)
                except ValueError:  # D_S singular on this fold (eps=0)
                    continue
                scores[g, f] = held_out_auc(B, rows, beta, pairs, same)
            mean = np.nanmean(scores[g]) if np.isfinite(scores[g]).any() else -np.inf
            # CV_FACTORS lists the label-free width first: ties keep the earlier width
            if chosen is None or mean > best:
                chosen, best = (factor, basis), mean
            self._log(f"kernel_gamma = {factor:g} x {base:.4g}: held-out AUC {mean:.4f}.")
        if chosen is None:
            raise ValueError("the centered kernel has no positive eigenvalue at any width "
                             "of the cross-validation: all points coincide in feature "
                             "space.")
        factor, basis = chosen
        order = np.argsort(CV_FACTORS)
        self.kernel_gamma_ = factor * base
        self.cv_kernel_gammas_ = base * np.asarray(CV_FACTORS)[order]
        self.cv_scores_ = scores[order]
        return basis

    def _fit_full(self, X, similar, basis):
        n = len(X)
        lam, V = basis["lam"], basis["V"]
        beta = optimal_beta(similar.dispersion(V, np.arange(n)), float(np.sqrt(lam).sum()),
                            self.eps)
        self._log(f"full version, {len(lam)} eigenpairs of the {n} x {n} centered kernel, "
                  f"|S| = {similar.n_pairs}.")
        self.eigenvalues_, self.eigenvectors_, self.beta_ = lam, V, beta
        self.embedding_ = V * beta
        self.landmark_indices_ = np.arange(n)
        self.weights_ = sp.identity(n, format="csr")
        self.n_iter_, self.converged_ = 1, True
        self.objective_history_ = np.zeros(1)
        self.X_fit_ = X
        self._col_mean, self._all_mean = basis["col_mean"], basis["all_mean"]

    def _landmarks(self, X, similar, rng):
        """Sorted landmark indices: every point of ``S``, then points drawn at random
        (from the rows in value order, so that any row order draws the same points)."""
        n = len(X)
        m = self.n_landmarks
        m = math.ceil(m * n) if isinstance(m, numbers.Real) and not isinstance(
            m, numbers.Integral) else int(m)
        if m > n:
            warnings.warn(f"n_landmarks={self.n_landmarks} exceeds n_samples={n}: every "
                          "sample is a landmark (W = I).", UserWarning, stacklevel=4)
        m = min(m, n)
        constrained = similar.points
        if len(constrained) > m:
            raise ValueError(
                f"n_landmarks={self.n_landmarks} gives {m} landmarks, fewer than the "
                f"{len(constrained)} points in similar pairs, which must all be landmarks "
                "(Yeung et al. 2007, section 3.1): raise n_landmarks or pass fewer pairs.")
        if self.n_neighbors > m:
            warnings.warn(f"n_neighbors={self.n_neighbors} exceeds the {m} landmarks: "
                          f"each point is fitted on all {m}.", UserWarning, stacklevel=4)
        order = value_order(X)
        others = order[~np.isin(order, constrained)]
        extra = rng.choice(others, m - len(constrained), replace=False)
        return np.sort(np.concatenate([constrained, extra]))

    def _fit_landmarks(self, X, similar, landmarks, basis):
        n, m = len(X), len(landmarks)
        self.landmarks_ = X[landmarks]
        self._L_hat = basis["L_hat"]
        mu, A = basis["lam"], basis["V"]
        # every point of S is a landmark, whose row of W is an indicator (eq. 8)
        beta = optimal_beta(similar.dispersion(A, landmarks), float(np.sqrt(mu).sum()),
                            self.eps)
        self._log(f"scalable version, {len(mu)} eigenpairs of the {m} x {m} centered "
                  f"landmark kernel, |S| = {similar.n_pairs}.")
        self.eigenvalues_, self.eigenvectors_, self.beta_ = mu, A, beta
        self.landmark_indices_ = landmarks
        # learned features of the landmarks, D_beta^{1/2} V_alpha^T b_j as rows
        self._landmark_embedding = A * beta
        is_landmark = np.zeros(n, dtype=bool)
        is_landmark[landmarks] = True
        rest = np.flatnonzero(~is_landmark)
        k = min(self.n_neighbors, m)
        indices = np.empty((n, k), dtype=np.int64)
        weights = np.zeros((n, k))
        indices[landmarks] = np.arange(m)[:, None]
        weights[landmarks, 0] = 1.0
        step = self._block_rows()
        history, last, interrupted = [], None, False
        with progress_bar(self.verbose, total=self.n_iter * -(-len(rest) // step),
                          desc="KernelMetricLearner", unit="block") as bar:
            try:
                for idx, w, err in self._repetitions(X[rest], self.n_iter, bar):
                    history.append(float(err.mean()) if len(err) else 0.0)
                    # one store: a Ctrl-C between two statements cannot leave the kept
                    # repetition and the count of repetitions out of step
                    last = (idx, w, len(history))
                    bar.set_postfix(repetition=len(history), error=f"{history[-1]:.4g}",
                                    refresh=False)
            except KeyboardInterrupt:
                if last is None:
                    raise
                interrupted = True
        indices[rest], weights[rest], n_done = last
        del history[n_done:]
        if interrupted:
            warn_interrupted("KernelMetricLearner", n_done, unit="repetitions",
                             stacklevel=5)
        W = _sparse_rows(indices, weights, m)
        self.weights_ = W
        self.embedding_ = np.asarray(W @ self._landmark_embedding)
        self.objective_history_ = np.asarray(history)
        self.n_iter_, self.converged_ = len(history), not interrupted

    def _block_rows(self):
        """Rows per block: a block's kernel rows and ``E[idx]`` stay near 2^20 entries."""
        m, q = self._landmark_embedding.shape
        return max(1, _BLOCK_ELEMENTS // max(m, min(self.n_neighbors, m) * q))

    def _repetitions(self, Xq, n_iter, bar):
        """Neighbours, weights and errors of new points after each repetition, in turn.

        Repetition 1 fits ``phi(x)`` with the base kernel; repetition ``t > 1`` fits the
        learned features ``z = D_beta^{1/2} V_alpha^T w`` of repetition ``t - 1`` with the
        learned (linear) kernel on the landmark features ``E`` (the rows of
        ``V_alpha D_beta^{1/2}``), exactly as for the training points: ``z = E^T w``,
        kernel row ``E z``, ``k(z, z) = ||z||^2``. A repetition is yielded only once every
        block of it is done.

        Yields
        ------
        indices : ndarray of shape (n_new, K), int64
        weights : ndarray of shape (n_new, K)
        errors : ndarray of shape (n_new,)
            Reconstruction errors (9) in the repetition's feature space.
        """
        E = self._landmark_embedding
        EE = E @ E.T
        k = min(self.n_neighbors, len(E))
        step = self._block_rows()
        idx = w = None
        for t in range(n_iter):
            new_idx = np.empty((len(Xq), k), dtype=np.int64)
            new_w = np.empty((len(Xq), k))
            err = np.empty(len(Xq))
            for start in range(0, len(Xq), step):
                rows = slice(start, start + step)
                if t == 0:
                    Xb = Xq[rows]
                    out = local_weights(self._kernel_diag(Xb),
                                        self._kernel(Xb, self.landmarks_), self._L_hat, k,
                                        self.reg)
                else:
                    Z = np.einsum("bk,bkq->bq", w[rows], E[idx[rows]])
                    out = local_weights(np.einsum("bq,bq->b", Z, Z), Z @ E.T, EE, k,
                                        self.reg)
                new_idx[rows], new_w[rows], err[rows] = out
                bar.update(1)
            idx, w = new_idx, new_w
            yield idx, w, err

    # ---------------------------------------------------------- transform
    def transform(self, X):
        """Learned embedding of points.

        A row of ``X`` equal to a training row (a landmark, in the scalable version) gets
        that row of ``embedding_``. Any other row is embedded out of sample. Full version:
        the kernel-PCA projection with the training centering,
        ``z_r(x) = beta_r / lambda_r * sum_j v_rj k_c(x, x_j)``, where
        ``k_c(x, x_j) = k(x, x_j) - mean_l k(x, x_l) - mean_l k(x_l, x_j) + mean_lm k``.
        Scalable version: the locally linear weights ``w`` of ``x`` on its nearest
        landmarks (the ``n_iter_`` repetitions replayed) and
        ``z = D_beta^{1/2} V_alpha^T w`` (eq. 14), as for the training points. Each row is
        embedded on its own: a batch gives the rows of its points one at a time.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)
            Points to embed.

        Returns
        -------
        ndarray of shape (n_new, rank_)
            Their learned embedding.
        """
        check_is_fitted(self, "beta_")
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
        match = self._training_rows(X)
        out = np.empty((len(X), self.rank_))
        found = match >= 0
        out[found] = self.embedding_[match[found]]
        if not found.all():
            out[~found] = self._out_of_sample(X[~found])
        return out

    def _training_rows(self, X):
        """Training index of each row of ``X`` that equals a kept training row, else -1."""
        match = self._training.match(X)
        return np.where(match >= 0, self._training_index[match], -1)

    def _out_of_sample(self, X):
        if self.n_landmarks is None:
            proj = self.eigenvectors_ * (self.beta_ / self.eigenvalues_)
            out = np.empty((len(X), len(self.beta_)))
            step = max(1, _BLOCK_ELEMENTS // len(self.X_fit_))
            for start in range(0, len(X), step):
                Kx = self._kernel(X[start:start + step], self.X_fit_)
                Kx -= Kx.mean(axis=1, keepdims=True)
                Kx -= self._col_mean[None, :] - self._all_mean
                out[start:start + step] = Kx @ proj
            return out
        *_, (idx, w, _) = self._repetitions(X, self.n_iter_, progress_bar(0))
        return np.asarray(_sparse_rows(idx, w, len(self.landmarks_))
                          @ self._landmark_embedding)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = False  # validate_data rejects sparse X
        return tags
