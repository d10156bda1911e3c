"""The exact search of a small low-dimensional set: kd-tree against brute force.

Run: ``python benchmarks/bench_knn_small_n.py [--repeats R]``. Writes
``benchmarks/results/knn_small_n.{md,json}``.

``NeighborIndex("exact", n_jobs=1).fit(X).kneighbors(n_neighbors=10)``, fit and search
timed together, on the bundled sets searched by the kd-tree before (at most
``KD_TREE_MAX_FEATURES`` features: iris, double-spiral, chessboard) and on standard
Gaussian points (continuous, and rounded to one decimal: many ties), both backends in one
process, alternating within each repeat (medians over the repeats, wall and process CPU
seconds; one thread). The backend is chosen by setting ``KD_TREE_MIN_SAMPLES`` to 0 (the
tree) or above ``n`` (brute force). The lists and distances must be identical: both
backends only propose candidates, ranked by canonical distances.

Goal: find the size below which brute force is the cheaper search, for
``KD_TREE_MIN_SAMPLES``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from _common import load_note, write_results

import psdlearn as pl
from psdlearn import graph
from psdlearn.graph import NeighborIndex

K = 10
SETS = ("iris", "double-spiral", "chessboard")
SIZES = (100, 300, 1000, 2000, 4000)
DIMS = (2, 4, 6)


def search(X, tree):
    graph.KD_TREE_MIN_SAMPLES = 0 if tree else len(X) + 1
    index = NeighborIndex("exact", n_jobs=1).fit(X)
    assert index.backend_ == ("kd_tree" if tree else "brute")
    return index.kneighbors(n_neighbors=K)


def measure(X, repeats):
    """Median wall and CPU seconds of each backend, and whether their answers agree."""
    times = {True: ([], []), False: ([], [])}
    for r in range(repeats):
        for tree in ((True, False) if r % 2 == 0 else (False, True)):
            t0, c0 = time.perf_counter(), time.process_time()
            search(X, tree)
            times[tree][0].append(time.perf_counter() - t0)
            times[tree][1].append(time.process_time() - c0)
    (d_t, i_t), (d_b, i_b) = search(X, True), search(X, False)
    same = bool(np.array_equal(i_t, i_b) and np.array_equal(d_t, d_b))
    med = {tree: (statistics.median(w), statistics.median(c)) for tree, (w, c) in times.items()}
    return med, same


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(1)
    start_load = os.getloadavg()[0]
    cases = [(name, *pl.datasets.load(name)[:1]) for name in SETS]
    rng = np.random.default_rng(0)
    for d in DIMS:
        for n in SIZES:
            Z = rng.standard_normal((n, d))
            cases.append((f"gaussian n={n} d={d}", Z))
            cases.append((f"gaussian n={n} d={d}, one decimal", Z.round(1)))
    rows = []
    with threadpool_limits(limits=1):
        search(cases[0][1], True)  # compiles the kernels of both backends
        search(cases[0][1], False)
        for label, X in cases:
            med, same = measure(np.asarray(X, dtype=np.float64), args.repeats)
            rows.append({"data": label, "n": len(X), "d": X.shape[1],
                         "kd-tree ms": round(1e3 * med[True][0], 3),
                         "brute ms": round(1e3 * med[False][0], 3),
                         "kd-tree CPU ms": round(1e3 * med[True][1], 3),
                         "brute CPU ms": round(1e3 * med[False][1], 3),
                         "CPU ratio brute / tree": round(med[False][1] / med[True][1], 2),
                         "identical": same})
            print(rows[-1], file=sys.stderr)
    notes = [
        f"Fit + all points' {K} nearest, one thread, medians of {args.repeats} repeats, "
        "the two backends alternating; CPU = process CPU seconds.",
        "identical: the same neighbour lists and distances, to the bit.",
        load_note(start_load),
    ]
    write_results("knn_small_n", list(rows[0]), rows, notes)


if __name__ == "__main__":
    main()
