"""Compiled half steps of the ADMM solver (Hu & Kwok 2013 Algorithm 1, eqs. 11-13 and 25).

With ``K = V^T U`` stored as row matrices ``V, U`` of shape ``(n, r)`` (row ``i`` is the
paper's column ``v_i``), the augmented Lagrangian (6) is separable over the rows of one
factor when the other is fixed. Row ``i`` of the V-step minimizes

    tr(V L U^T) + gamma / 2 sum_{j in T_i} (v_i . u_j - t_ij)^2
        + Lambda_i . (v_i - u_i) + rho / 2 ||v_i - u_i||^2,

whose gradient ``A_i v_i - c_i`` (eq. 9) vanishes at ``v_i = A_i^{-1} c_i`` with
``A_i = rho I + gamma P_i^T P_i`` (rows of ``P_i``: the ``u_j``, ``j in T_i``) and
``c_i = gamma P_i^T t_i - (L U)_i + rho u_i - Lambda_i``. The U-step is the same with the
roles of ``U`` and ``V`` swapped and ``+Lambda_i`` (eq. 12). ``A_i^{-1}`` is applied by the
Sherman-Morrison-Woodbury identity (25) (:func:`psdlearn._linalg.smw_row_solve`),

    A_i^{-1} c = (c - P_i^T (rho / gamma I + P_i P_i^T)^{-1} P_i c) / rho,

so each row costs ``O(nnz(L_i) r + |T_i|^2 r + |T_i|^3)``; ``(L U)_i`` is formed on the
fly, never stored. Rows are independent, hence ``prange``; the threads are woken only from
:data:`psdlearn._linalg.PARALLEL_MIN_WORK` multiply-adds per half step (``(nnz(L) + |T|) r``;
measured: at 2.2e6, 1.5 ms serial against 8 ms parallel on a busy 2-core machine; at 2.1e7,
17 ms against 20 ms), below it the serial driver runs.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from psdlearn._linalg import PARALLEL_MIN_WORK, smw_row_solve

__all__ = ["PARALLEL_MIN_WORK", "half_step", "half_step_serial"]


@njit(cache=True)
def _dot(X, a, Y, b):
    s = 0.0
    for c in range(X.shape[1]):
        s += X[a, c] * Y[b, c]
    return s


@njit(cache=True)
def _update_rows(lo, hi, Lp, Li, Lx, Tp, Ti, Tt, S, own, lam, lam_sign, rho, gamma, X,
                 finish, kmax):
    """Rows ``lo:hi`` of :func:`half_step`, with one workspace; returns their five sums."""
    r = S.shape[1]
    acc = np.empty(r)
    rhs = np.empty(r)
    M = np.empty((kmax, kmax))
    F = np.empty((kmax, kmax))
    y = np.empty(kmax)
    change = 0.0
    size = 0.0
    primal = 0.0
    smooth = 0.0
    fit = 0.0
    for i in range(lo, hi):
        acc[:] = 0.0
        for p in range(Lp[i], Lp[i + 1]):
            j = Li[p]
            w = Lx[p]
            for c in range(r):
                acc[c] += w * S[j, c]
        for c in range(r):
            rhs[c] = rho * own[i, c] + lam_sign * lam[i, c] - acc[c]
        t0 = Tp[i]
        k = Tp[i + 1] - t0
        for q in range(k):
            j = Ti[t0 + q]
            g = gamma * Tt[t0 + q]
            for c in range(r):
                rhs[c] += g * S[j, c]
        smw_row_solve(S, Ti, t0, k, rhs, rho, gamma, M, F, y)
        for c in range(r):
            diff = rhs[c] - X[i, c]
            change += diff * diff
            size += rhs[c] * rhs[c]
            X[i, c] = rhs[c]
        if finish:
            for c in range(r):
                diff = own[i, c] - rhs[c]
                primal += diff * diff
                lam[i, c] += rho * diff
                smooth += S[i, c] * acc[c]
            for q in range(k):
                z = _dot(S, i, S, Ti[t0 + q]) - Tt[t0 + q]
                fit += z * z
    return change, size, primal, smooth, fit


@njit(parallel=True, cache=True)
def half_step(Lp, Li, Lx, Tp, Ti, Tt, S, own, lam, lam_sign, rho, gamma, X, finish):
    """One ADMM block update ``X <- argmin_X L(...)`` with the other factor ``S`` fixed.

    Parameters
    ----------
    Lp, Li, Lx : ndarray
        CSR arrays of the Laplacian ``L`` (n x n).
    Tp, Ti, Tt : ndarray
        CSR arrays of the ordered pair set ``T`` and its targets ``t_ij``.
    S : ndarray of shape (n, r)
        The fixed factor (``U`` for the V-step, ``V`` for the U-step).
    own : ndarray of shape (n, r)
        The factor in the proximal term ``rho / 2 ||v_i - u_i||^2`` (``U`` for the V-step,
        the new ``V`` for the U-step).
    lam : ndarray of shape (n, r)
        Multipliers ``Lambda``; with ``finish`` they are updated in place to
        ``Lambda + rho (V - U_new)``.
    lam_sign : float
        ``-1`` for the V-step (``c_i``), ``+1`` for the U-step (``d_i``).
    rho, gamma : float
    X : ndarray of shape (n, r)
        The updated factor, overwritten row by row (it is not read by other rows).
    finish : bool
        U-step only: also update ``lam`` and accumulate the primal residual and the
        objective at ``V = S``.

    Returns
    -------
    change : float
        ``||X_new - X_old||_F^2``.
    size : float
        ``||X_new||_F^2`` (summed here: a BLAS norm call costs more than the step on small
        problems when the cores are busy).
    primal : float
        ``||S - X_new||_F^2`` (``finish`` only, else 0).
    smooth : float
        ``tr(S^T L S)`` (``finish`` only).
    fit : float
        ``sum_{(i, j) in T} (s_i . s_j - t_ij)^2`` (``finish`` only).
    """
    n = S.shape[0]
    kmax = 1
    for i in range(n):
        kmax = max(kmax, Tp[i + 1] - Tp[i])
    # rows in chunks, each with its own workspace (no allocation per row)
    n_chunks = min(n, 64)
    change = 0.0
    size = 0.0
    primal = 0.0
    smooth = 0.0
    fit = 0.0
    for b in prange(n_chunks):
        d2, x2, p2, sm, f = _update_rows(b * n // n_chunks, (b + 1) * n // n_chunks, Lp, Li, Lx,
                                     Tp, Ti, Tt, S, own, lam, lam_sign, rho, gamma, X, finish,
                                     kmax)
        change += d2
        size += x2
        primal += p2
        smooth += sm
        fit += f
    return change, size, primal, smooth, fit


@njit(cache=True)
def half_step_serial(Lp, Li, Lx, Tp, Ti, Tt, S, own, lam, lam_sign, rho, gamma, X, finish):
    """:func:`half_step` on one thread (same arguments and results)."""
    n = S.shape[0]
    kmax = 1
    for i in range(n):
        kmax = max(kmax, Tp[i + 1] - Tp[i])
    return _update_rows(0, n, Lp, Li, Lx, Tp, Ti, Tt, S, own, lam, lam_sign, rho, gamma, X,
                        finish, kmax)
