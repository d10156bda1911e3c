"""Plain-NumPy references of the compiled NPKL kernels, used by the tests only.

``update_sample_reference`` and ``sample_objective_reference`` mirror
:func:`psdlearn.npkl._kernels.update_sample` and its per-sample objective (Hu & Kwok 2015
eq. 18); ``box_qp_reference`` mirrors :func:`psdlearn.npkl._qp.box_qp`. They are written
independently of the kernels (dense NumPy solves, SVD-based subproblems) so that agreement
checks the compiled code.
"""

from __future__ import annotations

import numpy as np

from psdlearn.npkl._qp import MULTIPLIER_RTOL, NULL_RTOL, PIVOT_RTOL
from psdlearn.npkl.problem import loss_values

__all__ = ["box_qp_reference", "sample_objective_reference", "update_sample_reference"]


def sample_objective_reference(v, i, E, laplacian, Tp, Ti, Ts, loss, gamma):
    """``Phi_i(v)`` of eq. (18), in NumPy.

    Parameters
    ----------
    v : ndarray of shape (r,)
        Candidate value of ``e_i``.
    i : int
    E : ndarray of shape (n, r)
        Current embedding (row ``i`` ignored).
    laplacian : scipy.sparse.csr_matrix
    Tp, Ti, Ts : ndarray
        Constraint adjacency CSR.
    loss : str
    gamma : float

    Returns
    -------
    float
        ``1/2 L_ii ||v||^2 + v^T s_i + gamma/2 sum_j l(T_ij v^T e_j)``.
    """
    lii, s = _row_terms(i, E, laplacian)
    sl = slice(Tp[i], Tp[i + 1])
    z = Ts[sl] * (E[Ti[sl]] @ v)
    return (
        0.5 * lii * float(v @ v) + float(v @ s) + 0.5 * gamma * float(np.sum(loss_values(z, loss)))
    )


def _row_terms(i, E, laplacian):
    """``L_ii`` and ``s_i = sum_{k != i} L_ik e_k`` in NumPy."""
    row = laplacian.getrow(i)
    lii = float(laplacian[i, i])
    s = np.asarray(row @ E).ravel() - lii * E[i]
    return lii, s


def update_sample_reference(
    i, E, laplacian, Tp, Ti, Ts, loss, gamma, b=1.0, alpha0=None, square_path="auto"
):
    """Plain-NumPy reference of ``_kernels.update_sample`` (returns instead of writing).

    Parameters
    ----------
    i : int
        Sample.
    E : ndarray of shape (n, r)
        Embedding (not modified).
    laplacian : scipy.sparse.csr_matrix of shape (n, n)
    Tp, Ti, Ts : ndarray
        Constraint adjacency CSR.
    loss : str
    gamma : float
    b : float, default=1.0
        Ball radius (linear loss).
    alpha0 : ndarray of shape (|T(i)|,), optional
        Warm start of the dual (hinge losses).
    square_path : {"auto", "smw", "direct"}, default="auto"

    Returns
    -------
    v : ndarray of shape (r,)
        Minimizer of ``Phi_i``.
    alpha : ndarray of shape (|T(i)|,) or None
        Dual solution for the hinge losses.
    """
    E = np.asarray(E, dtype=np.float64)
    r = E.shape[1]
    lii, s = _row_terms(i, E, laplacian)
    sl = slice(Tp[i], Tp[i + 1])
    T = np.asarray(Ts[sl], dtype=np.float64)
    B = E[Ti[sl]].T  # r x d, columns e_j
    d = B.shape[1]
    if d == 0 or loss == "linear":
        v = (0.5 * gamma * (B @ T) - s) / lii
        if loss == "linear" and np.linalg.norm(v) > b:
            v *= b / np.linalg.norm(v)
        return v, None
    if loss == "square":
        c = gamma * (B @ T) - s
        smw = d < r if square_path == "auto" else square_path == "smw"
        if smw:
            y = np.linalg.solve((lii / gamma) * np.eye(d) + B.T @ B, B.T @ c)
            return (c - B @ y) / lii, None
        return np.linalg.solve(lii * np.eye(r) + gamma * (B @ B.T), c), None
    A = B * T  # columns a_j = T_ij e_j
    H = A.T @ A
    if loss == "squared_hinge":
        H = H + (lii / gamma) * np.eye(d)
    q = lii + A.T @ s
    hi = 0.5 * gamma if loss == "hinge" else np.inf
    alpha = box_qp_reference(H, q, 0.0, hi, alpha0)
    return (A @ alpha - s) / lii, alpha


def box_qp_reference(H, q, lo, hi, x0=None, max_iter=None):
    """Plain-NumPy reference of ``_qp.box_qp`` (same active set, SVD-based subproblems).

    The subproblem on the free set is solved with :func:`numpy.linalg.lstsq`, whose
    minimum-norm solution ``p`` leaves the residual ``n = -g_F - H_FF p`` orthogonal to
    the range of ``H_FF``, i.e. in its null space; ``n != 0`` is the descent ray.

    Parameters
    ----------
    H : ndarray of shape (d, d)
        Symmetric positive semidefinite.
    q : ndarray of shape (d,)
    lo, hi : float
        Bounds (``hi`` may be ``inf``).
    x0 : ndarray of shape (d,), optional
        Starting point; ``lo`` everywhere by default.
    max_iter : int, optional
        Iteration cap, ``10 d + 20`` by default.

    Returns
    -------
    x : ndarray of shape (d,)
        The minimizer.
    """
    H = np.asarray(H, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    d = len(q)
    x = np.full(d, float(lo)) if x0 is None else np.clip(np.array(x0, dtype=np.float64), lo, hi)
    state = np.where(x <= lo, -1, np.where(x >= hi, 1, 0))
    max_iter = 10 * d + 20 if max_iter is None else max_iter
    for _ in range(max_iter):
        g = H @ x - q
        free = np.flatnonzero(state == 0)
        if free.size:
            Hff = H[np.ix_(free, free)]
            p, *_ = np.linalg.lstsq(Hff, -g[free], rcond=PIVOT_RTOL)
            nul = -g[free] - Hff @ p
            scale = np.max(np.abs(q)) + np.max(np.abs(np.diag(H))) * np.max(np.abs(x)) + 1e-300
            ray = np.linalg.norm(nul) > NULL_RTOL * scale
            if ray:
                p = nul
            with np.errstate(divide="ignore", invalid="ignore"):
                to_bound = np.where(
                    p < 0, (lo - x[free]) / p, np.where(p > 0, (hi - x[free]) / p, np.inf)
                )
            to_bound = np.maximum(to_bound, 0.0)
            step = np.inf if ray else 1.0
            block = int(np.argmin(to_bound)) if to_bound.size else -1
            blocked = block >= 0 and to_bound[block] < step
            if blocked:
                step = to_bound[block]
            elif ray:
                raise ValueError("the QP is unbounded below")
            x[free] = np.clip(x[free] + step * p, lo, hi)
            if blocked:
                k = free[block]
                x[k], state[k] = (lo, -1) if p[block] < 0 else (hi, 1)
                continue
        g = H @ x - q
        lam = np.where(state == -1, g, np.where(state == 1, -g, np.inf))
        scale = np.max(np.abs(q)) + np.max(np.abs(np.diag(H))) * np.max(np.abs(x)) + 1e-300
        k = int(np.argmin(lam))
        if lam[k] >= -MULTIPLIER_RTOL * scale:
            return x
        state[k] = 0
    raise RuntimeError("box_qp_reference did not converge")
