"""NPKL solvers side by side: SimpleNPKL time vs n beside BCD (and ADMM when present).

Run: ``python benchmarks/bench_npkl_solvers.py [--max-n N] [--budget S] [--losses ...]``.
Writes ``benchmarks/results/npkl_solvers.{md,json}`` after every cell.

Data as in ``bench_npkl_bcd.py``: 10-d Gaussians N(+1, I) / N(-1, I), kNN graph k = 10,
500 must-link + 500 cannot-link pairs (1000 constraints, rank 44 by the r(r+1)/2 <= m
rule), gamma = 1, at most 800 iterations, tol = 1e-5 (seed 000 section IV-D protocol, with
Gaussians standing in for a7a), n = 1e3, 1e4, 1e5. Solvers: ``bcd`` (hinge, squared hinge,
square, linear), ``simplenpkl`` (every loss, ``B = 100 n``: seed 000 IV-A.2 for the adult
data its section IV-D subsamples, seed 001 footnote 3) and ``admm`` (pcp, square; only
when ``"admm"`` is in ``psdlearn.npkl.solvers.NPKL_SOLVERS``).

Sized for about 15 minutes on a quiet 2-core machine: SimpleNPKL fits are capped at
``--budget`` seconds (at most 5 losses x 3 sizes x 60 s), ADMM at n = 1e5 is the longest
of the other cells. Every cell is one fit timed by wall clock (graph excluded, numba compiled
by a warm-up).
SimpleNPKL is run through its solver function with a callback that stops it after
``--budget`` seconds; a cell that stops there is reported as ``n/a (time)`` with its
seconds per iteration, as the papers' tables do. The objective column is seed 000's (10)
at the returned kernel, the number every solver reports.
"""

from __future__ import annotations

import argparse
import time
import warnings

from _common import write_results

import psdlearn as pl
from psdlearn.graph import knn_laplacian
from psdlearn.npkl import estimator
from psdlearn.npkl.problem import LOSSES, NPKLProblem
from psdlearn.npkl.simplenpkl import solve_simplenpkl
from psdlearn.npkl.solvers import NPKL_SOLVERS

SOLVER_LOSSES = {name: NPKL_SOLVERS[name].losses for name in ("bcd", "simplenpkl", "admm")}
COLUMNS = ["n", "m", "rank", "loss", "solver", "fit_s", "iters", "s_per_iter", "objective",
           "status"]
MAX_ITER = 800


def fit_estimator(L, C, loss, solver):
    """Fit ``NPKL(solver=...)``; return seconds, iterations, objective, status."""
    model = pl.NPKL(loss=loss, solver=solver, graph="precomputed", max_iter=MAX_ITER,
                    tol=1e-5, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        model.fit(L, C)
        seconds = time.perf_counter() - t0
    status = "max_iter" if any("max_iter" in str(w.message) for w in caught) else "converged"
    return seconds, model.n_iter_, model.objective_history_[-1], status


def fit_simplenpkl(L, C, loss, rank, budget):
    """SimpleNPKL with a wall-clock budget; same numbers as :func:`fit_estimator`."""
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), loss, 1.0)
    t0 = time.perf_counter()
    res = solve_simplenpkl(problem, B=100.0 * L.shape[0], rank=rank,
                           max_iter=MAX_ITER, tol=1e-5, random_state=0,
                           callback=lambda it, E, obj: time.perf_counter() - t0 > budget)
    seconds = time.perf_counter() - t0
    if res.converged:
        status = "converged"
    elif res.n_iter >= MAX_ITER:
        status = "max_iter"
    else:
        status = f"n/a (time > {budget:g} s)"
    return seconds, res.n_iter, res.objective_history[-1], status


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-n", type=int, default=100_000)
    ap.add_argument("--budget", type=float, default=60.0,
                    help="seconds after which a SimpleNPKL fit is stopped")
    ap.add_argument("--losses", nargs="+", default=list(LOSSES))
    args = ap.parse_args()
    solvers = ["bcd", "simplenpkl"] + (["admm"] if "admm" in NPKL_SOLVERS else [])
    X, y = pl.datasets.make_two_gaussians(200, random_state=0)
    warm_C = pl.PairwiseConstraints.from_labels(y, random_state=0)
    for solver in solvers:  # compile the numba kernels outside the timings
        for loss in SOLVER_LOSSES[solver]:
            fit_estimator(knn_laplacian(X), warm_C, loss, solver)
    rows = []
    notes = [f"solvers: {', '.join(solvers)}; at most {MAX_ITER} iterations, tol 1e-5; "
             f"SimpleNPKL stopped after {args.budget:g} s (n/a (time)).",
             "SimpleNPKL here keeps K = E E^T in low rank (top-44 eigenpairs by Lanczos, BLAS "
             "on one thread); the papers' implementation stores the dense n x n K (8 n^2 "
             "bytes, 80 GB at n = 1e5).",
             "Measured while other jobs shared the machine: timings are indicative."]
    for n in (1_000, 10_000, 100_000):
        if n > args.max_n:
            break
        X, y = pl.datasets.make_two_gaussians(n, n_features=10, random_state=0)
        L = knn_laplacian(X, n_neighbors=10)
        C = pl.PairwiseConstraints.from_labels(y, n_must=500, n_cannot=500, random_state=0)
        rank = estimator.auto_rank(C.n_pairs)
        for loss in args.losses:
            for solver in solvers:
                if loss not in SOLVER_LOSSES[solver]:
                    continue
                if solver == "simplenpkl":
                    out = fit_simplenpkl(L, C, loss, rank, args.budget)
                else:
                    out = fit_estimator(L, C, loss, solver)
                seconds, iters, objective, status = out
                rows.append({"n": n, "m": C.n_pairs, "rank": rank, "loss": loss,
                             "solver": solver, "fit_s": seconds, "iters": iters,
                             "s_per_iter": seconds / max(iters, 1), "objective": objective,
                             "status": status})
                print(rows[-1], flush=True)
                write_results("npkl_solvers", COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
