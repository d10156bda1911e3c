"""Small dense convex QPs with box constraints, solved exactly (BCD per-sample duals).

The hinge and squared hinge updates of Hu & Kwok 2015 (eqs. 22 and 25) reduce to

.. math::

    \\min_{\\alpha \\in \\mathbb{R}^d} \\; \\tfrac12 \\alpha^T H \\alpha - q^T \\alpha
    \\quad \\text{s.t.} \\quad lo \\le \\alpha_k \\le hi,

with ``d = |T(i)|`` small (typically 1 to 10), ``H`` symmetric positive *semi*-definite
(``H = P = A^T A`` is singular for the hinge loss whenever ``d > r`` or two partners have
parallel embeddings), ``lo = 0`` and ``hi = gamma / 2`` (hinge) or ``hi = +inf`` (squared
hinge, where ``H`` is positive definite).

Method: primal active set (Nocedal & Wright, *Numerical Optimization*, Alg. 16.3) on the
bounds. The working set ``W`` holds variables fixed at a bound; the free set is ``F``. Each
iteration solves the equality-constrained subproblem in ``F``,

.. math::

    \\min_{p_F} \\tfrac12 p_F^T H_{FF} p_F + g_F^T p_F, \\qquad g = H\\alpha - q,

by Cholesky when ``H_FF`` is positive definite. When it is singular, an eigendecomposition
``H_FF = Q \\Lambda Q^T`` splits ``-g_F`` into a range part (giving the minimum-norm
Newton step ``p = -Q \\Lambda^+ Q^T g_F``) and a null-space part ``n``; if ``n != 0`` the
subproblem is unbounded below along the ray ``n`` (``g^T n = -||n||^2``, ``H n = 0``),
and the step follows that ray to the first bound. Steps are shortened by the ratio test
(the blocking variable joins ``W``); when the full step is feasible, the multipliers of
``W`` (``g_k`` at a lower bound, ``-g_k`` at an upper bound) are checked and the most
negative one is released. In exact arithmetic the objective decreases strictly at every
nonzero step and the method stops after finitely many steps at a KKT point, i.e. an exact
minimizer. In floating point, a relative tolerance of ``1e-12`` decides the sign of the
multipliers; a final check of the KKT residual hands the rare failure (cycling or the
iteration cap) to projected coordinate descent, which converges for any PSD ``H``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from psdlearn._linalg import cholesky_inplace, cholesky_solve

__all__ = ["box_qp", "kkt_residual"]

# The helpers of :func:`box_qp` are inlined (``inline="always"``): a call of a compiled
# function pays a reference-count round trip per array argument, which at the usual
# ``d`` of two or three cost as much as the arithmetic.

#: Pivots (Cholesky) or eigenvalues (eigh) below this fraction of the largest diagonal
#: entry / eigenvalue are treated as zero: the subproblem is then singular.
PIVOT_RTOL = 1e-12
#: Relative tolerance on the multipliers of the working set (units of ``|q| + |H||x|``).
MULTIPLIER_RTOL = 1e-12
#: Null-space components of the gradient below this (relative) are treated as zero: they
#: are rounding noise of ``g = H x - q`` (about ``d eps`` relative), and ignoring them
#: leaves a gradient well inside the accepted KKT residual.
NULL_RTOL = 1e-11
#: Relative KKT residual accepted at exit; above it the coordinate-descent fallback runs.
KKT_RTOL = 1e-10
#: Pass cap of the coordinate-descent fallback.
MAX_POLISH_PASSES = 100_000


@njit(cache=True, inline="always")
def _gradient(H, q, d, x, g):
    """``g = H x - q`` on the leading ``d`` entries."""
    for a in range(d):
        t = -q[a]
        for c in range(d):
            t += H[a, c] * x[c]
        g[a] = t


@njit(cache=True, inline="always")
def _scale(H, q, d, x):
    """Magnitude ``max|q| + max|H_kk| max|x|`` against which tolerances are relative."""
    qmax = 0.0
    hmax = 0.0
    xmax = 0.0
    for a in range(d):
        qmax = max(qmax, abs(q[a]))
        hmax = max(hmax, abs(H[a, a]))
        xmax = max(xmax, abs(x[a]))
    return qmax + hmax * xmax + 1e-300


@njit(cache=True, inline="always")
def kkt_residual(H, q, d, lo, hi, x, g):
    """KKT residual of the box QP at ``x`` and the scale it is measured against.

    With ``g = H x - q`` the optimality conditions are ``g_k = 0`` for ``lo < x_k < hi``,
    ``g_k >= 0`` at ``x_k = lo`` and ``g_k <= 0`` at ``x_k = hi``. The residual is the
    largest violation ``max_k |min(x_k - lo, g_k)|`` at a lower bound, ``|max(x_k - hi,
    g_k)|`` at an upper bound, written as in the natural residual ``x - clip(x - g)``.

    Parameters
    ----------
    H, q, d, lo, hi, x
        Problem data and point (``x`` feasible).
    g : ndarray of shape (>= d,)
        Workspace; receives ``H x - q``.

    Returns
    -------
    res : float
        ``max_k |x_k - clip(x_k - g_k, lo, hi)|``.
    scale : float
        ``max|q| + max|H_kk| max|x|``.
    """
    _gradient(H, q, d, x, g)
    res = 0.0
    for a in range(d):
        z = x[a] - g[a]
        if z < lo:
            z = lo
        elif z > hi:
            z = hi
        res = max(res, abs(x[a] - z))
    return res, _scale(H, q, d, x)


@njit(cache=True, inline="always")
def _eqp_step(H, g, idx, nf, p, nul, Hs, Fs, null_tol):
    """Newton step of the subproblem on the free set, or a descent ray if it is unbounded.

    Writes ``p[:nf]`` (compact, aligned with ``idx[:nf]``). Returns ``True`` when ``p`` is
    a null-space ray of ``H_FF`` (the subproblem is unbounded along it), ``False`` when it
    is the (minimum-norm) minimizer step ``H_FF p = -g_F``. A null-space component of
    norm ``<= null_tol`` is rounding noise of ``g`` (or below the KKT tolerance) and is
    ignored, since following a noise ray can undo the last release and cycle.
    """
    for a in range(nf):
        for c in range(nf):
            Hs[a, c] = H[idx[a], idx[c]]
    if cholesky_inplace(Hs, nf, Fs, PIVOT_RTOL):
        for a in range(nf):
            p[a] = -g[idx[a]]
        cholesky_solve(Fs, nf, p)
        return False
    # Singular H_FF (e.g. more partners than dimensions): split -g_F over range/null space.
    w, Q = np.linalg.eigh(np.ascontiguousarray(Hs[:nf, :nf]))
    thr = PIVOT_RTOL * max(w[nf - 1], 0.0)
    nsq = 0.0
    for a in range(nf):
        p[a] = 0.0
        nul[a] = 0.0
    for k in range(nf):
        ck = 0.0
        for a in range(nf):
            ck -= Q[a, k] * g[idx[a]]
        if w[k] > thr and w[k] > 0.0:
            ck /= w[k]
            for a in range(nf):
                p[a] += ck * Q[a, k]
        else:
            for a in range(nf):
                nul[a] += ck * Q[a, k]
    for a in range(nf):
        nsq += nul[a] ** 2
    if nsq > null_tol * null_tol:
        for a in range(nf):
            p[a] = nul[a]
        return True
    return False


@njit(cache=True, inline="always")
def _active_set(H, q, d, lo, hi, x, g, p, nul, state, idx, Hs, Fs, max_iter):
    """Primal active-set iterations; returns the iteration count, ``-1`` at the cap."""
    for a in range(d):
        if x[a] <= lo:
            x[a] = lo
            state[a] = -1
        elif x[a] >= hi:
            x[a] = hi
            state[a] = 1
        else:
            state[a] = 0
    for it in range(max_iter):
        _gradient(H, q, d, x, g)
        nf = 0
        for a in range(d):
            if state[a] == 0:
                idx[nf] = a
                nf += 1
        if nf > 0:
            null_tol = NULL_RTOL * _scale(H, q, d, x)
            ray = _eqp_step(H, g, idx, nf, p, nul, Hs, Fs, null_tol)
            step = np.inf if ray else 1.0
            block = -1
            for t in range(nf):
                a = idx[t]
                if p[t] < 0.0:
                    s = (lo - x[a]) / p[t]
                elif p[t] > 0.0 and hi < np.inf:
                    s = (hi - x[a]) / p[t]
                else:
                    continue
                s = max(s, 0.0)
                if s < step:
                    step = s
                    block = t
            if block < 0 and ray:
                return -2  # unbounded below: impossible for the NPKL duals
            for t in range(nf):
                a = idx[t]
                x[a] = min(max(x[a] + step * p[t], lo), hi)
            if block >= 0:
                a = idx[block]
                if p[block] < 0.0:
                    x[a] = lo
                    state[a] = -1
                else:
                    x[a] = hi
                    state[a] = 1
                continue
        # At the minimizer over the current face: release the most negative multiplier.
        _gradient(H, q, d, x, g)
        worst = -MULTIPLIER_RTOL * _scale(H, q, d, x)
        release = -1
        for a in range(d):
            if state[a] == -1:
                lam = g[a]
            elif state[a] == 1:
                lam = -g[a]
            else:
                continue
            if lam < worst:
                worst = lam
                release = a
        if release < 0:
            return it + 1
        state[release] = 0
    return -1


@njit(cache=True)
def _coordinate_descent(H, q, d, lo, hi, x, g, max_passes):
    """Exact cyclic coordinate minimization, the fallback; returns the passes used."""
    _gradient(H, q, d, x, g)
    for it in range(max_passes):
        for a in range(d):
            if H[a, a] > 0.0:
                xa = min(max(x[a] - g[a] / H[a, a], lo), hi)
            elif g[a] < 0.0:  # linear along this coordinate: go to the better end
                xa = hi
            else:
                xa = lo
            delta = xa - x[a]
            if delta != 0.0 and np.isfinite(delta):
                x[a] = xa
                for c in range(d):
                    g[c] += H[c, a] * delta
        res, scale = kkt_residual(H, q, d, lo, hi, x, g)
        if res <= KKT_RTOL * scale:
            return it + 1
    return max_passes


@njit(cache=True, inline="always")
def _two_variables(H, q, lo, hi, x):
    """``d = 2`` in closed form: the stationary point when it is inside the box and ``H`` is
    definite (pivot test of :data:`PIVOT_RTOL`), else the best of the minimizers along the
    box's edges (``x_a`` at a bound, ``x_b`` clipped), where a convex quadratic that is
    singular or whose stationary point is outside has its minimum. Writes ``x``; returns
    ``False`` when no edge gives a finite point (never for the NPKL duals)."""
    h00, h01, h11, q0, q1 = H[0, 0], H[0, 1], H[1, 1], q[0], q[1]
    thr = PIVOT_RTOL * max(h00, h11)
    if h00 > thr:
        pivot = h11 - h01 * (h01 / h00)
        if pivot > thr and pivot > 0.0:
            x1 = (q1 - (h01 / h00) * q0) / pivot
            x0 = (q0 - h01 * x1) / h00
            if lo <= x0 <= hi and lo <= x1 <= hi:
                x[0], x[1] = x0, x1
                return True
    best = np.inf
    for a in range(2):
        b = 1 - a
        haa, hbb, hab, qa, qb = (h00, h11, h01, q0, q1) if a == 0 else (h11, h00, h01, q1, q0)
        for side in range(2):
            xa = lo if side == 0 else hi
            if not np.isfinite(xa):
                continue
            slope = hab * xa - qb  # d/dx_b of the objective at x_b = 0
            if hbb > 0.0:
                xb = min(max(-slope / hbb, lo), hi)
            else:
                xb = lo if slope >= 0.0 else hi
            if not np.isfinite(xb):
                continue
            f = 0.5 * (haa * xa * xa + hbb * xb * xb) + hab * xa * xb - qa * xa - qb * xb
            if f < best:
                best = f
                x[a], x[b] = xa, xb
    return best < np.inf


@njit(cache=True)
def box_qp(H, q, d, lo, hi, x, g, p, nul, state, idx, Hs, Fs):
    """Exact minimizer of ``1/2 x^T H x - q^T x`` over ``lo <= x <= hi`` (``H`` PSD).

    Primal active set (see the module docstring), warm-started from ``x``; falls back to
    projected coordinate descent if the KKT residual at exit exceeds ``KKT_RTOL`` relative.
    Two variables are solved in closed form (:func:`_two_variables`), checked by the same
    KKT residual (the active set runs when it fails).

    Parameters
    ----------
    H : ndarray of shape (>= d, >= d)
        Symmetric positive semidefinite; leading ``d x d`` block used.
    q : ndarray of shape (>= d,)
    d : int
        Number of variables.
    lo, hi : float
        Bounds, ``lo`` finite, ``hi`` possibly ``inf``.
    x : ndarray of shape (>= d,)
        In: starting point (clipped to the box). Out: the minimizer.
    g, p, nul : ndarray of shape (>= d,)
        Workspaces.
    state, idx : ndarray of shape (>= d,), int64
        Workspaces.
    Hs, Fs : ndarray of shape (>= d, >= d)
        Workspaces.

    Returns
    -------
    int
        Active-set iterations used (``> 0``), or ``-1`` when the fallback was needed.
    """
    if d == 2 and _two_variables(H, q, lo, hi, x):
        res, scale = kkt_residual(H, q, d, lo, hi, x, g)
        if res <= KKT_RTOL * scale:
            return 1
    it = _active_set(H, q, d, lo, hi, x, g, p, nul, state, idx, Hs, Fs, 10 * d + 20)
    if it > 0:
        res, scale = kkt_residual(H, q, d, lo, hi, x, g)
        if res <= KKT_RTOL * scale:
            return it
    for a in range(d):
        x[a] = min(max(x[a], lo), hi)
    _coordinate_descent(H, q, d, lo, hi, x, g, MAX_POLISH_PASSES)
    return -1
