"""The HNSW graph built in input order against spatial (Z-) order, and faiss's visited table.

Task: the all-points kNN graph of ``NeighborIndex("approximate")`` on 10-d data (two
Gaussians, as ``bench_graph_libraries.py``), 2 threads, each ``n`` in a fresh process.
Arms:

- ``input``: the points inserted and searched in input order, at the default breadth
  (``psdlearn.graph.HNSW_SPATIAL_MIN_SAMPLES`` set above ``n``);
- ``spatial``: the default from ``HNSW_SPATIAL_MIN_SAMPLES`` points (set to 0 here):
  Z-order on the leading principal axes, the search ``HNSW_SPATIAL_BREADTH`` times wider;
- ``spatial-hashset``: ``spatial`` with faiss's own choice of visited table (a hash set
  from ``faiss.cvar.visited_table_hashset_threshold`` nodes, 10^7 in faiss 1.15.1), which
  psdlearn otherwise replaces by the byte array at every size.

Per arm and ``k``: the median wall time of the build and the search of all points over
``--repeats`` runs (a first untimed run on 5,000 points compiles and loads everything)
and the tie-aware recall@k on 1,000 sampled points (``bench_graph_libraries.recall``).

Run: ``python benchmarks/bench_hnsw_order.py [--n 100000,200000,500000,1000000]
[--k 5,10,20] [--arms input,spatial] [--repeats 3] [--name hnsw_order]``, machine
otherwise idle. Writes ``results/<name>.{md,json}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

import numpy as np
from _common import load_note, write_results
from bench_graph_libraries import THREADS, make_data, recall

ARMS = ("input", "spatial", "spatial-hashset")


def worker(n, ks, arm, repeats):
    import psdlearn.graph as graph

    graph.HNSW_SPATIAL_MIN_SAMPLES = n + 1 if arm == "input" else 0
    if arm == "spatial-hashset":
        graph.visited_array = lambda faiss: contextlib.nullcontext()
    graph.NeighborIndex("approximate", n_jobs=THREADS, random_state=0).fit(
        make_data(5000, seed=1)).kneighbors(None, max(ks))
    X = make_data(n)
    rows = []
    for k in ks:
        times, builds = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            index = graph.NeighborIndex("approximate", n_jobs=THREADS, random_state=0).fit(X)
            t1 = time.perf_counter()
            ind = index.kneighbors(None, k)[1]
            times.append(time.perf_counter() - t0)
            builds.append(t1 - t0)
            del index
        rows.append({"n": n, "k": k, "arm": arm, "time_s": round(float(np.median(times)), 2),
                     "build_s": round(float(np.median(builds)), 2),
                     "search_s": round(float(np.median(times) - np.median(builds)), 2),
                     "runs": repeats, "recall": round(recall(X, ind, np.random.default_rng(0),
                                                              k=k), 4)})
    print(json.dumps(rows))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="100000,200000,500000,1000000")
    ap.add_argument("--k", default="5,10,20")
    ap.add_argument("--arms", default="input,spatial")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--name", default="hnsw_order")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    ks = [int(k) for k in args.k.split(",")]
    if args.worker:
        worker(int(args.n), ks, args.arms, args.repeats)
        return
    start_load = os.getloadavg()[0]
    rows = []
    for n in (int(v) for v in args.n.split(",")):
        for arm in args.arms.split(","):
            if arm not in ARMS:
                raise ValueError(f"unknown arm {arm!r}; one of {ARMS}")
            env = dict(os.environ, OMP_NUM_THREADS=str(THREADS))
            out = subprocess.run([sys.executable, __file__, "--worker", "--n", str(n),
                                  "--k", args.k, "--arms", arm, "--repeats",
                                  str(args.repeats)],
                                 capture_output=True, text=True, env=env, check=True)
            for row in json.loads(out.stdout.strip().splitlines()[-1]):
                rows.append(row)
                print(row, flush=True)
    write_results(args.name, list(rows[0]), rows, notes=[
        f"All-points kNN graph of NeighborIndex('approximate'), 10-d, {THREADS} threads; "
        "time_s = build + search of every point, median of the runs; one process per n "
        "and arm.", load_note(start_load)])


if __name__ == "__main__":
    main()
