"""``gamma_0`` by LOBPCG with a block of one vector against two.

``gamma_0 = 1 / lambda_max(G, L)`` (:func:`psdlearn.npkl.gamma.critical_gamma`) is found by
LOBPCG in two runs: 20 iterations for the scale of ``lambda_max``, then a run to a residual
of ``1e-3 lambda_max``. Its cost is LOBPCG's dense algebra on ``n x 3 b`` blocks (``b``
columns), more than the products with ``L`` and ``G``. This script runs that rule with
``b = 2`` (the block before 2026-11-29) and ``b = 1`` (``critical_gamma`` since), each from
the same random start (the constrained rows scaled up as ``critical_gamma`` scales them),
and a reference run to a residual of ``1e-6 lambda_max``. ``critical_gamma`` itself is
timed too.

Data: 10-d two Gaussians (``psdlearn.datasets.make_two_gaussians``), the kNN Laplacian with
k = 10 (approximate search beyond 2e4 points), the pairs of 2,000 labelled points
(``PairwiseConstraints.from_labels``), square loss.

Reported per n: CPU seconds on one BLAS thread (median of ``--repeats``), the iterations of
both runs, and the relative difference of each ``gamma_0`` from the reference (every Ritz
value is at most ``lambda_max``, so each ``gamma_0`` is at least the true one).

Run: ``python benchmarks/bench_gamma0_block.py [--ns 1e4 1e5 1e6] [--repeats 3]
[--name NAME]``. Writes ``results/<name>.{md,json}`` (default ``gamma0_block``).
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np
import scipy.sparse as sp
from _common import gamma0_problem, load_note, median_cpu, write_results
from scipy.sparse.linalg import lobpcg
from threadpoolctl import threadpool_limits

from psdlearn.npkl.gamma import critical_gamma, loss_gradient_matrix

SCALE_ITERS = 20
RTOL = 1e-3
REFERENCE_RTOL = 1e-6


def _start(G, block):
    """A random block, the rows where ``G`` has entries scaled by ``max(1, sqrt(n / n_G) /
    2)``: the start of ``critical_gamma``."""
    n = G.shape[0]
    X = np.random.default_rng(0).standard_normal((n, block))
    rows = np.flatnonzero(np.diff(sp.csr_matrix(G).indptr) > 0)
    X[rows] *= max(1.0, 0.5 * np.sqrt(n / len(rows)))
    return X


def _two_runs(G, L, block, rtol):
    """The scale run, then the run to ``rtol * lambda``: (lambda, iterations)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        vals, X, h1 = lobpcg(G, _start(G, block), B=L, largest=True, tol=1e-300,
                             maxiter=SCALE_ITERS, retResidualNormsHistory=True)
        vals, X, h2 = lobpcg(G, X, B=L, largest=True, tol=rtol * float(np.max(vals)),
                             maxiter=1000, retResidualNormsHistory=True)
    return float(np.max(vals)), f"{len(h1)} + {len(h2)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", nargs="+", type=float, default=[1e4, 1e5, 1e6])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--name", default="gamma0_block", help="results file name")
    args = ap.parse_args()
    start_load = os.getloadavg()[0]
    rows = []
    for n in (int(v) for v in args.ns):
        C, L = gamma0_problem(n)
        G = loss_gradient_matrix(n, C.pairs, C.signs, "square")
        with threadpool_limits(1, "blas"):
            lam_ref, it_ref = _two_runs(G, L, 2, REFERENCE_RTOL)
            row = {"n": n, "pairs": C.n_pairs, "reference_iterations": it_ref}
            for block in (2, 1):
                t, (lam, its) = median_cpu(args.repeats, _two_runs, G, L, block, RTOL)
                row[f"cpu_s_block{block}"] = round(t, 3)
                row[f"iterations_block{block}"] = its
                row[f"gamma0_error_block{block}"] = float(lam_ref / lam - 1.0)
            t, g0 = median_cpu(args.repeats, critical_gamma, L, C.pairs, C.signs, "square")
            row["cpu_s_critical_gamma"] = round(t, 3)
            row["gamma0_error_critical_gamma"] = float(lam_ref * g0 - 1.0)
            row["speedup_block1"] = round(row["cpu_s_block2"] / row["cpu_s_block1"], 2)
        rows.append(row)
        print(row, flush=True)
    notes = [
        f"CPU seconds, one BLAS thread, median of {args.repeats}; blockB = LOBPCG with B "
        f"columns: a {SCALE_ITERS}-iteration scale run, then a run to a residual of "
        f"{RTOL:g} lambda_max (iterations of both); the reference: the block of 2 to "
        f"{REFERENCE_RTOL:g} lambda_max. gamma0_error = gamma_0 / reference - 1 (>= 0 up to "
        "the reference's own error: Ritz values are at most lambda_max).",
        load_note(start_load)]
    write_results(args.name, list(rows[0]), rows, notes)


if __name__ == "__main__":
    main()
