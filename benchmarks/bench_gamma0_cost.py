"""Cost of ``gamma_0`` (the scale of ``gamma="auto"``) as ``n`` grows.

``gamma_0 = 1 / lambda_max(G, L)`` is computed by LOBPCG (:func:`psdlearn.npkl.gamma.
critical_gamma`). Its stopping rule is a residual relative to ``lambda_max``; the baseline
is a single LOBPCG run with the absolute residual tolerance 1e-2 (scipy's ``tol``), the
rule before, from a random block of 2 vectors; ``critical_gamma`` starts from its own
block (one vector since 2026-11-29, ``bench_gamma0_block.py``).

Data: 10-d two Gaussians (``psdlearn.datasets.make_two_gaussians``), the kNN Laplacian with
k = 10 (approximate search beyond 2e4 points), the pairs of 2,000 labelled points
(``PairwiseConstraints.from_labels``: 0.6 n must-links and 0.6 n cannot-links among
them), square loss.
Reported per n: CPU seconds of each rule on one BLAS thread (median of 3), the baseline's
LOBPCG iterations, ``lambda_max`` of both and their relative difference.

Run: ``python benchmarks/bench_gamma0_cost.py [--ns 2e4 5e4 1e5 2e5 4e5] [--name NAME]``.
Writes ``results/<name>.{md,json}`` (default ``gamma0_cost``).
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np
from _common import gamma0_problem, load_note, median_cpu, scaling_exponent, write_results
from scipy.sparse.linalg import lobpcg
from threadpoolctl import threadpool_limits

from psdlearn.npkl.gamma import critical_gamma, loss_gradient_matrix

REPEATS = 3


def _baseline(L, pairs, signs):
    """One LOBPCG run to the absolute residual 1e-2: (lambda_max, iterations)."""
    G = loss_gradient_matrix(L.shape[0], pairs, signs, "square")
    X0 = np.random.default_rng(0).standard_normal((L.shape[0], 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        vals, _, hist = lobpcg(G, X0, B=L, largest=True, tol=1e-2, maxiter=300,
                               retResidualNormsHistory=True)
    return float(np.max(vals)), len(hist)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", nargs="+", type=float, default=[2e4, 5e4, 1e5, 2e5, 4e5])
    ap.add_argument("--name", default="gamma0_cost", help="results file name")
    args = ap.parse_args()
    start_load = os.getloadavg()[0]
    rows = []
    for n in (int(v) for v in args.ns):
        C, L = gamma0_problem(n)
        with threadpool_limits(1, "blas"):
            t_new, g0 = median_cpu(REPEATS, critical_gamma, L, C.pairs, C.signs, "square")
            t_old, (lam_old, iters) = median_cpu(REPEATS, _baseline, L, C.pairs, C.signs)
        lam_new = 1.0 / g0
        rows.append({"n": n, "pairs": C.n_pairs, "cpu_s_absolute_tol": round(t_old, 3),
                     "iterations_absolute_tol": iters, "cpu_s_relative_tol": round(t_new, 3),
                     "speedup": round(t_old / t_new, 2), "lambda_absolute_tol": lam_old,
                     "lambda_relative_tol": lam_new,
                     "relative_difference": float(abs(lam_new / lam_old - 1.0))})
        print(rows[-1], flush=True)
    ns = [r["n"] for r in rows]
    notes = [
        "CPU seconds, one BLAS thread, median of 3; absolute tol = one LOBPCG run stopped at "
        "a residual of 1e-2 (the rule before); relative tol = critical_gamma (a 20-iteration "
        "run for the scale, then a residual of 1e-3 lambda_max; 1e-2 before 2026-11-29).",
        load_note(start_load)]
    if len(rows) > 1:
        notes.insert(1, "Scaling exponent of the CPU time over n: absolute tol "
                     f"{scaling_exponent(ns, [r['cpu_s_absolute_tol'] for r in rows]):.2f}, "
                     "relative tol "
                     f"{scaling_exponent(ns, [r['cpu_s_relative_tol'] for r in rows]):.2f}.")
    write_results(args.name, list(rows[0]), rows, notes)


if __name__ == "__main__":
    main()
