r"""Problem (3) of Shen, Welsh & Wang (2008) by a primal-dual interior-point method, no cvxpy.

Problem (3) and its dual, for triplets ``r = (i, j, k)`` with ``k_r = a_i - a_k``,
``j_r = a_i - a_j`` and ``A_r = k_r k_r^T - j_r j_r^T``:

.. math::

    \max_{X \succeq 0,\ \rho,\ \xi \ge 0} \rho - C \sum_r \xi_r \;\;
    \text{s.t.}\;\; \langle A_r, X \rangle + \xi_r - \rho = m_r \ge 0,\;\;
    \operatorname{tr} X = 1;
    \qquad
    \min_{\pi, w} \pi \;\; \text{s.t.}\;\; Z = \pi I - \textstyle\sum_r w_r A_r \succeq 0,\;\;
    0 \le w \le C,\;\; \textstyle\sum_r w_r = 1 .

Optimality: ``X Z = 0``, ``m_r w_r = 0`` and ``xi_r (C - w_r) = 0``. The method follows the
central path (each product equal to ``mu``) with Newton steps in the HKM direction,
``dX = mu Z^{-1} - X - sym(Z^{-1} dZ X)``, and Mehrotra's predictor-corrector. The dual
iterate stays feasible (``sum w = 1`` is kept by every step); the primal residuals shrink
with each step. Eliminating ``dX``, ``dm`` and ``dxi`` leaves a system in ``dw`` with two
scalar unknowns ``dpi``, ``drho``:

.. math::

    (G + \Delta)\, dw = g\, d\pi + \mathbf 1\, d\rho - b, \qquad
    -\tau\, d\pi + g^T dw = 1 - \mu \operatorname{tr} Z^{-1}, \qquad \mathbf 1^T dw = 0,

with ``G_rs = tr(A_r Z^{-1} A_s X)``, ``g_r = tr(A_r Z^{-1} X)``, ``tau = tr(Z^{-1} X)``,
``Delta = Diag(m / w + xi / (C - w))``. As every ``A_r`` has rank two, ``G`` is a sum of
four Hadamard products of ``t x t`` matrices ``(D_a Z^{-1} D_b^T) o (D_a X D_b^T)``
(``D_k``, ``D_j``: the stacked ``k_r``, ``j_r``), so one iteration costs
``O(t^2 D + t^3 + D^3)`` time and ``O(t^2)`` memory: an exact solver for ``t`` up to a few
thousand triplets, at any ``D`` where ``D x D`` dense algebra fits.

Every iterate's ``pi`` is the value of a dual feasible point, an upper bound on the
optimum; the returned ``objective`` is that of the primal iterate and the stopping test
asks for a relative duality gap and primal residual below ``tol``.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, eigh, eigvalsh
from scipy.linalg.blas import dsyrk

from psdlearn._solver import SolverResult
from psdlearn.psdboost._bounds import margin_scale, stop_status, trace_one_factor
from psdlearn.psdboost._pricing import TripletOperator

__all__ = ["low_rank_applies", "path_following", "solve_ipm"]

#: Fraction of the distance to the boundary of the cones taken by a step.
_STEP_FRACTION = 0.95
#: Triplet rows per block when the low-rank system forms ``V^T Diag(d) V``.
_BLOCK = 2048
#: Iterative-refinement steps of the low-rank Newton solve.
_REFINEMENTS = 3
#: Relative residual above which a low-rank Newton solve is rejected.
_SOLVE_ACCURACY = 1e-8
#: ``low_rank="auto"``: the low-rank Newton system from ``t >= _LOW_RANK_RATIO n_s`` rows
#: (the measured crossover of the two systems, in the method notes of the documentation).
_LOW_RANK_RATIO = 5


def low_rank_applies(n_triplets, n_features):
    """Whether ``low_rank="auto"`` solves the Newton systems through their low-rank part:
    ``t >= 5 n_s`` rows, ``n_s = D (D + 1) / 2``."""
    return n_triplets >= _LOW_RANK_RATIO * n_features * (n_features + 1) // 2


def _max_step_psd(L, dS):
    """Largest ``a`` with ``S + a dS`` PSD, ``L`` the Cholesky factor of ``S``; or ``inf``."""
    Y = np.linalg.solve(L, np.linalg.solve(L, dS).T)
    lam = eigvalsh((Y + Y.T) / 2.0, subset_by_index=[0, 0])[0]
    return np.inf if lam >= 0 else -1.0 / lam


def _max_step(s, ds):
    """Largest ``a`` with ``s + a ds >= 0`` (``s > 0``), or ``inf``."""
    neg = ds < 0
    return float(np.min(-s[neg] / ds[neg])) if neg.any() else np.inf


def solve_ipm(X, triplets, C, *, tol=1e-8, max_iter=100, max_triplets=5000, max_time=None,
              low_rank="auto", callback=None):
    """Solve problem (3) of Shen, Welsh & Wang (2008) to a relative duality gap ``tol``.

    The inputs are trusted (:class:`psdlearn.PSDBoost` validates them), except the size
    guard ``max_triplets``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, D)
    triplets : ndarray of shape (t, 3)
        Valid rows ``(i, j, k)`` meaning ``d(i, j) < d(i, k)`` (see
        :class:`psdlearn.Triplets`).
    C : float
        Slack price, ``C t >= 1`` (below, problem (3) is unbounded).
    tol : float, default=1e-8
        Stop when ``(pi - primal objective) / max(1, |pi|)`` and the primal residual (both
        on the problem scaled to unit mean margin scale) are below ``tol``.
    max_iter : int, default=100
    max_triplets : int, default=5000
        Refuse larger problems: each iteration forms and factors a ``t x t`` matrix
        (about ``6 x 8 t^2`` bytes in all, 1.2 GB at ``t = 5000``) in ``O(t^3)`` time.
    max_time : float or None, default=None
        Seconds after which the current iterate is returned (status ``"max_time"``).
    low_rank : bool or "auto", default="auto"
        Solve each Newton system through its ``n_s = D (D + 1) / 2``-dimensional low-rank
        part (``O(t n_s^2 + n_s^3)`` per step instead of ``O(t^2 D + t^3)``); ``"auto"``:
        when ``t >= 5 n_s``. Where its iterative refinement fails (an ill-conditioned
        system), the solve starts again with the dense system.
    callback : callable or None
        Called as ``callback(iteration, pi, primal objective, primal residual)`` at each
        iterate (values in the units of ``X``); returning ``True`` stops the solver, which
        returns that iterate (status ``"interrupted"``).

    Returns
    -------
    SolverResult
        ``embedding`` (D, rank): ``F`` with ``metric = F F^T`` (the iterate's PSD part,
        scaled to trace one). ``objective_history``: the primal objective of each iterate
        before its step, then that of the returned iterate (``n_iter + 1`` values; the
        last is ``objective``, ``rho - C sum xi``); ``time_history`` aligned with it;
        ``n_iter``: the entries of ``history``. ``info`` (read as attributes): ``metric``
        (D, D), ``rho``, ``slacks`` (t,), ``dual_weights`` (t,) ``w``; ``upper_bound``,
        ``pi`` of the last iterate (the dual value of a feasible ``w``, at least the
        optimum); ``history``, ``(seconds, pi, primal objective, primal residual)`` per
        iterate before its step (the primal objective is meaningful once the residual is
        small); ``status``: ``"optimal"``, ``"max_iter"``, ``"max_time"``,
        ``"interrupted"`` or ``"inaccurate"`` (a Cholesky factorization failed near the
        boundary; the last iterate is returned).

    Raises
    ------
    ValueError
        If ``t > max_triplets``.

    References
    ----------
    Shen, C., Welsh, A. & Wang, L. (2008). PSDBoost: matrix-generation linear programming
    for positive semidefinite matrices learning. NIPS (problem (3)).

    Helmberg, C., Rendl, F., Vanderbei, R. J. & Wolkowicz, H. (1996). An interior-point
    method for semidefinite programming. SIAM Journal on Optimization 6(2) (the HKM
    direction).

    Mehrotra, S. (1992). On the implementation of a primal-dual interior point method.
    SIAM Journal on Optimization 2(4) (predictor-corrector).
    """
    start = time.perf_counter()
    triplets = np.asarray(triplets, dtype=np.int64)
    if len(triplets) > max_triplets:
        raise ValueError(
            f"{len(triplets)} triplets exceed max_triplets={max_triplets}: the interior-point "
            f"method factors a t x t matrix ({8e-9 * len(triplets) ** 2:.2g} GB per copy) "
            "every iteration; use psdlearn.PSDBoost, or raise max_triplets.")
    op = TripletOperator(np.asarray(X, dtype=np.float64), triplets)
    Dk, Dj = op.Bk @ op.X, op.Bj @ op.X
    t, D = Dk.shape
    # Unit mean margin scale at X = I / D, so that tol and the start are scale free.
    scale = margin_scale(np.sum(Dj**2, axis=1), np.sum(Dk**2, axis=1), D)
    Dk, Dj = Dk / np.sqrt(scale), Dj / np.sqrt(scale)
    if C * t <= 1.0 + 1e-12:
        return _uniform_weights_solution(Dk, Dj, C, scale)
    deadline = None if max_time is None else start + max_time
    report = None if callback is None else (
        lambda i, p, o, r: callback(i, p * scale, o * scale, r))
    if low_rank == "auto":
        low_rank = low_rank_applies(t, D)
    Xm, rho, xi, pi, w, status, history = path_following(
        Dk, Dj, C, tol, max_iter, deadline, low_rank=low_rank, callback=report)
    if low_rank and status == "inaccurate":
        Xm, rho, xi, pi, w, status, history = path_following(Dk, Dj, C, tol, max_iter, deadline,
                                                             callback=report)
    history = [(s, p * scale, o * scale, r) for s, p, o, r in history]
    metric, F = trace_one_factor(Xm)
    objective = float((rho - C * xi.sum()) * scale)
    return SolverResult(
        embedding=F, objective_history=[h[2] for h in history] + [objective],
        time_history=[h[0] for h in history] + [time.perf_counter() - start],
        n_iter=len(history), converged=status == "optimal",
        interrupted=status == "interrupted",
        info={"metric": metric, "rho": float(rho * scale), "slacks": xi * scale,
              "dual_weights": w, "upper_bound": float(pi * scale), "history": history,
              "status": status})


def path_following(Dk, Dj, C, tol, max_iter, deadline=None, low_rank=False, callback=None,
                   prox=None, fixed=None):
    """The primal-dual iterations of :func:`solve_ipm` on unit-scale differences.

    Parameters
    ----------
    Dk, Dj : ndarray of shape (t, D)
        Rows ``k_r`` and ``j_r``, scaled so that the mean margin scale is about one.
    C, tol, max_iter :
        As in :func:`solve_ipm`.
    deadline : float or None
        ``time.perf_counter()`` value at which to return the current iterate.
    low_rank : bool
        Solve the Newton system through its ``D(D+1)/2`` low-rank part
        (:class:`_LowRankNewtonSystem`) instead of the dense ``t x t`` matrix: cheaper when
        ``D (D + 1) / 2 < t``.
    callback : callable or None
        Called as ``callback(iteration, pi, primal objective, primal residual)`` at each
        iterate; returning ``True`` stops the iterations (status ``"interrupted"``).
    prox : tuple (u, center) or None
        Add the proximal term ``(u / 2) ||w - center||^2`` to the dual objective ``pi``
        (the master of a proximal bundle method). Its primal counterpart has margins
        ``m = <A_r, X> + xi - rho + u (w - center)``; in the Newton system it adds ``u`` to
        ``Delta`` and ``u (w - center)`` to the right-hand side.
    fixed : tuple (G, total) or None
        Rows held at their upper bound ``w_r = C`` outside ``Dk``, ``Dj`` (a working
        set's bound rows): ``G = C sum_fixed A_r`` (D, D) and ``total = 1 - C n_fixed``.
        The dual becomes ``Z = pi I - H(w) - G``, ``sum w = total``, the primal objective
        ``total rho + <G, X> - C sum xi``; the Newton system is unchanged (``G`` is
        constant and ``sum dw = 0`` still).

    Returns
    -------
    X, rho, xi, pi, w, status, history
        The last iterate (``X`` is interior: PSD, trace one up to the primal residual),
        the status and the per-iteration ``(seconds, pi, primal objective, residual)``.
    """
    t, D = Dk.shape
    G, total = (0.0, 1.0) if fixed is None else fixed  # no bound rows: no (D, D) term
    Xm = np.eye(D) / D
    m, xi, rho = np.ones(t), np.ones(t), 0.0
    w = np.full(t, total / t)
    pi = float(eigvalsh(_H(Dk, Dj, w) + G, subset_by_index=[D - 1, D - 1])[0]) + 1.0
    start = time.perf_counter()
    history, status = [], "max_iter"
    system = _LowRankNewtonSystem if low_rank else _NewtonSystem
    for _ in range(max_iter):
        newton = system(Dk, Dj, C, Xm, m, xi, rho, pi, w, prox, G)
        residual = newton.residual()
        objective = total * rho + np.sum(G * Xm) - C * xi.sum()
        if prox is not None:
            # Lagrangian dual value of the proximal master, against pi + (u/2)||w - c||^2.
            u, center = prox
            v = newton.margin_gap
            objective += center @ v - v @ v / (2.0 * u)
            objective -= u / 2.0 * np.sum((w - center) ** 2)
        history.append((time.perf_counter() - start, pi, objective, residual))
        stopped = callback is not None and callback(len(history), pi, objective, residual)
        converged = (pi - objective) / max(1.0, abs(pi)) < tol and residual < tol
        end = stop_status(converged, stopped, deadline)
        if end is not None:
            status = end
            break
        try:
            newton.factorize()
            # Mehrotra: the affine direction sets the centering target and gives the
            # second-order terms dm dw, dxi ds2 and Z^-1 dZ dX of the corrector.
            dpi, dw, dZ, dX, dm, dxi, drho = newton.direction(0.0, 0.0, 0.0, None)
            ap, ad = newton.steps(dw, dZ, dX, dm, dxi)
            mu_aff = newton.mean_complementarity(ap * dX, ap * dm, ap * dxi, ad * dZ, ad * dw)
            sigma = min(1.0, mu_aff / newton.mu) ** 3
            dpi, dw, dZ, dX, dm, dxi, drho = newton.direction(
                sigma * newton.mu, dm * dw, -dxi * dw, newton.Zi @ dZ @ dX)
            ap, ad = newton.steps(dw, dZ, dX, dm, dxi)
        except LinAlgError:
            status = "inaccurate"
            break
        Xm, m, xi, rho = Xm + ap * dX, m + ap * dm, xi + ap * dxi, rho + ap * drho
        pi, w = pi + ad * dpi, w + ad * dw
    return Xm, rho, xi, pi, w, status, history


def _H(Dk, Dj, w):
    """``H(w) = sum_r w_r A_r`` (D, D)."""
    return Dk.T @ (w[:, None] * Dk) - Dj.T @ (w[:, None] * Dj)


def _margins(Dk, Dj, B):
    """``<A_r, B>`` for every triplet, ``B`` symmetric (D, D): shape (t,)."""
    return np.einsum("ij,ij->i", Dk @ B, Dk) - np.einsum("ij,ij->i", Dj @ B, Dj)


class _NewtonSystem:
    """The reduced Newton system of the module docstring at one iterate."""

    def __init__(self, Dk, Dj, C, X, m, xi, rho, pi, w, prox=None, fixed=0.0):
        self.Dk, self.Dj = Dk, Dj
        self.u, self.shift = (0.0, 0.0) if prox is None else (prox[0], prox[0] * (w - prox[1]))
        self.X, self.m, self.xi, self.rho, self.w = X, m, xi, rho, w
        D, t = X.shape[0], len(w)
        self.eye = np.eye(D)
        self.Z = pi * self.eye - _H(Dk, Dj, w) - fixed
        self.s2 = C - w
        self.n_pairs = D + 2 * t
        self.mu = (np.sum(X * self.Z) + m @ w + xi @ self.s2) / self.n_pairs

    def residual(self):
        """Largest violation of the primal equalities."""
        r = self.m - _margins(self.Dk, self.Dj, self.X) - self.xi + self.rho - self.shift
        # <A_r, X> - m + xi - rho, the gradient of the Lagrangian in w without its prox part.
        self.margin_gap = -r - self.shift
        return float(max(np.abs(r).max(), abs(1.0 - np.trace(self.X))))

    def factorize(self):
        """Factor ``G + Delta`` (raises ``LinAlgError`` at the boundary)."""
        Dk, Dj, X = self.Dk, self.Dj, self.X
        # Both factors serve every step-length test of the iteration.
        self.Lx, self.Lz = np.linalg.cholesky(X), np.linalg.cholesky(self.Z)
        Zi = np.linalg.inv(self.Z)
        self.Zi = Zi = (Zi + Zi.T) / 2.0
        PZk, PXk = Dk @ Zi, Dk @ X
        PZj, PXj = Dj @ Zi, Dj @ X
        self.g = np.einsum("ij,ij->i", PZk, PXk) - np.einsum("ij,ij->i", PZj, PXj)
        tau = float(np.sum(Zi * X))
        self._factor(PZk, PZj, PXk, PXj, self.m / self.w + self.xi / self.s2 + self.u)
        self.ug = self.solve(self.g)
        self.u1 = self.solve(np.ones(len(self.w)))
        self.margins_zi, self.trace_zi = _margins(Dk, Dj, Zi), float(np.trace(Zi))
        g, ug, u1 = self.g, self.ug, self.u1
        self.schur = np.array([[g @ ug - tau, g @ u1], [ug.sum(), u1.sum()]])

    def _factor(self, PZk, PZj, PXk, PXj, delta):
        """Form the upper triangle of the dense ``G + Delta`` and its Cholesky factor.

        The two symmetric terms are rank-``D`` Gram matrices, formed by ``dsyrk`` (half
        the work of a product) from ``D_a L`` and ``D_a L_x`` with ``Z^{-1} = L L^T`` and
        ``X = L_x L_x^T``: ``D_a Z^{-1} D_a^T`` and ``D_a X D_a^T``.
        """
        Dk, Dj = self.Dk, self.Dj
        cross = (PZk @ Dj.T) * (PXk @ Dj.T)
        G = -cross
        G -= cross.T
        del cross
        # The factor of the same Z^{-1} as the cross term (not L_z^{-T}): near the optimum
        # Z is nearly singular and mixing the two roundings can cost G its definiteness.
        Lzi = np.linalg.cholesky(self.Zi)
        for Da in (Dk, Dj):
            G += dsyrk(1.0, Da @ Lzi) * dsyrk(1.0, Da @ self.Lx)
        G[np.diag_indices_from(G)] += delta
        self.factor = cho_factor(G, lower=False, overwrite_a=True)

    def solve(self, rhs):
        """``(G + Delta)^{-1} rhs``."""
        return cho_solve(self.factor, rhs)

    def direction(self, target, c1, c2, second):
        """Newton step towards ``m w = xi s2 = target`` and ``X Z = target I``; ``c1``,
        ``c2`` and ``second`` are the corrector's terms (zero / None for the predictor)."""
        m, xi, w, s2, Zi, X = self.m, self.xi, self.w, self.s2, self.Zi, self.X
        if second is None:
            corr_tr, corr_a = 0.0, 0.0
        else:
            sym = (second + second.T) / 2.0
            corr_tr, corr_a = float(np.trace(sym)), _margins(self.Dk, self.Dj, sym)
        b = (self.shift - self.rho - (target - c1) / w + target * self.margins_zi - corr_a
             + (target - c2) / s2)
        u0 = self.solve(-b)
        dpi, drho = np.linalg.solve(
            self.schur, [1.0 - target * self.trace_zi + corr_tr - self.g @ u0, -u0.sum()])
        dw = u0 + dpi * self.ug + drho * self.u1
        dZ = dpi * self.eye - _H(self.Dk, self.Dj, dw)
        B = Zi @ dZ @ X
        dX = target * Zi - X - (B + B.T) / 2.0
        if second is not None:
            dX -= sym
        dm = (target - m * w - c1) / w - (m / w) * dw
        dxi = (target - xi * s2 - c2) / s2 + (xi / s2) * dw
        return dpi, dw, dZ, dX, dm, dxi, drho

    def steps(self, dw, dZ, dX, dm, dxi):
        """Primal and dual step lengths: a fixed fraction of the way to the boundary."""
        primal = min(_max_step_psd(self.Lx, dX), _max_step(self.m, dm),
                     _max_step(self.xi, dxi))
        dual = min(_max_step_psd(self.Lz, dZ), _max_step(self.w, dw),
                   _max_step(self.s2, -dw))
        return min(1.0, _STEP_FRACTION * primal), min(1.0, _STEP_FRACTION * dual)

    def mean_complementarity(self, dX, dm, dxi, dZ, dw):
        """``mu`` after the (scaled) steps."""
        return (np.sum((self.X + dX) * (self.Z + dZ)) + (self.m + dm) @ (self.w + dw)
                + (self.xi + dxi) @ (self.s2 - dw)) / self.n_pairs


class _LowRankNewtonSystem(_NewtonSystem):
    r"""The same Newton system, solved through its ``n_s = D (D + 1) / 2`` low-rank part.

    With ``v_r = svec(A_r)`` (the isometric vectorization of symmetric matrices, rows of
    ``V``, ``t x n_s``), ``G = V K V^T`` where ``K`` is the symmetrized Kronecker product
    ``(X (x) Z^{-1} + Z^{-1} (x) X) / 2`` on ``svec`` coordinates (positive definite at an
    interior iterate), ``K = L L^T``. Near the optimum ``d = 1 / diag(Delta)`` spans many
    orders of magnitude: it grows like ``1 / mu`` on the triplets whose weight is strictly
    inside ``(0, C)`` (at most about ``n_s`` of them) and vanishes on the others. Those
    ``n_F = min(t, 2 n_s)`` triplets ``F`` with the largest ``d`` are kept in a dense
    block; the rest ``N`` is eliminated by Woodbury, where ``d`` is moderate:

    .. math::

        (\Delta_N + V_N K V_N^T)^{-1} = D_N - D_N V_N L (I + P)^{-1} L^T V_N^T D_N,
        \qquad P = L^T V_N^T D_N V_N L,

    and the Schur complement on ``F`` is ``Delta_F + W_F (I + P)^{-1} W_F^T`` with
    ``W_F = V_F L``. One iteration forms ``V_N^T D_N V_N`` in ``O(t n_s^2)`` (blocks of
    rows, never all of ``V``) and factors two matrices of order ``n_s`` and ``n_F``;
    products with ``V^T`` are ``svec(H(.))`` and with ``V`` the margins ``<A_r, .>``,
    ``O(t D^2)`` each. A few steps of iterative refinement with the exact product
    ``(G + Delta) x`` (:meth:`_apply`) remove the rounding left by the elimination.
    """

    def _factor(self, PZk, PZj, PXk, PXj, delta):
        D, t = self.X.shape[0], len(delta)
        self.iu = np.triu_indices(D)
        self.root2 = np.where(self.iu[0] == self.iu[1], 1.0, np.sqrt(2.0))
        # svec coordinates -> vec(D x D): column (i, j) has 1/sqrt2 at (i, j) and (j, i).
        n_s = len(self.root2)
        U = np.zeros((D, D, n_s))
        U[self.iu[0], self.iu[1], np.arange(n_s)] = 1.0 / self.root2
        U[self.iu[1], self.iu[0], np.arange(n_s)] = 1.0 / self.root2
        U = U.reshape(D * D, n_s)
        K = U.T @ ((np.kron(self.X, self.Zi) + np.kron(self.Zi, self.X)) / 2.0) @ U
        self.L = np.linalg.cholesky((K + K.T) / 2.0)
        self.delta = delta
        self.free = np.sort(np.argsort(-delta)[:min(t, 2 * n_s)])
        # d on the eliminated triplets only (zero on F): D_N as a full-length vector.
        self.dN = 1.0 / delta
        self.dN[self.free] = 0.0
        gram = np.zeros((n_s, n_s))
        for start in range(0, t, _BLOCK):
            V = self._svec_rows(slice(start, start + _BLOCK))
            gram += V.T @ (self.dN[start:start + _BLOCK, None] * V)
        inner = self.L.T @ gram @ self.L
        self.inner = cho_factor((inner + inner.T) / 2.0 + np.eye(n_s))
        self.WF = self._svec_rows(self.free) @ self.L
        SF = self.WF @ cho_solve(self.inner, self.WF.T)
        self.schur_F = cho_factor((SF + SF.T) / 2.0 + np.diag(delta[self.free]))

    def _svec_rows(self, rows):
        """``svec(A_r)`` for a block of triplets: shape (block, n_s)."""
        a, b = self.Dk[rows], self.Dj[rows]
        i, j = self.iu
        return (a[:, i] * a[:, j] - b[:, i] * b[:, j]) * self.root2

    def _vt(self, y):
        """``V^T y = svec(H(y))``."""
        return _H(self.Dk, self.Dj, y)[self.iu] * self.root2

    def _v(self, p):
        """``V p``: the margins ``<A_r, smat(p)>``."""
        P = np.zeros(self.X.shape)
        P[self.iu] = p / self.root2
        return _margins(self.Dk, self.Dj, P + np.triu(P, 1).T)

    def _solve_N(self, u):
        """``(Delta_N + V_N K V_N^T)^{-1} u`` (``u`` and the result zero on F)."""
        y = self.dN * u
        q = cho_solve(self.inner, self.L.T @ self._vt(y))
        return y - self.dN * self._v(self.L @ q)

    def _eliminate(self, rhs):
        F = self.free
        rN = rhs.copy()
        rN[F] = 0.0
        a = self._solve_N(rN)
        # G_FN a = W_F L^T V_N^T a (a vanishes on F, so V^T a = V_N^T a).
        xF = cho_solve(self.schur_F, rhs[F] - self.WF @ (self.L.T @ self._vt(a)))
        coupling = self._v(self.L @ (self.WF.T @ xF))
        coupling[F] = 0.0
        x = self._solve_N(rN - coupling)
        x[F] = xF
        return x

    def solve(self, rhs):
        """``(G + Delta)^{-1} rhs``; raises ``LinAlgError`` when refinement cannot reach
        a relative residual of ``_SOLVE_ACCURACY`` (the iterate is then returned as is)."""
        x = self._eliminate(rhs)
        size = np.abs(rhs).max()
        for _ in range(_REFINEMENTS):
            r = rhs - self._apply(x)
            if np.abs(r).max() <= 1e-14 * size:
                return x
            x += self._eliminate(r)
        if np.abs(rhs - self._apply(x)).max() > _SOLVE_ACCURACY * size:
            raise LinAlgError("the low-rank Newton system is too ill-conditioned")
        return x

    def _apply(self, x):
        """``(G + Delta) x`` with ``(G x)_r = <A_r, sym(Z^{-1} H(x) X)>``."""
        B = self.Zi @ _H(self.Dk, self.Dj, x) @ self.X
        return self.delta * x + _margins(self.Dk, self.Dj, (B + B.T) / 2.0)


def _uniform_weights_solution(Dk, Dj, C, scale):
    """``C t = 1``: ``w = 1 / t`` is the only dual point (the dual has no interior).

    The optimum is then ``lambda_max(H(1 / t))``, the largest mean margin, attained by the
    projector on the top eigenvector with ``rho`` its largest margin and ``xi_r`` the
    shortfall of each margin from it (``rho - C sum xi`` is then the mean margin).
    """
    t = len(Dk)
    w = np.full(t, 1.0 / t)
    vals, vecs = eigh(Dk.T @ (w[:, None] * Dk) - Dj.T @ (w[:, None] * Dj))
    u = vecs[:, -1]
    margins = (Dk @ u) ** 2 - (Dj @ u) ** 2
    rho = float(margins.max())
    xi = rho - margins
    return SolverResult(
        embedding=u[:, None], objective_history=[float(vals[-1] * scale)],
        time_history=[0.0], n_iter=0, converged=True,
        info={"metric": np.outer(u, u), "rho": rho * scale, "slacks": xi * scale,
              "dual_weights": w, "upper_bound": float(vals[-1] * scale), "history": [],
              "status": "optimal"})
