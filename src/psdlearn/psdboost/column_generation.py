r"""Problem (3) of Shen, Welsh & Wang (2008) by column generation (their Algorithm 1).

Trace-one PSD matrices are the convex hull of the rank-one ``u u^T`` with ``||u|| = 1``
(their Theorem 3.4), so ``X = sum_i theta_i u_i u_i^T`` turns (3) into an LP over ``theta``
with infinitely many columns. The restricted master LP (P1)/(D1) over the bases generated
so far (HiGHS, :mod:`._master`) gives dual weights ``w`` and value ``pi``; the most
violated dual constraint is the top eigenpair of ``H = sum_r w_r A_r`` (problem B1,
:mod:`._pricing`); stop when ``lambda_max(H) <= pi + eps``:

.. math::

    \pi \;\le\; \text{optimum of (3)} \;\le\; \lambda_{\max}(H(w)),

since ``pi`` is the value of a feasible point of (3) (the restricted primal) and every
``w`` of the capped simplex is feasible for the full dual, whose value at ``w`` is
``lambda_max(H(w))``.

Refinements, each a parameter of :func:`solve_column_generation`: several columns per
master solve (multiple pricing), dual smoothing against the tailing-off (Wentges 1997) and
a cap on the number of columns by aggregation (bundle methods).

References
----------
Shen, C., Welsh, A. & Wang, L. (2008). PSDBoost: matrix-generation linear programming
for positive semidefinite matrices learning. NIPS.

Wentges, P. (1997). Weighted Dantzig-Wolfe decomposition for linear mixed-integer
programming. International Transactions in Operational Research 4(2).
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.utils import check_random_state

from psdlearn._linalg import psd_factor
from psdlearn._solver import SolverResult
from psdlearn.psdboost._bounds import stop_status
from psdlearn.psdboost._master import RestrictedMaster
from psdlearn.psdboost._pricing import TripletOperator, eigen_method

__all__ = ["MAX_MISPRICINGS", "solve_column_generation"]

#: Pricing attempts per master solve before the top eigenvector is added regardless (the
#: smoothed point's gap shrinks by the factor ``smoothing`` at each mispricing).
MAX_MISPRICINGS = 50


def solve_column_generation(X, triplets, C, *, tol=1e-5, max_iter=1000, n_columns=5,
                            smoothing=0.8, max_bases=None, eigen_solver="auto",
                            max_time=None, random_state=None, callback=None):
    """Solve problem (3) by Algorithm 1 of Shen et al. (2008), with its refinements.

    The inputs are trusted (:class:`psdlearn.PSDBoost` validates them).

    Parameters
    ----------
    X, triplets, C : ndarray (n_samples, D), ndarray (t, 3), float
        The data, the valid triplet rows ``(i, j, k)`` (``d(i, j) < d(i, k)``) and the
        slack price, ``C t >= 1``: as in :func:`psdlearn.psdboost.ipm.solve_ipm`.
    tol : float, default=1e-5
        Stop when ``lambda_max(H) <= pi + eps`` with ``eps = tol * s``, ``s`` the margin
        scale (:func:`psdlearn.psdboost._bounds.margin_scale`).
    max_iter : int, default=1000
        Master LP solves.
    n_columns : int, default=5
        Bases added per master solve: the top ``n_columns`` eigenvectors of ``H`` at the
        pricing point whose reduced cost at the master's ``w`` is positive
        (``u^T H(w) u > pi``); ``1`` is Algorithm 1.
    smoothing : float in [0, 1), default=0.8
        Pricing at ``alpha c + (1 - alpha) w``, ``c`` the priced point with the smallest
        ``lambda_max(H)`` after a master solve (the stability center); if none of its
        eigenvectors improves the master (a mispricing) pricing is repeated, at most
        ``MAX_MISPRICINGS`` times. ``0`` is Algorithm 1.
    max_bases : int or None, default=None
        Cap on the master's columns, above ``min(n_columns, D)``: columns at
        ``theta = 0`` are dropped, then the current ``X`` replaces the rest by its leading
        eigenvectors and one trace-one column for its tail. None: no cap.
    eigen_solver : {"auto", "dense", "lanczos"}, default="auto"
        Pricing by dense ``eigh`` or by Lanczos on the matrix-free ``H``
        (:meth:`._pricing.TripletOperator.top_eigenpairs`); ``"auto"`` is dense for
        ``D <= 64``.
    max_time : float or None, default=None
        Seconds after which the last master solve is returned (``status="max_time"``),
        checked after each pricing.
    random_state : int, RandomState instance or None
        Seeds the first Lanczos start vector.
    callback : callable or None
        ``callback(iteration, pi, upper_bound, n_bases)`` after each master solve and its
        pricing; returning ``True`` stops the solver (``interrupted=True``, the last
        master solve kept).

    Returns
    -------
    SolverResult
        ``embedding`` (D, rank): ``F`` with ``metric = F F^T``. ``objective_history``:
        the master value ``pi`` of each solve (the paper's Opt(D1); never decreases),
        ``time_history`` aligned with it, ``n_iter`` master solves; ``converged`` when
        the stopping test held. ``info`` (read as attributes): ``metric`` (D, D) ``sum_i
        theta_i Z_i``, trace one; ``rho``, ``slacks`` (t,) and ``dual_weights`` (t,) of
        the last master solve; ``upper_bound`` and ``best_dual_weights``, the smallest
        ``lambda_max(H(w))`` and its ``w``; ``upper_bound_history`` (per solve) and
        ``lambda_max_history`` (per pricing, the uniform start first); ``theta`` and
        ``bases`` (factors ``F_i`` of shape (r_i, D), ``Z_i = F_i^T F_i``);
        ``n_master_rows``, ``n_bases``, ``n_aggregations``, ``n_mispricings``,
        ``n_matvec``; ``eps``; ``status`` (``"optimal"``, ``"max_iter"``,
        ``"max_time"`` or ``"interrupted"``).

    Raises
    ------
    KeyboardInterrupt
        If it comes before the first master solve completes; a later one returns the
        last complete master solve with ``interrupted=True``.
    """
    start = time.perf_counter()
    deadline = None if max_time is None else start + max_time
    triplets = np.asarray(triplets, dtype=np.int64)
    op = TripletOperator(np.asarray(X, dtype=np.float64), triplets)
    t, D = op.n_triplets, op.n_features
    eps = tol * op.margin_scale()
    method = eigen_method(eigen_solver, D)
    rng = check_random_state(random_state)
    k = min(n_columns, D)
    master = RestrictedMaster(t, C)
    # The uniform start weights bound the optimum but do not become the stability
    # center: the center's support (triplets with w_r > 0) decides the cost of H(w).
    best_w = np.full(t, 1.0 / t)
    vals, vecs, n_matvec = op.top_eigenpairs(best_w, 1, method, v0=rng.standard_normal(D))
    best, lambdas = vals[0], [vals[0]]
    center, center_value = None, np.inf
    new, coef = vecs, op.column_coefficients(vecs)
    bases, history, times, upper_history = [], [], [], []
    theta = np.empty(0)
    n_aggregations = n_mispricings = n_bases = 0
    # The last complete master solve: what an interrupt leaves.
    solved = None
    status = "max_iter"
    try:
        for _ in range(max_iter):
            if max_bases is not None and len(bases) + new.shape[1] > max_bases:
                bases = _aggregate(master, op, bases, theta, new.shape[1], max_bases)
                n_aggregations += 1
            master.add_columns(coef)
            n_bases += coef.shape[1]
            bases = [*bases, *(u[None, :] for u in new.T)]
            pi, w, theta, rho, xi, _ = master.solve()
            solved = (bases, theta, w, rho, xi, n_bases, len(master.rows))
            history.append(pi)
            for _ in range(MAX_MISPRICINGS):
                # Wentges smoothing: price at a point between the stability center and
                # the master's duals; columns must still improve the master at ``w``.
                priced = w if center is None else smoothing * center + (1.0 - smoothing) * w
                vals, vecs, count = op.top_eigenpairs(priced, k, method, v0=vecs[:, 0])
                n_matvec += count
                lambdas.append(vals[0])
                if vals[0] < center_value:
                    center, center_value = priced, vals[0]
                if vals[0] < best:
                    best, best_w = vals[0], priced
                if best <= pi + eps:
                    status = "optimal"
                    break
                coef = op.column_coefficients(vecs)
                improving = w @ coef > pi
                if improving.any():
                    new, coef = vecs[:, improving], coef[:, improving]
                    break
                n_mispricings += 1
            else:
                new, coef = vecs[:, :1], coef[:, :1]
            times.append(time.perf_counter() - start)
            upper_history.append(best)
            stopped = callback is not None and callback(len(history), pi, best, len(bases))
            end = stop_status(status == "optimal", stopped, deadline)
            if end is not None:
                status = end
                break
    except KeyboardInterrupt:
        if solved is None:
            raise
        status = "interrupted"
        # The pricing of the last solve may not have finished: stamp it now.
        times = times[:len(history)]
        times += [time.perf_counter() - start] * (len(history) - len(times))
        upper_history = upper_history[:len(history)]
        upper_history += [best] * (len(history) - len(upper_history))
    bases, theta, w, rho, xi, n_bases, n_rows = solved
    metric, F = _solution(bases, theta, D)
    return SolverResult(
        embedding=F, objective_history=history, time_history=times, n_iter=len(history),
        converged=status == "optimal", interrupted=status == "interrupted",
        info={"metric": metric, "rho": rho, "slacks": xi, "dual_weights": w,
              "upper_bound": float(best), "best_dual_weights": best_w,
              "upper_bound_history": upper_history, "lambda_max_history": lambdas,
              "theta": theta, "bases": bases, "n_master_rows": n_rows, "n_bases": n_bases,
              "n_aggregations": n_aggregations, "n_mispricings": n_mispricings,
              "n_matvec": n_matvec, "eps": eps, "status": status})


def _aggregate(master, op, bases, theta, n_new, max_bases):
    """Bundle aggregation: compress the master's columns to make room for ``n_new``.

    Columns with ``theta = 0`` and a non-binding dual constraint are dropped. If the
    rest still do not fit under ``max_bases``, they are replaced by the
    eigen-decomposition of the current ``X = sum theta_i Z_i``: its leading eigenvectors
    ``v v^T`` as rank-one columns and the remaining tail as one aggregated trace-one
    column. ``X`` stays a feasible combination, so the master value cannot drop. Returns
    the new list of column factors.
    """
    unused = master.slack_columns()
    if len(unused):
        master.delete_columns(unused)
        keep = np.ones(len(bases), dtype=bool)
        keep[unused] = False
        bases = [b for b, k in zip(bases, keep, strict=True) if k]
        theta = theta[keep]
    if len(bases) + n_new <= max_bases:
        return bases
    F = np.vstack([np.sqrt(th) * b for th, b in zip(theta, bases, strict=True) if th > 0])
    _, s, Vt = np.linalg.svd(F, full_matrices=False)
    s, Vt = s[s > s[0] * 1e-12], Vt[s > s[0] * 1e-12]
    n_keep = max_bases - n_new - 1
    columns = list(Vt[:n_keep, None, :])
    if len(s) > n_keep:
        tail = s[n_keep:, None] * Vt[n_keep:]
        columns.append(tail / np.linalg.norm(tail))
    master.delete_columns(np.arange(len(bases)))
    master.add_columns(np.column_stack([op.margins(c) for c in columns]))
    return columns


def _solution(bases, theta, D):
    """``X = sum_i theta_i Z_i`` scaled to trace one, and a factor ``F`` (D, rank) of it:
    the stacked ``sqrt(theta_i) F_i``, or the eigen-factor when they exceed ``D`` rows."""
    rows = [np.sqrt(th) * b for th, b in zip(theta, bases, strict=True) if th > 0]
    L = np.vstack(rows)
    metric = L.T @ L
    metric = (metric + metric.T) / 2.0
    trace = float(np.trace(metric))
    metric /= trace
    L /= np.sqrt(trace)
    if L.shape[0] > D:
        return metric, psd_factor(metric, rtol=D * np.finfo(float).eps)
    return metric, L.T
