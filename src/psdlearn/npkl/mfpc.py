r"""MFPC: the quadratic NPKL objectives over ``K = Q U Q^T`` with a fixed spectral basis ``Q``.

The baseline of Hu & Kwok 2013 (Table 2), after Shang, Jiao & Wang (2012). ``Q`` (``n x r``,
orthonormal columns) holds the ``r`` trailing eigenvectors of the graph Laplacian ``L`` and
only the small PSD matrix ``U`` (``r x r``) is learned:

.. math::

    \min_{U \succeq 0} \; f(U) = \operatorname{tr}(\Lambda U)
        + \frac{\gamma}{2} \sum_{(i, j) \in \mathcal{T}} (q_i^T U q_j - t_{ij})^2,
    \qquad \Lambda = Q^T L Q,

which is the objective of :class:`psdlearn.npkl.NPKL` (``pcp``: Hu & Kwok 2013 eq. 1, or
``square``) restricted to the kernels ``Q U Q^T``; ``q_i`` is row ``i`` of ``Q`` and ``T``
the ordered pair set of :meth:`NPKLProblem.ordered_targets`. ``f`` is a convex quadratic,
so the problem is a small convex QSDP.

Solver (our choice). Shang et al. run a fixed-point continuation; the fixed point of that
iteration, ``U = Pi(U - tau grad f(U))`` with ``Pi`` the projection onto the PSD cone
(eigenvalue clipping), is the optimality condition of this problem for any step ``tau > 0``.
We iterate it with the step ``tau = 1 / Lip`` (``Lip = gamma ||A||^2``, ``A`` the map
``U -> (q_i^T U q_j)_T``, its norm by power iteration) and Nesterov's acceleration with
adaptive restart (FISTA; O'Donoghue & Candes 2015), which reaches the same optimum faster
than plain continuation. It stops when the fixed-point residual
``||U - Pi(U - tau grad f(U))||_F / tau`` falls below ``tol (1 + ||grad f(U)||_F)``: at
``tol = 0`` it is the exact optimum, characterised by the KKT conditions ``U >= 0``,
``grad f(U) >= 0`` and ``<U, grad f(U)> = 0``. A step costs ``O(|T| r^2 + r^3)``; ``Q`` is
computed once by shift-invert Lanczos (``scipy.sparse.linalg.eigsh``), or densely when
``r`` is a large part of ``n``.

With ``r = n`` the family ``Q U Q^T`` is every PSD matrix, so MFPC then solves the
NPKL problem itself (the SDP of :mod:`psdlearn.npkl.sdp`).

References
----------
Shang, F., Jiao, L. C. & Wang, F. (2012). Semi-supervised learning with mixed knowledge
information. KDD.

Hu, E.-L. & Kwok, J. T. (2013). Efficient kernel learning from side information using
ADMM. IJCAI.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
from scipy.sparse.linalg import eigsh
from threadpoolctl import threadpool_limits

from psdlearn._linalg import psd_projection
from psdlearn._solver import SolverResult
from psdlearn.npkl.losses import LOSS_TABLE

__all__ = ["MFPC_LOSSES", "fit_mfpc", "mfpc_gradient", "solve_mfpc", "trailing_eigenvectors"]

#: Losses of the QSDP: quadratic in ``K``.
MFPC_LOSSES = tuple(name for name, loss in LOSS_TABLE.items() if loss.quadratic)
#: Above this fraction ``r / n`` (or below ``DENSE_N`` samples) the basis is computed densely.
DENSE_FRACTION = 0.2
DENSE_N = 600


def trailing_eigenvectors(L, rank):
    """The ``rank`` eigenpairs of the symmetric positive definite ``L`` of smallest eigenvalue.

    Parameters
    ----------
    L : sparse matrix of shape (n, n)
    rank : int

    Returns
    -------
    eigenvalues : ndarray of shape (rank,), ascending
    Q : ndarray of shape (n, rank), orthonormal columns
    """
    n = L.shape[0]
    if n <= DENSE_N or rank >= DENSE_FRACTION * n or rank >= n - 1:
        w, V = np.linalg.eigh(L.toarray())
        return w[:rank], np.ascontiguousarray(V[:, :rank])
    # L >= delta I > 0, so shift-invert at 0 finds the smallest eigenvalues fast
    # a fixed start vector: ARPACK's own changes from call to call (same seed, same fit)
    w, V = eigsh(L.tocsc(), k=rank, sigma=0.0, which="LM",
                 v0=np.random.default_rng(0).uniform(-1.0, 1.0, n))
    order = np.argsort(w)
    return w[order], np.ascontiguousarray(V[:, order])


class _Operator:
    """``A(U) = (q_i^T U q_j)_{(i, j) in T}`` and its adjoint over the rows of ``Q``."""

    def __init__(self, Q, rows, cols):
        self.Qi = Q[rows]
        self.Qj = Q[cols]

    def apply(self, U):
        return np.einsum("kr,kr->k", self.Qi @ U, self.Qj)

    def adjoint(self, z):
        S = self.Qi.T @ (z[:, None] * self.Qj)
        return 0.5 * (S + S.T)

    def norm_sq(self, rng, iters=50):
        """``||A||^2`` by power iteration on ``A^* A`` (with a 1% safety margin)."""
        r = self.Qi.shape[1]
        U = rng.standard_normal((r, r))
        U = 0.5 * (U + U.T)
        U /= np.linalg.norm(U)
        est = 0.0
        for _ in range(iters):
            W = self.adjoint(self.apply(U))
            est = float(np.linalg.norm(W))
            if est == 0.0:
                return 1.0
            U = W / est
        return 1.01 * est


def mfpc_gradient(U, Lam, op, targets, gamma):
    """``grad f(U) = Lambda + gamma A^*(A(U) - t)`` and ``f(U)``."""
    res = op.apply(U) - targets
    grad = Lam + gamma * op.adjoint(res)
    value = float(np.sum(Lam * U) + 0.5 * gamma * res @ res)
    return grad, value


def solve_mfpc(problem, rank, *, max_iter=1000, tol=1e-6, basis=None, random_state=None,
               callback=None):
    r"""Minimize the NPKL objective over ``K = Q U Q^T``, ``U >= 0`` (Shang, Jiao & Wang 2012).

    Parameters
    ----------
    problem : NPKLProblem
        Loss ``pcp`` or ``square``.
    rank : int
        ``r``: the number of trailing Laplacian eigenvectors in ``Q`` (the size of ``U``).
    max_iter : int, default=1000
        Maximum projected-gradient steps.
    tol : float, default=1e-6
        Stop when the fixed-point residual is below ``tol (1 + ||grad f||_F)``.
    basis : tuple (eigenvalues, Q), optional
        A precomputed basis (e.g. from :func:`trailing_eigenvectors`), for several fits on
        one graph.
    random_state : int, RandomState instance or None
        Seeds the power iteration for the step.
    callback : callable, optional
        ``callback(it, U, objective)`` after every step; returning ``True`` stops the steps
        there (``interrupted=True``), as does a Ctrl-C (``KeyboardInterrupt``), which keeps
        the last complete step.

    Returns
    -------
    SolverResult
        ``embedding``: ``E = Q U^{1/2}``, so ``K = E E^T = Q U Q^T``; ``objective_history``
        (ndarray): ``f(U)`` (the NPKL objective of ``Q U Q^T``) at the start and after
        every step; ``time_history`` (ndarray): cumulative seconds aligned with it (the
        basis included). ``info``: ``U`` (the learned PSD ``r x r`` matrix), ``basis``
        (``Q``), ``eigenvalues`` (the Laplacian eigenvalues of the columns of ``Q``,
        ascending), ``residual`` (the final fixed-point residual
        ``||U - Pi(U - tau grad f)||_F / tau``) and ``step`` (``tau = 1 / Lip``).
    """
    from sklearn.utils import check_random_state

    t0 = time.perf_counter()
    evals, Q = trailing_eigenvectors(problem.laplacian, rank) if basis is None else basis
    Lam = Q.T @ (problem.laplacian @ Q)
    Lam = 0.5 * (Lam + Lam.T)
    indptr, cols, targets = problem.ordered_targets()
    rows = np.repeat(np.arange(problem.n_samples), np.diff(indptr))
    op = _Operator(Q, rows, cols)
    gamma = problem.gamma
    step = 1.0 / (gamma * op.norm_sq(check_random_state(random_state)))

    # the r x r eigendecompositions gain nothing from BLAS threads and lose much on a busy
    # machine (30 x 30: 31 ms threaded against 0.34 ms on one thread, at load 10 on 2 cores)
    with threadpool_limits(limits=1, user_api="blas"):
        U, n_iter, converged, stopped, residual, history, times = _iterate(
            Lam, op, targets, gamma, step, rank, max_iter, tol, callback, t0)
    w, V = np.linalg.eigh(U)
    E = Q @ (V * np.sqrt(np.maximum(w, 0.0)))
    return SolverResult(embedding=np.ascontiguousarray(E),
                        objective_history=np.asarray(history), time_history=np.asarray(times),
                        n_iter=n_iter, converged=converged, interrupted=stopped,
                        info={"U": U, "basis": Q, "eigenvalues": evals,
                              "residual": float(residual), "step": float(step)})


def _iterate(Lam, op, targets, gamma, step, rank, max_iter, tol, callback, t0):
    """Accelerated projected gradient with adaptive restart from ``U = 0``."""
    U = np.zeros((rank, rank))
    Y, theta = U, 1.0
    _, value = mfpc_gradient(U, Lam, op, targets, gamma)
    history, times = [value], [time.perf_counter() - t0]
    converged, stopped, residual, it = False, False, np.inf, 0
    kept = (U, 0)  # the last step whose objective is recorded: what a Ctrl-C leaves
    try:
        for it in range(1, max_iter + 1):
            grad_Y, _ = mfpc_gradient(Y, Lam, op, targets, gamma)
            U_new = psd_projection(Y - step * grad_Y)
            grad_U, value = mfpc_gradient(U_new, Lam, op, targets, gamma)
            theta_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta * theta))
            if value > history[-1]:
                # adaptive restart: drop the momentum when the objective goes up
                Y, theta = U_new, 1.0
            else:
                Y = U_new + ((theta - 1.0) / theta_new) * (U_new - U)
                theta = theta_new
            U = U_new
            history.append(value)
            times.append(time.perf_counter() - t0)
            kept = (U, it)
            stop = callback is not None and callback(it, U, value) is True
            residual = np.linalg.norm(U - psd_projection(U - step * grad_U)) / step
            if residual <= tol * (1.0 + np.linalg.norm(grad_U)):
                converged = True
                break
            if stop:
                stopped = True
                break
    except KeyboardInterrupt:
        (U, it), stopped, converged = kept, True, False
        del history[it + 1:], times[it + 1:]
    return U, it, converged, stopped, residual, history, times


def fit_mfpc(problem, E0, options):
    """The ``"mfpc"`` entry of :data:`psdlearn.npkl.solvers.NPKL_SOLVERS`.

    :func:`solve_mfpc` at ``rank = options.params["rank"]`` (it starts from ``U = 0``:
    ``E0`` is not used), with ``info["mfpc_U"]``, the ``U`` of ``K = Q U Q^T``.
    """
    res = solve_mfpc(problem, options.params["rank"], max_iter=options.max_iter,
                     tol=options.tol, random_state=options.random_state,
                     callback=options.callback)
    return replace(res, info={**res.info, "mfpc_U": res.U})
