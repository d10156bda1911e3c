"""Evaluation measures used by the papers.

- :func:`pairwise_accuracy`: the Rand index (Hu & Kwok 2015, 2013), the fraction of the
  ``n (n - 1) / 2`` pairs on which a clustering and the true classes agree.
- :func:`centered_alignment`: kernel alignment of centered kernels (Lan et al. 2017 eq. 14).
- :func:`class_separation`: ``J`` of Yeung et al. 2007 eq. (17), mean between-class over mean
  within-class Euclidean distance.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import rand_score
from sklearn.utils import check_random_state

from psdlearn._linalg import center_kernel

__all__ = ["centered_alignment", "class_separation", "pairwise_accuracy"]

#: Largest ``n`` for which :func:`class_separation` is exact by default.
EXACT_SEPARATION_MAX = 10_000
#: Elements of one distance block in :func:`class_separation` (bounds its memory).
_BLOCK_ELEMENTS = 1 << 22


def pairwise_accuracy(y_true, y_pred):
    """Rand index ``(a + b) / (n (n - 1) / 2)`` (Hu & Kwok 2015 section IV-A).

    ``a`` counts pairs in the same class and the same cluster, ``b`` pairs in different
    classes and different clusters. Computed by :func:`sklearn.metrics.rand_score`.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)

    Returns
    -------
    float in [0, 1]
    """
    for name, labels in (("y_true", y_true), ("y_pred", y_pred)):
        labels = np.asarray(labels)
        if labels.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {labels.shape}.")
        if labels.dtype.kind in "fc" and not np.all(np.isfinite(labels)):
            raise ValueError(f"{name} contains NaN or inf.")
    return float(rand_score(y_true, y_pred))


def _is_kernel(A, factor):
    if factor is not None:
        return not factor
    return A.shape[0] == A.shape[1] and np.allclose(A, A.T)


def centered_alignment(K1, K2, *, factors=None):
    """Centered kernel alignment (Lan et al. 2017 eq. 14).

    .. math::

        \\rho(K_1, K_2) = \\frac{\\langle H K_1 H, H K_2 H \\rangle_F}
                               {\\|H K_1 H\\|_F \\, \\|H K_2 H\\|_F},
        \\qquad H = I - \\tfrac{1}{n} 1 1^T.

    Either argument may be a low-rank factor ``E`` of shape (n, r) with ``K = E E^T``; then
    no n x n matrix is formed: with ``E_c = H E``,
    ``<H K_1 H, H K_2 H> = ||E_{1c}^T E_{2c}||_F^2``.

    Parameters
    ----------
    K1, K2 : ndarray of shape (n, n) or (n, r)
        Kernel matrices or factors.
    factors : bool or tuple of two bools, optional
        Whether each argument is a factor. By default an argument is a kernel when it is
        square and symmetric, a factor otherwise.

    Returns
    -------
    float in [-1, 1]; 0 when either centered kernel is zero.
    """
    A = np.asarray(K1, dtype=np.float64)
    B = np.asarray(K2, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[0] != B.shape[0]:
        raise ValueError(f"K1 and K2 must be 2-D with the same rows, got {A.shape}, {B.shape}.")
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
        raise ValueError("K1 and K2 must hold finite values.")
    fa, fb = factors if isinstance(factors, tuple) else (factors, factors)
    ka, kb = _is_kernel(A, fa), _is_kernel(B, fb)

    def center_factor(E):
        return E - E.mean(axis=0, keepdims=True)

    A = center_kernel(A) if ka else center_factor(A)
    B = center_kernel(B) if kb else center_factor(B)

    def inner(X, kx, Y, ky):
        if kx and ky:
            return float(np.sum(X * Y))
        if kx:
            return float(np.sum(Y * (X @ Y)))
        if ky:
            return float(np.sum(X * (Y @ X)))
        return float(np.sum((X.T @ Y) ** 2))

    num = inner(A, ka, B, kb)
    den = np.sqrt(max(inner(A, ka, A, ka), 0.0) * max(inner(B, kb, B, kb), 0.0))
    return num / den if den > 0 else 0.0


def class_separation(Z, y, *, max_exact=EXACT_SEPARATION_MAX, n_pairs=1_000_000,
                     random_state=None):
    """Class separation ``J`` of Yeung et al. 2007 eq. (17).

    ``J = mean_{y_i != y_j} ||z_i - z_j|| / mean_{i != j, y_i = y_j} ||z_i - z_j||``;
    larger is better.

    Up to ``max_exact`` points the means are exact, computed in row blocks of bounded
    size (no n x n allocation). Beyond, ``n_pairs`` random pairs ``i != j`` are drawn; the
    relative standard error of each mean is then about ``cv / sqrt(pairs in the group)``
    with ``cv`` the coefficient of variation of the distances (about 1e-3 for 1e6 pairs
    and well-mixed classes).

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_features)
        Embedding.
    y : array-like of shape (n_samples,)
        Class labels (all used).
    max_exact : int, default=10000
    n_pairs : int, default=1_000_000
    random_state : int, RandomState instance or None
        For the sampled estimate.

    Returns
    -------
    float
    """
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y)
    n = len(Z)
    if Z.ndim != 2 or y.ndim != 1 or len(y) != n:
        raise ValueError(f"Z (n, d) and y (n,) disagree: {Z.shape} vs {y.shape}.")
    if not np.all(np.isfinite(Z)):
        raise ValueError("Z contains NaN or inf.")
    if len(np.unique(y)) < 2:
        raise ValueError("class_separation needs at least 2 classes.")
    sq = np.einsum("ij,ij->i", Z, Z)
    if n <= max_exact:
        sums = np.zeros(2)
        counts = np.zeros(2)
        step = max(1, _BLOCK_ELEMENTS // n)
        for start in range(0, n, step):
            stop = min(n, start + step)
            d2 = sq[start:stop, None] + sq[None, :] - 2.0 * Z[start:stop] @ Z.T
            d = np.sqrt(np.maximum(d2, 0.0))
            same = y[start:stop, None] == y[None, :]
            diag = np.arange(start, stop)
            same[diag - start, diag] = False
            within = d[same]
            sums[0] += within.sum()
            counts[0] += within.size
            between = ~(y[start:stop, None] == y[None, :])
            sums[1] += d[between].sum()
            counts[1] += between.sum()
    else:
        rng = check_random_state(random_state)
        i = rng.randint(0, n, size=n_pairs)
        j = rng.randint(0, n, size=n_pairs)
        keep = i != j
        i, j = i[keep], j[keep]
        d = np.sqrt(np.maximum(sq[i] + sq[j] - 2.0 * np.einsum("ij,ij->i", Z[i], Z[j]), 0.0))
        same = y[i] == y[j]
        sums = np.array([d[same].sum(), d[~same].sum()])
        counts = np.array([same.sum(), (~same).sum()], dtype=float)
    if counts[0] == 0:
        raise ValueError("no class has two points: the within-class distance is undefined.")
    within_mean = sums[0] / counts[0]
    between_mean = sums[1] / counts[1]
    return float(between_mean / within_mean) if within_mean > 0 else float("inf")
