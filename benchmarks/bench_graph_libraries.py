"""The all-points kNN graph against the approximate-search libraries, on a fair footing.

Task: 10-d data (two Gaussians, unit variance, means 0 and 3 along every axis, half the
points each), every point's ``k = 10`` (``--k``) nearest other points, 2 threads. Each library runs
in a fresh process of its own on the same data (generated there from the seed):

- compilation and first-call costs are excluded from the timed run: each process first
  runs the same search on 2,000 points and reports that as ``first_call_s``;
- ``time_s`` is the wall time of the build and the query of all points, ``cpu_s`` its
  process CPU time; ``peak_rss_gb`` the process's peak resident memory;
- recall@10 on 1,000 sampled points against their exact neighbours (float64 distances
  of the candidates of a brute-force scan), counting a returned neighbour when its
  distance is at most the exact 10th distance.

``psdlearn`` is ``NeighborIndex("approximate")`` with the backend it picks for ``n``
(HNSW, or NN-descent from ``NNDESCENT_MIN_SAMPLES`` points), ``psdlearn-hnsw`` and
``psdlearn-nndescent`` force one; the first call uses the same backend.

Run: ``python benchmarks/bench_graph_libraries.py [--n 1000000] [--k 10] [--configs a,b]``;
the machine should be otherwise idle (the load is recorded). Writes
``results/graph_libraries_n<n>[_k<k>].{md,json}``. pynndescent and hnswlib are benchmark-only
peers (``pip install pynndescent hnswlib``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
from _common import load_note, write_results

K = 10
SEED = 0
N_RECALL = 1000
THREADS = 2

# name -> (library, parameters)
CONFIGS = {
    "psdlearn": ("psdlearn", {}),
    "psdlearn-hnsw": ("psdlearn", {"backend": "hnsw"}),
    "psdlearn-nndescent": ("psdlearn", {"backend": "nndescent"}),
    "pynndescent-11": ("pynndescent", {"n_neighbors": 11}),
    "pynndescent-12": ("pynndescent", {"n_neighbors": 12}),
    "pynndescent-15": ("pynndescent", {"n_neighbors": 15}),
    "pynndescent-20": ("pynndescent", {"n_neighbors": 20}),
    "hnswlib-8-40-20": ("hnswlib", {"M": 8, "ef_construction": 40, "ef": 20}),
    "hnswlib-12-60-40": ("hnswlib", {"M": 12, "ef_construction": 60, "ef": 40}),
}


def make_data(n, d=10, seed=SEED):
    """Two Gaussians in ``d`` dimensions, n / 2 points each."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[n // 2:] += 3.0
    return X


def search(lib, params, X, k):
    """Indices (n, k) of every point's k nearest other points."""
    if lib == "psdlearn":
        from psdlearn.graph import NeighborIndex
        index = NeighborIndex("approximate", n_jobs=THREADS, random_state=SEED).fit(X)
        return index.kneighbors(None, k)[1]
    if lib == "pynndescent":
        from pynndescent import NNDescent
        nnd = NNDescent(X, n_neighbors=params["n_neighbors"], random_state=SEED,
                        n_jobs=THREADS)
        ind = nnd.neighbor_graph[0]
    elif lib == "hnswlib":
        import hnswlib
        index = hnswlib.Index(space="l2", dim=X.shape[1])
        index.init_index(max_elements=len(X), M=params["M"],
                         ef_construction=params["ef_construction"], random_seed=SEED)
        index.add_items(X, num_threads=THREADS)
        index.set_ef(params["ef"])
        ind = index.knn_query(X, k=k + 1, num_threads=THREADS)[0]
    else:
        raise ValueError(lib)
    return _drop_self(ind, k)


def _drop_self(ind, k):
    """Drop each row's own index (or its last column where the row lacks it)."""
    n = len(ind)
    own = ind == np.arange(n)[:, None]
    keep = ~own
    keep[~own.any(axis=1), -1] = False
    return ind[keep].reshape(n, -1)[:, :k]


def recall(X, ind, rng, k):
    """Tie-aware recall@k on N_RECALL sampled rows (``ind``: n x k).

    The exact neighbours of the sampled rows are k + 10 candidates from a float32
    brute-force scan (faiss ``IndexFlatL2``, which also serves 10^7 points), ranked again
    by float64 distances: a true neighbour is missed only when more than 10 points lie
    within float32 rounding of the k-th distance.
    """
    import faiss

    rows = rng.choice(len(X), N_RECALL, replace=False)
    flat = faiss.IndexFlatL2(X.shape[1])
    for start in range(0, len(X), 1 << 20):
        flat.add(np.ascontiguousarray(X[start:start + (1 << 20)], dtype=np.float32))
    _, cand = flat.search(np.ascontiguousarray(X[rows], dtype=np.float32), k + 11)
    hits = 0
    for r, c in zip(rows, cand, strict=True):
        c = c[c != r]
        kth = np.sort(((X[c] - X[r]) ** 2).sum(axis=1))[k - 1]
        hits += int((((X[ind[r]] - X[r]) ** 2).sum(axis=1) <= kth * (1 + 1e-12)).sum())
    return hits / (N_RECALL * k)


def worker(name, n, k):
    lib, params = CONFIGS[name]
    os.environ["NUMBA_NUM_THREADS"] = str(THREADS)
    if lib == "psdlearn":
        from importlib.util import find_spec

        from psdlearn import graph

        backend = params.get("backend") or (
            "nndescent" if n >= graph.NNDESCENT_MIN_SAMPLES and find_spec("pynndescent")
            else "hnsw")
        # the first call on 2,000 points goes through the backend of the timed run
        graph.NNDESCENT_MIN_SAMPLES = 0 if backend == "nndescent" else n + 1
        params = {"backend": backend}
    t0 = time.perf_counter()
    search(lib, params, make_data(2000, seed=SEED + 1), k)
    first = time.perf_counter() - t0
    X = make_data(n)
    t0, c0 = time.perf_counter(), time.process_time()
    ind = search(lib, params, X, k)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rec = recall(X, ind, np.random.default_rng(SEED), k)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({"config": name, "library": lib, "params": json.dumps(params),
                      "n": n, "time_s": round(wall, 2), "cpu_s": round(cpu, 2),
                      "first_call_s": round(first, 2), "recall": round(rec, 4),
                      "peak_rss_gb": round(peak, 2)}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=K)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.n, args.k)
        return
    start_load = os.getloadavg()[0]
    rows = []
    for name in args.configs.split(","):
        env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), NUMBA_NUM_THREADS=str(THREADS))
        out = subprocess.run([sys.executable, __file__, "--worker", name, "--n", str(args.n),
                              "--k", str(args.k)],
                             capture_output=True, text=True, env=env, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    name = f"graph_libraries_n{args.n}" + ("" if args.k == K else f"_k{args.k}")
    write_results(name, list(rows[0]), rows, notes=[
        f"All-points kNN graph, k = {args.k}, {THREADS} threads, one process per row; "
        "first-call (compilation) cost excluded from time_s and reported apart.",
        load_note(start_load), _peer_versions()])


def _peer_versions():
    from importlib import metadata
    names = ("faiss-cpu", "pynndescent", "hnswlib")
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} absent")
    return "Search libraries: " + ", ".join(found) + "."


if __name__ == "__main__":
    main()
