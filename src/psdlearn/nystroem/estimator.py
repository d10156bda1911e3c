"""The generalized Nystrom estimator (seed 003): a semi-supervised low-rank kernel.

Standard Nystrom approximates ``K ~= E W^+ E^T`` with ``E = k(X, Z)`` (n x m) and
``W = k(Z, Z)`` on ``m`` landmarks ``Z``. The generalized method keeps ``E`` and learns the
inverse dictionary kernel ``S`` (m x m) from labels:

.. math::

    \\min_{S \\succeq 0} \\; \\lambda \\|S - \\beta W^+\\|_F^2
        + \\|E_l S E_l^T - K^*_l\\|_F^2 \\qquad \\text{(eq. 7)}

with ``K^*_l`` the ideal kernel on the labelled points (1 within a class, 0 across), so
the learned kernel is ``E S E^T = Q Q^T`` with features ``Q = E U Lambda^{1/2}``
(``S = U Lambda U^T``), computable for any point, seen or new. ``lambda`` is chosen over a
grid by the product of centered alignments (15). With several kernel widths (§4) the
kernel is ``sum_j E^(j) T^(j) E^(j)T`` and the features are block-diagonal (§4.2).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.linalg import block_diag, pinvh
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import PAIRWISE_KERNEL_FUNCTIONS, pairwise_kernels, rbf_kernel
from sklearn.utils import check_random_state, column_or_1d
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from psdlearn.metrics import centered_alignment
from psdlearn.nystroem._beta import heuristic_beta, iterative_beta
from psdlearn.nystroem._dictionary import QuadraticData, psd_factor, solve_dictionary
from psdlearn.nystroem._multi import solve_multiple

__all__ = ["DEFAULT_LAMBDAS", "GeneralizedNystroem", "mean_squared_distance"]

#: The lambda grid of seed 003 §6.2, ``10^-5 ... 10^5``.
DEFAULT_LAMBDAS = tuple(10.0**k for k in range(-5, 6))
#: Above this many samples the k-means landmarks come from MiniBatchKMeans.
MINIBATCH_THRESHOLD = 10_000
#: Eigenvalues of ``W`` below this fraction of the largest are treated as zero in ``W^+``:
#: ``E`` carries rounding errors of about 1e-16, which ``1 / w`` would amplify beyond use.
PINV_RTOL = 1e-10
#: Up to this dictionary size the solvers run BLAS on one thread: their matrices are small
#: and threading costs more than it gains (measured 15x slower eigh at m = 150 on 2 busy
#: cores).
SINGLE_THREAD_MAX_M = 512


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
    classes, inv = np.unique(values, return_inverse=True)
    Y = np.zeros((len(values), len(classes)))
    Y[np.arange(len(values)), inv] = 1.0
    return Y


class GeneralizedNystroem(TransformerMixin, BaseEstimator):
    """Generalized Nystrom low-rank kernel learning from partial labels (seed 003).

    Learns the inverse dictionary kernel ``S`` of problem (7) (module docstring) by the
    closed-form start (12)-(13), projected on the PSD cone, followed by projected gradient
    with the Armijo rule (10)-(11); ``transform`` returns features ``Q`` with
    ``Q Q^T = E S E^T``. Fitting costs ``O(m^2 l + m^3)`` per iteration after the landmarks:
    only the labelled rows of ``E`` are formed; ``transform`` costs ``O(n m d)``.

    Parameters
    ----------
    n_landmarks : float in (0, 1] or int >= 1, default=0.1
        Number of landmarks ``m``: a fraction of ``n`` (the paper: 10%) or a count (the
        paper: 100 on mnist). With ``kernel_widths`` the landmarks are shared and their
        number is ``m_bar = round(m * tau / M)`` (§4.2).
    landmarks : {"kmeans", "random"} or array-like of shape (m, d), default="kmeans"
        k-means centres (MiniBatchKMeans above 10,000 samples, one initialisation), a
        random subset of ``X``, or given points.
    kernel : str or callable, default="rbf"
        ``"rbf"`` is ``exp(-||x - z||^2 / b)`` with ``b`` from ``kernel_width``; any other
        name of :data:`sklearn.metrics.pairwise.PAIRWISE_KERNEL_FUNCTIONS` or a callable is
        evaluated by :func:`sklearn.metrics.pairwise.pairwise_kernels` with
        ``kernel_params``.
    kernel_width : "mean" or float, default="mean"
        ``b`` of the rbf kernel; ``"mean"`` is the mean pairwise squared distance
        (computed in ``O(n d)``), the paper's choice.
    kernel_widths : array-like of shape (M,), default=None
        Multiple kernels (§4): rbf widths ``b_j = kernel_widths[j] * b`` (the paper:
        ``2^-4, ..., 2^4``). Requires ``kernel="rbf"`` and ``side_info="labels"``.
    kernel_params : dict, default=None
        Extra arguments of a non-rbf kernel.
    lambdas : array-like of positive floats, default=(1e-5, 1e-4, ..., 1e5)
        Candidates for ``lambda``; the one maximizing criterion (15) is kept.
    side_info : {"labels", "groups"}, default="labels"
        Meaning of ``y`` in :meth:`fit`: class labels (ideal kernel (6) on all labelled
        pairs) or must-link group ids (§3.3: only within-group pairs are constrained, to 1).
        ``-1`` marks points without side information in both cases.
    beta : {"heuristic", "iterative"} or float, default="heuristic"
        Scale of ``S_0 = beta W^+``: eq. (8), the joint minimisation of Appendix A
        (single kernel only), or a fixed value.
    tau : float, default=3.0
        Cost multiplier of the multiple-kernel case, ``m_bar = m tau / M`` (§4.2).
    max_iter : int, default=100
        Projected-gradient iterations per ``lambda`` (single kernel). Multiple kernels: at
        most ``max_iter // 5`` alternations, each ``T^(j)`` update at most
        ``max_iter // 10`` projected-gradient iterations.
    tol : float, default=1e-5
        Stop when an iteration decreases the objective (7) (multiple kernels: (17)) by at
        most ``tol`` relatively.
    random_state : int, RandomState instance or None, default=None
        Seeds the landmark selection.

    Attributes
    ----------
    landmarks_ : ndarray of shape (m, n_features)
    kernel_width_ : float or None
        ``b`` of the rbf kernel (None for other kernels).
    kernel_widths_ : ndarray of shape (M,)
        Widths of the multiple kernels (only with ``kernel_widths``).
    dictionary_ : ndarray of shape (m, m) or (M m, M m)
        Learned ``S`` (multiple kernels: block-diagonal ``T = diag(T^(1), ..., T^(M))``).
    prior_ : ndarray of shape (m, m) or (M m, M m)
        ``S_0 = beta W^+`` (multiple kernels: ``diag(S_0^(j))``).
    beta_ : float or ndarray of shape (M,)
    lambda_ : float or None
        Chosen ``lambda`` (None without side information: then ``S = W^+``, standard
        Nystrom).
    alignment_scores_ : ndarray of shape (len(lambdas),)
        Criterion (15) for each candidate.
    kernel_weights_ : ndarray of shape (M,)
        ``alpha_j`` (only with ``kernel_widths``).
    n_iter_ : int
        Iterations of the chosen ``lambda``.
    objective_history_ : list of float
        Objective (7) (or (17)) of the chosen ``lambda``: start, then every iteration.
    components_ : ndarray of shape (m or M m, rank_)
        ``U Lambda^{1/2}`` of the learned dictionary (block-diagonal for several kernels).
    rank_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> import psdlearn as pl
    >>> X, y = pl.datasets.load("iris")
    >>> y_partial = np.full_like(y, -1)
    >>> y_partial[::10] = y[::10]
    >>> g = pl.GeneralizedNystroem(n_landmarks=20, random_state=0).fit(X, y_partial)
    >>> g.transform(X).shape[0]
    150
    """

    _parameter_constraints = {
        "n_landmarks": [Interval(numbers.Real, 0, 1, closed="right"),
                        Interval(numbers.Integral, 1, None, closed="left")],
        "landmarks": [StrOptions({"kmeans", "random"}), "array-like"],
        "kernel": [StrOptions(set(PAIRWISE_KERNEL_FUNCTIONS)), callable],
        "kernel_width": [StrOptions({"mean"}), Interval(numbers.Real, 0, None, closed="neither")],
        "kernel_widths": ["array-like", None],
        "kernel_params": [dict, None],
        "lambdas": ["array-like"],
        "side_info": [StrOptions({"labels", "groups"})],
        "beta": [StrOptions({"heuristic", "iterative"}),
                 Interval(numbers.Real, 0, None, closed="neither")],
        "tau": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, *, n_landmarks=0.1, landmarks="kmeans", kernel="rbf",
                 kernel_width="mean", kernel_widths=None, kernel_params=None,
                 lambdas=DEFAULT_LAMBDAS, side_info="labels", beta="heuristic", tau=3.0,
                 max_iter=100, tol=1e-5, random_state=None):
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.kernel = kernel
        self.kernel_width = kernel_width
        self.kernel_widths = kernel_widths
        self.kernel_params = kernel_params
        self.lambdas = lambdas
        self.side_info = side_info
        self.beta = beta
        self.tau = tau
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _kernel(self, X, Z, width):
        if self.kernel == "rbf":
            return rbf_kernel(X, Z, gamma=1.0 / width)
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
        if self.landmarks == "random":
            Z = X[np.sort(rng.choice(X.shape[0], size=m, replace=False))]
            return Z.toarray() if sp.issparse(Z) else np.asarray(Z)
        if X.shape[0] > MINIBATCH_THRESHOLD:
            km = MiniBatchKMeans(n_clusters=m, n_init=1, batch_size=max(1024, 10 * m),
                                 random_state=rng)
        else:
            km = KMeans(n_clusters=m, n_init=1, random_state=rng)
        return km.fit(X).cluster_centers_

    def _side_matrix(self, y, n):
        """Indices of the points with side information and their one-hot matrix ``Y``."""
        if y is None:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0))
        y = column_or_1d(y, warn=True)
        if len(y) != n:
            raise ValueError(f"y has {len(y)} entries but X has {n} samples.")
        idx = np.flatnonzero(y != -1)
        return idx, _one_hot(y[idx])

    def _data_term(self, E_l, Y):
        """:class:`QuadraticData` of the labels or of the must-link groups."""
        counts = Y.sum(axis=0)
        if self.side_info == "labels":
            s = E_l.T @ Y
            return QuadraticData([E_l.T @ E_l], s @ s.T, float(np.sum(counts**2)))
        blocks, b = [], E_l.T @ Y
        for g in range(Y.shape[1]):
            Eg = E_l[Y[:, g] > 0]
            blocks.append(Eg.T @ Eg)
        return QuadraticData(blocks, b @ b.T, float(np.sum(counts**2)))

    def _lambdas(self):
        lam = np.asarray(self.lambdas, dtype=np.float64).ravel()
        if lam.size == 0 or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
            raise ValueError("lambdas must be a non-empty array of positive finite floats.")
        return lam

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None):
        """Learn the dictionary kernel from partial side information.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
            Class labels (``side_info="labels"``) or must-link group ids
            (``side_info="groups"``); ``-1`` = no information. ``None`` or no labelled
            point gives the standard Nystrom kernel.

        Returns
        -------
        self
        """
        self._validate_params()
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                          ensure_min_samples=2)
        n = X.shape[0]
        lambdas = self._lambdas()
        idx, Y = self._side_matrix(y, n)
        rng = check_random_state(self.random_state)
        if self.kernel == "rbf":
            width = (mean_squared_distance(X) if self.kernel_width == "mean"
                     else float(self.kernel_width))
            if width <= 0:
                raise ValueError("all samples coincide: the mean squared distance is 0.")
        else:
            width = None
        self.kernel_width_ = width
        m = self._n_landmarks(n)
        if self.kernel_widths is None:
            self.landmarks_ = self._select_landmarks(X, m, rng)
            with threadpool_limits(1 if m <= SINGLE_THREAD_MAX_M else None, "blas"):
                self._fit_single(X[idx], Y, lambdas)
        else:
            self._fit_multiple(X, X[idx], Y, lambdas, m, rng)
        self.rank_ = self.components_.shape[1]
        return self

    def _fit_single(self, X_l, Y, lambdas):
        Z = self.landmarks_
        W_pinv = pinvh(self._kernel(Z, Z, self.kernel_width_), rtol=PINV_RTOL)
        self.alignment_scores_ = np.zeros(len(lambdas))
        if X_l.shape[0] == 0:
            self.beta_, self.lambda_ = 1.0, None
            self.prior_ = self.dictionary_ = W_pinv
            self.n_iter_, self.objective_history_ = 0, []
            self.components_ = psd_factor(W_pinv)
            return
        E_l = self._kernel(X_l, Z, self.kernel_width_)
        data = self._data_term(E_l, Y)
        beta0 = heuristic_beta(E_l, Y, W_pinv) if isinstance(self.beta, str) else self.beta
        kw = {"max_iter": self.max_iter, "tol": self.tol}
        best = None
        for i, lam in enumerate(lambdas):
            if self.beta == "iterative":
                beta, res = iterative_beta(W_pinv, lam, data, beta0, **kw)
            else:
                beta, res = beta0, solve_dictionary(beta0 * W_pinv, lam, data, **kw)
            F = psd_factor(res.S)
            # eq. (15); rho[S, S_0] is scale invariant, so W^+ stands for beta W^+
            score = (centered_alignment(res.S, W_pinv, factors=False)
                     * centered_alignment(E_l @ F, Y, factors=True))
            self.alignment_scores_[i] = score
            if best is None or score > best[0]:
                best = (score, lam, beta, res, F)
        _, self.lambda_, self.beta_, res, self.components_ = best
        self.prior_ = self.beta_ * W_pinv
        self.dictionary_ = res.S
        self.n_iter_, self.objective_history_ = res.n_iter, res.objective_history
        if not res.converged:
            self._warn_convergence()

    def _fit_multiple(self, X, X_l, Y, lambdas, m, rng):
        if self.kernel != "rbf" or self.side_info != "labels" or self.beta == "iterative":
            raise ValueError("kernel_widths needs kernel='rbf', side_info='labels' and a "
                             "non-iterative beta.")
        factors = np.asarray(self.kernel_widths, dtype=np.float64).ravel()
        if factors.size == 0 or np.any(~np.isfinite(factors)) or np.any(factors <= 0):
            raise ValueError("kernel_widths must be a non-empty array of positive floats.")
        M = factors.size
        widths = factors * self.kernel_width_
        self.kernel_widths_ = widths
        m_bar = max(1, int(round(m * self.tau / M)))
        self.landmarks_ = Z = self._select_landmarks(X, min(m_bar, X.shape[0]), rng)
        W_pinv = [pinvh(self._kernel(Z, Z, b), rtol=PINV_RTOL) for b in widths]
        self.alignment_scores_ = np.zeros(len(lambdas))
        if X_l.shape[0] == 0:
            self.beta_, self.lambda_ = np.ones(M), None
            self.kernel_weights_ = np.full(M, 1.0 / M)
            self._set_blocks([w / M for w in W_pinv], [w / M for w in W_pinv])
            self.n_iter_, self.objective_history_ = 0, []
            return
        F = [self._kernel(X_l, Z, b) for b in widths]
        self.beta_ = np.array([heuristic_beta(Fj, Y, Wj) if self.beta == "heuristic"
                               else self.beta for Fj, Wj in zip(F, W_pinv, strict=True)])
        priors = [b * w for b, w in zip(self.beta_, W_pinv, strict=True)]
        cross = [[Fj.T @ Fk for Fk in F] for Fj in F]
        s = [Fj.T @ Y for Fj in F]
        c = float(np.sum(Y.sum(axis=0) ** 2))
        best = None
        with threadpool_limits(1 if m_bar <= SINGLE_THREAD_MAX_M else None, "blas"):
            for i, lam in enumerate(lambdas):
                best = self._multiple_lambda(i, lam, priors, cross, s, c, F, Y, best)
        _, self.lambda_, res = best
        self.kernel_weights_ = res.alpha
        self._set_blocks(res.T, priors)
        self.n_iter_, self.objective_history_ = res.n_iter, res.objective_history
        if not res.converged:
            self._warn_convergence()

    def _multiple_lambda(self, i, lam, priors, cross, s, c, F, Y, best):
        """Solve (17) for one ``lambda``, score it and keep the best."""
        res = solve_multiple(priors, lam, cross, s, c, max_iter=max(1, self.max_iter // 5),
                             tol=self.tol, inner_max_iter=max(1, self.max_iter // 10),
                             inner_tol=self.tol)
        facs = [psd_factor(T) for T in res.T]
        # the multiple-kernel form of (15); kernels with T^(j) = 0 (weight 0) carry
        # no alignment and are left out of the product
        Q_l = np.hstack([Fj @ G for Fj, G in zip(F, facs, strict=True)])
        score = centered_alignment(Q_l, Y, factors=True)
        for T, P in zip(res.T, priors, strict=True):
            if np.any(T):
                score *= centered_alignment(T, P, factors=False)
        self.alignment_scores_[i] = score
        if best is None or score > best[0]:
            best = (score, lam, res)
        return best

    def _set_blocks(self, T, priors):
        self.dictionary_ = block_diag(*T)
        self.prior_ = block_diag(*priors)
        self.components_ = block_diag(*[psd_factor(Tj) for Tj in T])

    def _warn_convergence(self):
        warnings.warn(
            f"GeneralizedNystroem stopped at max_iter={self.max_iter} for the chosen "
            f"lambda={self.lambda_:g} before reaching tol={self.tol}; increase max_iter or "
            "tol.", ConvergenceWarning, stacklevel=3)

    # ------------------------------------------------------------------ transform
    def _extrapolation(self, X):
        """``E(X)``: ``k(X, Z)``, or ``[E^(1), ..., E^(M)]`` for multiple kernels (eq. 21)."""
        if self.kernel_widths is None:
            return self._kernel(X, self.landmarks_, self.kernel_width_)
        return np.hstack([self._kernel(X, self.landmarks_, b) for b in self.kernel_widths_])

    def transform(self, X):
        """Features ``Q = E(X) U Lambda^{1/2}`` with ``Q Q^T = E(X) S E(X)^T`` (§4.2).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Any points, seen in :meth:`fit` or new.

        Returns
        -------
        Q : ndarray of shape (n_samples, rank_)
        """
        check_is_fitted(self, "components_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return self._extrapolation(X) @ self.components_
