"""The exact kd-tree search of the indexed points: query order and block size.

Run: ``python benchmarks/bench_knn_query_order.py [--quick] [--repeats R]``. Writes
``benchmarks/results/knn_query_order.{md,json}``.

``NeighborIndex("exact", n_jobs=1).fit(X).kneighbors(n_neighbors=10)`` on standard
Gaussian points (the kd-tree backend, d <= 6), fit and search timed together, three ways
in one process, alternating within each repeat (medians over the repeats):

- ``former``: the search before: input order, blocks sized like brute-force ones
  (``_QUERY_WORK / (n max(d, 8))`` rows, at least 64);
- ``input``: input order, the search's own blocks (sized by time: ``_FIRST_BLOCK``
  rows, then about ``_BLOCK_SECONDS`` each, at most ``_MAX_BLOCK`` rows);
- ``zorder``: the search now: those blocks, queries in the Z-order of the leading
  principal axes (:func:`psdlearn._order.spatial_order`).

The lists must be identical: order and blocks change the memory traffic and the number
of calls, not the answers.
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
VARIANTS = ("former", "input", "zorder")


def _search(X):
    return NeighborIndex("exact", n_jobs=1).fit(X).kneighbors(n_neighbors=K)


def _timed(X, variant):
    """Wall and CPU seconds of one fit + search done the ``variant`` way."""
    ordered, block = graph.spatial_order, (graph._FIRST_BLOCK, graph._MAX_BLOCK)
    if variant in ("former", "input"):
        graph.spatial_order = lambda P: np.arange(len(P))
    if variant == "former":
        n, d = X.shape
        graph._FIRST_BLOCK = graph._MAX_BLOCK = int(np.clip(graph._QUERY_WORK / (n * max(d, 8)),
                                                            64, 65_536))
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        out = _search(X)
        return time.perf_counter() - t0, time.process_time() - c0, out
    finally:
        graph.spatial_order, (graph._FIRST_BLOCK, graph._MAX_BLOCK) = ordered, block


def run_case(n, d, repeats):
    X = np.random.default_rng(n + d).standard_normal((n, d))
    runs = {key: [] for key in VARIANTS}
    same = True
    for _ in range(repeats):
        lists = []
        for key in VARIANTS:
            wall, cpu, out = _timed(X, key)
            runs[key].append((wall, cpu))
            lists.append(out)
        same &= all(np.array_equal(a, b) for out in lists[1:]
                    for a, b in zip(lists[0], out, strict=True))
    row = {"n": n, "d": d, "k": K, "repeats": repeats, "identical": same}
    for key, times in runs.items():
        row[f"{key}_s"] = statistics.median(w for w, _ in times)
        row[f"{key}_cpu_s"] = statistics.median(c for _, c in times)
    row["former/zorder"] = row["former_s"] / row["zorder_s"]
    row["input/zorder"] = row["input_s"] / row["zorder_s"]
    # seconds of one block of the search now, from its CPU time (fit included: an upper
    # bound), the wait of a Ctrl-C or of the progress bar
    row["block_s"] = row["zorder_cpu_s"] * min(1.0, graph._MAX_BLOCK / n)
    print(row, flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small cases")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    rows = [run_case(n, d, args.repeats) for n, d in (QUICK_CASES if args.quick else CASES)]
    columns = ["n", "d", "k", "former_s", "input_s", "zorder_s", "former/zorder",
               "input/zorder", "former_cpu_s", "input_cpu_s", "zorder_cpu_s", "block_s",
               "identical", "repeats"]
    notes = [
        "former_s / input_s / zorder_s: median wall seconds of NeighborIndex('exact', "
        "n_jobs=1) fit + kneighbors(n_neighbors=10) on the indexed points: the former "
        "search (input order, blocks sized like brute-force ones: 64-250 rows here), "
        "input order in blocks of _KD_TREE_BLOCK rows, and the search now (those blocks, "
        "Z-order); *_cpu_s: median process CPU seconds; former/zorder and input/zorder: "
        "wall ratios. block_s: CPU seconds of one block now (fit included, so an upper "
        "bound): how long a Ctrl-C or the progress bar waits. identical: the three lists "
        "(indices and distances) are equal in every repeat.",
        "Points: standard Gaussian in d dimensions (the kd-tree backend, d <= 6), seed "
        "n + d.",
        load_note(start_load),
    ]
    write_results("knn_query_order", columns, rows, notes)


if __name__ == "__main__":
    main()
