"""The generalized Nystrom estimator (Lan et al. 2017): a semi-supervised low-rank kernel.

Standard Nystrom approximates ``K ~= E W^+ E^T`` with ``E = k(X, Z)`` (n x m) and
``W = k(Z, Z)`` on ``m`` landmarks ``Z``. The generalized method keeps ``E`` and learns the
inverse dictionary kernel ``S`` (m x m) from side information:

.. math::

    \\min_{S \\succeq 0} \\; \\lambda \\|S - \\beta W^+\\|_F^2
        + \\|E_l S E_l^T - K^*_l\\|_F^2 \\qquad \\text{(eq. 7)}

with ``K^*_l`` the ideal kernel on the points with side information (1 within a class or
must-link group, 0 across), so the learned kernel is ``E S E^T = Q Q^T`` with features
``Q = E U Lambda^{1/2}`` (``S = U Lambda U^T``), computable for any point, seen or new.
With several kernel coefficients (§4) the kernel is ``sum_j E^(j) T^(j) E^(j)T`` and the
features are block-diagonal (§4.2).
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.linalg import block_diag, pinvh
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import PAIRWISE_KERNEL_FUNCTIONS, pairwise_kernels, rbf_kernel
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from psdlearn._compat import BaseEstimator, Interval, StrOptions, _fit_context
from psdlearn._exact_knn import value_order
from psdlearn._interrupt import fitting, phase
from psdlearn._linalg import psd_factor
from psdlearn._progress import progress_bar, warn_interrupted
from psdlearn.constraints import PairwiseConstraints, check_side_info
from psdlearn.metrics import centered_alignment
from psdlearn.nystroem._beta import heuristic_beta, iterative_beta, least_squares_beta
from psdlearn.nystroem._cv import race
from psdlearn.nystroem._multi import solve_multiple
from psdlearn.nystroem.dictionary import QuadraticData, solve_dictionary

__all__ = ["DEFAULT_LAMBDAS", "GeneralizedNystroem", "mean_squared_distance"]

#: The lambda grid of Lan et al. (2017) §6.2, ``10^-5 ... 10^5``.
DEFAULT_LAMBDAS = tuple(10.0**k for k in range(-5, 6))
#: Above this many samples the k-means landmarks come from MiniBatchKMeans.
MINIBATCH_THRESHOLD = 10_000
#: Eigenvalues of ``W`` below this fraction of the largest are treated as zero in ``W^+``:
#: ``E`` carries rounding errors of about 1e-16, which ``1 / w`` would amplify beyond use.
PINV_RTOL = 1e-10
#: Draws of the stratified 3-fold split whose held-out accuracies ``lambda_selection="cv"``
#: averages: the mean over more splits depends less on which labelled points share a fold
#: (``GeneralizedNystroem``, ``lambda_selection``).
CV_REPEATS = 3
#: Up to this dictionary size the solvers run BLAS on one thread: their matrices are small
#: and threading costs more than it gains (measured 15x slower eigh at m = 150 on 2 busy
#: cores).
SINGLE_THREAD_MAX_M = 512
#: k-means runs on one thread (BLAS and OpenMP) up to this many multiply-adds ``n d m`` per
#: Lloyd iteration: k-means++ draws the ``m`` centres one at a time, each step a parallel
#: region of about ``n d log m`` work, where waking threads costs far more than they save
#: (digits, ``n d m = 2e7``: 1.5 CPU s on 2 threads against 0.07 s on one, busy machine).
KMEANS_SINGLE_THREAD_WORK = 200_000_000
#: Sparse input is clustered (k-means landmarks) as a dense copy up to this many entries
#: (256 MiB of float64), so that sparse and dense input give the same landmarks.
DENSE_KMEANS_MAX_ENTRIES = 1 << 25


def mean_squared_distance(X):
    """Mean of ``||x_i - x_j||^2`` over the pairs ``i != j``, in ``O(n d)``.

    ``sum_{i,j} ||x_i - x_j||^2 = 2 n sum_i ||x_i||^2 - 2 ||sum_i x_i||^2``, divided by the
    ``n (n - 1)`` ordered pairs with ``i != j``.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)

    Returns
    -------
    float
    """
    n = X.shape[0]
    sq = X.multiply(X).sum() if sp.issparse(X) else np.einsum("ij,ij->", X, X)
    mean = np.asarray(X.sum(axis=0)).ravel()
    total = 2.0 * n * float(sq) - 2.0 * float(mean @ mean)
    return max(total, 0.0) / (n * (n - 1))


def _one_hot(values):
    """``(codes, Y)``: integer codes of ``values`` and their one-hot matrix."""
    _, codes = np.unique(values, return_inverse=True)
    codes = codes.ravel()
    Y = np.zeros((len(values), int(codes.max(initial=-1)) + 1))
    Y[np.arange(len(values)), codes] = 1.0
    return codes, Y


def _data_term(E, Y, kind):
    """:class:`QuadraticData` of the labels (one block) or of the must-link groups."""
    Y = Y[:, Y.sum(axis=0) > 0]
    counts = Y.sum(axis=0)
    b = E.T @ Y
    if kind == "labels":
        blocks = [E.T @ E]
    else:  # the mask of §3.3 keeps the within-group pairs: one block per group
        blocks = [E[Y[:, g] > 0].T @ E[Y[:, g] > 0] for g in range(Y.shape[1])]
    return QuadraticData(blocks, b @ b.T, float(np.sum(counts**2)))


class _SideInfo:
    """Points with side information, their one-hot matrix and its kind."""

    def __init__(self, index, values, kind):
        self.index = index
        self.codes, self.Y = _one_hot(values)
        self.kind = kind


class GeneralizedNystroem(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Generalized Nystrom low-rank kernel learning from partial labels or must-links.

    Standard Nystrom approximates a kernel matrix by ``K ~= E W^+ E^T`` with
    ``E = k(X, Z)`` (n x m) and ``W = k(Z, Z)`` on ``m`` landmarks ``Z``. The
    generalized method of Lan et al. (2017) keeps ``E`` and learns the inverse
    dictionary kernel ``S`` (m x m) from the side information of ``l`` points, with the
    prior ``S_0 = beta W^+`` (eq. 7):

    .. math::

        \\min_{S \\succeq 0} \\; \\lambda \\|S - S_0\\|_F^2
            + \\|E_l S E_l^\\top - K^*_l\\|_F^2 ,

    where ``E_l`` holds the rows of ``E`` of the points with side information and
    ``K^*_l`` is their ideal kernel: 1 for two points of one class (or one must-link
    group), 0 otherwise. The fit starts from the closed-form solution of (7) without
    the PSD constraint, ``S + P S P^T = Q`` with ``P = E_l^T E_l / sqrt(lambda)`` and
    ``Q = S_0 + E_l^T K^*_l E_l / lambda`` (eqs. 12-13), projected on the PSD cone, then
    runs projected gradient with the Armijo rule (eqs. 10-11). ``lambda`` is chosen
    among ``lambdas`` by the alignment criterion (eqs. 14-15),

    .. math::

        \\lambda^* = \\arg\\max_\\lambda \\; \\rho[S(\\lambda), S_0] \\cdot
            \\rho[E_l S(\\lambda) E_l^\\top, K^*_l], \\qquad
        \\rho[K, K'] = \\frac{\\langle K_c, K'_c \\rangle_F}{\\|K_c\\|_F \\|K'_c\\|_F},

    or by cross-validation on the labelled points (``lambda_selection``). With several
    rbf kernels (``kernel_gammas``, §4) the kernel is
    ``sum_j E^(j) T^(j) E^(j)T`` with ``T^(j) = alpha_j S^(j)``, learned by alternating
    the ``T^(j)`` updates (problem (7) for each in turn) and the weights
    ``alpha_j = max(tr(S_0^(j) T^(j)) / tr(S_0^(j) S_0^(j)), 0)`` (eq. 19).

    :meth:`transform` returns features ``Q = E(X) U Lambda^{1/2}`` with
    ``S = U Lambda U^T``, so that ``Q Q^T = E(X) S E(X)^T`` is the learned kernel, for
    any point, seen or new (§4.2): feed them to a linear model. Fitting costs
    ``O(n m d)`` for ``E`` plus ``O(m^2 l + m^3)`` per iteration; :meth:`transform`
    costs ``O(n m d)``.

    Parameters
    ----------
    n_landmarks : float in (0, 1] or int >= 1, default=0.1
        Number of landmarks ``m``: a fraction of ``n_samples`` or a count. With
        ``kernel_gammas`` the landmarks are shared and their number is
        ``m_bar = round(m * tau / M)`` (§4.2).
    landmarks : {"kmeans", "random"} or array-like of shape (m, n_features), \
default="kmeans"
        k-means centres (MiniBatchKMeans above 10,000 samples, one initialisation), a
        random subset of ``X``, or given points.
    kernel : str or callable, default="rbf"
        ``"rbf"`` is ``exp(-kernel_gamma * ||x - z||^2)``; any other name of
        :data:`sklearn.metrics.pairwise.PAIRWISE_KERNEL_FUNCTIONS` or a callable is
        evaluated by :func:`sklearn.metrics.pairwise.pairwise_kernels` with
        ``kernel_params``.
    kernel_gamma : "auto" or float > 0, default="auto"
        Coefficient of the rbf kernel. ``"auto"`` is ``1 / b`` with ``b`` the mean
        pairwise squared distance of ``X`` (computed in ``O(n d)``): the kernel
        ``exp(-||x - z||^2 / b)`` of Lan et al. (2017). Ignored by other kernels (use
        ``kernel_params``).
    kernel_gammas : array-like of shape (M,), default=None
        Multiple kernels (§4): rbf coefficients ``gamma_j = kernel_gammas[j] *
        kernel_gamma_``, factors of the single coefficient (the paper uses ``2^-4, ...,
        2^4``). Requires ``kernel="rbf"``, class labels as ``y`` and a ``beta`` other
        than ``"iterative"``. None: a single kernel.
    kernel_params : dict, default=None
        Extra arguments of a non-rbf kernel.
    lambdas : array-like of positive floats, default=(1e-5, 1e-4, ..., 1e5)
        Candidates for the trade-off ``lambda`` of (7) (the paper's grid); the one with
        the best score of ``lambda_selection`` is kept, the larger ``lambda`` (closer to
        the prior) on a tie.
    beta : {"least_squares", "heuristic", "iterative"} or float, default="least_squares"
        Scale of the prior ``S_0 = beta W^+``. ``"least_squares"``: the ``beta`` at
        which the prior kernel ``beta E_l W^+ E_l^T`` fits the ideal kernel best in
        Frobenius norm. ``"heuristic"``: the paper's eq. (8),
        ``beta = ||E_l^+ K^*_l (E_l^T)^+||_F / ||W^+||_F``, which matches the norms of
        two pseudo-inverses. ``"iterative"``: the joint minimisation over ``beta`` and
        ``S`` of the paper's Appendix A, started from (8) (single kernel only). A
        float: that value.
    tau : float, default=3.0
        Cost multiplier of the multiple-kernel case, ``m_bar = m tau / M`` (§4.2).
    max_iter : int, default=100
        Projected-gradient iterations of the final fit (single kernel). Multiple
        kernels: at most ``max_iter // 5`` alternations, each ``T^(j)`` update at most
        ``max_iter // 10`` projected-gradient iterations.
    tol : float, default=1e-5
        Stop when an iteration decreases the objective (7) (multiple kernels: (17)) by
        at most ``tol`` relatively.
    random_state : int, RandomState instance or None, default=None
        Seeds the landmark selection and the folds of ``lambda_selection="cv"``.
    verbose : int, default=0
        ``>= 1``: a progress bar on stderr over the projected-gradient iterations (or
        alternations) of every ``lambda`` tried.
    lambda_selection : {"auto", "alignment", "cv"}, default="auto"
        How ``lambda`` is chosen among ``lambdas``. ``"alignment"``: the paper's
        criterion (15) above, on the points that fit ``S``. ``"cv"``: stratified 3-fold
        cross-validation on the labelled points, repeated over 3 draws of the folds:
        ``S`` is fit on two folds, a ``LinearSVC(C=1)`` on their features, and its
        accuracy on the third fold is averaged over the 9 splits (single kernel and
        class labels with at least 3 labelled points per class). ``"auto"``: ``"cv"``
        where it applies (and ``lambdas`` offers a choice), ``"alignment"`` otherwise
        (must-link groups, ``kernel_gammas``, a class with fewer than 3 labelled
        points). Criterion (15) tends to fit the few labelled points at the expense of
        the others. Cross-validation fits the candidates on the splits only (each from
        the closed form (13), to a relative decrease of 1e-2) and the chosen ``lambda``
        once on all points. From 100 labelled points the candidates race: all are scored
        on the first draw of the folds, the best 3 of them on the other two draws.

    Attributes
    ----------
    landmarks_ : ndarray of shape (m, ``n_features_in_``)
        The landmarks ``Z``.
    kernel_gamma_ : float or None
        Coefficient of the rbf kernel (None for other kernels).
    kernel_gammas_ : ndarray of shape (M,) or None
        Coefficients of the multiple kernels (None with a single kernel).
    side_info_ : ndarray of shape (n_samples,), PairwiseConstraints or None
        The side information the fit used: the partial labels (``-1`` = unlabelled),
        the must-link pairs (cannot-links dropped), or None for the standard Nystrom
        kernel (``y=None``, or ``y`` without a labelled point or must-link pair).
        ``fit(X, side_info_)`` gives the same model.
    dictionary_ : ndarray of shape (m, m) or (M m_bar, M m_bar)
        Learned ``S`` (multiple kernels: block-diagonal ``T = diag(T^(1), ...,
        T^(M))``).
    prior_ : ndarray of shape (m, m) or (M m_bar, M m_bar)
        ``S_0 = beta W^+`` (multiple kernels: ``diag(S_0^(j))``).
    beta_ : float or ndarray of shape (M,)
        Scale of the prior, per kernel with ``kernel_gammas``.
    lambda_ : float or None
        Chosen ``lambda`` (None without side information: then ``S = W^+``).
    lambda_selection_ : {"alignment", "cv"} or None
        The selection that chose ``lambda_`` (``lambda_selection`` with ``"auto"``
        resolved); None without side information.
    lambda_scores_ : ndarray of shape (len(lambdas),)
        Score of each candidate: criterion (15) (multiple kernels: its product over the
        kernels) or the cross-validated accuracy; NaN for candidates not scored (no side
        information, a single class, an interrupted fit, or a candidate of
        ``lambda_selection="cv"`` dropped by the race after the first draw of the folds).
    kernel_weights_ : ndarray of shape (M,) or None
        ``alpha_j`` (None with a single kernel).
    feature_map_ : ndarray of shape (m or M m_bar, ``rank_``)
        ``U Lambda^{1/2}`` with ``dictionary_ = U Lambda U^T`` (block-diagonal for
        several kernels): ``transform(X) = k(X, landmarks_) @ feature_map_``. It maps
        kernel values to features, not ``X`` itself, hence not ``components_``.
    rank_ : int
        Number of output features, the rank of ``dictionary_``.
    objective_history_ : list of float
        Objective (7) (multiple kernels: (17)) of the final fit at ``lambda_``: its
        start, then every iteration.
    n_iter_ : int
        Projected-gradient iterations (multiple kernels: alternations) of the final fit
        at ``lambda_``; 0 without side information.
    converged_ : bool
        Whether that fit met ``tol`` (True without side information); False after
        ``max_iter`` or an interrupted fit.
    fit_time_ : float
        Seconds spent in :meth:`fit`.
    n_features_in_ : int
        Number of features seen during :meth:`fit`.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen during :meth:`fit`, when ``X`` has string column
        names.

    See Also
    --------
    sklearn.kernel_approximation.Nystroem : The unsupervised Nystrom features.

    Notes
    -----
    Two defaults differ from the paper: ``beta="least_squares"`` instead of eq. (8),
    whose ``beta`` can be orders of magnitude large and then shrinks the
    regularization of a linear model on the features by that factor, and
    ``lambda_selection="auto"`` instead of criterion (15). With few labelled points the
    chosen ``lambda`` is noisy; when in doubt, compare with ``fit(X)`` (the standard
    Nystrom kernel on the same landmarks) by cross-validation downstream.

    A Ctrl-C (``KeyboardInterrupt``) during the iterations stops the fit: the estimator
    keeps the last complete iterate (the ``lambda`` chosen among the candidates scored
    so far), warns with :class:`psdlearn._progress.FitInterruptedWarning` and sets
    ``converged_ = False``.

    References
    ----------
    Lan, L., Zhang, K., Ge, H., Cheng, W., Liu, J., Rauber, A., Li, X.-L., Wang, J. &
    Zha, H. (2017). Low-rank decomposition meets kernel learning: a generalized Nystrom
    method. Artificial Intelligence 250, 1-15.

    Examples
    --------
    >>> import numpy as np
    >>> import psdlearn as pl
    >>> from sklearn.svm import LinearSVC
    >>> X, y = pl.datasets.load("iris")
    >>> y_partial = np.full_like(y, -1)
    >>> y_partial[::10] = y[::10]
    >>> g = pl.GeneralizedNystroem(n_landmarks=20, random_state=0).fit(X, y_partial)
    >>> Q = g.transform(X)
    >>> Q.shape[0]
    150
    >>> clf = LinearSVC().fit(Q[y_partial >= 0], y[y_partial >= 0])
    """

    _parameter_constraints = {
        "n_landmarks": [Interval(numbers.Real, 0, 1, closed="right"),
                        Interval(numbers.Integral, 1, None, closed="left")],
        "landmarks": [StrOptions({"kmeans", "random"}), "array-like"],
        "kernel": [StrOptions(set(PAIRWISE_KERNEL_FUNCTIONS)), callable],
        "kernel_gamma": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither")],
        "kernel_gammas": ["array-like", None],
        "kernel_params": [dict, None],
        "lambdas": ["array-like"],
        "beta": [StrOptions({"least_squares", "heuristic", "iterative"}),
                 Interval(numbers.Real, 0, None, closed="neither")],
        "lambda_selection": [StrOptions({"auto", "alignment", "cv"})],
        "tau": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, *, n_landmarks=0.1, landmarks="kmeans", kernel="rbf",
                 kernel_gamma="auto", kernel_gammas=None, kernel_params=None,
                 lambdas=DEFAULT_LAMBDAS, beta="least_squares", tau=3.0, max_iter=100,
                 tol=1e-5, random_state=None, verbose=0, lambda_selection="auto"):
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.kernel = kernel
        self.kernel_gamma = kernel_gamma
        self.kernel_gammas = kernel_gammas
        self.kernel_params = kernel_params
        self.lambdas = lambdas
        self.lambda_selection = lambda_selection
        self.beta = beta
        self.tau = tau
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ helpers
    def _kernel(self, X, Z, gamma):
        if self.kernel == "rbf":
            return rbf_kernel(X, Z, gamma=gamma)
        return pairwise_kernels(X, Z, metric=self.kernel, **(self.kernel_params or {}))

    def _n_landmarks(self, n):
        if isinstance(self.n_landmarks, numbers.Integral):
            m = int(self.n_landmarks)
        else:
            m = max(1, int(round(float(self.n_landmarks) * n)))
        if m > n:
            raise ValueError(f"n_landmarks={self.n_landmarks} exceeds the n={n} samples.")
        return m

    def _select_landmarks(self, X, m, rng):
        if not isinstance(self.landmarks, str):
            Z = np.asarray(self.landmarks, dtype=np.float64)
            if Z.ndim != 2 or Z.shape[1] != X.shape[1] or not np.all(np.isfinite(Z)):
                raise ValueError(
                    f"landmarks must be a finite (m, {X.shape[1]}) array, got {Z.shape}."
                )
            return Z
        # the draws (the random rows, k-means' initialisation and batches) are made on the
        # rows in value order, so that any row order of X gives the same landmarks
        order = value_order(X)
        if self.landmarks == "random":
            Z = X[order[np.sort(rng.choice(X.shape[0], size=m, replace=False))]]
            return Z.toarray() if sp.issparse(Z) else np.asarray(Z)
        if X.shape[0] > MINIBATCH_THRESHOLD:
            # only the centres are used: no labels of all points after the last batch
            km = MiniBatchKMeans(n_clusters=m, n_init=1, batch_size=max(1024, 10 * m),
                                 compute_labels=False, random_state=rng)
        else:
            km = KMeans(n_clusters=m, n_init=1, random_state=rng)
        # scikit-learn's sparse and dense k-means round distances differently, which
        # decides ties (binary features): cluster a dense copy where it is affordable, so
        # that the same values give the same landmarks in either container
        if sp.issparse(X) and X.shape[0] * X.shape[1] <= DENSE_KMEANS_MAX_ENTRIES:
            X = X.toarray()
        small = X.shape[0] * X.shape[1] * m <= KMEANS_SINGLE_THREAD_WORK
        with threadpool_limits(1 if small else None):
            return km.fit(X[order]).cluster_centers_

    def _kernel_gamma(self, X):
        if self.kernel != "rbf":
            return None
        if self.kernel_gamma != "auto":
            return float(self.kernel_gamma)
        b = mean_squared_distance(X)
        if b <= 0:
            raise ValueError("all samples coincide: their mean squared distance is 0, so "
                             "kernel_gamma='auto' is undefined; pass a float kernel_gamma.")
        return 1.0 / b

    def _side_information(self, y, n):
        """The points with side information, or None for the standard Nystrom kernel."""
        info = check_side_info(y, n, accept=("labels", "pairs"), required=False)
        self.side_info_ = None
        if info.kind == "none":
            return None
        if info.kind == "labels":
            index = np.flatnonzero(info.codes >= 0)
            if index.size == 0:
                self._warn_no_side_information("y has no labelled point (every entry is -1)")
                return None
            self.side_info_ = np.array(info.labels)
            return _SideInfo(index, info.codes[index], "labels")
        C = info.constraints
        if C.n_cannot:
            warnings.warn(
                f"GeneralizedNystroem ignores the {C.n_cannot} cannot-link pair(s) of y: its "
                "objective takes must-link groups only (Lan et al. 2017 §3.3). Pass partial "
                "labels instead to use every pair of labelled points.", UserWarning,
                stacklevel=3)
        ml = C.must_link
        if len(ml) == 0:
            self._warn_no_side_information("y has no must-link pair")
            return None
        index = np.unique(ml)
        self.side_info_ = PairwiseConstraints(ml, np.ones(len(ml)), n_samples=n)
        return _SideInfo(index, C.must_link_components()[index], "groups")

    def _warn_no_side_information(self, what):
        warnings.warn(
            f"GeneralizedNystroem: {what}. Without side information problem (7) has no data "
            "term and its solution is the prior, so this fit is the standard Nystrom kernel "
            "E W^+ E^T (Lan et al. 2017 eq. 3). Pass y=None to ask for it without this "
            "warning.", UserWarning, stacklevel=4)

    def _lambdas(self):
        lam = np.asarray(self.lambdas, dtype=np.float64).ravel()
        if lam.size == 0 or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
            raise ValueError("lambdas must be a non-empty array of positive finite floats.")
        return lam

    def _callback(self, bar, lam):
        if not self.verbose:
            return None

        def step(value):
            bar.update(1)
            bar.set_postfix(lam=f"{lam:.3g}", objective=f"{value:.6g}", refresh=False)

        return step

    def _beta_start(self, E_l, Y, W_pinv, data):
        """``beta`` of the prior (the start of Appendix A's iterations for "iterative")."""
        if not isinstance(self.beta, str):
            return float(self.beta)
        if self.beta == "least_squares":
            return least_squares_beta(W_pinv, data)
        return heuristic_beta(E_l, Y, W_pinv)

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the dictionary kernel ``S`` from partial side information ``y``.

        What each kind of ``y`` gives (the side information used is kept as
        ``side_info_``):

        - ``None``: no side information; the standard Nystrom kernel ``E W^+ E^T``
          (``lambda_`` is None, ``dictionary_ = W^+``).
        - partial labels, shape ``(n_samples,)``, ``-1`` = unlabelled: the ideal kernel
          (6) of the labelled points, 1 for two points of the same class and 0 otherwise.
          With no labelled point the fit falls back to the standard Nystrom kernel with a
          :class:`UserWarning`: without labels problem (7) has no data term and its
          solution is the prior ``S_0``.
        - a :class:`~psdlearn.PairwiseConstraints` or an ``(m, 3)`` array of
          ``[i, j, +1/-1]`` rows: the must-link pairs are closed under transitivity into
          groups (connected components) and the masked objective of §3.3 asks the kernel
          to be 1 within each group; pairs across groups are left free. Cannot-link pairs
          are ignored with a :class:`UserWarning` (the paper's objective has no term for
          them, §3.3); without a must-link the fit is the standard Nystrom kernel, with a
          warning. Group ids ``g`` are passed the same way: a must-link pair between
          consecutive members of each group.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training points; sparse input is converted to CSR (the landmarks are dense;
            k-means clusters a dense copy of it up to ``DENSE_KMEANS_MAX_ENTRIES``
            entries, so that it gives the landmarks of the dense array).
        y : None, array-like of shape (n_samples,) or (m, 3), or PairwiseConstraints
            Side information, as above.

        Returns
        -------
        self : GeneralizedNystroem
            Fitted estimator.

        Raises
        ------
        ValueError
            ``n_landmarks`` above ``n_samples``, an invalid ``lambdas`` or
            ``kernel_gammas``, all samples identical with ``kernel_gamma="auto"``, or
            ``y`` of a kind the estimator does not take.
        """
        with fitting(self):
            start = time.perf_counter()
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                              ensure_min_samples=2)
            n = X.shape[0]
            lambdas = self._lambdas()
            side = self._side_information(y, n)
            multiple = self._check_multiple(side)
            rng = check_random_state(self.random_state)
            with phase("the kernel width"):
                self.kernel_gamma_ = self._kernel_gamma(X)
            m = self._n_landmarks(n)
            with phase("the dictionary solves"), progress_bar(
                    self.verbose, desc="GeneralizedNystroem iterations", unit="it") as bar:
                if multiple is None:
                    self.kernel_gammas_ = self.kernel_weights_ = None
                    self._fit_single(X, side, lambdas, m, rng, bar)
                else:
                    self._fit_multiple(X, side, lambdas, multiple, m, rng, bar)
            self.rank_ = self.feature_map_.shape[1]
            self.fit_time_ = time.perf_counter() - start
        return self

    def _check_multiple(self, side):
        """The kernel coefficient factors of ``kernel_gammas``, validated, or None."""
        if self.kernel_gammas is None:
            return None
        if self.kernel != "rbf" or self.beta == "iterative":
            raise ValueError("kernel_gammas needs kernel='rbf' and a beta other than "
                             "'iterative'.")
        if side is not None and side.kind != "labels":
            raise ValueError("kernel_gammas needs class labels as y; must-link groups are "
                             "supported with a single kernel only.")
        factors = np.asarray(self.kernel_gammas, dtype=np.float64).ravel()
        if factors.size == 0 or np.any(~np.isfinite(factors)) or np.any(factors <= 0):
            raise ValueError("kernel_gammas must be a non-empty array of positive floats.")
        return factors

    def _candidate_order(self, lambdas, side, descending=False):
        """Indices of the candidates to score (in the given order, or the largest
        ``lambda`` first); only the largest, with a warning, when the side information
        holds a single class."""
        if side.Y.shape[1] < 2:
            warnings.warn(
                "GeneralizedNystroem: the side information holds a single class (or "
                "group), whose ideal kernel has no contrast to align with; lambda is the "
                f"largest candidate, {lambdas.max():g}.", UserWarning, stacklevel=5)
            return [int(np.argmax(lambdas))]
        if not descending:
            return list(range(len(lambdas)))
        return [int(i) for i in np.argsort(-lambdas, kind="stable")]

    def _search(self, lambdas, side, solve, score):
        """Solve (7) or (17) for each candidate ``lambda`` and keep the best score.

        Returns ``(lambda, solve(lambda), interrupted)``. A Ctrl-C ends the search: the
        best of the candidates solved so far is kept; if none was, the interrupted
        solution of the first (the solvers return their last complete iterate); if even
        that is missing the interrupt propagates.
        """
        self.lambda_scores_ = np.full(len(lambdas), np.nan)
        order = self._candidate_order(lambdas, side)
        best = partial = None
        try:
            for i in order:
                out = solve(lambdas[i])
                if out[0].interrupted:
                    partial = (lambdas[i], out)
                    raise KeyboardInterrupt
                self.lambda_scores_[i] = value = score(out)
                # a tie goes to the larger lambda, the solution closer to the prior
                if best is None or (value, lambdas[i]) > best[:2]:
                    best = (value, lambdas[i], out)
        except KeyboardInterrupt:
            if best is None and partial is None:
                raise
            return (*partial, True) if best is None else (*best[1:], True)
        return (*best[1:], False)

    def _finish(self, converged, interrupted, unit):
        self.converged_ = bool(converged) and not interrupted
        if interrupted:
            warn_interrupted("GeneralizedNystroem", self.n_iter_,
                             unit=f"{unit} at lambda={self.lambda_:g}", stacklevel=5)
        elif not converged:
            warnings.warn(
                f"GeneralizedNystroem stopped at max_iter={self.max_iter} for the chosen "
                f"lambda={self.lambda_:g} before reaching tol={self.tol}; increase max_iter "
                "or tol.", ConvergenceWarning, stacklevel=4)

    def _fit_single(self, X, side, lambdas, m, rng, bar):
        self.landmarks_ = Z = self._select_landmarks(X, m, rng)
        with threadpool_limits(1 if Z.shape[0] <= SINGLE_THREAD_MAX_M else None, "blas"):
            W_pinv = pinvh(self._kernel(Z, Z, self.kernel_gamma_), rtol=PINV_RTOL)
            if side is None:
                self.lambda_scores_ = np.full(len(lambdas), np.nan)
                self.beta_, self.lambda_, self.lambda_selection_ = 1.0, None, None
                self.prior_ = self.dictionary_ = W_pinv
                self.n_iter_, self.objective_history_, self.converged_ = 0, [], True
                self.feature_map_ = psd_factor(W_pinv)
                return
            E_l = self._kernel(X[side.index], Z, self.kernel_gamma_)
            data = _data_term(E_l, side.Y, side.kind)
            beta0 = self._beta_start(E_l, side.Y, W_pinv, data)

            def solve(lam):
                kw = {"max_iter": self.max_iter, "tol": self.tol,
                      "callback": self._callback(bar, lam)}
                if self.beta == "iterative":
                    beta, res = iterative_beta(W_pinv, lam, data, beta0, **kw)
                else:
                    beta, res = beta0, solve_dictionary(beta0 * W_pinv, lam, data, **kw)
                return res, beta, psd_factor(res.S)

            def score(out):
                # eq. (15); rho is scale invariant, so W^+ stands for S_0 = beta W^+
                res, _, F = out
                return (centered_alignment(res.S, W_pinv, factors=False)
                        * centered_alignment(E_l @ F, side.Y, factors=True))

            self.lambda_selection_ = self._selection(side, lambdas)
            if self.lambda_selection_ == "cv":
                # the folds score the candidates; only the chosen one is fit on all points
                lam, interrupted = self._cv_search(lambdas, E_l, side, beta0 * W_pinv, rng)
                res, beta, F = solve(lam)
                interrupted = interrupted or res.interrupted
            else:
                lam, (res, beta, F), interrupted = self._search(lambdas, side, solve, score)
        self.lambda_, self.beta_ = float(lam), float(beta)
        self.prior_ = self.beta_ * W_pinv
        self.dictionary_, self.feature_map_ = res.S, F
        self.n_iter_, self.objective_history_ = res.n_iter, list(res.objective_history)
        self._finish(res.converged, interrupted, "projected-gradient iterations")

    def _selection(self, side, lambdas):
        """``lambda_selection`` with ``"auto"`` resolved for this fit (single kernel)."""
        if self.lambda_selection != "auto":
            return self.lambda_selection
        counts = np.bincount(side.codes)
        usable = (side.kind == "labels" and len(lambdas) > 1 and len(counts) > 1
                  and counts.min() >= 3)
        return "cv" if usable else "alignment"

    def _cv_search(self, lambdas, E_l, side, prior, rng):
        """``lambda_selection="cv"``: ``(lambda, interrupted)`` with the best held-out
        accuracy of a linear SVM on the features of ``S`` fit without the fold, averaged
        over the ``3 * CV_REPEATS`` splits (``lambda_scores_``).

        The splits are drawn here; :func:`psdlearn.nystroem._cv.race` scores the
        candidates on them (a race from 100 labelled points). A Ctrl-C keeps the best
        candidate scored so far; without one it propagates.
        """
        from sklearn.model_selection import RepeatedStratifiedKFold

        if side.kind != "labels":
            raise ValueError("lambda_selection='cv' needs class labels as y.")
        counts = np.bincount(side.codes)
        if counts.min() < 3:
            raise ValueError("lambda_selection='cv' needs at least 3 labelled points of "
                             "every class (3 folds).")
        # the seed comes from rng, so the folds depend only on random_state; they are drawn
        # on the labelled points in value order (any row order, the same folds); a fold's
        # data term (and the eigensystem it caches) serves every candidate lambda
        order = value_order(E_l)
        folds = [(order[train], order[test],
                  _data_term(E_l[order[train]], side.Y[order[train]], "labels"))
                 for train, test in RepeatedStratifiedKFold(
                     n_splits=3, n_repeats=CV_REPEATS,
                     random_state=rng.randint(2**31 - 1)).split(E_l[order],
                                                                side.codes[order])]
        self.lambda_scores_ = np.full(len(lambdas), np.nan)
        scores, best, interrupted = race(
            lambdas, self._candidate_order(lambdas, side, descending=True), folds, E_l,
            side.codes, prior, max_iter=self.max_iter, tol=self.tol)
        self.lambda_scores_ = scores
        return lambdas[best], interrupted

    def _fit_multiple(self, X, side, lambdas, factors, m, rng, bar):
        M = factors.size
        self.kernel_gammas_ = gammas = factors * self.kernel_gamma_
        m_bar = max(1, int(round(m * self.tau / M)))
        self.landmarks_ = Z = self._select_landmarks(X, min(m_bar, X.shape[0]), rng)
        with threadpool_limits(1 if Z.shape[0] <= SINGLE_THREAD_MAX_M else None, "blas"):
            W_pinv = [pinvh(self._kernel(Z, Z, g), rtol=PINV_RTOL) for g in gammas]
            if side is None:
                self.lambda_scores_ = np.full(len(lambdas), np.nan)
                self.beta_, self.lambda_, self.lambda_selection_ = np.ones(M), None, None
                self.kernel_weights_ = np.full(M, 1.0 / M)
                self._set_blocks([w / M for w in W_pinv], [w / M for w in W_pinv])
                self.n_iter_, self.objective_history_, self.converged_ = 0, [], True
                return
            F = [self._kernel(X[side.index], Z, g) for g in gammas]
            Y = side.Y
            self.lambda_selection_ = "alignment"
            self.beta_ = np.array([self._beta_start(Fj, Y, Wj, _data_term(Fj, Y, "labels"))
                                   for Fj, Wj in zip(F, W_pinv, strict=True)])
            priors = [b * w for b, w in zip(self.beta_, W_pinv, strict=True)]
            cross = [[Fj.T @ Fk for Fk in F] for Fj in F]
            s = [Fj.T @ Y for Fj in F]
            c = float(np.sum(Y.sum(axis=0) ** 2))

            def solve(lam):
                res = solve_multiple(priors, lam, cross, s, c,
                                     max_iter=max(1, self.max_iter // 5), tol=self.tol,
                                     inner_max_iter=max(1, self.max_iter // 10),
                                     inner_tol=self.tol, callback=self._callback(bar, lam))
                return res, [psd_factor(T) for T in res.T]

            def score(out):
                # the multiple-kernel form of (15); kernels with T^(j) = 0 (weight 0)
                # carry no alignment and are left out of the product
                res, facs = out
                Q_l = np.hstack([Fj @ G for Fj, G in zip(F, facs, strict=True)])
                value = centered_alignment(Q_l, Y, factors=True)
                for T, P in zip(res.T, priors, strict=True):
                    if np.any(T):
                        value *= centered_alignment(T, P, factors=False)
                return value

            lam, (res, _), interrupted = self._search(lambdas, side, solve, score)
        self.lambda_ = float(lam)
        self.kernel_weights_ = res.alpha
        self._set_blocks(res.T, priors)
        self.n_iter_, self.objective_history_ = res.n_iter, list(res.objective_history)
        self._finish(res.converged, interrupted, "alternations")

    def _set_blocks(self, T, priors):
        self.dictionary_ = block_diag(*T)
        self.prior_ = block_diag(*priors)
        self.feature_map_ = block_diag(*[psd_factor(Tj) for Tj in T])

    # ------------------------------------------------------------------ transform
    def _extrapolation(self, X):
        """``E(X)``: ``k(X, Z)``, or ``[E^(1), ..., E^(M)]`` for multiple kernels (eq. 21)."""
        if self.kernel_gammas_ is None:
            return self._kernel(X, self.landmarks_, self.kernel_gamma_)
        return np.hstack([self._kernel(X, self.landmarks_, g) for g in self.kernel_gammas_])

    def transform(self, X):
        """Features ``Q = E(X) U Lambda^{1/2}`` with ``Q Q^T = E(X) S E(X)^T`` (§4.2).

        ``E(X) = k(X, landmarks_)``; each row depends on its own point only, so the
        training points get the rows of the learned kernel ``E S E^T`` of the fit.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, ``n_features_in_``)
            Any points, seen in :meth:`fit` or new.

        Returns
        -------
        Q : ndarray of shape (n_samples, ``rank_``)
            The features; ``Q @ Q.T`` is the learned kernel on ``X``.
        """
        check_is_fitted(self, "feature_map_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return self._extrapolation(X) @ self.feature_map_

    @property
    def _n_features_out(self):
        """Number of output features, for ``get_feature_names_out``."""
        return self.rank_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR (other formats are converted)
        tags.target_tags.required = False  # y=None is the standard Nystrom kernel
        return tags
