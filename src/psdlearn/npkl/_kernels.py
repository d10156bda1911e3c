"""Compiled kernels of the NPKL block-coordinate-descent solver (Hu & Kwok 2015, Algorithm 1).

Storage: the embedding ``E`` (``= V^T`` of the paper) is ``(n, r)`` C-ordered, so the block
``e_i`` of sample ``i`` is a contiguous row. The Laplacian ``L`` enters through its CSR
arrays ``(Lp, Li, Lx)`` and its diagonal ``diag``; the constraints through the adjacency
CSR ``(Tp, Ti, Ts)`` of :meth:`NPKLProblem.neighbors`, in which slot ``t`` of row ``i``
holds a partner ``j in T(i)`` and ``T_ij``. Every kernel is ``O(r)`` per stored nonzero, so a
sweep costs ``O(r (nnz(L) + m))`` plus the small dual QPs, and nothing ``n x n`` is formed.

Precision. ``E``, ``Lx`` and ``diag`` are float64, or all three float32
(``NPKL(dtype=np.float32)``). A value read from them is widened to float64 where it is read
(``np.float64(...)``, exact for a float32; numba's ``float(...)`` would keep a float32), so
every product, sum, row minimizer and objective
change is computed in float64 and only the rows written back to ``E`` are rounded to its
type. On a large graph a sweep is bound by the traffic of ``E`` and ``L`` from memory,
whose bytes single precision halves; the widening costs no traffic.

Per-sample problem (Hu & Kwok 2015 eq. 18). The part of the objective (10) that depends on
``e_i`` is ``L_ii ||e_i||^2 + 2 e_i^T s_i + gamma sum_{j in T(i)} l(T_ij e_i^T e_j)`` with
``s_i = sum_{k != i} L_ik e_k``; halving it,

.. math::

    \\Phi_i(v) = \\tfrac12 L_{ii} \\|v\\|^2 + v^T s_i
                + \\tfrac{\\gamma}{2} \\sum_{j \\in T(i)} \\ell(T_{ij} v^T e_j).

Each update replaces ``e_i`` by the exact minimizer of ``Phi_i``, so the objective never
increases (Theorem 1). Write ``a_j = T_ij e_j`` and ``A = [a_j]`` (``r x d``, ``d = |T(i)|``).

Hinge (eqs. 19-22). With slacks, ``min 1/2 L_ii ||v||^2 + v^T s_i + gamma/2 sum xi_j`` s.t.
``a_j^T v >= 1 - xi_j``, ``xi_j >= 0``. The Lagrangian stationarity gives
``0 <= alpha_j <= gamma/2`` and ``v = (A alpha - s_i) / L_ii`` (21). Substituting, the dual
function is ``sum_j alpha_j - ||A alpha - s_i||^2 / (2 L_ii)``; multiplying by ``L_ii`` and
dropping constants, the dual is

.. math::

    \\min_{0 \\le \\alpha \\le \\gamma / 2} \\tfrac12 \\alpha^T P \\alpha - q^T \\alpha,
    \\qquad P = A^T A \\; (P_{st} = T_{is} T_{it} e_s^T e_t),
    \\qquad q_s = L_{ii} + T_{is} e_s^T s_i,

which is eq. (22) with (23) read as ``q_s = T_is e_s^T (sum_{k != i} L_ik e_k) + L_ii``.

Squared hinge (eqs. 24-25). Slacks ``xi_j`` free with ``gamma/2 sum xi_j^2``: stationarity
in ``xi`` gives ``xi = alpha / gamma``, the dual function gains ``-||alpha||^2 / (2 gamma)``,
and after the same scaling by ``L_ii``: ``min_{alpha >= 0} 1/2 alpha^T H alpha - q^T alpha``
with ``H = P + (L_ii / gamma) I`` and the same ``q``; ``v`` again by (21).

Both duals are solved exactly by :func:`psdlearn.npkl._qp.box_qp` (closed form
``alpha = clip(q / H, 0, hi)`` when ``d = 1``), warm-started from the multipliers of the
previous sweep, kept per adjacency slot. A row with more partners than the rank and at
least :data:`~psdlearn.npkl._partner_dual.MANY_PARTNERS` of them (a labelled point among
many), where ``P`` is singular and forming it costs ``O(d^2 r)``, is solved without it, to
the same tolerance (:mod:`psdlearn.npkl._partner_dual`).

Square (eqs. 26-28). ``grad Phi_i = L_ii v + s_i + gamma sum_j (v^T e_j - T_ij) e_j = 0``,
i.e. ``M v = c`` with ``M = L_ii I + gamma B B^T``, ``B = [e_j]`` and
``c = gamma sum_j T_ij e_j - s_i``. When ``d < r`` the Woodbury identity
``M^{-1} = (I - B ((L_ii / gamma) I + B^T B)^{-1} B^T) / L_ii`` needs only a ``d x d``
Cholesky; otherwise ``M`` (``r x r``) is factored directly.

Linear (eqs. 29-31). ``Phi_i(v) = 1/2 L_ii ||v||^2 + v^T (s_i - gamma/2 sum_j T_ij e_j)``
over ``||v|| <= b``: an isotropic quadratic, so the minimizer is the projection onto the
ball of ``v~ = (gamma/2 sum_j T_ij e_j - s_i) / L_ii``.

Smoothed hinge (not in Hu & Kwok 2015). The hinge couples ``e_i`` and ``e_j`` through a kink, so
row-wise BCD can stop at a point that is a minimum in every row but not stationary (a
pair at margin 1 whose multipliers seen from ``i`` and from ``j`` differ). The Huber
smoothing ``h_mu(u) = max_{0 <= beta <= 1} beta u - mu beta^2 / 2`` of ``max(u, 0)``
(``u = 1 - z``) is ``C^1``; its per-sample dual is the hinge dual with the diagonal of
``P`` raised by ``2 mu L_ii / gamma`` (the conjugate term ``mu alpha^2 / gamma`` scaled by
``L_ii``), same box ``[0, gamma / 2]`` and same ``v`` from (21).

Unconstrained samples (eq. 13): ``e_i = -s_i / L_ii`` (projected onto the ball for the
linear loss, where eq. 29 bounds every sample).

The kernels branch on the row-update kind of each loss, ``kernel`` of its entry in
:data:`psdlearn.npkl.losses.LOSS_TABLE` (:data:`LOSS_CODES`): one branch per kind in
:func:`update_sample` writes the row minimizer, and ``_loss_value`` gives each kind's loss
for the objective. The branches stay inline: separate compiled functions per kind measured
5% slower sweeps (square and hinge, n = 1e5, r = 50). Plain-NumPy references of the row
updates, for the tests, are in ``tests/_npkl_reference.py``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from psdlearn._linalg import PARALLEL_MIN_WORK, cholesky_inplace, cholesky_solve, smw_row_solve

from ._partner_dual import WORKING_SET_CAPACITY, partner_dual, partner_newton, solved_here
from ._prefetch import PREFETCH_DISTANCE, prefetch_neighbour_rows
from ._qp import box_qp
from .losses import LOSS_TABLE, ROW_BALL, ROW_HINGE, ROW_SQUARE, ROW_SQUARED_HINGE

#: LLVM flags of every kernel: reassociation lets the r-long dot products and accumulations
#: vectorize (they are latency-bound chains otherwise); no flag assumes finite values.
FASTMATH = {"reassoc", "contract"}
#: Rows of ``L`` with at least this many entries take two neighbours per pass in
#: :func:`_row_product` (measured in the method notes, "The sweep kernel").
PAIRED_ROW_MIN = 16

__all__ = [
    "LOSS_CODES",
    "SQUARE_AUTO",
    "SQUARE_DIRECT",
    "SQUARE_SMW",
    "jacobi_unconstrained",
    "objective",
    "objectives",
    "sweep_constrained",
    "sweep_unconstrained",
    "sweep_unconstrained_split",
    "update_sample",
    "workspaces",
]

#: Row-update kind of each loss with a BCD closed form (``kernel`` of its table entry).
LOSS_CODES = {name: loss.kernel for name, loss in LOSS_TABLE.items() if loss.kernel is not None}
HINGE, SQUARED_HINGE, SQUARE, LINEAR = ROW_HINGE, ROW_SQUARED_HINGE, ROW_SQUARE, ROW_BALL
#: The Huber-smoothed hinge of the smoothed BCD stages: a kernel kind, not a table loss.
SMOOTH_HINGE = max(LOSS_CODES.values()) + 1

#: Square-loss linear solve: Woodbury when ``|T(i)| < r`` (auto), or forced either way.
SQUARE_AUTO, SQUARE_SMW, SQUARE_DIRECT = 0, 1, 2


@njit(cache=True, fastmath=FASTMATH, inline="always")
def _offdiag_product(i, E, Lp, Li, Lx, out):
    """``out = s_i = sum_{k != i} L_ik e_k`` from the CSR row ``i`` of ``L``."""
    _row_product(i, E, Lp, Li, Lx, out, i)


@njit(cache=True, fastmath=FASTMATH, inline="always")
def _row_product(i, E, Lp, Li, Lx, out, skip):
    """``out = sum_k L_ik e_k`` over the CSR row ``i`` of ``L``, the column ``skip`` left out
    (``-1``: none).

    A long row takes two neighbours per pass over ``out``: the compiler cannot keep ``out``
    in registers (it might alias ``E``), so every pass loads and stores it, and pairing the
    neighbours halves that traffic; on short rows the single pass is as fast.
    """
    r = E.shape[1]
    for c in range(r):
        out[c] = 0.0
    t, end = Lp[i], Lp[i + 1]
    if end - t >= PAIRED_ROW_MIN:
        while t + 1 < end:
            k0, k1 = Li[t], Li[t + 1]
            w0 = 0.0 if k0 == skip else np.float64(Lx[t])
            w1 = 0.0 if k1 == skip else np.float64(Lx[t + 1])
            for c in range(r):
                out[c] += w0 * E[k0, c] + w1 * E[k1, c]
            t += 2
    for u in range(t, end):
        k = Li[u]
        if k == skip:
            continue
        w = np.float64(Lx[u])
        for c in range(r):
            out[c] += w * E[k, c]


@njit(cache=True, fastmath=FASTMATH)
def _dot_rows(E, j, s):
    """``e_j^T s``, the products and their sum in float64."""
    t = 0.0
    for c in range(E.shape[1]):
        t += np.float64(E[j, c]) * s[c]
    return t


@njit(cache=True, fastmath=FASTMATH)
def _project_ball(v, radius):
    """Project ``v`` onto ``{||v|| <= radius}`` in place (``radius = inf``: no-op)."""
    if radius == np.inf:
        return
    nrm = 0.0
    for c in range(v.shape[0]):
        nrm += v[c] * v[c]
    nrm = np.sqrt(nrm)
    if nrm > radius:
        f = radius / nrm
        for c in range(v.shape[0]):
            v[c] *= f


@njit(cache=True, fastmath=FASTMATH)
def _write_row(E, i, v):
    """``E[i] = v``; returns ``||v - e_i||^2`` (the row's share of ``||E_t - E_{t-1}||_F^2``)."""
    ch = 0.0
    for c in range(E.shape[1]):
        dlt = v[c] - E[i, c]
        ch += dlt * dlt
        E[i, c] = v[c]
    return ch


@njit(cache=True, fastmath=FASTMATH)
def _loss_value(z, loss, mu):
    """``l(z)`` for a loss code (``mu``: smoothing of ``SMOOTH_HINGE``)."""
    if loss == HINGE:
        return max(1.0 - z, 0.0)
    if loss == SQUARED_HINGE:
        h = max(1.0 - z, 0.0)
        return h * h
    if loss == SQUARE:
        return (1.0 - z) * (1.0 - z)
    if loss == SMOOTH_HINGE:
        u = 1.0 - z
        if u >= mu:
            return u - 0.5 * mu
        return 0.5 * u * u / mu if u > 0.0 else 0.0
    return -z


@njit(cache=True, fastmath=FASTMATH)
def _row_changes(old, u, t2, lii, s, E, start, d, Ti, Ts, loss, gamma, mu):
    """Changes of the row objective from ``e_i = old`` to ``old + t (u - old)``, ``t = 1``
    and ``t = t2``: ``(df_1, dh_1, df_2, dh_2)``.

    The row objective is the part of (10) that depends on ``e_i``,
    ``L_ii ||e_i||^2 + 2 e_i^T s_i + gamma sum_{j in T(i)} l(T_ij e_i^T e_j)``; with ``s_i``
    and the partners fixed, the objective changes by exactly its change. ``h`` is the same
    with the hinge for ``l`` when ``loss`` is the smoothed hinge (the objective the
    smoothed stages report), ``f`` otherwise. With ``delta = u - old`` the quadratic part
    changes by ``t (2 L_ii old^T delta + 2 s_i^T delta) + t^2 L_ii ||delta||^2`` and each
    partner's argument by ``t T_ij e_j^T delta``: one pass over the row and one over each
    partner give both points, and each change is formed from the step, not as the
    difference of two row values.
    """
    od = 0.0
    dd = 0.0
    sd = 0.0
    for c in range(u.shape[0]):
        dl = u[c] - old[c]
        od += old[c] * dl
        dd += dl * dl
        sd += s[c] * dl
    lin = 2.0 * (lii * od + sd)
    f1 = lin + lii * dd
    f2 = t2 * lin + t2 * t2 * lii * dd
    h1, h2 = f1, f2
    for t in range(d):
        j = Ti[start + t]
        zo = 0.0
        zd = 0.0
        for c in range(u.shape[0]):
            e = np.float64(E[j, c])
            zo += e * old[c]
            zd += e * (u[c] - old[c])
        zo *= Ts[start + t]
        zd *= Ts[start + t]
        base = _loss_value(zo, loss, mu)
        f1 += gamma * (_loss_value(zo + zd, loss, mu) - base)
        f2 += gamma * (_loss_value(zo + t2 * zd, loss, mu) - base)
        if loss == SMOOTH_HINGE:
            base = _loss_value(zo, HINGE, mu)
            h1 += gamma * (_loss_value(zo + zd, HINGE, mu) - base)
            h2 += gamma * (_loss_value(zo + t2 * zd, HINGE, mu) - base)
    if loss != SMOOTH_HINGE:
        h1, h2 = f1, f2
    return f1, h1, f2, h2


@njit(cache=True, fastmath=FASTMATH)
def _finish_row(i, E, v, s, lii, start, d, Ti, Ts, loss, gamma, param, acc, omega, w):
    """Optionally over-relax, add the objective changes to ``acc`` and write ``e_i``.

    ``v`` holds the exact row minimizer ``v*``. With ``omega != 1`` the over-relaxed
    ``w = e_i + omega (v* - e_i)`` (projected onto the ball for the linear loss) replaces
    it when it does not increase the minimized row objective (always the case for a
    quadratic row and ``0 < omega < 2``), so the objective stays non-increasing.
    ``acc[0]`` accumulates the change of the objective (10) (the hinge for the smoothed
    hinge), ``acc[1]`` that of the objective the rows minimize, ``acc[2]`` the squared norm
    of the new row (over a sweep that visits every row once: ``||E||_F^2`` after it,
    without another pass over ``E``).
    """
    old = E[i]
    # the changes at the exact minimizer and, on the same line, at the over-relaxed point
    # (one evaluation of :func:`_row_changes`; the linear loss's projected point is off
    # the line and is evaluated apart)
    along = omega != 1.0 and loss != LINEAR
    df, dh, df_w, dh_w = _row_changes(old, v, omega if along else 1.0, lii, s, E, start, d,
                                      Ti, Ts, loss, gamma, param)
    if omega != 1.0:
        for c in range(v.shape[0]):
            w[c] = old[c] + omega * (v[c] - old[c])
        if loss == LINEAR:
            _project_ball(w, param)
            df_w, dh_w, _, _ = _row_changes(old, w, 1.0, lii, s, E, start, d, Ti, Ts, loss,
                                            gamma, param)
        if df_w <= 0.0:
            for c in range(v.shape[0]):
                v[c] = w[c]
            df, dh = df_w, dh_w
    acc[1] += df
    for c in range(v.shape[0]):
        acc[2] += v[c] * v[c]
    acc[0] += dh
    return _write_row(E, i, v)


@njit(cache=True)
def workspaces(r, dmax, factor, side=-1):
    """Workspaces of :func:`update_sample` for rank ``r`` and ``|T(i)| <= dmax``.

    ``side`` (default ``dmax``) is the order of ``dmat``: ``dmax`` for the dense duals, less
    where the rows with more are solved by :mod:`psdlearn.npkl._partner_dual`.

    Returns
    -------
    rvec : ndarray of shape (6, r)
        ``s_i``, the new row, a scratch row and the Newton steps' rows of
        :func:`~psdlearn.npkl._partner_dual.partner_newton`.
    dvec : ndarray of shape (7, dmax)
        Dual right-hand side, iterate and the small QP's scratch vectors.
    dmat : ndarray of shape (3, side, side)
        Dual Hessian and the small QP's scratch matrices.
    ivec : ndarray of shape (4, dmax), int64
        Active-set scratch of the small QP and the working set of
        :func:`~psdlearn.npkl._partner_dual.partner_dual`.
    rmat : ndarray of shape (2, rm, rm)
        ``M`` and its Cholesky factor of the direct square-loss solve and of the Newton
        steps (``rm = r`` when ``factor``, else 1).
    """
    rm = r if factor else 1
    side = dmax if side < 0 else side
    return (np.empty((6, r)), np.empty((7, dmax)), np.empty((3, side, side)),
            np.empty((4, dmax), dtype=np.int64), np.empty((2, rm, rm)))


@njit(cache=True, fastmath=FASTMATH, inline="always")
def update_sample(i, E, Lp, Li, Lx, diag, Tp, Ti, Ts, loss, gamma, b, alpha, square_path, rvec,
                  dvec, dmat, ivec, rmat, acc, omega):
    """Replace ``e_i`` by the exact minimizer of the per-sample problem (18).

    See the module docstring for the four closed forms / duals. Samples without partners
    get (13) (projected onto the ball for the linear loss).

    Parameters
    ----------
    i : int
        Sample to update.
    E : ndarray of shape (n, r)
        Embedding, row ``i`` overwritten.
    Lp, Li, Lx : ndarray
        CSR arrays of ``L`` (int64, int64, float64 or float32).
    diag : ndarray of shape (n,)
        ``L_ii > 0``.
    Tp, Ti, Ts : ndarray
        Constraint adjacency CSR: partners ``j`` and signs ``T_ij`` of each sample.
    loss : int
        Code from :data:`LOSS_CODES`.
    gamma : float
        Loss weight.
    b : float
        Ball radius of the linear loss; the smoothing ``mu > 0`` of the smoothed hinge.
    alpha : ndarray of shape (2 m,)
        Dual variables per adjacency slot: read as warm start, overwritten (hinge losses).
    square_path : int
        :data:`SQUARE_AUTO`, :data:`SQUARE_SMW` or :data:`SQUARE_DIRECT`.
    rvec, dvec, dmat, ivec, rmat : ndarray
        Workspaces from :func:`workspaces` (``dmax >= |T(i)|``). They are packed into five
        arrays because every array argument of a compiled call costs a reference-count
        round trip: with 24 separate arrays the calls took a third of an a1a sweep.
    acc : ndarray of shape (3,)
        Objective-change and row-norm accumulators, see :func:`_finish_row`.
    omega : float
        Safeguarded over-relaxation factor (1: plain BCD), see :func:`_finish_row`.

    Returns
    -------
    float
        ``||e_i^new - e_i^old||^2``.
    """
    s, v, work = rvec[0], rvec[1], rvec[2]
    q, x, g, p, nul = dvec[0], dvec[1], dvec[2], dvec[3], dvec[4]
    H, Hs, Fs = dmat[0], dmat[1], dmat[2]
    state, idx = ivec[0], ivec[1]
    M, FM = rmat[0], rmat[1]
    r = E.shape[1]
    lii = np.float64(diag[i])
    _offdiag_product(i, E, Lp, Li, Lx, s)
    start = Tp[i]
    d = Tp[i + 1] - start
    if d == 0 or loss == LINEAR:
        # (13) or (31): both are ball projections of an isotropic quadratic's centre.
        for c in range(r):
            v[c] = -s[c]
        for t in range(d):
            j = Ti[start + t]
            w = 0.5 * gamma * Ts[start + t]
            for c in range(r):
                v[c] += w * E[j, c]
        for c in range(r):
            v[c] /= lii
        if loss == LINEAR:
            _project_ball(v, b)
        return _finish_row(i, E, v, s, lii, start, d, Ti, Ts, loss, gamma, b, acc, omega, work)
    if loss == SQUARE:
        # c = gamma sum_j T_ij e_j - s_i, then M v = c with M = L_ii I + gamma B B^T.
        for c in range(r):
            v[c] = -s[c]
        for t in range(d):
            j = Ti[start + t]
            w = gamma * Ts[start + t]
            for c in range(r):
                v[c] += w * E[j, c]
        use_smw = d < r if square_path == SQUARE_AUTO else square_path == SQUARE_SMW
        if use_smw:
            # v = (c - B y) / L_ii with ((L_ii / gamma) I + B^T B) y = B^T c.
            smw_row_solve(E, Ti, start, d, v, lii, gamma, H, Fs, x)
        else:
            for c in range(r):
                for c2 in range(c + 1):
                    M[c, c2] = 0.0
                M[c, c] = lii
            for t in range(d):
                j = Ti[start + t]
                for c in range(r):
                    w = gamma * E[j, c]
                    for c2 in range(c + 1):
                        M[c, c2] += w * E[j, c2]
            cholesky_inplace(M, r, FM, 0.0)
            cholesky_solve(FM, r, v)
        return _finish_row(i, E, v, s, lii, start, d, Ti, Ts, loss, gamma, b, acc, omega, work)
    # Hinge / squared hinge: dual (22) / (25), then v = (A alpha - s_i) / L_ii (21).
    hi = np.inf if loss == SQUARED_HINGE else 0.5 * gamma
    if solved_here(d, r):
        for a in range(d):
            x[a] = alpha[start + a]
        if loss == HINGE:
            partner_dual(i, E, Ti, Ts, start, d, s, lii, 0.0, hi, x, v, dvec, dmat, ivec)
        else:  # the dual's diagonal L_ii / c: c = gamma (squared), gamma / (2 mu) (smoothed)
            c = gamma if loss == SQUARED_HINGE else 0.5 * gamma / b
            partner_newton(i, E, Ti, Ts, start, d, s, lii, c, hi, x, v, rvec[3:], M, FM,
                           dvec, dmat, ivec)
        for a in range(d):
            alpha[start + a] = x[a]
        for c in range(r):
            v[c] /= lii
        return _finish_row(i, E, v, s, lii, start, d, Ti, Ts, loss, gamma, b, acc, omega, work)
    for a in range(d):
        ja = Ti[start + a]
        ta = Ts[start + a]
        q[a] = lii + ta * _dot_rows(E, ja, s)
        for c2 in range(a + 1):
            h = ta * Ts[start + c2] * _dot_rows(E, ja, E[Ti[start + c2]])
            H[a, c2] = h
            H[c2, a] = h
        if loss == SQUARED_HINGE:
            H[a, a] += lii / gamma
        elif loss == SMOOTH_HINGE:
            H[a, a] += 2.0 * b * lii / gamma
    if d == 1:
        if H[0, 0] > 0.0:
            x[0] = min(max(q[0] / H[0, 0], 0.0), hi)
        else:  # e_j = 0: the loss term is constant, any alpha gives the same v
            x[0] = hi if q[0] > 0.0 else 0.0
    else:
        for a in range(d):
            x[a] = alpha[start + a]
        box_qp(H, q, d, 0.0, hi, x, g, p, nul, state, idx, Hs, Fs)
    for c in range(r):
        v[c] = -s[c]
    for a in range(d):
        alpha[start + a] = x[a]
        ja = Ti[start + a]
        w = x[a] * Ts[start + a]
        for c in range(r):
            v[c] += w * E[ja, c]
    for c in range(r):
        v[c] /= lii
    return _finish_row(i, E, v, s, lii, start, d, Ti, Ts, loss, gamma, b, acc, omega, work)


@njit(cache=True, fastmath=FASTMATH)
def sweep_constrained(order, E, Lp, Li, Lx, diag, Tp, Ti, Ts, loss, gamma, b, alpha, square_path,
                      acc, omega=1.0):
    """Gauss-Seidel pass of :func:`update_sample` over the samples in ``order``.

    Parameters
    ----------
    order : ndarray of shape (n_updates,), int64
        Samples to update, in this order (a random permutation of the constrained set).
    E, Lp, Li, Lx, diag, Tp, Ti, Ts, loss, gamma, b, alpha, square_path, acc, omega
        As in :func:`update_sample`.

    Returns
    -------
    float
        ``sum_i ||e_i^new - e_i^old||^2`` over the updated rows.
    """
    r = E.shape[1]
    dmax = 1
    dense = 1
    for t in range(order.shape[0]):
        i = order[t]
        d = Tp[i + 1] - Tp[i]
        dmax = max(dmax, d)
        if not solved_here(d, r):
            dense = max(dense, d)
    # the dual workspaces (3 dmax^2 floats) serve the rows solved through their partners:
    # the hinge losses' rows (the dense duals, and the working sets of rows with many
    # partners), the square loss's rows with fewer partners than the rank only, none of
    # the linear loss. A labelled point among l has l - 1 partners, and a coarse level of
    # the multilevel start keeps repeated pairs: a row may have tens of thousands
    if loss == LINEAR or (loss == SQUARE and square_path == SQUARE_DIRECT):
        dmax = 1
    elif loss == SQUARE and square_path == SQUARE_AUTO:
        dmax = min(dmax, r)
    side = dmax
    if loss != SQUARE and dmax > dense:
        side = max(dense, min(dmax, WORKING_SET_CAPACITY))
    rvec, dvec, dmat, ivec, rmat = workspaces(r, dmax, loss != LINEAR, side)
    change = 0.0
    for t in range(order.shape[0]):
        change += update_sample(order[t], E, Lp, Li, Lx, diag, Tp, Ti, Ts, loss, gamma, b,
                                alpha, square_path, rvec, dvec, dmat, ivec, rmat, acc, omega)
    return change


@njit(cache=True, fastmath=FASTMATH)
def sweep_unconstrained(U, E, Lp, Li, Lx, diag, radius, acc, omega=1.0):
    """Gauss-Seidel pass of (13), ``e_i = P_radius(-s_i / L_ii)``, over the samples ``U``.

    Parameters
    ----------
    U : ndarray of shape (n_u,), int64
        Unconstrained samples.
    E, Lp, Li, Lx, diag
        As in :func:`update_sample`.
    radius : float
        Ball radius (``b`` for the linear loss, ``inf`` otherwise).
    acc : ndarray of shape (3,)
        Objective-change accumulators (``acc[0]`` and ``acc[1]`` receive the same change:
        no loss term) and the sum of the new rows' squared norms (``acc[2]``).
    omega : float, default=1.0
        Over-relaxation ``e_i <- (1 - omega) e_i + omega v*`` (SOR) with ``v*`` the exact
        minimizer (13); the row objective is an isotropic quadratic, so any
        ``0 < omega < 2`` decreases it by ``omega (2 - omega)`` times the exact decrease.
        With a finite ``radius`` the over-relaxed point is projected onto the ball and
        kept only if it does not increase the row objective (else ``v*``).

    Returns
    -------
    float
        ``sum_i ||e_i^new - e_i^old||^2``.
    """
    r = E.shape[1]
    s = np.empty(r)
    v = np.empty(r)
    w = np.empty(r)
    change = 0.0
    n_u = U.shape[0]
    for t in range(n_u):
        if t + PREFETCH_DISTANCE < n_u:
            prefetch_neighbour_rows(U[t + PREFETCH_DISTANCE], E, Lp, Li)
        i = U[t]
        lii = np.float64(diag[i])
        _offdiag_product(i, E, Lp, Li, Lx, s)
        if radius < np.inf or omega == 1.0:
            for c in range(r):
                v[c] = -s[c] / lii
            _project_ball(v, radius)
            if omega != 1.0:
                # safeguarded over-relaxation on the ball, as for the constrained rows
                for c in range(r):
                    w[c] = E[i, c] + omega * (v[c] - E[i, c])
                _project_ball(w, radius)
                f_old = 0.0
                f_w = 0.0
                for c in range(r):
                    f_old += E[i, c] * (lii * E[i, c] + 2.0 * s[c])
                    f_w += w[c] * (lii * w[c] + 2.0 * s[c])
                if f_w <= f_old:
                    for c in range(r):
                        v[c] = w[c]
        else:
            for c in range(r):
                v[c] = (1.0 - omega) * E[i, c] - omega * s[c] / lii
        # L_ii |v|^2 + 2 v.s_i, new minus old
        delta = 0.0
        nrm = 0.0
        for c in range(r):
            delta += v[c] * (lii * v[c] + 2.0 * s[c]) - E[i, c] * (lii * E[i, c] + 2.0 * s[c])
            nrm += v[c] * v[c]
        acc[0] += delta
        acc[1] += delta
        acc[2] += nrm
        change += _write_row(E, i, v)
    return change


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def sweep_unconstrained_split(U, bounds, E, Lp, Li, Lx, diag, radius, accs, omega=1.0):
    """:func:`sweep_unconstrained` over independent parts in parallel, then a separator.

    ``U[bounds[k]:bounds[k + 1]]`` for ``k < len(bounds) - 2`` are parts with no edge of
    ``L`` between two of them; the last slice is a separator (rows adjacent to several
    parts). The parts run concurrently, each in its own order, then the separator: the
    result equals the sequential pass over the parts one after another and then the
    separator, whatever the thread timing, so every row update is still the exact
    (over-relaxed) minimizer given the current rows.

    Parameters
    ----------
    U : ndarray of shape (n_u,), int64
        Unconstrained samples, part by part, the separator last.
    bounds : ndarray of shape (n_parts + 2,), int64
        Slice boundaries in ``U``.
    E, Lp, Li, Lx, diag, radius, omega
        As in :func:`sweep_unconstrained`.
    accs : ndarray of shape (n_parts + 1, 3)
        Objective-change accumulators of each slice (summed by the caller).

    Returns
    -------
    float
        ``sum_i ||e_i^new - e_i^old||^2``.
    """
    n_parts = bounds.shape[0] - 2
    changes = np.zeros(n_parts + 1)
    for k in prange(n_parts):
        changes[k] = sweep_unconstrained(U[bounds[k]:bounds[k + 1]], E, Lp, Li, Lx, diag,
                                         radius, accs[k], omega)
    changes[n_parts] = sweep_unconstrained(U[bounds[n_parts]:bounds[n_parts + 1]], E, Lp, Li,
                                           Lx, diag, radius, accs[n_parts], omega)
    return changes.sum()


@njit(cache=True, fastmath=FASTMATH)
def jacobi_unconstrained(U, E, Lp, Li, Lx, diag, radius, n_iter, buf, start):
    """``n_iter`` Jacobi steps (17) on the unconstrained block, ``E_L`` held fixed.

    ``E_U <- -(L_UL E_L + (L_UU - D_UU) E_U) D_UU^{-1}`` row-wise from the old ``E_U``
    (projected onto the ball for the linear loss). For the normalized Laplacian the
    iteration matrix has spectral radius ``<= 1 / (1 + delta)`` (Proposition 1), so it
    contracts to the minimizer over ``E_U``; and because ``2 D_UU - L_UU`` is positive
    definite for a diagonally dominant ``L``, every step decreases the objective.

    Parameters
    ----------
    U : ndarray of shape (n_u,), int64
    E, Lp, Li, Lx, diag, radius
        As in :func:`sweep_unconstrained`.
    n_iter : int
        Number of Jacobi steps.
    buf, start : ndarray of shape (n_u, r)
        Workspaces (new rows; rows at entry, for the change).

    Returns
    -------
    float
        ``||E_U^new - E_U^old||_F^2`` over the whole call.
    """
    r = E.shape[1]
    nu = U.shape[0]
    for t in range(nu):
        for c in range(r):
            start[t, c] = E[U[t], c]
    for _ in range(n_iter):
        for t in range(nu):
            i = U[t]
            _offdiag_product(i, E, Lp, Li, Lx, buf[t])
            for c in range(r):
                buf[t, c] = -buf[t, c] / np.float64(diag[i])
            _project_ball(buf[t], radius)
        for t in range(nu):
            for c in range(r):
                E[U[t], c] = buf[t, c]
    change = 0.0
    for t in range(nu):
        for c in range(r):
            dlt = E[U[t], c] - start[t, c]
            change += dlt * dlt
    return change


@njit(cache=True, fastmath=FASTMATH)
def _laplacian_rows(E, Lp, Li, Lx, lo, hi):
    """``sum_{lo <= i < hi} e_i^T (L E)_i``, the rows' share of ``tr(E^T L E)``."""
    row = np.empty(E.shape[1])
    smooth = 0.0
    for i in range(lo, hi):
        if i + PREFETCH_DISTANCE < hi:
            prefetch_neighbour_rows(i + PREFETCH_DISTANCE, E, Lp, Li)
        # (L E)_i as axpy passes, then one reduction per row
        _row_product(i, E, Lp, Li, Lx, row, -1)
        smooth += _dot_rows(E, i, row)
    return smooth


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def _laplacian_term_parallel(E, Lp, Li, Lx):
    """``tr(E^T L E)`` by :func:`_laplacian_rows` over row blocks on all threads."""
    n = E.shape[0]
    n_blocks = min(n, 256)
    partial = np.zeros(n_blocks)
    for b in prange(n_blocks):
        partial[b] = _laplacian_rows(E, Lp, Li, Lx, b * n // n_blocks, (b + 1) * n // n_blocks)
    return partial.sum()


@njit(cache=True, fastmath=FASTMATH)
def objective(E, Lp, Li, Lx, pairs, signs, loss, gamma, mu=0.0):
    """Objective (10): ``tr(E^T L E) + gamma sum_k l(signs_k e_{i_k}^T e_{j_k})``.

    ``O(r (nnz(L) + m))``, no temporary of size ``n``.

    Parameters
    ----------
    E : ndarray of shape (n, r)
    Lp, Li, Lx : ndarray
        CSR arrays of ``L`` (diagonal included).
    pairs : ndarray of shape (m, 2), int64
    signs : ndarray of shape (m,)
    loss : int
        Code from :data:`LOSS_CODES`.
    gamma : float
    mu : float, default=0.0
        Smoothing of the smoothed hinge (loss code ``SMOOTH_HINGE``).

    Returns
    -------
    float
    """
    total = 0.0
    for t in range(pairs.shape[0]):
        total += _loss_value(signs[t] * _dot_rows(E, pairs[t, 0], E[pairs[t, 1]]), loss, mu)
    return _laplacian_term(E, Lp, Li, Lx) + gamma * total


@njit(cache=True, fastmath=FASTMATH)
def objectives(E, Lp, Li, Lx, pairs, signs, loss, inner, gamma, mu):
    """:func:`objective` with the loss ``loss`` and with ``inner`` (smoothing ``mu``), from
    one pass over ``L`` and one over the pairs: ``(f, f_inner)``."""
    f = 0.0
    g = 0.0
    for t in range(pairs.shape[0]):
        z = signs[t] * _dot_rows(E, pairs[t, 0], E[pairs[t, 1]])
        f += _loss_value(z, loss, 0.0)
        g += _loss_value(z, inner, mu)
    smooth = _laplacian_term(E, Lp, Li, Lx)
    return smooth + gamma * f, smooth + gamma * g


@njit(cache=True, fastmath=FASTMATH)
def _laplacian_term(E, Lp, Li, Lx):
    """``tr(E^T L E)``, on all threads when the work is large."""
    if Li.shape[0] * E.shape[1] >= PARALLEL_MIN_WORK:
        return _laplacian_term_parallel(E, Lp, Li, Lx)
    return _laplacian_rows(E, Lp, Li, Lx, 0, E.shape[0])
