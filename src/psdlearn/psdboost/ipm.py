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
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, eigh, eigvalsh

from psdlearn.psdboost._pricing import TripletOperator
from psdlearn.psdboost.sdp import SDPResult

__all__ = ["IPMResult", "solve_ipm"]

#: Fraction of the distance to the boundary of the cones taken by a step.
_STEP_FRACTION = 0.95


@dataclass
class IPMResult(SDPResult):
    """:class:`~psdlearn.psdboost.sdp.SDPResult` plus the iteration record.

    Attributes
    ----------
    upper_bound : float
        ``pi`` of the last iterate: the dual value of a feasible ``w``, at least the optimum.
    n_iter : int
    history : list of tuple
        ``(seconds, pi, primal objective, primal residual)`` per iteration, before its
        step; the primal objective is meaningful once the residual is small.
    """

    upper_bound: float = np.nan
    n_iter: int = 0
    history: list = field(default_factory=list)


def _max_step_psd(L, dS):
    """Largest ``a`` with ``S + a dS`` PSD, ``L`` the Cholesky factor of ``S``; or ``inf``."""
    Y = np.linalg.solve(L, np.linalg.solve(L, dS).T)
    lam = eigvalsh((Y + Y.T) / 2.0, subset_by_index=[0, 0])[0]
    return np.inf if lam >= 0 else -1.0 / lam


def _max_step(s, ds):
    """Largest ``a`` with ``s + a ds >= 0`` (``s > 0``), or ``inf``."""
    neg = ds < 0
    return float(np.min(-s[neg] / ds[neg])) if neg.any() else np.inf


def solve_ipm(X, triplets, C, *, tol=1e-8, max_iter=100, max_triplets=5000):
    """Solve problem (3) of Shen, Welsh & Wang (2008) to a relative duality gap ``tol``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, D)
    triplets : ndarray of shape (t, 3)
        Valid rows ``(i, j, k)`` meaning ``d(i, j) < d(i, k)`` (see
        :class:`psdlearn.Triplets`).
    C : float
        Slack price, ``C t >= 1``.
    tol : float, default=1e-8
        Stop when ``(pi - primal objective) / max(1, |pi|)`` and the primal residual (both
        on the problem scaled to unit mean margin scale) are below ``tol``.
    max_iter : int, default=100
    max_triplets : int, default=5000
        Refuse larger problems: each iteration forms and factors a ``t x t`` matrix
        (about ``6 x 8 t^2`` bytes in all, 1.2 GB at ``t = 5000``) in ``O(t^3)`` time.

    Returns
    -------
    IPMResult
        ``status`` is ``"optimal"``, ``"max_iter"`` or ``"inaccurate"`` (a Cholesky
        factorization failed near the boundary; the last iterate is returned).

    Raises
    ------
    ValueError
        If ``C t < 1`` (problem (3) is unbounded) or ``t > max_triplets``.

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
    triplets = np.asarray(triplets, dtype=np.int64)
    if len(triplets) > max_triplets:
        raise ValueError(
            f"{len(triplets)} triplets exceed max_triplets={max_triplets}: the interior-point "
            f"method factors a t x t matrix ({8e-9 * len(triplets) ** 2:.2g} GB per copy) "
            "every iteration; use psdlearn.PSDBoost, or raise max_triplets.")
    op = TripletOperator(np.asarray(X, dtype=np.float64), triplets)
    Dk, Dj = op.Bk @ op.X, op.Bj @ op.X
    t, D = Dk.shape
    if C * t < 1.0 - 1e-12:
        raise ValueError(f"C={C} is below 1/t = {1.0 / t:.3g}: problem (3) is unbounded.")
    # Unit mean margin scale at X = I / D, so that tol and the start are scale free.
    scale = float(np.mean(np.sum(Dk**2, axis=1) + np.sum(Dj**2, axis=1))) / D
    scale = scale if scale > 0 else 1.0
    Dk, Dj = Dk / np.sqrt(scale), Dj / np.sqrt(scale)
    if C * t <= 1.0 + 1e-12:
        return _uniform_weights_solution(Dk, Dj, C, scale)
    Xm = np.eye(D) / D
    m, xi, rho = np.ones(t), np.ones(t), 0.0
    w = np.full(t, 1.0 / t)
    pi = float(eigvalsh(_H(Dk, Dj, w), subset_by_index=[D - 1, D - 1])[0]) + 1.0
    start = time.perf_counter()
    history, status = [], "max_iter"
    for _ in range(max_iter):
        newton = _NewtonSystem(Dk, Dj, C, Xm, m, xi, rho, pi, w)
        residual, objective = newton.residual(), rho - C * xi.sum()
        history.append((time.perf_counter() - start, pi * scale, objective * scale,
                        residual))
        if (pi - objective) / max(1.0, abs(pi)) < tol and residual < tol:
            status = "optimal"
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
    metric = (Xm + Xm.T) / 2.0
    vals, vecs = eigh(metric)
    metric = (vecs * np.clip(vals, 0.0, None)) @ vecs.T
    metric /= np.trace(metric)
    return IPMResult(metric=metric, objective=float((rho - C * xi.sum()) * scale),
                     rho=float(rho * scale), slacks=xi * scale, dual_weights=w,
                     status=status, solve_time=time.perf_counter() - start,
                     upper_bound=float(pi * scale), n_iter=len(history), history=history)


def _H(Dk, Dj, w):
    """``H(w) = sum_r w_r A_r`` (D, D)."""
    return Dk.T @ (w[:, None] * Dk) - Dj.T @ (w[:, None] * Dj)


def _margins(Dk, Dj, B):
    """``<A_r, B>`` for every triplet, ``B`` symmetric (D, D): shape (t,)."""
    return np.einsum("ij,ij->i", Dk @ B, Dk) - np.einsum("ij,ij->i", Dj @ B, Dj)


class _NewtonSystem:
    """The reduced Newton system of the module docstring at one iterate."""

    def __init__(self, Dk, Dj, C, X, m, xi, rho, pi, w):
        self.Dk, self.Dj = Dk, Dj
        self.X, self.m, self.xi, self.rho, self.w = X, m, xi, rho, w
        D, t = X.shape[0], len(w)
        self.eye = np.eye(D)
        self.Z = pi * self.eye - _H(Dk, Dj, w)
        self.s2 = C - w
        self.n_pairs = D + 2 * t
        self.mu = (np.sum(X * self.Z) + m @ w + xi @ self.s2) / self.n_pairs

    def residual(self):
        """Largest violation of the primal equalities."""
        r = self.m - _margins(self.Dk, self.Dj, self.X) - self.xi + self.rho
        return float(max(np.abs(r).max(), abs(1.0 - np.trace(self.X))))

    def factorize(self):
        """Form ``G + Delta`` and factor it (raises ``LinAlgError`` at the boundary)."""
        Dk, Dj, X = self.Dk, self.Dj, self.X
        # Both factors serve every step-length test of the iteration.
        self.Lx, self.Lz = np.linalg.cholesky(X), np.linalg.cholesky(self.Z)
        Zi = np.linalg.inv(self.Z)
        self.Zi = Zi = (Zi + Zi.T) / 2.0
        PZk, PZj, PXk, PXj = Dk @ Zi, Dj @ Zi, Dk @ X, Dj @ X
        cross = (PZk @ Dj.T) * (PXk @ Dj.T)
        G = (PZk @ Dk.T) * (PXk @ Dk.T) + (PZj @ Dj.T) * (PXj @ Dj.T) - cross - cross.T
        self.g = np.einsum("ij,ij->i", PZk, PXk) - np.einsum("ij,ij->i", PZj, PXj)
        tau = float(np.sum(Zi * X))
        self.factor = cho_factor((G + G.T) / 2.0 + np.diag(self.m / self.w + self.xi / self.s2))
        self.ug = cho_solve(self.factor, self.g)
        self.u1 = cho_solve(self.factor, np.ones(len(self.w)))
        self.margins_zi, self.trace_zi = _margins(Dk, Dj, Zi), float(np.trace(Zi))
        g, ug, u1 = self.g, self.ug, self.u1
        self.schur = np.array([[g @ ug - tau, g @ u1], [ug.sum(), u1.sum()]])

    def direction(self, target, c1, c2, second):
        """Newton step towards ``m w = xi s2 = target`` and ``X Z = target I``; ``c1``,
        ``c2`` and ``second`` are the corrector's terms (zero / None for the predictor)."""
        m, xi, w, s2, Zi, X = self.m, self.xi, self.w, self.s2, self.Zi, self.X
        if second is None:
            corr_tr, corr_a = 0.0, 0.0
        else:
            sym = (second + second.T) / 2.0
            corr_tr, corr_a = float(np.trace(sym)), _margins(self.Dk, self.Dj, sym)
        b = (-self.rho - (target - c1) / w + target * self.margins_zi - corr_a
             + (target - c2) / s2)
        u0 = cho_solve(self.factor, -b)
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
    return IPMResult(metric=np.outer(u, u), objective=float(vals[-1] * scale),
                     rho=rho * scale, slacks=xi * scale, dual_weights=w, status="optimal",
                     solve_time=0.0, upper_bound=float(vals[-1] * scale), n_iter=0)
