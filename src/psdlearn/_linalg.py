"""Linear algebra shared across the package: PSD projection and factors, kernel centering,
and the threshold above which numba kernels run on threads.

Every estimator and solver that clips eigenvalues, factors a PSD matrix or centers a kernel
calls these; the numba row solves shared by the NPKL kernels live at the end of this module.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh

__all__ = ["PARALLEL_MIN_WORK", "center_kernel", "psd_factor", "psd_projection"]

#: Multiply-adds of one parallel numba pass (``r`` times the stored entries it reads) from
#: which it runs on threads: below it, waking the threads costs about what they save
#: (measured for the BCD unconstrained pass, the ADMM half steps and the objective).
PARALLEL_MIN_WORK = 20_000_000


def psd_projection(S):
    """Nearest PSD matrix to the symmetric part of ``S`` in Frobenius norm.

    ``P = U max(Lambda, 0) U^T`` for ``(S + S^T) / 2 = U Lambda U^T``.

    Parameters
    ----------
    S : ndarray of shape (m, m)

    Returns
    -------
    ndarray of shape (m, m)
    """
    w, U = eigh(0.5 * (S + S.T), driver="evd")
    pos = w > 0
    return (U[:, pos] * w[pos]) @ U[:, pos].T


def psd_factor(S, rtol=1e-12, min_rank=0):
    """``F`` with ``F F^T`` the PSD part of ``(S + S^T) / 2``, largest eigenvalue first.

    Eigenvalues at most ``rtol * lambda_max`` are dropped (the factor is then ``U_r
    Lambda_r^{1/2}``, ``r`` the numerical rank).

    Parameters
    ----------
    S : ndarray of shape (m, m)
    rtol : float
    min_rank : int
        Keep at least this many columns (zero columns where the eigenvalues are not
        positive), so that callers always get a factor of a fixed minimal width.

    Returns
    -------
    ndarray of shape (m, r)
    """
    w, U = eigh(0.5 * (S + S.T), driver="evd")
    w, U = np.maximum(w[::-1], 0.0), U[:, ::-1]
    keep = w > rtol * w[0] if w.size else np.zeros(0, dtype=bool)
    keep[:min_rank] = True
    return np.ascontiguousarray(U[:, keep] * np.sqrt(w[keep]))


def center_kernel(K):
    """``H K H`` with ``H = I - 1 1^T / n``, without forming ``H``; returns a new array.

    Parameters
    ----------
    K : array-like of shape (n, n)

    Returns
    -------
    ndarray of shape (n, n)
        Every row and column sums to zero.
    """
    K = np.asarray(K, dtype=np.float64)
    K = K - K.mean(axis=0, keepdims=True)
    return K - K.mean(axis=1, keepdims=True)
