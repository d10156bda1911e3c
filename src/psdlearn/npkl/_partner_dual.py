"""The hinge losses' per-sample problem for a sample with many partners (partial labels).

A labelled point among ``l`` labelled points has ``d = l - 1`` partners, and its dual box
QP (Hu & Kwok 2015, eqs. 22 and 25; see :mod:`psdlearn.npkl._kernels`)

.. math::

    \\min_{0 \\le \\alpha \\le h} \\tfrac12 \\alpha^T (A^T A + \\delta I) \\alpha - q^T \\alpha,
    \\qquad q_s = L_{ii} + a_s^T s_i,

with ``A = [T_ij e_j]`` (``r x d``), ``delta = 0`` (hinge), ``L_ii / gamma`` (squared hinge)
or ``2 mu L_ii / gamma`` (smoothed hinge), has a Hessian of rank at most ``r + d delta``.
Forming it costs ``O(d^2 r)``, and the primal active set of :func:`psdlearn.npkl._qp.box_qp`
moves one variable per step, each step ``O(d^2)``: from a cold start, where nearly every
pair is violated and nearly every dual ends at its bound, that is hundreds of steps.

Here the dual is kept through ``u = A alpha - s_i`` (``= L_ii v``, the primal row scaled),
so its gradient is ``g_s = a_s^T u - L_ii + delta alpha_s``, ``O(r)`` per entry:

1. The start. The hinge's duals all zero (each stage starts its duals from zero) are
   replaced by the vertex of the row itself: ``alpha_j = h`` for the pairs that ``e_i``
   violates (``T_ij e_i^T e_j < 1``), 0 for the others. After the smoothed stages the row is
   near its minimizer and so is that vertex, a start several times cheaper than zero (method
   notes, "Hinge rows with many partners"). For the smoothed and squared hinges (``delta >
   0``, the fallback of :func:`partner_newton`), when more than a third of the duals violate
   their optimality conditions at the start, exact coordinate minimization passes, ``O(d
   r)`` each and updating ``u`` by rank one, move them towards their bounds together (at
   most :data:`CD_PASSES`). If the KKT residual of the point reached (or of the start) is
   within the tolerance of :func:`~psdlearn.npkl._qp.box_qp`, that point is the minimizer,
   and no Hessian entry is formed. The hinge has no such passes: its ``P`` is singular, and
   near the optimum they stop inside the box along its null space, where the restricted QPs
   below would be singular too.
2. The duals strictly inside the box make the working set ``U``; the others stay at their
   bounds. Each round adds the :data:`CHUNK` (at least ``r``) most violated duals outside
   ``U`` and solves the QP restricted to ``U`` exactly by
   :func:`~psdlearn.npkl._qp.box_qp` (``q_U`` less the fixed duals' contribution
   ``A_U^T A_B alpha_B``; the rows of ``H_UU`` are formed once, when a dual joins). The
   round after which no dual outside ``U`` is violated ends at a KKT point of the whole
   QP (the fixed duals' conditions are checked directly, the others are those of the
   restricted QP), so the minimizer is exact to the same tolerance as the dense path's.
   After a sweep the violated duals are many but barely violated (pairs at the margin
   whose partners moved), and the few most violated usually settle the others.

The smoothed and squared hinges (``delta > 0``) have hundreds of duals strictly inside the
box at the optimum (the pairs within the smoothing of the margin), which the active set
would free one per step; their rows are solved by :func:`partner_newton` in the primal's
``r`` dimensions, with :func:`partner_dual` as its fallback.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from psdlearn._linalg import ROW_FASTMATH, cholesky_inplace, cholesky_solve

from ._qp import KKT_RTOL, box_qp

__all__ = ["MANY_PARTNERS", "WORKING_SET_CAPACITY", "partner_dual", "partner_newton",
           "solved_here"]

#: Rows with at least this many partners, and more than the rank, take this module's paths
#: instead of the dense Hessian (measured in the method notes, "Hinge rows with many
#: partners").
MANY_PARTNERS = 32
#: Cap of the coordinate passes (the smoothed and squared hinges, in Newton's fallback).
CD_PASSES = 10
#: Violated duals that join the working set per round (at least the rank).
CHUNK = 32
#: Order of the working set's Hessian workspace that the sweeps allocate for these rows;
#: a larger working set allocates its own.
WORKING_SET_CAPACITY = 256
#: Cap of the Newton steps of :func:`partner_newton` before it hands over to
#: :func:`partner_dual`.
NEWTON_STEPS = 50
#: Cap of the safeguarded Newton iterations of :func:`_line_minimum` (each ``O(d)``).
LINE_STEPS = 60


@njit(cache=True, inline="always")
def solved_here(d, r):
    """Whether a hinge-loss row with ``d`` partners at rank ``r`` is solved by this module
    (the sweeps' routing and their workspace sizes both read it)."""
    return d >= MANY_PARTNERS and d > r


@njit(cache=True, fastmath=ROW_FASTMATH, inline="always")
def _dot(E, j, u):
    t = 0.0
    for c in range(u.shape[0]):
        t += np.float64(E[j, c]) * u[c]
    return t


@njit(cache=True, fastmath=ROW_FASTMATH, inline="always")
def _axpy(u, w, E, j):
    for c in range(u.shape[0]):
        u[c] += w * np.float64(E[j, c])


@njit(cache=True, inline="always")
def _violates(x, g, hi, tol):
    return (x <= 0.0 and g < -tol) or (x >= hi and g > tol)


@njit(cache=True, fastmath=ROW_FASTMATH)
def partner_dual(i, E, Ti, Ts, start, d, s, lii, delta, hi, x, u, dvec, dmat, ivec):
    """Exact minimizer of the per-sample dual of the hinge losses in ``O(d r)`` per pass.

    Parameters
    ----------
    i : int
        The sample; its row ``E[i]`` starts the hinge (``delta = 0``) when the duals ``x``
        are all zero.
    E : ndarray of shape (n, r)
        Embedding (float64 or float32).
    Ti, Ts : ndarray
        Constraint adjacency: partners and signs, slots ``start .. start + d``.
    s : ndarray of shape (r,)
        ``s_i = sum_{k != i} L_ik e_k``.
    lii, delta, hi : float
        ``L_ii``, the diagonal added to ``A^T A`` and the upper bound (``inf`` for the
        squared hinge).
    x : ndarray of shape (>= d,)
        In: the warm start. Out: the minimizer.
    u : ndarray of shape (r,)
        Out: ``A x - s_i``.
    dvec, dmat, ivec : ndarray
        Workspaces of :func:`psdlearn.npkl._kernels.workspaces`, ``dvec`` and ``ivec``
        with ``dmax >= d``; ``x`` may be ``dvec[1]``, which is not used otherwise. A
        working set larger than ``dmat``'s order allocates a larger Hessian workspace.

    Returns
    -------
    int
        Restricted QPs solved (0 when the start or the passes met the tolerance).
    """
    q, xs, g, p, nul, nrm = dvec[0], dvec[2], dvec[3], dvec[4], dvec[5], dvec[6]
    H, Hs, Fs = dmat[0], dmat[1], dmat[2]
    state, idx, inset, members = ivec[0], ivec[1], ivec[2], ivec[3]
    r = u.shape[0]
    for c in range(r):
        u[c] = -s[c]
    qmax = 0.0
    hmax = 0.0
    for a in range(d):
        j = Ti[start + a]
        x[a] = min(max(x[a], 0.0), hi)
        e2 = 0.0
        for c in range(r):
            e2 += np.float64(E[j, c]) ** 2
        nrm[a] = e2 + delta
        hmax = max(hmax, nrm[a])
        qmax = max(qmax, abs(lii + Ts[start + a] * _dot(E, j, s)))
        if x[a] != 0.0:
            _axpy(u, x[a] * Ts[start + a], E, j)
    xmax = 0.0
    for a in range(d):
        xmax = max(xmax, x[a])
    if xmax == 0.0 and delta == 0.0:
        # the hinge from duals all zero (each stage starts there): the vertex of the row
        # itself, every pair it violates at the bound
        for a in range(d):
            j = Ti[start + a]
            if Ts[start + a] * _dot(E, j, E[i]) < 1.0:
                x[a] = hi
                _axpy(u, hi * Ts[start + a], E, j)
                xmax = hi
    violated = 0
    tol = KKT_RTOL * (qmax + hmax * xmax + 1e-300)
    for a in range(d):
        ga = Ts[start + a] * _dot(E, Ti[start + a], u) - lii + delta * x[a]
        if _violates(x[a], ga, hi, tol):
            violated += 1
    # from a stale start of the smoothed and squared hinges; the hinge's P is singular, and
    # the passes would move its duals off their bounds along P's null space, where the
    # restricted QPs of the working set are singular too
    if 3 * violated > d and delta > 0.0:
        for _ in range(CD_PASSES):
            res = 0.0
            xmax = 0.0
            for a in range(d):
                j = Ti[start + a]
                ga = Ts[start + a] * _dot(E, j, u) - lii + delta * x[a]
                res = max(res, abs(x[a] - min(max(x[a] - ga, 0.0), hi)))
                if nrm[a] > 0.0:
                    xa = min(max(x[a] - ga / nrm[a], 0.0), hi)
                else:  # e_j = 0: the objective is linear in x_a
                    xa = hi if ga < 0.0 else 0.0
                if xa != x[a] and np.isfinite(xa):
                    _axpy(u, (xa - x[a]) * Ts[start + a], E, j)
                    x[a] = xa
                xmax = max(xmax, x[a])
            if res <= KKT_RTOL * (qmax + hmax * xmax + 1e-300):
                break
        tol = KKT_RTOL * (qmax + hmax * xmax + 1e-300)
    # the KKT residual at x; the working set starts with the free duals
    res = 0.0
    nu = 0
    for a in range(d):
        ga = Ts[start + a] * _dot(E, Ti[start + a], u) - lii + delta * x[a]
        res = max(res, abs(x[a] - min(max(x[a] - ga, 0.0), hi)))
        inset[a] = 0
        if 0.0 < x[a] < hi:
            inset[a] = 1
            members[nu] = a
            nu += 1
    if res <= tol:
        return 0
    built = 0
    rounds = 0
    while True:
        added = _add_violators(E, Ti, Ts, start, d, u, lii, delta, hi, x, tol, inset,
                               members, nu, nul, max(CHUNK, r))
        if added == 0 and rounds > 0:
            return rounds
        nu += added
        rounds += 1
        if nu == 0:
            return rounds
        if nu > H.shape[0]:  # the working set outgrew the workspace: a larger one
            cap = min(d, 2 * nu)
            grown = np.empty((3, cap, cap))
            grown[0, :built, :built] = H[:built, :built]
            H, Hs, Fs = grown[0], grown[1], grown[2]
        # u without the working set's duals: A_B x_B - s_i; q_U = L_ii - A_U^T u_B
        for k in range(nu):
            a = members[k]
            _axpy(u, -x[a] * Ts[start + a], E, Ti[start + a])
        for k in range(nu):
            a = members[k]
            j = Ti[start + a]
            ta = Ts[start + a]
            q[k] = lii - ta * _dot(E, j, u)
            xs[k] = x[a]
            if k >= built:  # a new member: its row of H_UU
                for k2 in range(k + 1):
                    b = members[k2]
                    h = ta * Ts[start + b] * _dot(E, j, E[Ti[start + b]])
                    H[k, k2] = h
                    H[k2, k] = h
                H[k, k] += delta
        built = nu
        box_qp(H, q, nu, 0.0, hi, xs, g, p, nul, state, idx, Hs, Fs)
        xmax = 0.0
        for k in range(nu):
            a = members[k]
            x[a] = xs[k]
            _axpy(u, x[a] * Ts[start + a], E, Ti[start + a])
        for a in range(d):
            xmax = max(xmax, x[a])
        tol = KKT_RTOL * (qmax + hmax * xmax + 1e-300)


@njit(cache=True, fastmath=ROW_FASTMATH)
def _add_violators(E, Ti, Ts, start, d, u, lii, delta, hi, x, tol, inset, members, nu, viol,
                   k):
    """Append to ``members[nu:]`` the (at most) ``k`` duals outside the working set whose
    optimality conditions are violated most; returns how many."""
    count = 0
    for a in range(d):
        viol[a] = 0.0
        if inset[a]:
            continue
        ga = Ts[start + a] * _dot(E, Ti[start + a], u) - lii + delta * x[a]
        if _violates(x[a], ga, hi, tol):
            viol[a] = abs(ga)
            count += 1
    if count > k:
        order = np.argsort(viol[:d])
        for t in range(d - k, d):
            a = order[t]
            inset[a] = 1
            members[nu] = a
            nu += 1
        return k
    added = 0
    for a in range(d):
        if viol[a] > 0.0:
            inset[a] = 1
            members[nu + added] = a
            added += 1
    return added


@njit(cache=True, fastmath=ROW_FASTMATH)
def _margins(E, Ti, Ts, start, d, v, z):
    """``z_j = 1 - a_j^T v`` into ``z`` (``a_j = T_ij e_j``)."""
    for a in range(d):
        z[a] = 1.0 - Ts[start + a] * _dot(E, Ti[start + a], v)


@njit(cache=True, fastmath=ROW_FASTMATH)
def _duals_and_gradient(E, Ti, Ts, start, d, s, lii, c, hi, v, z, x, grad):
    """``alpha(v)`` into ``x`` and the gradient of ``Phi`` at ``v`` into ``grad``, from the
    margins ``z`` of ``v``.

    ``Phi(v) = 1/2 L_ii ||v||^2 + v^T s + sum_j psi(z_j)``, ``z_j = 1 - a_j^T v``, where
    ``psi' (z) = clip(c z, 0, hi)`` is the dual of pair ``j`` at ``v`` (``psi = 0`` for
    ``z <= 0``, ``c z^2 / 2`` up to ``hi / c``, then linear).
    """
    r = v.shape[0]
    for k in range(r):
        grad[k] = lii * v[k] + s[k]
    for a in range(d):
        al = min(max(c * z[a], 0.0), hi)
        x[a] = al
        if al != 0.0:
            _axpy(grad, -al * Ts[start + a], E, Ti[start + a])


@njit(cache=True, fastmath=ROW_FASTMATH)
def _line_minimum(E, Ti, Ts, start, d, s, lii, c, hi, v, p, z, b):
    """The minimizer ``t > 0`` of ``phi(t) = Phi(v + t p)`` along a descent direction.

    ``phi'(t) = L_ii (v + t p)^T p + s^T p - sum_j b_j psi'(z_j - t b_j)`` with ``z`` the
    margins of ``v`` (:func:`_margins`) and ``b_j = a_j^T p`` (into ``b``, ``O(d r)``) is
    continuous, piecewise linear and nondecreasing: its root is found by Newton's method on
    it (``O(d)`` per step, exact on each linear piece) inside a bracket that is halved when
    a step leaves it. Returns 0 when ``phi'(0) >= 0`` (no descent at this precision).
    """
    r = v.shape[0]
    vp = 0.0
    pp = 0.0
    sp_ = 0.0
    for k in range(r):
        vp += v[k] * p[k]
        pp += p[k] * p[k]
        sp_ += s[k] * p[k]
    for a in range(d):
        b[a] = Ts[start + a] * _dot(E, Ti[start + a], p)
    lo, up, t = 0.0, np.inf, 1.0
    for _ in range(LINE_STEPS):
        der = lii * (vp + t * pp) + sp_
        curv = lii * pp
        scale = abs(lii * vp) + abs(lii * t * pp) + abs(sp_)
        for a in range(d):
            w = c * (z[a] - t * b[a])
            if w <= 0.0:
                continue
            if w < hi:
                der -= b[a] * w
                curv += c * b[a] * b[a]
                scale += abs(b[a] * w)
            else:
                der -= b[a] * hi
                scale += abs(b[a] * hi)
        if abs(der) <= 1e-14 * scale:
            return t
        if der < 0.0:
            lo = t
        else:
            up = t
        nxt = t - der / curv
        if not lo < nxt < up:
            nxt = 2.0 * t if up == np.inf else 0.5 * (lo + up)
        if nxt == t or (up < np.inf and up - lo <= 1e-15 * up):
            return t if der <= 0.0 else lo
        t = nxt
    return lo


@njit(cache=True, fastmath=ROW_FASTMATH)
def partner_newton(i, E, Ti, Ts, start, d, s, lii, c, hi, x, u, rwork, M, FM, dvec, dmat,
                   ivec):
    """The smoothed and squared hinges' per-sample problem by Newton's method in ``r``.

    With ``delta = L_ii / c`` (``c = gamma / (2 mu)`` for the smoothed hinge, ``gamma``
    for the squared hinge) the dual of :func:`partner_dual` is the dual of the primal

    .. math::

        \\Phi(v) = \\tfrac12 L_{ii} \\|v\\|^2 + v^T s_i + \\sum_j \\psi(1 - a_j^T v),
        \\qquad \\psi'(z) = \\min(\\max(c z, 0), h),

    whose minimizer gives the duals ``alpha_j = psi'(1 - a_j^T v)`` and ``L_ii v =
    A alpha - s_i``. ``Phi`` is strongly convex and piecewise quadratic, so Newton's
    method (generalized Hessian ``L_ii I + c sum_{0 < c z_j < h} a_j a_j^T``, ``r x r``,
    and the exact minimum along the step, :func:`_line_minimum`) ends on the minimizer's
    piece in a few steps of ``O(d r + |F| r^2 + r^3)``, whatever the number of duals
    strictly inside the box. It stops when ``max_j ||a_j|| ||grad Phi||`` (which bounds
    the duals' KKT residual) is within the tolerance of :func:`partner_dual`, and hands
    over to it otherwise.

    Parameters
    ----------
    i : int
        The sample; its row ``E[i]`` starts Newton when the duals ``x`` are all zero.
    E, Ti, Ts, start, d, s, lii, hi, x, u, dvec, dmat, ivec
        As in :func:`partner_dual`; ``x`` is the warm start (``v = (A x - s_i) / L_ii``).
    c : float
        Slope of ``psi'``, see above.
    rwork : ndarray of shape (>= 3, r)
        Workspace.
    M, FM : ndarray of shape (>= r, >= r)
        Workspaces of the Newton system and its Cholesky factor.

    Returns
    -------
    int
        Newton steps taken, or ``-1`` when :func:`partner_dual` finished the row.
    """
    r = u.shape[0]
    v, grad, step = rwork[0], rwork[1], rwork[2]
    # the start: v = (A x - s) / L_ii, the last sweep's duals seen with the moved
    # neighbours and partners; from duals all zero (a stage's first sweep: each stage
    # starts its duals from zero) the row itself, the last stage's minimizer
    for k in range(r):
        v[k] = -s[k]
    qmax = 0.0
    emax = 0.0
    cold = True
    for a in range(d):
        j = Ti[start + a]
        xa = min(max(x[a], 0.0), hi)
        if xa != 0.0:
            _axpy(v, xa * Ts[start + a], E, j)
            cold = False
        e2 = 0.0
        for k in range(r):
            e2 += np.float64(E[j, k]) ** 2
        emax = max(emax, e2)
        qmax = max(qmax, abs(lii + Ts[start + a] * _dot(E, j, s)))
    for k in range(r):
        v[k] = np.float64(E[i, k]) if cold else v[k] / lii
    # the margins of v, kept along the steps (z -= t b); dvec's rows 2 and 3 are
    # partner_dual's, free until the hand-over below
    z, bvec = dvec[2], dvec[3]
    _margins(E, Ti, Ts, start, d, v, z)
    _duals_and_gradient(E, Ti, Ts, start, d, s, lii, c, hi, v, z, x, grad)
    for it in range(NEWTON_STEPS):
        xmax = 0.0
        for a in range(d):
            xmax = max(xmax, x[a])
        gn = 0.0
        for k in range(r):
            gn += grad[k] * grad[k]
        if np.sqrt(emax * gn) <= KKT_RTOL * (qmax + (emax + lii / c) * xmax + 1e-300):
            for k in range(r):
                u[k] = lii * v[k] - grad[k]
            return it
        for k in range(r):
            for k2 in range(k + 1):
                M[k, k2] = 0.0
            M[k, k] = lii
        for a in range(d):
            if 0.0 < x[a] < hi:
                j = Ti[start + a]
                for k in range(r):
                    w = c * np.float64(E[j, k])
                    for k2 in range(k + 1):
                        M[k, k2] += w * np.float64(E[j, k2])
        if not cholesky_inplace(M, r, FM, 0.0):
            break  # not finite
        for k in range(r):
            step[k] = -grad[k]
        cholesky_solve(FM, r, step)
        t = _line_minimum(E, Ti, Ts, start, d, s, lii, c, hi, v, step, z, bvec)
        if not t > 0.0:
            break
        for k in range(r):
            v[k] += t * step[k]
        for a in range(d):
            z[a] -= t * bvec[a]
        _duals_and_gradient(E, Ti, Ts, start, d, s, lii, c, hi, v, z, x, grad)
    # not converged (rounding at the tolerance, or the step cap): the dual method
    # finishes from the duals of the last point (x holds them)
    partner_dual(i, E, Ti, Ts, start, d, s, lii, lii / c, hi, x, u, dvec, dmat, ivec)
    return -1
