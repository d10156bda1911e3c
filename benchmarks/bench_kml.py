"""KernelMetricLearner (seed 004) fit time, peak memory and scaling in n.

Run: ``python benchmarks/bench_kml.py [--quick] [--max-n N]``. Writes
``benchmarks/results/kml.{md,json}``.

- XOR, n = 8,000, |S| = 50, m = 800 landmarks (target: fit under 1 s);
- MNIST {3, 4, 5, 6}, 2,000 training images per digit (8,000 x 784), |S| = 50, m = 100
  (target: under 2 s);
- XOR with m = 100 and n = 1e4, 1e5, 1e6: fit time, its exponent in n (target: linear),
  and the tracemalloc peak of the fit against the 8 n^2 bytes an n x n array would take;
- J of eq. (17) (:func:`psdlearn.metrics.class_separation`) on the learned embedding at
  n = 8,000 (exact, row blocks) and n = 1e6 (sampled pairs): time and peak memory.

All fits use 3 iterations of the extension (seed 004 section 5.1), K = 10 neighbours and
the median-heuristic RBF width (computed inside ``fit``, so timed). Times are the median
wall-clock of repeated fits after a warm-up fit.
"""

from __future__ import annotations

import argparse
import os

import numba
import numpy as np
from _common import median_time, peak_memory, scaling_exponent, write_results
from threadpoolctl import threadpool_info

import psdlearn as pl
from psdlearn.metrics import class_separation

N_ITER = 3
COLUMNS = ["data", "n", "d", "m", "q", "fit_s", "target_s", "peak_MiB", "nxn_MiB", "J",
           "J_s", "J_peak_MiB", "repeats"]


def similar(y, seed=0):
    return pl.PairwiseConstraints.from_labels(y, n_must=50, n_cannot=0, random_state=seed)


def measure(name, X, y, m, repeats, target=None, j=True):
    C = similar(y)

    def fit():
        return pl.KernelMetricLearner(n_landmarks=m, n_iter=N_ITER, random_state=0).fit(X, C)

    model = fit()  # warm-up
    t, _ = median_time(fit, repeats=repeats)
    peak = peak_memory(fit) / 2**20
    row = {"data": name, "n": len(X), "d": X.shape[1], "m": m, "q": len(model.beta_),
           "fit_s": t, "target_s": target, "peak_MiB": peak,
           "nxn_MiB": 8.0 * len(X) ** 2 / 2**20, "repeats": repeats}
    if j:
        jt, _ = median_time(lambda: class_separation(model.embedding_, y, random_state=0),
                            repeats=1)
        row["J"] = class_separation(model.embedding_, y, random_state=0)
        row["J_s"] = jt
        row["J_peak_MiB"] = peak_memory(
            lambda: class_separation(model.embedding_, y, random_state=0)) / 2**20
    print(row, flush=True)
    return row


def mnist_3456():
    try:
        X, y = pl.datasets.load("mnist", split="train")
    except (FileNotFoundError, pl.datasets.DatasetNotAvailableError):
        return None
    rng = np.random.default_rng(0)
    idx = np.concatenate([rng.choice(np.flatnonzero(y == d), 2000, replace=False)
                          for d in (3, 4, 5, 6)])
    return np.ascontiguousarray(X[idx]), y[idx]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="n <= 1e5, fewer repeats")
    ap.add_argument("--max-n", type=int, default=1_000_000)
    args = ap.parse_args()
    load = os.getloadavg()
    reps = 3 if args.quick else 7
    rows, notes = [], []
    X, y = pl.datasets.make_xor(8000, random_state=0)
    rows.append(measure("xor", X, y, 800, reps, target=1.0))
    mnist = mnist_3456()
    if mnist is None:
        notes.append("MNIST file absent: its row is missing.")
    else:
        rows.append(measure("mnist {3,4,5,6}", *mnist, 100, reps, target=2.0))
    ns = [n for n in (10_000, 100_000, 1_000_000) if n <= args.max_n]
    if args.quick:
        ns = [n for n in ns if n <= 100_000]
    scaling = []
    for n in ns:
        X, y = pl.datasets.make_xor(n, random_state=0)
        rows.append(measure("xor", X, y, 100, 1 if n >= 1_000_000 else min(reps, 3),
                            j=n in (ns[0], ns[-1])))
        scaling.append(rows[-1]["fit_s"])
    if len(ns) > 1:
        notes.append(f"fit time exponent in n at m = 100 (XOR, n = {ns[0]:.0e} ... "
                     f"{ns[-1]:.0e}): {scaling_exponent(ns, scaling):.2f}.")
    blas = [f"{p['internal_api']} {p['num_threads']} thread(s)"
            for p in threadpool_info() if p["user_api"] == "blas"]
    notes += [
        f"BLAS: {', '.join(blas) or 'unknown'}; numba threads: {numba.get_num_threads()}; "
        f"load average at start: {load[0]:.1f} (1 min).",
        "fit_s: median wall-clock seconds of KernelMetricLearner(n_landmarks=m, n_iter=3)"
        ".fit, median-heuristic gamma included; peak_MiB: tracemalloc peak of one fit; "
        "nxn_MiB: what one n x n float64 array would take.",
        "J: class_separation of the learned embedding (exact in row blocks up to 1e4 "
        "points, 1e6 sampled pairs beyond); J_peak_MiB its tracemalloc peak.",
        "The peak grows linearly with n (kernel blocks of at most 2^20 entries, the "
        "sparse W with K = 10 entries per row, the n x q embedding).",
    ]
    write_results("kml", COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
