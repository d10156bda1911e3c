"""The exact kd-tree search of the indexed points: queries in input order against Z-order.

Run: ``python benchmarks/bench_knn_query_order.py [--quick] [--repeats R]``. Writes
``benchmarks/results/knn_query_order.{md,json}``.

``NeighborIndex("exact", n_jobs=1).fit(X).kneighbors(n_neighbors=10)`` on standard
Gaussian points (the kd-tree backend, d <= 6), fit and search timed together. The
search takes the points in the Z-order of their leading principal axes
(:func:`psdlearn._order.spatial_order`); the baseline runs the same code with that order
replaced by the identity, the input order (what the search did before). The two
alternate within each repeat, in one process; medians over the repeats. The lists must
be identical: the order of the queries changes the memory traffic, not the answers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from _common import load_note, write_results

from psdlearn import graph
from psdlearn.graph import NeighborIndex

K = 10
CASES = [(100_000, 2), (100_000, 3), (100_000, 6), (300_000, 3), (300_000, 6),
         (1_000_000, 2), (1_000_000, 3)]
QUICK_CASES = [(50_000, 3), (50_000, 6)]


def _search(X):
    return NeighborIndex("exact", n_jobs=1).fit(X).kneighbors(n_neighbors=K)


def _timed(X, identity):
    """Wall and CPU seconds of one fit + search, with the Z-order or the identity."""
    ordered = graph.spatial_order
    if identity:
        graph.spatial_order = lambda P: np.arange(len(P))
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        out = _search(X)
        return time.perf_counter() - t0, time.process_time() - c0, out
    finally:
        graph.spatial_order = ordered


def run_case(n, d, repeats):
    X = np.random.default_rng(n + d).standard_normal((n, d))
    runs = {"input": [], "zorder": []}
    same = True
    for _ in range(repeats):
        wall_a, cpu_a, (dist_a, ind_a) = _timed(X, identity=True)
        wall_b, cpu_b, (dist_b, ind_b) = _timed(X, identity=False)
        same &= bool(np.array_equal(ind_a, ind_b) and np.array_equal(dist_a, dist_b))
        runs["input"].append((wall_a, cpu_a))
        runs["zorder"].append((wall_b, cpu_b))
    row = {"n": n, "d": d, "k": K, "repeats": repeats, "identical": same}
    for key, times in runs.items():
        row[f"{key}_s"] = statistics.median(w for w, _ in times)
        row[f"{key}_cpu_s"] = statistics.median(c for _, c in times)
    row["speedup"] = row["input_s"] / row["zorder_s"]
    row["cpu_speedup"] = row["input_cpu_s"] / row["zorder_cpu_s"]
    print(row, flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small cases")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    rows = [run_case(n, d, args.repeats) for n, d in (QUICK_CASES if args.quick else CASES)]
    columns = ["n", "d", "k", "input_s", "zorder_s", "speedup", "input_cpu_s",
               "zorder_cpu_s", "cpu_speedup", "identical", "repeats"]
    notes = [
        "input_s / zorder_s: median wall seconds of NeighborIndex('exact', n_jobs=1) fit + "
        "kneighbors(n_neighbors=10) on the indexed points, queries in input order (the "
        "former search) and in the Z-order of the leading principal axes (the search "
        "now); *_cpu_s: median process CPU seconds; speedup: input / zorder. The two "
        "alternate within each repeat, in one process. identical: the lists (indices and "
        "distances) of both orders are equal in every repeat.",
        "Points: standard Gaussian in d dimensions (the kd-tree backend, d <= 6), seed "
        "n + d.",
        load_note(start_load),
    ]
    write_results("knn_query_order", columns, rows, notes)


if __name__ == "__main__":
    main()
