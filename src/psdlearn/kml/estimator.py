"""Kernel-based semi-supervised metric learning with landmarks (seed 004).

Yeung, Chang & Dai (IJCAI 2007). The centered kernel ``K = H K_hat H`` is written
``K = sum_r lambda_r v_r v_r^T`` and only its eigenvalues are learned:
``K_beta = sum_r beta_r^2 v_r v_r^T``, with ``beta`` minimizing the mean squared feature
distance over the similar pairs ``S`` under ``1^T beta = c`` (closed form (4), see
:mod:`psdlearn.kml._beta`).

The scalable version (section 3) replaces ``K`` by ``W L W^T`` (5): ``L = H L_hat H`` is
the centered kernel of ``m`` landmarks (every point of ``S`` plus random others),
``L = V_alpha D_mu V_alpha^T`` (6), and row ``i`` of the sparse ``W`` holds the locally
linear weights of ``phi(x_i)`` on its ``K`` nearest landmarks in feature space (8)-(12).
The embedding (13)-(14) of a point with weights ``w`` is ``D_beta^{1/2} V_alpha^T w``, so
squared distances in it are the learned metric (16).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import pdist
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.metrics.pairwise import (
    laplacian_kernel,
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
)
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from psdlearn.constraints import PairwiseConstraints
from psdlearn.kml._beta import (
    center_kernel,
    centered_eigenpairs,
    optimal_beta,
    pair_dispersion,
)
from psdlearn.kml._lle import local_weights

__all__ = ["KernelMetricLearner", "as_similar_pairs", "median_heuristic_gamma"]

KERNELS = ("rbf", "laplacian", "linear", "poly")
#: Points in the sample of the median heuristic for ``gamma=None``.
_GAMMA_SAMPLE = 1000
#: Elements of one kernel block (rows x columns) evaluated at a time.
_BLOCK_ELEMENTS = 1 << 20


def as_similar_pairs(side_info, n_samples):
    """The similar pairs ``S`` as an (s, 2) int64 array of distinct unordered pairs.

    Parameters
    ----------
    side_info : PairwiseConstraints, array-like of shape (s, 2), (s, 3) or (n_samples,)
        Must-link constraints (cannot-links are dropped with a warning: the method has no
        term for them), index pairs, ``[i, j, +1/-1]`` rows, or partial labels (``-1`` =
        unlabelled; every pair of labelled points of one class is similar).
    n_samples : int

    Returns
    -------
    ndarray of shape (s, 2), int64
    """
    if isinstance(side_info, PairwiseConstraints):
        if side_info.n_samples > n_samples:
            raise ValueError(f"similar_pairs refers to {side_info.n_samples} samples but X "
                             f"has {n_samples}.")
        C = side_info
    else:
        arr = np.asarray(side_info)
        if arr.ndim == 1:
            if len(arr) != n_samples:
                raise ValueError(f"partial labels have length {len(arr)} but X has "
                                 f"{n_samples} samples.")
            blocks = []
            for label in np.unique(arr[arr != -1]):
                members = np.flatnonzero(arr == label)
                iu, ju = np.triu_indices(len(members), k=1)
                blocks.append(np.column_stack([members[iu], members[ju]]))
            pairs = np.concatenate(blocks) if blocks else np.empty((0, 2), np.int64)
            C = PairwiseConstraints(pairs, np.ones(len(pairs)), n_samples=n_samples)
        elif arr.ndim == 2 and arr.shape[1] == 2:
            C = PairwiseConstraints(arr, np.ones(len(arr)), n_samples=n_samples)
        elif arr.ndim == 2 and arr.shape[1] == 3:
            C = PairwiseConstraints.from_array(arr, n_samples=n_samples)
        else:
            raise ValueError(
                "similar_pairs must be a PairwiseConstraints, an (s, 2) array of index "
                "pairs, an (s, 3) array of [i, j, +1/-1] rows or a 1-D vector of partial "
                f"labels; got an array of shape {arr.shape}."
            )
    if C.n_cannot:
        warnings.warn(f"{C.n_cannot} cannot-link pair(s) ignored: KernelMetricLearner "
                      "uses similar (must-link) pairs only.", UserWarning, stacklevel=4)
    if C.n_must == 0:
        raise ValueError("similar_pairs holds no similar (must-link) pair.")
    return C.must_link


def _sparse_rows(indices, weights, n_columns):
    """CSR matrix with ``weights[i, a]`` at ``(i, indices[i, a])``, explicit zeros dropped."""
    n, k = indices.shape
    W = sp.csr_matrix((weights.ravel(), indices.ravel(), np.arange(0, n * k + 1, k)),
                      shape=(n, n_columns))
    W.eliminate_zeros()
    W.sum_duplicates()
    return W


def median_heuristic_gamma(X, kernel="rbf", random_state=None):
    """Default kernel coefficient of :class:`KernelMetricLearner` (``gamma=None``).

    ``"rbf"``: the inverse median squared Euclidean distance between the points of a random
    sample of 1000 (the median heuristic); ``"laplacian"``: the inverse median L1 distance;
    ``"poly"``: ``1 / n_features``; ``"linear"``: None.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    kernel : {"rbf", "laplacian", "linear", "poly"}
    random_state : int, RandomState instance or None
        Draws the sample when ``n_samples > 1000``.

    Returns
    -------
    float or None
    """
    if kernel == "linear":
        return None
    if kernel == "poly":
        return 1.0 / X.shape[1]
    rng = check_random_state(random_state)
    sample = X if len(X) <= _GAMMA_SAMPLE else X[rng.choice(len(X), _GAMMA_SAMPLE,
                                                           replace=False)]
    dist = pdist(sample, "sqeuclidean" if kernel == "rbf" else "cityblock")
    dist = dist[dist > 0]
    if dist.size == 0:
        raise ValueError("all points coincide: gamma=None cannot be set from distances.")
    return 1.0 / float(np.median(dist))


class KernelMetricLearner(TransformerMixin, BaseEstimator):
    """Kernel metric learned from similar pairs by eigen-reweighting (seed 004).

    Problem (seed 004 eqs. 1-4), with ``K = sum_r lambda_r v_r v_r^T`` the centered
    kernel of the training points (full version) or ``v_r = W alpha_r`` built from the
    centered landmark kernel ``L = sum_r mu_r alpha_r alpha_r^T`` (scalable version):

    .. math::

        \\min_\\beta \\; \\beta^T D_S \\beta \\quad \\text{s.t.} \\quad 1^T \\beta = c,
        \\qquad (D_S)_{rr} = \\frac{1}{|S|} \\sum_{(i, j) \\in S} (v_{ri} - v_{rj})^2,

        \\beta = \\frac{c\\, D_S^{-1} 1}{1^T D_S^{-1} 1}, \\qquad
        c = \\sum_r \\sqrt{\\lambda_r}, \\qquad
        K_\\beta = \\sum_r \\beta_r^2 v_r v_r^T.

    The learned embedding of a point is ``z = (beta_r v_r(x))_r``, so Euclidean distances
    between embeddings are the learned metric (16).

    Parameters
    ----------
    kernel : {"rbf", "laplacian", "linear", "poly"}, default="rbf"
        Base kernel ``k_hat`` (scikit-learn's pairwise kernels).
    gamma : float or None, default=None
        Kernel coefficient. None: :func:`median_heuristic_gamma` (for ``"rbf"`` the
        inverse median squared distance between points; the paper does not give its
        width).
    degree : int, default=3
        Degree of ``"poly"``.
    coef0 : float, default=1.0
        Constant of ``"poly"``.
    n_landmarks : int or None, default=None
        None: the full version (section 2), which forms the n x n kernel. An int ``m``:
        the scalable version with ``m`` landmarks, every point of a similar pair plus
        random others (``m >= n`` makes every point a landmark, ``W = I``).
    n_neighbors : int, default=10
        ``K``, the number of nearest landmarks in the locally linear fit (not given in
        the paper).
    n_iter : int, default=1
        Iterations of the iterative extension (section 3.3; the paper uses 3). Each
        repetition recomputes neighbourhoods and weights in the learned kernel. The
        eigen-reweighting itself is a fixed point: the centered learned landmark kernel
        ``V_alpha D_beta V_alpha^T`` has eigenpairs ``(beta_r^2, alpha_r)``, so ``D_S``
        and ``c = sum_r beta_r`` and therefore ``beta`` are unchanged. Ignored by the full
        version, where ``W = I``.
    n_components : int or None, default=None
        Keep at most the top ``p`` eigenpairs (by Lanczos when ``p`` is small against the
        kernel size). None keeps every positive eigenvalue, above ``1e-10 lambda_max``.
    eps : float, default=1e-8
        Ridge ``eps * mean(D_S)`` added to ``D_S`` (footnote 3).
    reg : float, default=1e-3
        Ridge ``reg * tr(G_i) / K`` added to each local Gram matrix (footnote 4).
    random_state : int, RandomState instance or None, default=None
        Draws the extra landmarks and the sample of the median heuristic.

    Attributes
    ----------
    beta_ : ndarray of shape (q,)
        Learned weights; ``beta_.sum()`` equals ``sqrt(eigenvalues_).sum()``.
    eigenvalues_ : ndarray of shape (q,)
        Positive eigenvalues of the centered kernel (full) or landmark kernel (scalable),
        decreasing.
    eigenvectors_ : ndarray of shape (n_samples or m, q)
        The matching ``v_r`` (full) or ``alpha_r`` (scalable).
    landmark_indices_ : ndarray of shape (m,)
        Sorted training indices of the landmarks (every point in the full version).
    weights_ : scipy.sparse.csr_matrix of shape (n_samples, m)
        ``W`` of the last iteration (the identity in the full version).
    embedding_ : ndarray of shape (n_samples, q)
        Learned embedding of the training points, ``K_beta = embedding_ @ embedding_.T``.
    landmarks_ : ndarray of shape (m, n_features)
        The landmark points (scalable version).
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training points, kept for the out-of-sample projection (full version).
    similar_pairs_ : ndarray of shape (s, 2)
    gamma_ : float or None
        Kernel coefficient used.
    n_iter_ : int
        Iterations performed (1 in the full version).
    n_features_in_ : int

    Examples
    --------
    >>> import psdlearn as pl
    >>> X, y = pl.datasets.make_xor(400, random_state=0)
    >>> C = pl.PairwiseConstraints.from_labels(y, n_must=50, n_cannot=0, random_state=0)
    >>> model = pl.KernelMetricLearner(n_landmarks=100, random_state=0).fit(X, C)
    >>> model.transform(X[:3]).shape[0]
    3
    """

    _parameter_constraints = {
        "kernel": [StrOptions(set(KERNELS))],
        "gamma": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "degree": [Interval(numbers.Integral, 1, None, closed="left")],
        "coef0": [Interval(numbers.Real, 0, None, closed="left")],
        "n_landmarks": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "n_neighbors": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "eps": [Interval(numbers.Real, 0, None, closed="left")],
        "reg": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, *, kernel="rbf", gamma=None, degree=3, coef0=1.0, n_landmarks=None,
                 n_neighbors=10, n_iter=1, n_components=None, eps=1e-8, reg=1e-3,
                 random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.n_landmarks = n_landmarks
        self.n_neighbors = n_neighbors
        self.n_iter = n_iter
        self.n_components = n_components
        self.eps = eps
        self.reg = reg
        self.random_state = random_state

    # ------------------------------------------------------------- kernel
    def _resolve_gamma(self, X, rng):
        if self.gamma is not None:
            return float(self.gamma)
        return median_heuristic_gamma(X, self.kernel, rng)

    def _kernel(self, A, B):
        if self.kernel == "rbf":
            return rbf_kernel(A, B, gamma=self.gamma_)
        if self.kernel == "laplacian":
            return laplacian_kernel(A, B, gamma=self.gamma_)
        if self.kernel == "linear":
            return linear_kernel(A, B)
        return polynomial_kernel(A, B, degree=self.degree, gamma=self.gamma_,
                                 coef0=self.coef0)

    def _kernel_diag(self, A):
        if self.kernel in ("rbf", "laplacian"):
            return np.ones(len(A))
        sq = np.einsum("ij,ij->i", A, A)
        if self.kernel == "linear":
            return sq
        return (self.gamma_ * sq + self.coef0) ** self.degree

    # ---------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, similar_pairs):
        """Learn ``beta`` (and the landmark weights) from the similar pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        similar_pairs : PairwiseConstraints, array-like of shape (s, 2), (s, 3) or (n,)
            Similar pairs, see :func:`as_similar_pairs`.

        Returns
        -------
        self
        """
        X = validate_data(self, X, dtype=np.float64, order="C", ensure_min_samples=2)
        n = X.shape[0]
        pairs = as_similar_pairs(similar_pairs, n)
        rng = check_random_state(self.random_state)
        self.gamma_ = self._resolve_gamma(X, rng)
        self.similar_pairs_ = pairs
        if self.n_landmarks is None:
            self._fit_full(X, pairs)
        else:
            self._fit_landmarks(X, pairs, rng)
        return self

    def _fit_full(self, X, pairs):
        n = len(X)
        K = self._kernel(X, X)
        col_mean = K.mean(axis=0)
        all_mean = float(col_mean.mean())
        K -= col_mean[None, :]
        K -= col_mean[:, None]
        K += all_mean
        lam, V = centered_eigenpairs(K, self.n_components)
        del K
        beta = optimal_beta(pair_dispersion(V, pairs), float(np.sqrt(lam).sum()), self.eps)
        self.eigenvalues_, self.eigenvectors_, self.beta_ = lam, V, beta
        self.embedding_ = V * beta
        self.landmark_indices_ = np.arange(n)
        self.weights_ = sp.identity(n, format="csr")
        self.n_iter_ = 1
        self.X_fit_ = X
        self._col_mean, self._all_mean = col_mean, all_mean

    def _fit_landmarks(self, X, pairs, rng):
        n = len(X)
        m = min(int(self.n_landmarks), n)
        constrained = np.unique(pairs)
        if len(constrained) > m:
            raise ValueError(
                f"n_landmarks={self.n_landmarks} is smaller than the {len(constrained)} "
                "points in similar pairs, which must all be landmarks (seed 004 §3.1)."
            )
        others = np.setdiff1d(np.arange(n), constrained)
        extra = rng.choice(others, m - len(constrained), replace=False)
        landmarks = np.sort(np.concatenate([constrained, extra]))
        self.landmarks_ = X[landmarks]
        self._L_hat = self._kernel(self.landmarks_, self.landmarks_)
        mu, A = centered_eigenpairs(center_kernel(self._L_hat), self.n_components)
        # every point of S is a landmark, whose row of W is an indicator (eq. 8)
        beta = optimal_beta(pair_dispersion(A, np.searchsorted(landmarks, pairs)),
                            float(np.sqrt(mu).sum()), self.eps)
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
        indices[landmarks] = np.searchsorted(landmarks, landmarks)[:, None]
        weights[landmarks, 0] = 1.0
        if len(rest):
            indices[rest], weights[rest] = self._chain_weights(X[rest])
        W = _sparse_rows(indices, weights, m)
        self.weights_ = W
        self.embedding_ = np.asarray(W @ self._landmark_embedding)
        self.n_iter_ = int(self.n_iter)

    def _chain_weights(self, Xq):
        """Weights of new points after every iteration of the extension, in blocks.

        Iteration 1 fits ``phi(x)`` with the base kernel; iteration ``t > 1`` fits the
        learned features ``z = D_beta^{1/2} V_alpha^T w`` of iteration ``t - 1`` with the
        learned (linear) kernel on the landmark features ``E`` (the rows of
        ``V_alpha D_beta^{1/2}``), exactly as for the training points: ``z = E^T w``,
        kernel row ``E z``, ``k(z, z) = ||z||^2``.
        """
        E = self._landmark_embedding
        EE = E @ E.T
        m = len(E)
        k = min(self.n_neighbors, m)
        step = max(1, _BLOCK_ELEMENTS // max(m, k * E.shape[1]))  # E[idx] is (b, k, q)
        indices = np.empty((len(Xq), k), dtype=np.int64)
        weights = np.empty((len(Xq), k))
        for start in range(0, len(Xq), step):
            Xb = Xq[start:start + step]
            idx, w = local_weights(self._kernel_diag(Xb), self._kernel(Xb, self.landmarks_),
                                   self._L_hat, k, self.reg)
            for _ in range(1, self.n_iter):
                Z = np.einsum("bk,bkq->bq", w, E[idx])
                idx, w = local_weights(np.einsum("bq,bq->b", Z, Z), Z @ E.T, EE, k, self.reg)
            indices[start:start + step], weights[start:start + step] = idx, w
        return indices, weights

    # ---------------------------------------------------------- transform
    def transform(self, X):
        """Learned embedding of (new) points.

        Full version: kernel-PCA projection with the training centering,
        ``z_r(x) = beta_r / lambda_r * sum_j v_rj k_c(x, x_j)``, where
        ``k_c(x, x_j) = k(x, x_j) - mean_l k(x, x_l) - mean_l k(x_l, x_j) + mean_lm k``;
        for a training point this is ``beta_r v_ri``. Scalable version: the locally linear
        weights ``w`` of ``x`` on its nearest landmarks (every iteration replayed) and
        ``z = D_beta^{1/2} V_alpha^T w`` (14).

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)

        Returns
        -------
        ndarray of shape (n_new, q)
        """
        check_is_fitted(self, "beta_")
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
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
        idx, w = self._chain_weights(X)
        return np.asarray(_sparse_rows(idx, w, len(self.landmarks_)) @ self._landmark_embedding)
