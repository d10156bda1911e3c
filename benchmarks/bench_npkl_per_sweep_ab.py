"""A/B of NPKL per-sweep (BCD) and per-iteration (ADMM) times between two source trees.

Run: ``python benchmarks/bench_npkl_per_sweep_ab.py --base OLD_SRC [--repeats R]
[--label-base TEXT] [--out NAME]``, with ``OLD_SRC`` the ``src`` folder of another checkout
(for example a ``git worktree`` of the commit before a refactoring). Writes
``benchmarks/results/<NAME>.{md,json}`` (default ``npkl_per_sweep_ab``).

Each measurement runs in a fresh single-threaded worker process (``NUMBA_NUM_THREADS=1``,
BLAS threads 1), the two trees alternating, ``R`` times each; a worker compiles the kernels
on a small fit, then times one fit with ``tol = 0`` (a fixed number of sweeps or
iterations) and reports process-CPU seconds per sweep. The Laplacians are built once, by
this process, and passed to the workers as ``.npz`` files, so both trees solve the same
problem. Cases:

- BCD, hinge (default smoothing continuation, 5 stages of 20 sweeps) and square (40
  sweeps): adult a1a (k = 50, the seed 000 protocol's pairs) when the data are present,
  and 10-d Gaussians n = 1e5 (k = 10, 1000 pairs, rank 50).
- ADMM, pcp: a1a (rank rule) and the Gaussians (rank 44), 20 iterations.

The ratio is new / base of the medians; the spread is the ratio of the two trees' own
max/min, a measure of the machine's noise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import write_results

import psdlearn as pl
from psdlearn.graph import knn_laplacian

NEW_SRC = Path(__file__).resolve().parents[1] / "src"

WORKER = r"""
import json, sys, time, warnings
import numpy as np, scipy.sparse as sp
import psdlearn as pl
warnings.simplefilter("ignore")
path, solver, loss, rank, iters = sys.argv[1:6]
iters = int(iters)
data = np.load(path)
L = sp.csr_matrix((data["Lx"], data["Li"], data["Lp"]), shape=tuple(data["shape"]))
C = pl.PairwiseConstraints(data["pairs"], data["signs"], n_samples=L.shape[0])
rank = rank if rank == "auto" else int(rank)
def fit(L, C, max_iter):
    return pl.NPKL(loss=loss, solver=solver, graph="precomputed", rank=rank, gamma=1.0,
                   max_iter=max_iter, tol=0.0, random_state=0).fit(L, C)
Xw, yw = pl.datasets.make_two_gaussians(200, random_state=0)
fit(pl.graph.knn_laplacian(Xw), pl.PairwiseConstraints.from_labels(yw, random_state=0), 3)
c0 = time.process_time()
model = fit(L, C, iters)
cpu = time.process_time() - c0
print(json.dumps({"cpu_s": cpu, "n_iter": int(model.n_iter_),
                  "objective": float(model.objective_history_[-1])}))
"""


def save_case(path, L, C):
    L = sp.csr_matrix(L)
    np.savez(path, Lx=L.data, Li=L.indices, Lp=L.indptr, shape=np.array(L.shape),
             pairs=C.pairs, signs=C.signs)


def run_worker(src, path, solver, loss, rank, iters):
    env = {**os.environ, "PYTHONPATH": str(src), "NUMBA_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", WORKER, str(path), solver, loss, str(rank),
                          str(iters)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def cases(tmp):
    out = []
    try:
        X, y = pl.datasets.load("a1a")
        L = knn_laplacian(X, n_neighbors=50)
        C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=0)
        save_case(tmp / "a1a.npz", L, C)
        out += [("a1a", "bcd", "hinge", "auto", 20), ("a1a", "bcd", "square", "auto", 40),
                ("a1a", "admm", "pcp", "auto", 20)]
    except FileNotFoundError:
        pass
    X, y = pl.datasets.make_two_gaussians(100_000, n_features=10, random_state=0)
    L = knn_laplacian(X, n_neighbors=10)
    C = pl.PairwiseConstraints.from_labels(y, n_must=500, n_cannot=500, random_state=0)
    save_case(tmp / "gauss10_1e5.npz", L, C)
    out += [("gauss10_1e5", "bcd", "hinge", 50, 20), ("gauss10_1e5", "bcd", "square", 50, 40),
            ("gauss10_1e5", "admm", "pcp", 44, 20)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="src folder of the base checkout")
    ap.add_argument("--label-base", default="base")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="npkl_per_sweep_ab")
    args = ap.parse_args()
    start_load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for data, solver, loss, rank, iters in cases(tmp):
            cpu = {"base": [], "new": []}
            objective = {}
            for _ in range(args.repeats):
                for key, src in (("base", args.base), ("new", NEW_SRC)):
                    res = run_worker(src, tmp / f"{data}.npz", solver, loss, rank, iters)
                    cpu[key].append(res["cpu_s"] / res["n_iter"])
                    objective[key] = res["objective"]
            med = {k: statistics.median(v) for k, v in cpu.items()}
            rows.append({
                "data": data, "solver": solver, "loss": loss, "iters": iters,
                "base_s_per_iter": med["base"], "new_s_per_iter": med["new"],
                "ratio": med["new"] / med["base"],
                "base_spread": max(cpu["base"]) / min(cpu["base"]),
                "new_spread": max(cpu["new"]) / min(cpu["new"]),
                "objective_rel_diff": abs(objective["new"] - objective["base"])
                / max(abs(objective["base"]), 1e-300),
                "repeats": args.repeats})
            print(rows[-1], flush=True)
    notes = [
        f"base = {args.label_base}; new = this checkout. Process-CPU seconds per BCD sweep / "
        "ADMM iteration, median over the repeats, each in a fresh single-threaded worker, "
        "the trees alternating; compilation excluded (a warm-up fit in each worker).",
        "spread: max / min of one tree's repeats (the machine's noise); objective_rel_diff: "
        "relative difference of the final objectives (the same numerical work gives ~1e-15).",
        f"1-minute load average at the start / end: {start_load:.1f} / "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
    ]
    columns = ["data", "solver", "loss", "iters", "base_s_per_iter", "new_s_per_iter",
               "ratio", "base_spread", "new_spread", "objective_rel_diff", "repeats"]
    write_results(args.out, columns, rows, notes)


if __name__ == "__main__":
    main()
