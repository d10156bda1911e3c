"""PSDBoost's solvers (``solver=``) against each other and against cvxpy/Clarabel.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_psdboost_solvers.py [--quick]``. Writes
``benchmarks/results/psdboost_solvers.{md,json}``.

Data: MNIST pixels / 255 (``D = 784``), or their leading 64 principal components
(``D = 64``, fitted on the sample). Triplets from labels: ``"paper"`` = Shen et al. 2008
section 6 (nearest same-class and nearest other-class neighbour of each of ``n = t``
points); ``"random"`` = for ``t`` random points, a random same-class and a random
other-class point among all 70000 (the paper's triplets stop at ``t = 70000``, one per
point). ``C = 1 / (0.1 t)`` (the former default, ``LPBOOST_NU``; ``--nu`` changes it).

- default vs Clarabel: ``D = 64``, ``t = 1000``: ``PSDBoost()`` (median of 3) and
  cvxpy/Clarabel's SDP (one solve; the compilation excluded).
- vs t at ``D = 784``: every solver at ``t = 10^3, 3 x 10^3, 10^4, 3 x 10^4, 10^5``
  (interior point up to ``3 x 10^3``: its Newton matrix needs ``48 t^2`` bytes; random
  triplets at ``10^5``), each under a wall-clock budget ``max_time`` (``--budget``);
  ``--large``: the default ``PSDBoost()`` solver at ``t = 10^5`` (random triplets) with
  ``max_time = 600``.
- ``--target``: the default ``PSDBoost()`` (``solver="auto"``, ``C="auto"``, i.e.
  ``nu = 0.3``; then ``nu = 0.1``) at ``D = 784``, ``t = 10^4`` with ``max_time = 120``
  (the target: a certified relative gap ``<= 1e-3`` in 120 s).
- ``--crossover``: the interior-point and working-set methods at ``D = 64, 256, 784`` and
  ``t = 500, 1000, 2000``, the measurement behind ``solver="auto"``.

``--solvers``, ``--sizes``, ``--dims``, ``--nu`` and ``--name`` run a study in pieces (one
heavy job per row) into a results file of its own.

Columns: ``wall_s`` / ``cpu_s`` = wall-clock / process CPU seconds of the fit (triplet
search excluded; one BLAS thread, so CPU seconds are the work done, which other jobs on
a shared machine inflate much less than wall seconds); ``gap`` = certified relative gap
``(upper_bound_ - objective_) / |objective_|``; ``cpu_to_1e-3_s`` = CPU seconds until the
certified relative gap first fell to ``1e-3`` (read from the fit's histories, scaled from
wall to CPU by the run's ratio); ``rss_gb`` = peak resident memory of the process so far
(it includes MNIST, 0.44 GB in float64).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
import warnings
from pathlib import Path

import numpy as np
from _common import load_note, write_results
from sklearn.decomposition import PCA

import psdlearn as pl
from psdlearn.psdboost.estimator import AUTO_NU, LPBOOST_NU

COLUMNS = ["study", "D", "t", "triplets", "nu", "solver", "max_time_s", "wall_s", "cpu_s",
           "iterations", "objective", "upper_bound", "gap", "cpu_to_1e-3_s", "rank",
           "rows", "bound", "reference", "rel_error", "sdp_cpu_s", "speedup", "rss_gb", "load"]


def data(t, D, kind, seed=0):
    X, y = pl.datasets.load("mnist", split="all")
    rng = np.random.default_rng(seed)
    if kind == "paper":
        idx = rng.permutation(len(y))[:t]
        X, y = X[idx], y[idx]
        if D < X.shape[1]:
            X = PCA(n_components=D, random_state=seed).fit_transform(X)
        return np.ascontiguousarray(X), pl.triplets_from_labels(X, y, random_state=seed)
    i = rng.integers(len(y), size=t)
    by_class = [np.flatnonzero(y == c) for c in range(10)]
    j = np.array([rng.choice(by_class[y[a]]) for a in i])
    other = (y[i] + rng.integers(1, 10, size=t)) % 10
    k = np.array([rng.choice(by_class[c]) for c in other])
    T = np.unique(np.column_stack([i, j, k])[i != j], axis=0)
    return X, T


def fit(X, T, nu=LPBOOST_NU, **kw):
    """Fit with ``C = 1 / (nu t)`` (default: the committed tables' former ``C="auto"``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load = os.getloadavg()[0]
        t0, c0 = time.perf_counter(), time.process_time()
        m = pl.PSDBoost(random_state=0, C=1.0 / (nu * len(T)), **kw).fit(X, pl.Triplets(T))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    m.bench_nu_, m.bench_load_ = nu, f"{load:.1f}/{os.getloadavg()[0]:.1f}"
    return m, wall, cpu


def row(study, X, T, kind, m, wall, cpu, max_time=None, ref=None):
    lo, up = np.asarray(m.objective_history_), np.asarray(m.upper_bound_history_)
    if m.solver_ == "interior-point":
        # Its iterates are primal infeasible: only the final certificate is a bound.
        hit = [len(lo) - 1] if (m.upper_bound_ - m.objective_) <= 1e-3 * abs(m.objective_) else []
    else:
        hit = np.flatnonzero(up - lo <= 1e-3 * np.abs(lo))
    r = {"study": study, "D": X.shape[1], "t": len(T), "triplets": kind, "nu": m.bench_nu_,
         "solver": m.solver_, "load": m.bench_load_,
         "max_time_s": max_time, "wall_s": wall, "cpu_s": cpu, "iterations": m.n_iter_,
         "objective": m.objective_, "upper_bound": m.upper_bound_,
         "gap": (m.upper_bound_ - m.objective_) / abs(m.objective_), "rank": m.rank_,
         "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}
    if hasattr(m, "working_set_history_"):
        r["rows"] = max(m.working_set_history_)
        r["bound"] = max(m.bound_history_)
    if len(hit):
        r["cpu_to_1e-3_s"] = m.time_history_[hit[0]] * cpu / max(wall, 1e-9)
    if ref is not None:
        r["reference"], r["rel_error"] = ref[0], abs(m.objective_ - ref[1]) / abs(ref[1])
    print(r, flush=True)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="t = 1000 only, short budgets")
    ap.add_argument("--crossover", action="store_true",
                    help="only the interior-point / working-set runs at D = 64, 256, 784 "
                         "that set solver='auto' (psdboost_solvers_crossover.{md,json})")
    ap.add_argument("--target", action="store_true",
                    help="only the D = 784, t = 1e4 working-set run against the 120 s "
                         "target (psdboost_solvers_target.{md,json})")
    ap.add_argument("--large", action="store_true",
                    help="only the t = 1e5 run (psdboost_solvers_1e5.{md,json})")
    ap.add_argument("--budget", type=float, default=150.0,
                    help="max_time of each fit in the vs-t study (seconds)")
    ap.add_argument("--solvers", nargs="+", default=None,
                    help="solvers of the vs-t, crossover or t = 1e5 runs")
    ap.add_argument("--sizes", nargs="+", type=int, default=None,
                    help="t of the vs-t or crossover runs")
    ap.add_argument("--dims", nargs="+", type=int, default=(64, 256, 784),
                    help="D of the crossover runs")
    ap.add_argument("--nu", type=float, default=LPBOOST_NU, help="C = 1 / (nu t)")
    ap.add_argument("--target-nu", nargs="+", type=float, default=(AUTO_NU, LPBOOST_NU),
                    help="nu of the --target fits (default: C='auto', then 0.1)")
    ap.add_argument("--name", default=None, help="results file (default by study)")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows already in the results file (a study in pieces)")
    args = ap.parse_args()
    from psdlearn.psdboost.sdp import solve_sdp

    start_load = os.getloadavg()[0]
    rows = []
    notes = ["cpu_s: process CPU seconds with OMP_NUM_THREADS="
             f"{os.environ.get('OMP_NUM_THREADS', 'unset')}; wall_s is inflated by the "
             "load (below, and per fit in load: 1-minute load average at its start / end).",
             "gap: certified (upper_bound_ - objective_) / |objective_| at the stop; the "
             "optimum lies between the two.",
             "Fits that did not converge stopped at max_time (wall clock).",
             "rows: the largest working set of triplet rows of a master (working-set); bound: "
             "the most of them held at w = C outside the master's variables."]

    name = args.name or ("psdboost_solvers_1e5" if args.large else
                         "psdboost_solvers_crossover" if args.crossover else
                         "psdboost_solvers_target" if args.target else "psdboost_solvers")

    if args.append:
        path = Path(__file__).parent / "results" / f"{name}.json"
        if path.exists():
            rows.extend(json.loads(path.read_text())["rows"])

    def add(r):
        rows.append(r)
        write_results(name, COLUMNS, rows, [*notes, load_note(start_load)])

    if args.crossover:
        for D in args.dims:
            for t in args.sizes or (500, 1000, 2000):
                X, T = data(t, D, "paper")
                for solver in args.solvers or ("interior-point", "working-set"):
                    m, wall, cpu = fit(X, T, nu=args.nu, solver=solver, max_time=300.0)
                    add(row("crossover", X, T, "paper", m, wall, cpu, 300.0))
        return
    if args.target:
        # The default PSDBoost() (C="auto" is nu = AUTO_NU, solver="auto"), then the
        # paper's nu = 0.1 of the other studies.
        X, T = data(10_000, 784, "paper")
        for nu in args.target_nu:
            m, wall, cpu = fit(X, T, nu=nu, max_time=120.0)
            add(row("target", X, T, "paper", m, wall, cpu, 120.0))
        return
    if args.large:
        X, T = data(100_000, 784, "random")
        for solver in args.solvers or ("auto",):
            m, wall, cpu = fit(X, T, nu=args.nu, solver=solver, max_time=600.0)
            add(row("t = 1e5", X, T, "random", m, wall, cpu, 600.0))
        return

    if args.solvers is None:
        # Default path against Clarabel at D = 64, t = 1000.
        X, T = data(1000, 64, "paper")
        fits = [fit(X, T, nu=args.nu) for _ in range(1 if args.quick else 3)]
        m, wall, cpu = sorted(fits, key=lambda f: f[2])[len(fits) // 2]
        c0 = time.process_time()
        sdp = solve_sdp(X, T, m.C_)
        sdp_cpu = time.process_time() - c0
        r = row("default vs Clarabel", X, T, "paper", m, wall, cpu,
                ref=("Clarabel", sdp.objective))
        r["sdp_cpu_s"], r["speedup"] = sdp_cpu, sdp_cpu / cpu
        add(r)

    sizes = args.sizes or ((1000,) if args.quick else (1000, 3000, 10_000, 30_000, 100_000))
    budget = 60.0 if args.quick else args.budget
    for t in sizes:
        # The paper's triplets need t points (70000 in MNIST): random ones beyond.
        kind = "paper" if t <= 70_000 else "random"
        X, T = data(t, 784, kind)
        for solver in args.solvers or ("interior-point", "working-set", "subspace",
                                       "column-generation"):
            # The interior-point method's t x t Newton matrix: 6 copies of 8 t^2 bytes,
            # 4.8 GB at t = 10^4.
            if solver == "interior-point" and t > 3000:
                continue
            m, wall, cpu = fit(X, T, nu=args.nu, solver=solver, max_time=budget)
            add(row("vs t", X, T, kind, m, wall, cpu, budget))


if __name__ == "__main__":
    main()
