"""The solvers of :class:`psdlearn.PSDBoost`, registered by name.

Each entry of :data:`SOLVERS` runs one solver of problem (3) from the estimator's
parameters and returns a :class:`psdlearn._solver.SolverResult` whose ``info`` holds the
fitted attributes named in its ``SolverSpec.attributes`` (without the trailing
underscore), certified so that ``objective_ <= optimum <= upper_bound_`` whatever the
solver (:mod:`._bounds`). The estimator validates its parameters, builds the
:class:`TripletProblem`, calls ``spec.solve(problem, None, options)`` and copies the result.
Adding a solver: a module with its ``solve_*`` function, an entry function here and one
``SOLVERS.register(SolverSpec(...))``.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from psdlearn._progress import progress_bar
from psdlearn._solver import SolverRegistry, SolverSpec
from psdlearn.psdboost._bounds import primal_value, project_capped_simplex
from psdlearn.psdboost._pricing import TripletOperator, eigen_method
from psdlearn.psdboost.column_generation import solve_column_generation
from psdlearn.psdboost.ipm import solve_ipm
from psdlearn.psdboost.subspace import solve_subspace

__all__ = ["SOLVERS", "TripletProblem"]

#: The fitted attributes every solver sets (``info`` keys), besides those of the result's
#: fields (``embedding``, histories, ``n_iter``, ``converged``).
COMMON_ATTRIBUTES = ("metric", "rho", "slacks", "dual_weights", "upper_bound",
                     "upper_bound_history", "n_matvec")


#: The interior-point certificate forms ``H`` and calls dense ``eigh`` up to this ``D``.
_CERTIFICATE_DENSE_MAX_FEATURES = 1024


@dataclass(frozen=True)
class TripletProblem:
    """Problem (3) as the estimator hands it to a solver.

    Attributes
    ----------
    X : ndarray of shape (n_samples, D)
    triplets : ndarray of shape (t, 3), int64
        Valid rows ``(i, j, k)``.
    C : float
        Slack price, ``C t >= 1``.
    operator : TripletOperator
        The matrices ``A_r`` of the triplets, matrix-free.
    eps : float
        Absolute stopping threshold ``tol * s`` of the certified gap.
    """

    X: np.ndarray
    triplets: np.ndarray
    C: float
    operator: TripletOperator
    eps: float


@contextmanager
def _progress(options, desc, unit, postfix):
    """A progress bar over the solver's iterations (stderr, ``verbose >= 1``) and the
    callback that advances it, showing ``postfix(*values)`` of the solver's callback."""
    with progress_bar(options.verbose, total=options.max_iter, desc=desc, unit=unit) as bar:
        def report(iteration, *values):
            bar.update(1)
            bar.set_postfix(refresh=False, **postfix(*values))

        yield report


def _column_generation(problem, start, options):
    """Algorithm 1 with the estimator's ``n_columns``, ``smoothing`` and ``max_bases``."""
    p = options.params
    n_columns = min(p["n_columns"], problem.operator.n_features)
    if p["max_bases"] is not None and p["max_bases"] <= n_columns:
        raise ValueError(f"max_bases={p['max_bases']} must exceed n_columns={n_columns}: "
                         "an aggregated column and the new bases must fit under the cap.")
    with _progress(options, "PSDBoost", "solve", lambda pi, upper, n_bases: {
            "master": f"{pi:.6g}", "gap": f"{upper - pi:.3g}", "bases": n_bases}) as report:
        return solve_column_generation(
            problem.X, problem.triplets, problem.C, tol=options.tol,
            max_iter=options.max_iter, n_columns=n_columns, smoothing=p["smoothing"],
            max_bases=p["max_bases"], eigen_solver=p["eigen_solver"],
            max_time=p["max_time"], random_state=options.random_state, callback=report)


def _interior_point(problem, start, options):
    """``solve_ipm`` at a tenth of ``tol`` (so that the certified gap meets ``eps``), then
    both bounds recomputed from its iterate (:mod:`._bounds`): the value of its metric and
    ``lambda_max(H(w))`` at its ``w`` projected onto the capped simplex."""
    op, C = problem.operator, problem.C
    with _progress(options, "PSDBoost interior point", "step", lambda pi, obj, res: {
            "dual": f"{pi:.6g}", "gap": f"{pi - obj:.3g}", "residual": f"{res:.2g}"}) as report:
        res = solve_ipm(problem.X, problem.triplets, C, tol=options.tol / 10.0,
                        max_iter=options.max_iter, max_triplets=len(problem.triplets),
                        max_time=options.params["max_time"], callback=report)
    F = res.embedding
    objective, rho, xi = primal_value(op.margins(F.T), C)
    w = project_capped_simplex(res.dual_weights, C)
    # At the optimum lambda_max(H(w)) has the multiplicity rank(X*): ARPACK's single
    # Ritz pair then needs up to 10^5 products (4.5 s at D = 128, t = 1000 where the
    # solve takes 1.2 s), so the certificate forms H unless D is large, and otherwise
    # asks for a block of pairs.
    eigen_solver = options.params["eigen_solver"]
    D = op.n_features
    method = ("dense" if eigen_solver == "auto" and D <= _CERTIFICATE_DENSE_MAX_FEATURES
              else eigen_method(eigen_solver, D))
    vals, _, n_matvec = op.top_eigenpairs(w, min(16, D), method,
                                          v0=options.random_state.standard_normal(len(F)))
    upper = float(vals[0])
    return replace(
        res, objective_history=[h[2] for h in res.history],
        time_history=[h[0] for h in res.history],
        converged=bool(upper - objective <= problem.eps),
        info={"metric": res.metric, "rho": rho, "slacks": xi, "dual_weights": w,
              "upper_bound": upper, "upper_bound_history": [h[1] for h in res.history],
              "n_matvec": n_matvec, "status": res.status})


def _subspace(problem, start, options):
    """``solve_subspace`` at the estimator's ``tol``; its bounds are certified already."""
    return _run_subspace(problem, options, working_set=False)


def _working_set(problem, start, options):
    """``solve_subspace`` with its working set of triplets, at the estimator's ``tol``."""
    return _run_subspace(problem, options, working_set=True)


def _run_subspace(problem, options, working_set):
    desc = "PSDBoost working set" if working_set else "PSDBoost subspace"
    with _progress(options, desc, "master", lambda lower, upper, k: {
            "lower": f"{lower:.6g}", "gap": f"{upper - lower:.3g}", "k": k}) as report:
        res = solve_subspace(problem.X, problem.triplets, problem.C, tol=options.tol,
                             max_iter=options.max_iter, max_time=options.params["max_time"],
                             eigen_solver=options.params["eigen_solver"],
                             working_set=working_set, random_state=options.random_state,
                             callback=report)
    objective = res.rho - problem.C * res.slacks.sum()
    info = {**res.info, "subspace_dim_history": res.dim_history}
    if working_set:
        info["working_set_history"] = res.working_set_history
        info["bound_history"] = res.bound_history
    return replace(res, converged=bool(res.upper_bound - objective <= problem.eps), info=info)


#: PSDBoost's solvers; its ``solver`` parameter takes these names or ``"auto"``.
SOLVERS = SolverRegistry("PSDBoost")
SOLVERS.register(SolverSpec(
    name="column-generation", solve=_column_generation, rank=False, unit="master solves",
    stop_rule="lambda_max(H) <= pi + eps", hint="increase max_iter or max_time, or tol",
    attributes=(*COMMON_ATTRIBUTES, "theta", "bases", "best_dual_weights",
                "lambda_max_history", "n_master_rows", "n_bases", "n_aggregations",
                "n_mispricings")))
SOLVERS.register(SolverSpec(
    name="interior-point", solve=_interior_point, rank=False, unit="Newton steps",
    stop_rule="a relative duality gap and primal residual below tol / 10",
    hint="increase max_iter or max_time, or tol", attributes=COMMON_ATTRIBUTES))
SOLVERS.register(SolverSpec(
    name="subspace", solve=_subspace, rank=False, unit="master solves",
    stop_rule="upper_bound - objective <= eps", hint="increase max_iter or max_time, or tol",
    attributes=(*COMMON_ATTRIBUTES, "subspace_dim_history")))
SOLVERS.register(SolverSpec(
    name="working-set", solve=_working_set, rank=False, unit="master solves",
    stop_rule="upper_bound - objective <= eps", hint="increase max_iter or max_time, or tol",
    attributes=(*COMMON_ATTRIBUTES, "subspace_dim_history", "working_set_history",
                "bound_history")))
