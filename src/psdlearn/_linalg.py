"""Linear algebra shared across the package: PSD projection and factors, kernel centering,
the threshold above which numba kernels run on threads, and the compiled Cholesky and
Sherman-Morrison-Woodbury row solves of the NPKL kernels.

Every estimator and solver that clips eigenvalues, factors a PSD matrix or centers a kernel
calls these. numba is imported by the package anyway (the NPKL kernels), so the compiled
functions here cost no import time.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.linalg import eigh

__all__ = ["PARALLEL_MIN_WORK", "center_kernel", "cholesky_inplace", "cholesky_solve",
           "psd_factor", "psd_projection", "smw_row_solve"]

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


# Compiled row solves shared by the NPKL kernels (BCD square loss, ADMM half steps).

#: LLVM flags of the compiled row solves: reassociation lets the ``r``-long dot products
#: vectorize (latency-bound chains otherwise); no flag assumes finite values.
ROW_FASTMATH = {"reassoc", "contract"}


@njit(cache=True)
def cholesky_inplace(A, d, F, rtol):
    """Cholesky factor ``A[:d, :d] = F F^T`` (lower triangle of ``F``), with a pivot test.

    Parameters
    ----------
    A : ndarray of shape (>= d, >= d)
        Symmetric matrix; only ``A[:d, :d]`` (lower triangle) is read.
    d : int
        Order of the leading block.
    F : ndarray of shape (>= d, >= d)
        Output; its lower triangle receives the factor.
    rtol : float
        A pivot ``<= rtol * max_k A_kk`` (or ``<= 0``) counts as a breakdown.

    Returns
    -------
    bool
        ``True`` when the factorization succeeded (``A[:d, :d]`` numerically definite).
    """
    amax = 0.0
    for k in range(d):
        if A[k, k] > amax:
            amax = A[k, k]
    thr = rtol * amax
    for j in range(d):
        s = A[j, j]
        for k in range(j):
            s -= F[j, k] * F[j, k]
        if s <= thr or s <= 0.0:
            return False
        fjj = np.sqrt(s)
        F[j, j] = fjj
        for i in range(j + 1, d):
            t = A[i, j]
            for k in range(j):
                t -= F[i, k] * F[j, k]
            F[i, j] = t / fjj
    return True


@njit(cache=True)
def cholesky_solve(F, d, b):
    """Solve ``F F^T x = b`` in place (``b`` becomes ``x``), ``F`` from :func:`cholesky_inplace`.

    Parameters
    ----------
    F : ndarray of shape (>= d, >= d)
        Lower-triangular factor.
    d : int
        Order.
    b : ndarray of shape (>= d,)
        Right-hand side, overwritten with the solution.
    """
    for i in range(d):
        t = b[i]
        for k in range(i):
            t -= F[i, k] * b[k]
        b[i] = t / F[i, i]
    for i in range(d - 1, -1, -1):
        t = b[i]
        for k in range(i + 1, d):
            t -= F[k, i] * b[k]
        b[i] = t / F[i, i]


@njit(cache=True, fastmath=ROW_FASTMATH)
def _row_dot(X, a, Y, b):
    """``x_a^T y_b`` for rows of two C-ordered matrices, in float64 (float32 rows widened)."""
    s = 0.0
    for c in range(X.shape[1]):
        s += np.float64(X[a, c]) * Y[b, c]
    return s


@njit(cache=True, fastmath=ROW_FASTMATH)
def smw_row_solve(P, idx, start, k, rhs, shift, gamma, M, F, y):
    """Overwrite ``rhs`` by ``A^{-1} rhs``, ``A = shift I + gamma B B^T`` (Woodbury).

    ``B`` (``r x k``) has the columns ``p_a = P[idx[start + a]]``, rows of ``P``. The
    Sherman-Morrison-Woodbury identity

    .. math::

        A^{-1} c = \\frac{1}{s}\\Big(c - B \\big(\\tfrac{s}{\\gamma} I + B^T B\\big)^{-1}
                   B^T c\\Big), \\qquad s = \\text{shift} > 0,

    needs a ``k x k`` Cholesky instead of an ``r x r`` one: ``O(k^2 r + k^3)``. It is the
    square-loss row update of BCD (Hu & Kwok 2015 eq. 28, ``s = L_ii``) and the column solve
    of ADMM (Hu & Kwok 2013 eq. 25, ``s = rho``). ``k = 0`` or ``gamma = 0`` gives
    ``c / s``.

    Parameters
    ----------
    P : ndarray of shape (n, r)
    idx : ndarray of int64
        Row numbers of ``P``; ``idx[start:start + k]`` are the columns of ``B``.
    start, k : int
    rhs : ndarray of shape (r,)
        ``c``, overwritten with the solution.
    shift, gamma : float
    M, F : ndarray of shape (>= k, >= k)
        Workspace (``s / gamma I + B^T B``, lower triangle, and its factor).
    y : ndarray of shape (>= k,)
        Workspace.
    """
    r = rhs.shape[0]
    if k > 0 and gamma > 0.0:
        for a in range(k):
            ja = idx[start + a]
            s = 0.0
            for c in range(r):
                s += P[ja, c] * rhs[c]
            y[a] = s
            for b in range(a + 1):
                M[a, b] = _row_dot(P, ja, P, idx[start + b])
            M[a, a] += shift / gamma
        # s / gamma I + B^T B is positive definite: the factorization cannot fail
        cholesky_inplace(M, k, F, 0.0)
        cholesky_solve(F, k, y)
        for a in range(k):
            ja = idx[start + a]
            for c in range(r):
                rhs[c] -= y[a] * P[ja, c]
    for c in range(r):
        rhs[c] /= shift
