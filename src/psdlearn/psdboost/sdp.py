r"""Reference solver: PSDBoost's problem (3) as an SDP in cvxpy (extra ``sdp``).

.. math::

    \max_{X \succeq 0,\ \rho,\ \xi \ge 0} \; \rho - C \sum_r \xi_r
    \quad \text{s.t.} \quad \operatorname{tr} X = 1, \quad
    \langle A_r, X \rangle \ge \rho - \xi_r \;\; (w_r \ge 0),

with ``<A_r, X> = vec(A_r)^T vec(X)`` through one dense ``t x D^2`` matrix (fine for the
sizes where an interior-point SDP is practical at all). The multipliers ``w`` of the margin
constraints solve (D1) over all trace-one rank-one columns, i.e.
``min_w lambda_max(sum_r w_r A_r)`` s.t. ``sum w = 1``, ``0 <= w <= C``. One ``D x D``
cone: fine for ``D`` up to about 64 with a thousand triplets; this is a check of the
other solvers, not a solver for data sets.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from psdlearn._linalg import psd_factor
from psdlearn._solver import SolverResult

__all__ = ["solve_sdp"]


def solve_sdp(X, triplets, C, solver=None, **solver_options):
    """Solve problem (3) of Shen, Welsh & Wang (2008) with cvxpy.

    Parameters
    ----------
    X : ndarray of shape (n_samples, D)
    triplets : ndarray of shape (t, 3)
        Rows ``(i, j, k)`` meaning ``d(i, j) < d(i, k)``.
    C : float
        Slack price, ``C t >= 1``.
    solver : str, optional
        cvxpy solver name; Clarabel when installed, else SCS. When Clarabel stops at
        ``optimal_inaccurate`` (it does on some ill-scaled instances), the problem is
        solved again with SCS at ``eps = 1e-9``.
    **solver_options
        Passed to ``problem.solve``.

    Returns
    -------
    SolverResult
        ``embedding`` (D, rank): the PSD factor of ``metric``; ``objective_history``: the
        optimum ``rho - C sum xi`` alone (``objective``); ``time_history``: the solve
        seconds (cvxpy's compilation excluded); ``n_iter``: the conic solver's
        iterations; ``converged`` when cvxpy reports ``"optimal"``. ``info`` (read as
        attributes): ``metric`` (D, D), ``rho``, ``slacks`` (t,), ``dual_weights`` (t,)
        (the multipliers ``w`` of the margin constraints), ``status`` (cvxpy's) and
        ``solve_time``.

    References
    ----------
    Shen, C., Welsh, A. & Wang, L. (2008). PSDBoost: matrix-generation linear programming
    for positive semidefinite matrices learning. NIPS (problem (3)).
    """
    import cvxpy as cp

    X = np.asarray(X, dtype=np.float64)
    triplets = np.asarray(triplets, dtype=np.int64)
    Dj = X[triplets[:, 0]] - X[triplets[:, 1]]
    Dk = X[triplets[:, 0]] - X[triplets[:, 2]]
    D, t = X.shape[1], len(triplets)
    M = cp.Variable((D, D), PSD=True)
    rho = cp.Variable()
    xi = cp.Variable(t, nonneg=True)
    # <A_r, M> = vec(A_r) . vec(M): one dense (t, D^2) constant, which cvxpy compiles far
    # faster than row-wise quadratic forms.
    A = (Dk[:, :, None] * Dk[:, None, :] - Dj[:, :, None] * Dj[:, None, :]).reshape(t, D * D)
    margins = A @ cp.vec(M, order="C")
    margin_constraint = margins >= rho - xi
    problem = cp.Problem(cp.Maximize(rho - C * cp.sum(xi)),
                         [cp.trace(M) == 1, margin_constraint])
    if solver is None:
        solver = "CLARABEL" if "CLARABEL" in cp.installed_solvers() else "SCS"
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "inaccurate": handled just below
        problem.solve(solver=solver, **solver_options)
    if problem.status == "optimal_inaccurate" and solver == "CLARABEL" and not solver_options:
        problem.solve(solver="SCS", eps=1e-9, max_iters=100_000)
    elapsed = time.perf_counter() - start
    metric = (M.value + M.value.T) / 2.0
    solve_time = float(problem.solver_stats.solve_time or elapsed)
    return SolverResult(
        embedding=psd_factor(metric), objective_history=[float(problem.value)],
        time_history=[solve_time], n_iter=int(problem.solver_stats.num_iters or 0),
        converged=problem.status == "optimal",
        info={"metric": metric, "rho": float(rho.value), "slacks": np.asarray(xi.value),
              "dual_weights": np.asarray(margin_constraint.dual_value),
              "status": problem.status, "solve_time": solve_time})
