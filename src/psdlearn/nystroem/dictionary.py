"""The inverse dictionary kernel ``S`` of the generalized Nystrom method (Lan et al. 2017 §3.2-3.5).

Problem (7), ``min_{S >= 0} lambda ||S - S_0||_F^2 + ||E_l S E_l^T - K^*_l||_F^2``, is
handled in the general quadratic form

.. math::

    J(S) = \\lambda \\|S - P\\|_F^2 + \\sum_k \\langle S, A_k S A_k \\rangle
           - 2 \\langle S, B \\rangle + c, \\qquad S \\succeq 0,

so that only ``m x m`` matrices appear. With labels there is one block,
``A = E_l^T E_l``, ``B = E_l^T K^*_l E_l = (E_l^T Y)(E_l^T Y)^T`` (``Y`` the one-hot label
matrix, ``K^*_l = Y Y^T``, eq. 6) and ``c = ||K^*_l||_F^2``; with must-link groups (§3.3)
one block per group ``g`` (``A_g = E_g^T E_g``, ``B = sum_g b_g b_g^T``, ``b_g = E_g^T 1``),
since the mask ``T`` of §3.3 keeps exactly the within-group pairs.

The projection of eq. (11) onto the PSD cone is the package's shared
``psd_projection`` (negative eigenvalues set to zero), exported here as the step of this
solver. The estimator, :class:`psdlearn.GeneralizedNystroem`, validates every parameter;
these functions trust their inputs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.linalg import eigh
from scipy.sparse.linalg import LinearOperator, cg

from psdlearn._linalg import psd_projection
from psdlearn._solver import SolverResult

__all__ = [
    "QuadraticData",
    "closed_form_start",
    "gradient",
    "objective",
    "psd_projection",
    "solve_dictionary",
]

#: Armijo: factor by which the curvature estimate ``a`` grows after a rejected step.
ARMIJO_GROWTH = 2.0


@dataclass
class QuadraticData:
    """Data term ``sum_k <S, A_k S A_k> - 2 <S, B> + c`` (module docstring).

    Attributes
    ----------
    blocks : list of ndarray of shape (m, m)
        Symmetric PSD ``A_k``.
    B : ndarray of shape (m, m)
    c : float
    curvature : float, optional
        Cached :meth:`curvature_bound`.
    eig : tuple of ndarray, optional
        Cached :meth:`eigensystem` (one block only).
    rotation : tuple, optional
        Cached :meth:`rotated` ``(prior, U^T prior U, U^T B U)`` of the last prior.
    """

    blocks: list
    B: np.ndarray
    c: float = 0.0
    curvature: float | None = None
    eig: tuple | None = None
    rotation: tuple | None = None

    def apply(self, S):
        """``sum_k A_k S A_k``: half the gradient of the quadratic part at ``S``.

        Parameters
        ----------
        S : ndarray of shape (m, m)

        Returns
        -------
        ndarray of shape (m, m)
        """
        out = np.zeros_like(S)
        for A in self.blocks:
            out += A @ S @ A
        return out

    def value(self, S):
        """The data term ``sum_k <S, A_k S A_k> - 2 <S, B> + c`` at ``S``.

        Parameters
        ----------
        S : ndarray of shape (m, m)

        Returns
        -------
        float
        """
        return float(np.sum(S * self.apply(S)) - 2.0 * np.sum(S * self.B) + self.c)

    def eigensystem(self):
        """``(a, U)`` with ``A = U diag(a) U^T`` for a single block (computed once)."""
        if self.eig is None:
            if len(self.blocks) != 1:
                raise ValueError("eigensystem needs exactly one block.")
            self.eig = eigh(self.blocks[0])
        return self.eig

    def rotated(self, prior):
        """``(U^T prior U, U^T B U)`` in the eigenbasis of the single block, cached for the
        last ``prior`` object (a path of ``lambda`` shares it).

        Parameters
        ----------
        prior : ndarray of shape (m, m)
            The symmetric prior ``P`` of the dictionary problem.

        Returns
        -------
        prior_rotated, B_rotated : ndarray of shape (m, m)
        """
        if self.rotation is None or self.rotation[0] is not prior:
            U = self.eigensystem()[1]
            self.rotation = (prior, U.T @ prior @ U, U.T @ self.B @ U)
        return self.rotation[1:]

    def curvature_bound(self):
        """``sum_k ||A_k||_2^2``: half the largest Hessian eigenvalue of the data term."""
        if self.curvature is None:
            if len(self.blocks) == 1:
                self.curvature = float(self.eigensystem()[0][-1] ** 2)
            else:
                self.curvature = float(sum(eigh(A, eigvals_only=True)[-1] ** 2
                                           for A in self.blocks))
        return self.curvature


def objective(S, prior, lam, data):
    """``J(S) = lam ||S - P||_F^2 + data(S)`` (eq. 7)."""
    return float(lam * np.sum((S - prior) ** 2) + data.value(S))


def gradient(S, prior, lam, data):
    """``2 lam (S - P) + 2 (sum_k A_k S A_k - B)`` (the gradient under eq. 9)."""
    return 2.0 * lam * (S - prior) + 2.0 * (data.apply(S) - data.B)


def closed_form_start(prior, lam, data, tol=1e-12):
    """Unconstrained minimizer of ``J``: the solution of ``lam S + sum_k A_k S A_k = lam P + B``.

    One block (labels): eqs. (12)-(13), ``S + P S P = Q`` with ``P = A / sqrt(lam)`` and
    ``Q = S_0 + B / lam``; in the eigenbasis ``A = U diag(a) U^T`` it is solved entrywise,
    ``S~_ij = Q~_ij / (1 + a_i a_j / lam)``. Several blocks (groups) do not share an
    eigenbasis; then the same SPD linear system is solved by conjugate gradients.

    Parameters
    ----------
    prior : ndarray of shape (m, m)
        ``P`` (the prior ``S_0``).
    lam : float
        ``lambda > 0``.
    data : QuadraticData
    tol : float, default=1e-12
        Relative residual of the conjugate-gradient solve (several blocks only).

    Returns
    -------
    ndarray of shape (m, m)
        The symmetric minimizer, not projected onto the PSD cone.
    """
    rhs = lam * prior + data.B
    if len(data.blocks) == 1:
        a, U = data.eigensystem()
        Qt = U.T @ rhs @ U / lam
        St = Qt / (1.0 + np.outer(a, a) / lam)
        S = U @ St @ U.T
        return 0.5 * (S + S.T)
    m = prior.shape[0]

    def matvec(v):
        V = v.reshape(m, m)
        return (lam * V + data.apply(V)).ravel()

    op = LinearOperator((m * m, m * m), matvec=matvec, dtype=np.float64)
    x, _ = cg(op, rhs.ravel(), x0=prior.ravel(), rtol=tol, maxiter=10 * m * m)
    S = x.reshape(m, m)
    return 0.5 * (S + S.T)


def solve_dictionary(prior, lam, data, *, S_init=None, max_iter=100, tol=1e-5, a_init=None,
                     accelerated=True, callback=None, eigenbasis=False,
                     projection_dtype=np.float64, closed_form_exit=False):
    """Projected gradient with the Armijo rule for problem (7) (Lan et al. 2017 §3.4).

    Each iteration solves (10), ``B_a = Proj_+(Y - grad J(Y) / a)`` (eq. 9 stepped
    *against* the gradient, then projected by eq. 11), and accepts it when
    ``J(B_a) <= J(Y) + <grad, B_a - Y> + a/2 ||B_a - Y||^2``, else ``a`` grows by
    :data:`ARMIJO_GROWTH`; ``a`` starts each iteration at its last accepted value and
    never exceeds twice the Lipschitz constant of the gradient. With
    ``accelerated=False`` this is the paper's method (``Y = S_t``). With
    ``accelerated=True`` (the Nesterov option the paper mentions) ``Y`` is extrapolated
    from the last two iterates and a step is kept only if it lowers ``J`` (monotone FISTA
    of Beck & Teboulle, 2009): the same work per iteration, far fewer iterations when
    ``lambda`` is small and the problem ill-conditioned. Either way ``J(S_t)`` never
    increases: for the plain method because ``B_a`` minimizes the right-hand side over
    the PSD cone, where ``B = Y`` gives ``J(Y)``; for the accelerated one by the test.

    With one block (labels) the iterations run in the eigenbasis ``A = U diag(d) U^T``,
    where the data term is entrywise with curvature ``lam + d_i d_j``, on the variable
    ``X = C (U^T S U) C``, ``C = diag((sqrt(lam) + d_i)^{1/2})``: a congruence, so ``X``
    is PSD exactly when ``S`` is and the projection is unchanged, while the curvature
    becomes ``(lam + d_i d_j) / ((sqrt(lam) + d_i)(sqrt(lam) + d_j))``, within
    ``[sqrt(lam) / (sqrt(lam) + d_max), 1]`` up to a factor 4: about the square root of
    the condition number ``(lam + d_max^2) / lam`` of the unscaled problem. The optimum
    is the same; ``step`` is then the curvature estimate of ``X``.

    Parameters
    ----------
    prior : ndarray of shape (m, m)
        ``S_0`` (or ``alpha_j S_0^(j)`` for one kernel of the multiple-kernel problem).
    lam : float
        ``lambda > 0``.
    data : QuadraticData
    S_init : ndarray of shape (m, m), optional
        PSD start; by default the closed-form start (12)-(13) projected on the PSD cone.
    max_iter : int
    tol : float
        Stop when an iteration decreases ``J`` by at most ``tol`` relatively.
    a_init : float, optional
        First curvature estimate; default ``2 lam`` (the smallest Hessian eigenvalue).
    accelerated : bool, default=True
    callback : callable, optional
        Called as ``callback(J)`` after every iteration (progress bars); returning ``True``
        stops the iterations.
    eigenbasis : bool, default=False
        One block only: ``S_init`` and the returned ``S`` and ``factor`` are expressed in
        the eigenbasis ``U`` of ``A`` (``U^T S U`` and ``U^T F``), which saves two
        ``m x m`` products each way for a caller that solves a path of problems on the
        same data (the cross-validation of ``lambda``).
    projection_dtype : {np.float64, np.float32}, default=np.float64
        Precision of the eigendecomposition of each PSD projection. ``np.float32`` is
        about 1.4 times faster at ``m = 180``; the projection is then exact to about
        ``1e-7`` relatively (the iterates stay PSD, ``B = F F^T`` formed in float64, and
        ``J`` never increases), for solves whose ``tol`` is far above that (the fold fits
        that rank the candidate ``lambda``).
    closed_form_exit : bool, default=False
        One block, no ``S_init``: when the closed form (13) is PSD (no eigenvalue of it
        is ``<= 0``) it is the optimum; return it without an iteration (``n_iter = 0``,
        ``step = None``). Otherwise at least one iteration runs (scikit-learn's
        convention for ``n_iter_``), which here confirms the closed form.

    Returns
    -------
    SolverResult
        ``objective_history`` (``J`` at the start, then after every iteration),
        ``time_history`` (cumulative seconds since the call), ``n_iter``, ``converged``;
        ``embedding`` is ``None``.
        ``info`` (read as attributes): ``S``, the solution, ``step``, the last
        curvature estimate ``a`` (the step is ``1 / a``; a later solve of a nearby problem
        can start its search there, ``a_init``), and ``factor``, an ``(m, r)`` matrix
        ``F`` with ``F F^T = S`` up to rounding, read off the last projection (None when
        no step was accepted), not sorted nor truncated as :func:`psd_factor` is. The
        callback's stop signal or a ``KeyboardInterrupt`` during the iterations ends them:
        the result holds the last complete iterate, with ``interrupted=True`` and
        ``converged=False``.
    """
    start = time.perf_counter()
    if eigenbasis and len(data.blocks) != 1:
        raise ValueError("eigenbasis=True needs exactly one block.")
    if len(data.blocks) == 1:
        # in the eigenbasis of A = U diag(d) U^T the data term is elementwise,
        # sum_ij d_i d_j S~_ij^2 - 2 <S~, B~>, and the PSD cone is rotation invariant: the
        # iterations need no m x m product, only the eigh of the projection
        d, U = data.eigensystem()
        P, Bt = data.rotated(prior)
        weight = np.outer(d, d)
        # the congruence X = C S~ C with C = diag(c), c_i = (sqrt(lam) + d_i)^(1/2), keeps
        # the PSD cone and brings the entrywise curvature lam + d_i d_j of the data term
        # to within [~sqrt(lam) / (4 d_max), 1]: about the square root of the condition
        # number of the unscaled problem, hence far fewer iterations at a small lam
        c = np.sqrt(np.sqrt(lam) + np.maximum(d, 0.0))
        C = np.outer(c, c)
        curv = (lam + weight) / C**2
        # J = lam ||S~ - P~||^2 + <S~, weight * S~ - 2 B~> + c in X: a quadratic with
        # entrywise curvature curv and linear part lin
        lin = (lam * P + Bt) / C
        const = lam * float(np.sum(P * P)) + data.c

        def value(X):
            return float(np.sum(X * (curv * X - 2.0 * lin)) + const)

        def grad(X):
            return 2.0 * (curv * X - lin)

        # the closed form (13) is the entrywise solution in this basis
        if S_init is None:
            closed, F = _projection_factor((lam * P + Bt) / (lam + weight),
                                           projection_dtype)
            if closed_form_exit and F.shape[1] == len(d):
                # the unconstrained minimizer is PSD (no eigenvalue <= 0), hence optimal:
                # one eigendecomposition, no iteration
                return _closed_form_result(closed, F, U, C, eigenbasis, value, start)
            S = C * closed
        else:
            S = C * (S_init if eigenbasis else U.T @ S_init @ U)
        lo, hi = float(curv.min()), float(curv.max())
    else:
        U = None

        def value(S):
            return objective(S, prior, lam, data)

        def grad(S):
            return gradient(S, prior, lam, data)

        S = psd_projection(closed_form_start(prior, lam, data)) if S_init is None else S_init
        lo, hi = lam, lam + data.curvature_bound()
    S, F, history, times, n_iter, converged, interrupted, a = _projected_gradient(
        S, value, grad, lo, hi - lo, max_iter=max_iter, tol=tol,
        a_init=a_init, accelerated=accelerated, callback=callback, start=start,
        dtype=projection_dtype)
    if U is not None:
        # X = F F^T in the scaled variable: S = U diag(1/c) X diag(1/c) U^T
        S, F = S / C, None if F is None else F / c[:, None]
        if not eigenbasis:
            S = U @ S @ U.T
            S, F = 0.5 * (S + S.T), None if F is None else U @ F
    return SolverResult(embedding=None, objective_history=history, time_history=times,
                        n_iter=n_iter, converged=converged, interrupted=interrupted,
                        info={"S": S, "step": a, "factor": F})


def _closed_form_result(St, F, U, C, eigenbasis, value, start):
    """The :class:`SolverResult` of a PSD closed form ``St`` (eigenbasis, factor ``F``)."""
    J = value(C * St)
    if not eigenbasis:
        St, F = U @ St @ U.T, U @ F
        St = 0.5 * (St + St.T)
    return SolverResult(embedding=None, objective_history=[J],
                        time_history=[time.perf_counter() - start], n_iter=0,
                        converged=True, interrupted=False,
                        info={"S": St, "step": None, "factor": F})


def _projected_gradient(S, value, grad, lam, curvature, *, max_iter, tol, a_init,
                        accelerated, callback, start, dtype=np.float64):
    """The iterations of :func:`solve_dictionary` for ``J = value`` from the PSD ``S``.

    Returns ``(S, F, objective_history, time_history, n_iter, converged, interrupted,
    a)``, ``F F^T = S`` from the projection that gave ``S`` (None for the start), the
    times in seconds since the ``time.perf_counter()`` value ``start``.
    """
    a_max = 4.0 * (lam + curvature)  # twice the Lipschitz constant
    a = 2.0 * lam if a_init is None else float(a_init)
    J = value(S)
    history, times = [J], [time.perf_counter() - start]
    # (S, F, J, iterations, len(history)) of the last complete iteration, one tuple
    # stored at once: a Ctrl-C anywhere leaves it consistent
    state = (S, None, J, 0, 1)
    converged = interrupted = False
    Y, JY, t, S_prev, F = S, J, 1.0, S, None
    try:
        for it in range(1, max_iter + 1):
            G = grad(Y)
            while True:
                Bn, Fn = _projection_factor(Y - G / a, dtype)
                D = Bn - Y
                Jn = value(Bn)
                bound = JY + np.sum(G * D) + 0.5 * a * np.sum(D * D)
                # the slack absorbs rounding in J at the optimum; a_max always satisfies it
                if Jn <= bound + 1e-12 * abs(JY) or a >= a_max:
                    break
                a *= ARMIJO_GROWTH
            if Jn <= J:
                decrease = J - Jn
                S_prev, S, F, J = S, Bn, Fn, Jn
            elif Y is S:  # a plain step that does not descend: only rounding gets here
                state = (S, F, J, it, len(history))
                converged = True
                break
            else:  # the extrapolated step did not descend: restart the momentum from S
                decrease = None
                Y, JY, t, S_prev = S, J, 1.0, S
            history.append(J)
            times.append(time.perf_counter() - start)
            state = (S, F, J, it, len(history))
            if callback is not None and callback(J) is True:
                interrupted = True
                break
            if decrease is None:
                continue
            if decrease <= tol * abs(history[-2]):
                converged = True
                break
            if accelerated:
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                Y = S + ((t - 1.0) / t_next) * (S - S_prev)
                JY, t = value(Y), t_next
            else:
                Y, JY = S, J
    except KeyboardInterrupt:
        interrupted, converged = True, False
    S, F, J, n_iter, n_hist = state
    return S, F, history[:n_hist], times[:n_hist], n_iter, converged, interrupted, a


def _projection_factor(M, dtype=np.float64):
    """``(P, F)``: :func:`psd_projection` of ``M`` and its factor ``P = F F^T`` (the
    eigenvectors of the positive eigenvalues scaled by their square roots), from one
    eigendecomposition in ``dtype`` (``P`` and ``F`` in float64)."""
    w, V = eigh((0.5 * (M + M.T)).astype(dtype, copy=False), driver="evd")
    pos = w > 0
    F = (V[:, pos] * np.sqrt(w[pos])).astype(np.float64, copy=False)
    return F @ F.T, F
