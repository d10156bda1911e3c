"""Hu & Kwok 2013 Figs. 3-4: CPU time of KL_ADMM against n and against the number of constraints.

Data of Hu & Kwok 2013 section 4.2: 10-d two-class Gaussians N(+1, I) / N(-1, I), kNN graph
k = 5, pcp loss, gamma = 1. Fig. 3: 1000 constraints (500 must-link + 500 cannot-link
pairs, plus the n diagonal terms of the pcp loss), n from 1e3 up; the rank is held at the
value of the r(r+1)/2 <= 1000 rule (44), since counting the n diagonal pairs would make it
grow like sqrt(n) and the paper reports linear scaling. Fig. 4: n = 1000, 500 ... 10,000
pairs, rank by the rule on the ordered set (2 m + n), as in Table 1.

ADMM (random start, rho0 = 100, at most 500 iterations, tol 1e-5) beside, in the same run,
BCD on the square loss (the Hu & Kwok 2015 solver; a different loss, shown for its speed), and
SimpleNPKL on the pcp loss (Hu & Kwok 2013's "SimpleNPKL extended for the quadratic loss":
``B = 100 n``, footnote 3, same rank, at most 500 steps), once per cell; a SimpleNPKL fit
over :data:`~reproductions.experiments.bcd_scaling.SIMPLENPKL_BUDGET_S` CPU seconds is stopped
and reported as "n/a (time)", and the larger sizes are not run. CPU time of the fit (graph
excluded), median of the repetitions; the exponent is the least-squares slope in log-log.
"""

from __future__ import annotations

import statistics
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from psdlearn.constraints import PairwiseConstraints
from psdlearn.datasets import make_two_gaussians
from psdlearn.graph import knn_laplacian
from psdlearn.npkl.estimator import NPKL, auto_rank
from reproductions.experiments._plot import plot_lines
from reproductions.experiments.bcd_scaling import (
    NA_TIME,
    SIMPLENPKL_BUDGET_S,
    SIMPLENPKL_REPS,
    time_simplenpkl,
)
from reproductions.experiments.report import scaling_exponent, write_results

__all__ = ["run"]

SOLVERS = (("admm", "pcp"), ("bcd", "square"), ("simplenpkl", "pcp"))


_SIMPLENPKL_NOTE = (f"simplenpkl (pcp): B = 100 n, p = 2, same rank, at most 500 steps, tol "
                    f"1e-5; {SIMPLENPKL_REPS} run(s) per cell; a fit over "
                    f"{SIMPLENPKL_BUDGET_S:g} s CPU is stopped ({NA_TIME}) and larger sizes "
                    "are not run.")


def _time_fit(L, C, solver, loss, rank, reps):
    """Median CPU seconds and iterations of ``reps`` fits; None for a SimpleNPKL fit
    over its budget."""
    if solver == "simplenpkl":
        runs = [time_simplenpkl(L, C, loss, rank, B=100.0 * L.shape[0], max_iter=500)
                for _ in range(SIMPLENPKL_REPS)]
        if None in runs:
            return None
        return (statistics.median(r[0] for r in runs),
                int(statistics.median(r[1] for r in runs)))
    runs = []
    for rep in range(reps):
        model = NPKL(loss=loss, solver=solver, graph="precomputed", rank=rank, max_iter=500,
                     gamma=1.0, random_state=rep)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            c0 = time.process_time()
            model.fit(L, C)
            runs.append((time.process_time() - c0, model.n_iter_))
    return statistics.median(r[0] for r in runs), int(statistics.median(r[1] for r in runs))


def _time_row(row, x, L, C, rank, reps, times, n_done):
    """Fill ``row`` with every solver's CPU time and iterations at abscissa ``x``.

    A solver over its budget at a smaller size (fewer than ``n_done`` points in
    ``times``) is not run again; ``times[solver]`` gains ``(x, seconds)`` otherwise.
    """
    for solver, loss in SOLVERS:
        row[f"{solver} s"], row[f"{solver} iters"] = NA_TIME, "-"
        if len(times[solver][0]) < n_done:
            continue
        out = _time_fit(L, C, solver, loss, rank, reps)
        if out is None:
            continue
        times[solver][0].append(x)
        times[solver][1].append(out[0])
        row[f"{solver} s"], row[f"{solver} iters"] = out
    return row


def run(out_dir, quick=False, log=print):
    """Run both studies; write ``admm_scaling.*``, ``admm_constraints.*`` and figures."""
    reps = 1 if quick else 3
    ns = (1000, 2000, 5000) if quick else (1000, 2000, 5000, 10_000, 20_000, 50_000)
    rank = auto_rank(1000)
    rows, times = [], {s: ([], []) for s, _ in SOLVERS}
    for n in ns:
        X, y = make_two_gaussians(n, n_features=10, random_state=0)
        L = knn_laplacian(X, n_neighbors=5)
        C = PairwiseConstraints.from_labels(y, n_must=500, n_cannot=500, random_state=0)
        rows.append(_time_row({"n": n, "rank": rank}, n, L, C, rank, reps, times, len(rows)))
        log(f"n={n}: {rows[-1]}")
    exps = {s: scaling_exponent(*times[s]) for s, _ in SOLVERS if len(times[s][0]) > 1}
    notes = [f"10-d Gaussians, k = 5, 1000 pairs, rank {rank} fixed; {reps} run(s) per cell, "
             "median CPU time of the fit (graph excluded); at most 500 iterations, tol 1e-5.",
             _SIMPLENPKL_NOTE]
    notes += [f"time exponent in n ({s}): {e:.2f}" for s, e in exps.items()]
    notes.append("Hu & Kwok 2013 Fig. 3(b): KL_ADMM 'scales almost linearly in n' (no numbers).")
    columns = list(dict.fromkeys(c for r in rows for c in r))
    text = write_results(out_dir, "admm_scaling", columns, rows, notes,
                         title="Hu & Kwok 2013 Fig. 3: CPU time vs n (1000 constraints)",
                         extra={"exponents": exps})
    log(text)
    plot_lines(out_dir / "admm_scaling.png",
               {f"{s} ({loss})": times[s] for s, loss in SOLVERS if times[s][0]},
               xlabel="n", ylabel="CPU time of the fit (s)", loglog=True,
               title="Hu & Kwok 2013 Fig. 3: 1000 constraints")
    _constraints(out_dir, quick, log, reps)
    return rows


def _constraints(out_dir, quick, log, reps):
    """Fig. 4: n = 1000, number of constraint pairs varied (rank follows the rule)."""
    ms = (500, 1000, 2000) if quick else (500, 1000, 2000, 5000, 10_000)
    X, y = make_two_gaussians(1000, n_features=10, random_state=0)
    L = knn_laplacian(X, n_neighbors=5)
    rows, times = [], {s: ([], []) for s, _ in SOLVERS}
    for m in ms:
        C = PairwiseConstraints.from_labels(y, n_must=m // 2, n_cannot=m - m // 2,
                                            random_state=0)
        rank = auto_rank(2 * C.n_pairs + 1000)
        rows.append(_time_row({"pairs": C.n_pairs, "rank": rank}, C.n_pairs, L, C, rank, reps,
                              times, len(rows)))
        log(f"m={m}: {rows[-1]}")
    columns = list(dict.fromkeys(c for r in rows for c in r))
    text = write_results(out_dir, "admm_constraints", columns, rows,
                         [f"n = 1000, 10-d Gaussians, k = 5; rank by the rule on 2 m + n; "
                          f"{reps} run(s) per cell, median CPU time of the fit.",
                          _SIMPLENPKL_NOTE],
                         title="Hu & Kwok 2013 Fig. 4: CPU time vs number of constraints")
    log(text)
    plot_lines(out_dir / "admm_constraints.png",
               {f"{s} ({loss})": times[s] for s, loss in SOLVERS if times[s][0]},
               xlabel="constraint pairs", ylabel="CPU time of the fit (s)", loglog=True,
               title="Hu & Kwok 2013 Fig. 4: n = 1000")
