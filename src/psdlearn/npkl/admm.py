r"""ADMM solver for the quadratic NPKL objectives (Hu & Kwok 2013, Algorithm 1).

Problem (5) of Hu & Kwok 2013: with ``K = V^T U`` and the constraint ``V = U`` (rows ``v_i``,
``u_i`` of the ``(n, r)`` arrays ``V``, ``U``),

.. math::

    \min_{V = U} \; \operatorname{tr}(V^T L U)
        + \frac{\gamma}{2} \sum_{(i, j) \in \mathcal{T}} (v_i^T u_j - t_{ij})^2,

over an ordered pair set ``T`` (see :meth:`NPKLProblem.ordered_targets`): ``pcp`` (Hu & Kwok 2013
eq. 1: both orders of each pair and the diagonal, targets 1 / 0 / 1) or ``square`` (seed
000 eq. 10 with the square loss: both orders, targets ``+-1``; ``gamma / 2`` over both
orders is ``gamma`` per unordered pair). ADMM on the augmented Lagrangian (6) alternates
the exact V-step and U-step (13), each separable over rows (see
:mod:`psdlearn.npkl._admm_kernels`), and the multiplier step
``Lambda <- Lambda + rho (V - U)``; ``rho`` follows schedule (15).

Convergence test. Hu & Kwok 2013 stops on ``max(Delta_primal, Delta_dual) < epsilon`` with the
absolute residuals (14) and gives no epsilon. Here the test is scale free and means what
``tol`` means for the BCD solver (relative change of the embedding per iteration): stop
when ``max(Delta_primal, Delta_dual / rho) <= tol * ||V||_F``, i.e. ``||V - U||`` and
``||V_k - V_{k-1}||`` are both below ``tol ||V||``. The residuals (14) themselves are
recorded.

Implementation notes (not in the paper). The samples are renumbered by reverse
Cuthill-McKee on the graph before the loop (:func:`psdlearn.npkl.solvers.renumbered`, by
:class:`~psdlearn.NPKL` or by ``reorder=True``): rows of ``L U`` then read rows of ``U``
that are close in memory, which measured 1.8x faster on a6a (the result is mapped back). Both
half steps compute ``(L U)_i`` on the fly inside the row update, and the U-step also
updates ``Lambda`` and accumulates the residuals and the objective at ``V`` (whose
``tr(V^T L V)`` needs exactly the ``L V`` product of that step), so an iteration is two
parallel passes over the graph and no ``n x n`` object exists.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from psdlearn._interrupt import phase
from psdlearn._solver import SolverResult
from psdlearn.npkl._blocks import BlockedHalfStep
from psdlearn.npkl.losses import LOSS_TABLE

__all__ = ["ADMM_LOSSES", "fit_admm", "solve_admm"]

#: Losses the ADMM splitting handles: quadratic in ``K``.
ADMM_LOSSES = tuple(name for name, loss in LOSS_TABLE.items() if loss.quadratic)

#: Floor of ``rho`` in schedule (15).
RHO_MIN = 10.0

#: An intermediate round of ``rank="adaptive"`` stops at ``INTERMEDIATE_TOL_FACTOR * tol``
#: (as BCD's): its point only has to show whether more columns descend.
INTERMEDIATE_TOL_FACTOR = 30.0


def update_rho(rho, primal, dual):
    """Penalty schedule (15) of Hu & Kwok 2013 (Boyd et al. 2011, eq. 3.13)."""
    if primal > 10.0 * dual:
        return 2.0 * rho
    if dual > 10.0 * primal:
        return max(0.5 * rho, RHO_MIN)
    return rho


def end_of_iteration(primal, dual, rho, size, tol, adaptive_rho, stop):
    """Stopping test and penalty update that close every ADMM iteration.

    Stop when ``max(||V - U||_F, ||V - V_prev||_F) <= tol sqrt(size)`` (residuals (14) of
    Hu & Kwok 2013, ``dual = rho ||V - V_prev||_F``) or when the callback asked to;
    otherwise apply schedule (15) if ``adaptive_rho``. Shared by the single-machine and the
    distributed solver so that both run the same iteration.

    Returns
    -------
    converged, done : bool
    rho : float
        The penalty of the next iteration.
    """
    if max(primal, dual / rho) <= tol * np.sqrt(size):
        return True, True, rho
    if stop:
        return False, True, rho
    return False, False, update_rho(rho, primal, dual) if adaptive_rho else rho


def solve_admm(problem, V0, U0=None, lam0=None, *, rho=100.0, max_iter=500, tol=1e-4,
               adaptive_rho=True, reorder=True, callback=None):
    """Minimize the pcp or square NPKL objective by ADMM (Hu & Kwok 2013 Algorithm 1).

    Parameters
    ----------
    problem : NPKLProblem
        Loss ``"pcp"`` or ``"square"``, ``gamma >= 0``.
    V0 : ndarray of shape (n_samples, rank)
        Starting ``V``.
    U0 : ndarray of shape (n_samples, rank), optional
        Starting ``U``; defaults to ``V0``.
    lam0 : ndarray of shape (n_samples, rank), optional
        Starting ``Lambda`` (e.g. of a previous solve, to warm start); defaults to zero.
    rho : float, default=100.0
        Initial penalty (Hu & Kwok 2013 footnote 2: 100).
    max_iter : int, default=500
        Maximum iterations (Hu & Kwok 2013: 500, and 100 on the adult sets).
    tol : float, default=1e-4
        Stop when ``max(Delta_primal, Delta_dual / rho) <= tol * ||V||_F``.
    adaptive_rho : bool, default=True
        Apply schedule (15) after every iteration; otherwise keep ``rho`` fixed.
    reorder : bool, default=True
        Renumber the samples by reverse Cuthill-McKee for memory locality (same result up
        to rounding; :func:`psdlearn.npkl.solvers.renumbered`).
    callback : callable, optional
        ``callback(k, V, objective)`` after iteration ``k`` (``V`` in the caller's sample
        order only when ``reorder=False``; do not modify it); returning ``True`` stops
        the iterations there (``interrupted=True``).

    Returns
    -------
    SolverResult
        ``embedding``: ``V`` at the last iteration (the paper's output ``K = V^T V``);
        ``multipliers``: ``Lambda``; ``objective_history`` (ndarray): ``problem.objective(V)``
        at the start and after every iteration; ``time_history`` (ndarray): cumulative
        seconds aligned with it; ``interrupted``: a KeyboardInterrupt (``V``, ``U`` and
        ``Lambda`` are then those of the last complete iteration, whose objective ends
        the history) or the callback stopped the iterations. ``info``: ``U`` (the second
        factor; ``||V - U||_F`` is the last primal residual),
        ``primal_residual_history`` and ``dual_residual_history`` (ndarrays of
        ``||V_k - U_k||_F`` and ``rho ||V_k - V_{k-1}||_F``, eq. 14) and ``rho_history``
        (``rho`` of each iteration).
    """
    n = problem.n_samples
    V = np.array(V0, dtype=np.float64, order="C", copy=True)
    U = V.copy() if U0 is None else np.array(U0, dtype=np.float64, order="C", copy=True)
    lam = np.zeros_like(V) if lam0 is None else np.array(lam0, dtype=np.float64, order="C",
                                                         copy=True)
    if V.ndim != 2 or V.shape[0] != n or U.shape != V.shape or lam.shape != V.shape:
        raise ValueError(f"V0, U0 and lam0 must have shape ({n}, rank); got {V.shape}, "
                         f"{U.shape} and {lam.shape}.")
    inv = None
    work = problem
    if reorder and n > 1:
        from psdlearn.npkl.solvers import renumbered

        work, inv, V, U, lam = renumbered(problem, V, U, lam)
    L = work.laplacian
    Lp, Li, Lx = (np.ascontiguousarray(a) for a in (L.indptr.astype(np.int64),
                                                     L.indices.astype(np.int64), L.data))
    Tp, Ti, Tt = work.ordered_targets()
    gamma = float(problem.gamma)
    step = BlockedHalfStep(Lp, Tp, V.shape[1])

    objective = [float(work.objective(V))]
    times = [0.0]
    records = []  # (rho, primal, dual, objective, seconds) of each complete iteration
    converged = False
    start = time.perf_counter()
    k = 0
    interrupted = False
    # Each half step writes into a spare array, swapped in once complete: a Ctrl-C (seen
    # between the bounded calls of BlockedHalfStep) leaves V, U and Lambda of the last
    # complete iteration, whose objective is already recorded.
    spare_V, spare_U, spare_lam = np.empty_like(V), np.empty_like(U), np.empty_like(lam)
    swapped = (0, 0)  # (iteration, half steps of it swapped in)
    try:
        for k in range(1, max_iter + 1):
            np.copyto(spare_V, V)
            change, size, _, _, _ = step(Lp, Li, Lx, Tp, Ti, Tt, U, U, lam, -1.0, rho, gamma,
                                         spare_V, False)
            V, spare_V, swapped = spare_V, V, (k, 1)
            np.copyto(spare_U, U)
            np.copyto(spare_lam, lam)
            _, _, primal2, smooth, fit = step(Lp, Li, Lx, Tp, Ti, Tt, V, V, spare_lam, 1.0, rho,
                                              gamma, spare_U, True)
            U, lam, spare_U, spare_lam, swapped = spare_U, spare_lam, U, lam, (k, 2)
            primal = float(np.sqrt(primal2))
            dual = rho * float(np.sqrt(change))
            records.append((rho, primal, dual, smooth + 0.5 * gamma * fit,
                            time.perf_counter() - start))
            stop = callback is not None and callback(k, V, records[-1][3]) is True
            converged, done, rho = end_of_iteration(primal, dual, rho, size, tol,
                                                    adaptive_rho, stop)
            if done:
                interrupted = not converged
                break
    except KeyboardInterrupt:
        interrupted, converged = True, False
        if swapped[0] > len(records):  # undo the half steps of the unrecorded iteration
            if swapped[1] == 2:
                U, lam = spare_U, spare_lam
            V = spare_V
        k = len(records)
    rho_hist, primal_hist, dual_hist, values, seconds = (
        np.array(records).reshape(-1, 5).T.tolist())
    objective += values
    times += seconds
    if inv is not None:
        V, U, lam = V[inv], U[inv], lam[inv]
    return SolverResult(
        embedding=V,
        objective_history=np.asarray(objective),
        time_history=np.asarray(times),
        n_iter=k if max_iter > 0 else 0,
        converged=converged,
        interrupted=interrupted,
        multipliers=lam,
        info={"U": U, "primal_residual_history": np.asarray(primal_hist),
              "dual_residual_history": np.asarray(dual_hist),
              "rho_history": np.asarray(rho_hist)},
    )


def fit_admm(problem, E0, options):
    """The ``"admm"`` entry of :data:`psdlearn.npkl.solvers.NPKL_SOLVERS`.

    Starts from ``V = E0``, or with ``init="bcd"`` on a random start from the BCD solution
    of the square loss of Hu & Kwok 2015 (targets ``+-1``, no diagonal; stopped at relative
    change ``max(tol, 1e-3)``). A warm start (``options.state`` the ``(U, Lambda, rho)``
    of the previous fit) continues from the previous ADMM iterate, so that a path of
    ``gamma`` values restarts near it rather than at ``Lambda = 0`` and the initial
    ``rho``. The problem comes renumbered from the estimator: :func:`solve_admm` runs with
    ``reorder=False``. A round of ``rank="adaptive"`` (``options.state`` a
    :class:`psdlearn.npkl.escalation.AdaptiveRound`) continues from its ``warm`` state
    when it has one, and an intermediate round stops at ``INTERMEDIATE_TOL_FACTOR * tol``.

    Parameters
    ----------
    problem : NPKLProblem
    E0 : ndarray of shape (n_samples, rank)
    options : psdlearn._solver.SolveOptions
        ``params`` reads ``rho``, ``init`` and ``omega`` (that of the BCD start).

    Returns
    -------
    SolverResult
        That of :func:`solve_admm`, with ``info["state"] = (U, Lambda, rho)``.
    """
    from psdlearn.npkl.bcd import relaxation_factor, solve_bcd
    from psdlearn.npkl.escalation import AdaptiveRound
    from psdlearn.npkl.problem import NPKLProblem

    params, state, V0, tol = options.params, options.state, E0, options.tol
    fresh = state is None  # a random start
    if isinstance(state, AdaptiveRound):
        fresh = state.start == "random"
        tol *= INTERMEDIATE_TOL_FACTOR if state.intermediate else 1.0
        state = state.warm if state.start in ("warm", "continue") else None
    U0, lam0, rho0 = (state if isinstance(state, tuple) and state[0].shape == E0.shape
                      else (None, None, float(params["rho"])))
    if params["init"] == "bcd" and fresh:
        square = NPKLProblem(problem.laplacian, problem.pairs, problem.signs, "square",
                             problem.gamma)
        with phase("the BCD start (init='bcd')"):
            start = solve_bcd(square, V0, max_iter=options.max_iter,
                              tol=max(options.tol, 1e-3), random_state=options.random_state,
                              omega=relaxation_factor(problem.laplacian, params["omega"]))
            if start.interrupted:  # a Ctrl-C in the start: no ADMM iterate to keep yet
                raise KeyboardInterrupt
        V0 = start.embedding
    res = solve_admm(problem, V0, U0, lam0, rho=rho0, max_iter=options.max_iter,
                     tol=tol, reorder=False, callback=options.callback)
    kept = ((res.U, res.multipliers, float(res.rho_history[-1]))
            if len(res.rho_history) else None)
    return replace(res, info={**res.info, "state": kept})


def kkt_residuals(problem, V, U, lam, rho):
    """Stationarity residuals of Proposition 1 at ``(V, U, Lambda)``.

    Returns ``(||A V - C||_F, ||B U - D||_F, ||V - U||_F)`` where row ``i`` of
    ``A V - C`` is ``A_i v_i - c_i`` (eq. 9, with ``A_i, c_i`` built from ``U``) and of
    ``B U - D`` is ``B_i u_i - d_i`` (eq. 10, built from ``V``). Plain NumPy, for tests and
    diagnostics.
    """
    Tp, Ti, Tt = problem.ordered_targets()
    L = problem.laplacian
    gamma = problem.gamma
    LU, LV = L @ U, L @ V
    gv = np.empty_like(V)
    gu = np.empty_like(U)
    for i in range(problem.n_samples):
        js, ts = Ti[Tp[i]:Tp[i + 1]], Tt[Tp[i]:Tp[i + 1]]
        P, Q = U[js], V[js]
        gv[i] = (rho * V[i] + gamma * P.T @ (P @ V[i])
                 - (gamma * P.T @ ts - LU[i] + rho * U[i] - lam[i]))
        gu[i] = (rho * U[i] + gamma * Q.T @ (Q @ U[i])
                 - (gamma * Q.T @ ts - LV[i] + rho * V[i] + lam[i]))
    return np.linalg.norm(gv), np.linalg.norm(gu), np.linalg.norm(V - U)
