"""Which approximate-nearest-neighbour library should build psdlearn's kNN graphs?

Candidates: hnswlib (HNSW), faiss-cpu (``IndexHNSWFlat`` and ``IndexIVFFlat`` with
``nlist = sqrt(n)``) and pynndescent (``NNDescent``), against the exact scikit-learn
``NearestNeighbors`` (``algorithm="brute"`` and ``"kd_tree"``) and faiss ``IndexFlatL2``.

The task measured is the all-points kNN graph: every point is queried against an index of
all points for ``k + 1`` neighbours and the point itself is dropped (when the point is not
among the ``k + 1`` returned, e.g. because of exact duplicates, the last one is dropped).

Measured per library and data set in a fresh subprocess (its first-call cost and memory
are its own), every build setting built ``runs`` times with the same seed:

- build and query wall time, and their total, with 2 threads (median over the runs);
- ``import_s`` (importing the library) and ``first_call_s`` (the first call in the process,
  on 2,000 points: numba compilation for pynndescent); a command-line user pays
  ``import_s + first_call_s + total_s`` in every new process (``cold_total_s``);
- recall@k on 1,000 sampled points, against exact neighbours computed in float64 by brute
  force on those points only. It is tie-aware: a returned neighbour counts when its
  distance is at most the exact k-th distance (a9a has many duplicate rows, so neighbour
  ids are not unique); the id-based recall is in the JSON as ``id_recall``;
- peak resident memory minus the resident memory after importing and loading the data;
- determinism: the neighbour arrays of two runs with the same seed, with 2 threads and
  (on the smaller sets) with 1 thread.

Run: ``python benchmarks/bench_ann_libraries.py [--quick] [--datasets a,b] [--libs x,y]``.
Writes ``benchmarks/results/ann_libraries.{md,json}``; a run over a subset of the data sets
or libraries replaces only those rows of an existing JSON file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"

NAME = "ann_libraries"
SEED = 0
N_RECALL = 1000
RECALL_TARGET = 0.95
# data set -> k, runs with 2 threads, whether to check 1-thread determinism, target (s)
DATASETS = {
    "gauss1e5": {"k": 10, "runs": 2, "det1": True, "target_s": None,
                 "title": "10-d N(0, I), n = 100,000"},
    "gauss1e6": {"k": 10, "runs": 2, "det1": False, "target_s": 60.0,
                 "title": "10-d N(0, I), n = 1,000,000"},
    "mnist": {"k": 10, "runs": 2, "det1": False, "target_s": 30.0,
              "title": "mnist 70,000 x 784 (pixels / 255)"},
    "a9a": {"k": 50, "runs": 2, "det1": True, "target_s": 3.0,
            "title": "a9a 32,561 x 123 (binary, densified)"},
}
LIBS = ("hnswlib", "faiss_hnsw", "faiss_ivf", "pynndescent", "sklearn_brute",
        "sklearn_kdtree", "faiss_flat")
EXACT = ("sklearn_brute", "sklearn_kdtree", "faiss_flat")
SEED_NOTES = {
    "hnswlib": "init_index(random_seed=0) (level draws); insertion order is the thread "
               "schedule with add_items(num_threads > 1)",
    "faiss_hnsw": "index.hnsw.rng = faiss.RandomGenerator(0) (level draws; default seed "
                  "12345); add() is OpenMP-parallel",
    "faiss_ivf": "index.cp.seed = 0 (k-means sampling and initialisation)",
    "pynndescent": "NNDescent(random_state=0); n_jobs sets the numba threads",
    "sklearn_brute": "no randomness",
    "sklearn_kdtree": "no randomness",
    "faiss_flat": "no randomness",
}


# ------------------------------------------------------------------------------------------
# configurations

# library -> build settings (in increasing order of memory: one process builds them in turn,
# so the high-water resident memory after each build is that build's peak), query settings
# and optionally the number of runs (default: the data set's) and ``max_q``: time the
# queries of the 1,000 recall points plus others, max_q in all, and extrapolate linearly to
# n queries (query cost per point is independent of the other queries); "ef" entries are
# multiples of k (rounded up, at least k + 1)
SWEEPS = {
    "gauss1e5": {"hnswlib": ([(8, 40), (16, 100)], [1.5, 2, 4]),
                 "faiss_hnsw": ([(8, 40), (16, 40)], [1.5, 2, 4]),
                 "faiss_ivf": ([None], [8, 16, 32]),
                 "pynndescent": ([1, 2], [None])},
    "gauss1e6": {"hnswlib": ([(8, 40), (12, 40)], [1.5, 2, 4], {"max_q": 100_000}),
                 "faiss_hnsw": ([(8, 40), (16, 40)], [1.5, 2, 4], {"runs": 1, "max_q": 100_000}),
                 "faiss_ivf": ([None], [16, 32], {"runs": 1, "max_q": 100_000}),
                 "pynndescent": ([1, 2], [None], {"runs": 1})},
    "mnist": {"hnswlib": ([(8, 40), (16, 100)], [1.5, 2, 4]),
              "faiss_hnsw": ([(16, 40)], [1.5, 2, 4], {"runs": 1}),
              "faiss_ivf": ([None], [4, 8, 16], {"runs": 1}),
              "pynndescent": ([1, 2], [None], {"runs": 1})},
    "a9a": {"hnswlib": ([(8, 40), (12, 40), (16, 100), (32, 100)], [1.5, 2, 4]),
            "faiss_hnsw": ([(8, 40), (16, 40), (32, 100)], [1.5, 2, 4]),
            "faiss_ivf": ([None], [8, 16, 32]),
            "pynndescent": ([1, 2], [None])},
}
# exact baselines: where a full run is too slow, the queries are timed on the first rows and
# extrapolated linearly in the number of queries (None: all n queried)
EXACT_QUERIES = {
    "gauss1e5": {"sklearn_brute": 20_000, "sklearn_kdtree": 5_000, "faiss_flat": None},
    "gauss1e6": {"sklearn_brute": 2_000, "sklearn_kdtree": 2_000, "faiss_flat": 2_000},
    "mnist": {"sklearn_brute": 7_000, "sklearn_kdtree": 1_000, "faiss_flat": 7_000},
    "a9a": {"sklearn_brute": None, "sklearn_kdtree": 2_000, "faiss_flat": None},
}


def sweep(dataset, n, quick=False):
    """``[(lib, [build_params, ...], [query_params, ...], max_queries, runs)]``."""
    k = DATASETS[dataset]["k"]
    out = []
    for lib, (builds, queries, *opts) in SWEEPS[dataset].items():
        opts = opts[0] if opts else {}
        if quick:
            builds, queries = builds[:1], queries[-1:]
        if lib in ("hnswlib", "faiss_hnsw"):
            bl = [{"M": m, "efc": efc} for m, efc in builds]
            ql = [{"ef": max(k + 1, int(np.ceil(f * k)))} for f in queries]
        elif lib == "faiss_ivf":
            bl = [{"nlist": int(round(np.sqrt(n)))}]
            ql = [{"nprobe": p} for p in queries]
        else:
            bl = [{"n_neighbors": k + 1 if f == 1 else f * k} for f in builds]
            ql = [{}]
        out.append((lib, bl, ql, opts.get("max_q"), opts.get("runs", DATASETS[dataset]["runs"])))
    for lib in EXACT:
        max_q = EXACT_QUERIES[dataset][lib]
        out.append((lib, [{}], [{}], max_q, 1 if max_q else 2))
    return out


def pstr(params):
    return ",".join(f"{key}={val}" for key, val in params.items()) or "-"


# ------------------------------------------------------------------------------------------
# data and exact neighbours (parent process)


def load_data(name, cache):
    """Cached float32 C-contiguous data matrix of a data set (path of the .npy file)."""
    path = cache / f"{name}.npy"
    if path.exists():
        return path
    if name.startswith("gauss"):
        n = 100_000 if name == "gauss1e5" else 1_000_000
        X = np.random.default_rng(0).standard_normal((n, 10))
    else:
        from psdlearn.datasets import load
        X, _ = load(name, split="all" if name == "mnist" else "train")
    X = np.ascontiguousarray(X, dtype=np.float32)
    np.save(path, X)
    return path


def ground_truth(name, X, k, cache):
    """Exact neighbours of ``N_RECALL`` sampled points: indices, k-th squared distance."""
    path = cache / f"{name}_truth_k{k}.npz"
    if path.exists():
        z = np.load(path)
        return z["qidx"], z["ids"], z["kth"]
    rng = np.random.default_rng(1)
    qidx = np.sort(rng.choice(X.shape[0], N_RECALL, replace=False))
    X64 = X.astype(np.float64)
    sq = np.einsum("ij,ij->i", X64, X64)
    ids = np.empty((N_RECALL, k), dtype=np.int64)
    kth = np.empty(N_RECALL)
    extra = k + 20
    for lo in range(0, N_RECALL, 25):
        q = qidx[lo:lo + 25]
        d2 = sq[q][:, None] - 2.0 * (X64[q] @ X64.T) + sq[None, :]
        d2[np.arange(len(q)), q] = np.inf
        cand = np.argpartition(d2, extra, axis=1)[:, :extra]
        # recompute the candidates' distances directly (no cancellation), then sort
        exact = ((X64[cand] - X64[q][:, None, :]) ** 2).sum(-1)
        order = np.argsort(exact, axis=1, kind="stable")
        ids[lo:lo + 25] = np.take_along_axis(cand, order, 1)[:, :k]
        kth[lo:lo + 25] = np.take_along_axis(exact, order, 1)[:, k - 1]
    np.savez(path, qidx=qidx, ids=ids, kth=kth)
    return qidx, ids, kth


def drop_self(rows, qidx):
    """Drop each query's own index from its ``k + 1`` neighbours (else the last one)."""
    mask = rows == qidx[:, None]
    missing = ~mask.any(axis=1)
    mask[missing, -1] = True
    return rows[~mask].reshape(rows.shape[0], rows.shape[1] - 1)


def recall(ids, X, qidx, true_ids, kth):
    """Tie-aware and id-based recall@k; ``ids[i]``: the k + 1 neighbours of ``qidx[i]``."""
    rows = drop_self(ids.astype(np.int64), qidx)
    valid = rows >= 0
    diff = X[np.where(valid, rows, 0)].astype(np.float64) - X[qidx].astype(np.float64)[:, None]
    d2 = np.where(valid, (diff ** 2).sum(-1), np.inf)
    hit = d2 <= kth[:, None] * (1 + 1e-6) + 1e-9
    id_hits = [len(np.intersect1d(r, t)) for r, t in zip(rows, true_ids, strict=True)]
    return float(hit.mean()), float(np.mean(id_hits) / true_ids.shape[1])


# ------------------------------------------------------------------------------------------
# one configuration in a subprocess


def _vm():
    """Current and peak resident memory of this process (KiB), from /proc/self/status."""
    vals = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                vals[line[:5]] = int(line.split()[1])
    return vals["VmRSS"], vals["VmHWM"]


def _reset_peak():
    """Reset this process's peak resident memory to the current one (Linux >= 4.0).

    Free heap memory is first given back to the system (glibc ``malloc_trim``), so that a
    build does not reuse pages of the previous one without its resident size growing.
    """
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def run_worker(spec):
    """Build and query the configurations of one library; run in a fresh process.

    Each build setting of ``spec["builds"]`` is built ``spec["reps"]`` times (same seed)
    and queried with every query setting; the neighbour arrays are saved for the parent.
    """
    threads, k, lib = spec["threads"], spec["k"], spec["lib"]
    kq = k + 1

    t0 = time.perf_counter()
    if lib in ("faiss_hnsw", "faiss_ivf", "faiss_flat"):
        import faiss
        faiss.omp_set_num_threads(threads)
    elif lib == "hnswlib":
        import hnswlib
    elif lib == "pynndescent":
        import pynndescent
    else:
        from sklearn.neighbors import NearestNeighbors
    import_s = time.perf_counter() - t0

    def build(X, b):
        n, d = X.shape
        if lib == "hnswlib":
            index = hnswlib.Index(space="l2", dim=d)
            index.init_index(max_elements=n, ef_construction=b["efc"], M=b["M"],
                             random_seed=SEED)
            index.set_num_threads(threads)
            index.add_items(X, np.arange(n), num_threads=threads)
        elif lib == "faiss_hnsw":
            index = faiss.IndexHNSWFlat(d, b["M"])
            index.hnsw.rng = faiss.RandomGenerator(SEED)
            index.hnsw.efConstruction = b["efc"]
            index.add(X)
        elif lib == "faiss_ivf":
            nlist = min(b["nlist"], max(1, n // 40))
            index = faiss.IndexIVFFlat(faiss.IndexFlatL2(d), d, nlist)
            index.cp.seed = SEED
            index.train(X)
            index.add(X)
        elif lib == "faiss_flat":
            index = faiss.IndexFlatL2(d)
            index.add(X)
        elif lib == "pynndescent":
            index = pynndescent.NNDescent(X, n_neighbors=b["n_neighbors"], random_state=SEED,
                                          n_jobs=threads)
        else:
            algo = "brute" if lib == "sklearn_brute" else "kd_tree"
            index = NearestNeighbors(n_neighbors=kq, algorithm=algo, n_jobs=threads).fit(X)
        return index

    def query(index, Xq, q):
        if lib == "hnswlib":
            index.set_ef(max(q["ef"], kq))
            ids, _ = index.knn_query(Xq, k=kq, num_threads=threads)
        elif lib == "faiss_hnsw":
            index.hnsw.efSearch = max(q["ef"], kq)
            _, ids = index.search(Xq, kq)
        elif lib == "faiss_ivf":
            index.nprobe = q["nprobe"]
            _, ids = index.search(Xq, kq)
        elif lib == "faiss_flat":
            _, ids = index.search(Xq, kq)
        elif lib == "pynndescent":
            ids = index.neighbor_graph[0][:, :kq]
        else:
            ids = index.kneighbors(Xq, return_distance=False)
        return ids

    # first call in this process, on small data of the same dimension and dtype
    d = int(np.load(spec["data"], mmap_mode="r").shape[1])
    small = np.random.default_rng(2).standard_normal((2000, d)).astype(np.float32)
    t0 = time.perf_counter()
    query(build(small, spec["builds"][0]), small, spec["queries"][0])
    first_call_s = time.perf_counter() - t0
    del small

    X = np.load(spec["data"])
    if spec.get("query_rows"):
        Xq = X[np.load(spec["query_rows"])]
    else:
        Xq = X if spec["max_queries"] is None else X[:spec["max_queries"]]
    res = {"import_s": import_s, "first_call_s": first_call_s, "n_queried": int(Xq.shape[0]),
           "build_s": [], "build_cpu_s": [], "query_s": [], "query_cpu_s": [],
           "base_kib": [], "peak_kib": [], "peak_reset": []}
    for bi, b in enumerate(spec["builds"]):
        for key in ("build_s", "build_cpu_s", "query_s", "query_cpu_s"):
            res[key].append([])
        res["peak_reset"].append(_reset_peak())
        res["base_kib"].append(_vm()[0])
        for r in range(spec["reps"]):
            t0, c0 = time.perf_counter(), time.process_time()
            index = build(X, b)
            res["build_s"][bi].append(time.perf_counter() - t0)
            res["build_cpu_s"][bi].append(time.process_time() - c0)
            qs, qc = [], []
            for qi, q in enumerate(spec["queries"]):
                t0, c0 = time.perf_counter(), time.process_time()
                ids = query(index, Xq, q)
                qs.append(time.perf_counter() - t0)
                qc.append(time.process_time() - c0)
                np.save(f"{spec['out']}_b{bi}_r{r}_q{qi}.npy", np.asarray(ids, dtype=np.int32))
                del ids
            res["query_s"][bi].append(qs)
            res["query_cpu_s"][bi].append(qc)
            del index
        res["peak_kib"].append(_vm()[1])
    Path(f"{spec['out']}.json").write_text(json.dumps(res))


def launch(spec, cache, numba_cache=None):
    """Run one worker in a subprocess; returns its result dict (``wait4_peak_kib`` added)."""
    fd, spec_path = tempfile.mkstemp(suffix=".json", dir=cache)
    os.close(fd)
    Path(spec_path).write_text(json.dumps(spec))
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):
        env[var] = str(spec["threads"])
    if numba_cache is not None:
        env["NUMBA_CACHE_DIR"] = str(numba_cache)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--worker", spec_path], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    os.unlink(spec_path)
    if proc.returncode != 0:
        raise RuntimeError(f"worker failed ({proc.returncode}): {spec}")
    res = json.loads(Path(f"{spec['out']}.json").read_text())
    Path(f"{spec['out']}.json").unlink()
    res["wait4_peak_kib"] = usage.ru_maxrss
    res["process_wall_s"] = time.perf_counter() - t0
    return res


# ------------------------------------------------------------------------------------------
# measuring one data set


def measure(dataset, cache, libs, quick):
    meta = DATASETS[dataset]
    k = meta["k"]
    path = load_data(dataset, cache)
    X = np.load(path)
    n = X.shape[0]
    qidx, true_ids, kth = ground_truth(dataset, X, k, cache)
    # subsets of queries: the 1,000 recall points first, then the first other rows
    rest = np.setdiff1d(np.arange(n), qidx)
    rows = []
    for lib, builds, queries, max_q, reps in sweep(dataset, n, quick):
        rows_path = None
        if max_q:
            rows_path = str(cache / f"rows_{dataset}_{max_q}.npy")
            np.save(rows_path, np.concatenate([qidx, rest[:max_q - len(qidx)]]))
        if lib not in libs:
            continue
        exact = lib in EXACT
        reps = 1 if quick else reps
        plan = [(2, builds, reps)]
        if meta["det1"] and not exact and not quick:
            plan.append((1, builds[:1], 2))
        results = {}
        for threads, blist, nrep in plan:
            spec = {"lib": lib, "builds": blist, "queries": queries, "k": k,
                    "threads": threads, "reps": nrep, "data": str(path), "max_queries": max_q,
                    "query_rows": rows_path if max_q else None,
                    "out": str(cache / f"run_{dataset}_{lib}_t{threads}")}
            res = launch(spec, cache)
            results[threads] = (spec["out"], res)
            print(f"  {dataset} {lib} threads={threads}: import {res['import_s']:.2f}s first "
                  f"call {res['first_call_s']:.2f}s, process {res['process_wall_s']:.0f}s, "
                  f"wait4 peak {res['wait4_peak_kib'] / 1024:.0f} MiB", flush=True)
        for bi, b in enumerate(builds):
            for qi, q in enumerate(queries):
                rows.append(summarise(dataset, lib, b, bi, q, qi, results, X, qidx, true_ids,
                                      kth, n, max_q))
        for out, _ in results.values():
            for f in cache.glob(Path(out).name + "_b*.npy"):
                f.unlink()
    return rows


def ids_path(results, threads, bi, r, qi):
    return f"{results[threads][0]}_b{bi}_r{r}_q{qi}.npy"


def determinism(results, threads, bi, qi):
    """``"yes"``, ``"no (x% rows)"``, ``"no (order only)"`` or None (not measured)."""
    if threads not in results or bi >= len(results[threads][1]["build_s"]):
        return None
    reps = len(results[threads][1]["build_s"][bi])
    if reps < 2:
        return None
    ref = np.load(ids_path(results, threads, bi, 0, qi))
    worst = 0.0
    for r in range(1, reps):
        other = np.load(ids_path(results, threads, bi, r, qi))
        if not np.array_equal(ref, other):
            differ = np.any(np.sort(ref, axis=1) != np.sort(other, axis=1), axis=1)
            worst = max(worst, float(differ.mean()), 1e-12)
    if worst == 0.0:
        return "yes"
    return f"no ({100 * worst:.2g}% rows)" if worst > 1e-12 else "no (order only)"


def summarise(dataset, lib, b, bi, q, qi, results, X, qidx, true_ids, kth, n, max_q):
    res = results[2][1]
    scale = n / res["n_queried"]
    builds = res["build_s"][bi]
    queries = [qs[qi] * scale for qs in res["query_s"][bi]]
    totals = [bb + qq for bb, qq in zip(builds, queries, strict=True)]
    cpus = [bb + qs[qi] * scale
            for bb, qs in zip(res["build_cpu_s"][bi], res["query_cpu_s"][bi], strict=True)]
    mib = 1 / 1024
    row = {
        "dataset": dataset, "library": lib, "params": pstr({**b, **q}), "k": DATASETS[dataset]["k"],
        "threads": 2, "runs": len(builds),
        "build_s": statistics.median(builds), "query_s": statistics.median(queries),
        "total_s": statistics.median(totals), "total_min_s": min(totals),
        "total_max_s": max(totals), "total_cpu_s": statistics.median(cpus),
        "import_s": res["import_s"], "first_call_s": res["first_call_s"],
        "peak_extra_MiB": (res["peak_kib"][bi] - res["base_kib"][bi]) * mib,
        "peak_rss_MiB": res["peak_kib"][bi] * mib, "base_rss_MiB": res["base_kib"][bi] * mib,
        "peak_reset": res["peak_reset"][bi],
        "estimated": max_q is not None, "n_queried": res["n_queried"],
        "det_2threads": determinism(results, 2, bi, qi),
        "det_1thread": determinism(results, 1, bi, qi),
        "total_1thread_s": None, "all_totals_s": totals,
    }
    if 1 in results and bi < len(results[1][1]["build_s"]):
        one = results[1][1]
        row["total_1thread_s"] = statistics.median(
            bb + qs[qi] for bb, qs in zip(one["build_s"][bi], one["query_s"][bi], strict=True))
    row["cold_total_s"] = row["import_s"] + row["first_call_s"] + row["total_s"]
    recs = []
    for r in range(len(builds)):
        ids = np.load(ids_path(results, 2, bi, r, qi))
        ids = ids[:len(qidx)] if max_q is not None else ids[qidx]
        recs.append(recall(ids, X, qidx, true_ids, kth))
    if recs:
        row["recall"] = statistics.median(r[0] for r in recs)
        row["id_recall"] = statistics.median(r[1] for r in recs)
    print(f"    -> {lib} {row['params']}: total {row['total_s']:.2f}s "
          f"(cpu {row['total_cpu_s']:.1f}s) recall {row['recall']:.4f} "
          f"extra {row['peak_extra_MiB']:.0f} MiB det2 {row['det_2threads']} "
          f"det1 {row['det_1thread']}", flush=True)
    return row


def numba_cold(cache):
    """pynndescent's first call with an empty numba cache and with the installed one."""
    path = load_data("gauss1e5", cache)
    out = {}
    for label in ("empty_cache", "installed_cache"):
        spec = {"lib": "pynndescent", "builds": [{"n_neighbors": 11}], "queries": [{}],
                "k": 10, "threads": 2, "reps": 1, "data": str(path), "max_queries": 1000,
                "out": str(cache / "run_numba")}
        with tempfile.TemporaryDirectory() as tmp:
            res = launch(spec, cache, numba_cache=tmp if label == "empty_cache" else None)
        out[label] = {"import_s": res["import_s"], "first_call_s": res["first_call_s"],
                      "warm_build_s": res["build_s"][0][0]}
        print(f"  numba {label}: {out[label]}", flush=True)
        for f in cache.glob("run_numba_b*.npy"):
            f.unlink()
    return out


# ------------------------------------------------------------------------------------------
# report


def best_rows(rows):
    """Fastest configuration with recall >= RECALL_TARGET per (data set, library)."""
    best = {}
    for row in rows:
        if row["recall"] < RECALL_TARGET:
            continue
        key = (row["dataset"], row["library"])
        if key not in best or row["total_s"] < best[key]["total_s"]:
            best[key] = row
    order = {name: i for i, name in enumerate(DATASETS)}
    return sorted(best.values(), key=lambda r: (order[r["dataset"]], r["total_s"]))


def fmt(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def table(rows, columns):
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(c)) for c in columns) + " |")
    return lines


def versions():
    out = {}
    for name in ("hnswlib", "faiss-cpu", "pynndescent", "numba", "scikit-learn", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def write_report(payload, conclusion):
    import _common  # noqa: F401  (puts the repository root on the path)

    from reproductions.experiments.report import environment

    env = environment()
    payload["environment"] = env
    payload["ann_versions"] = versions()
    (RESULTS / f"{NAME}.json").write_text(json.dumps(payload, indent=2, default=float))
    rows = payload["rows"]
    lines = [f"# {NAME}: approximate-nearest-neighbour libraries for the kNN graph", ""]
    lines += conclusion + [""]
    lines += ["## Fastest setting with recall@k >= 0.95, per library and data set", "",
              "Times in seconds, 2 threads, median over the runs; `cold` adds the import and "
              "the first call in a fresh process; memory is the peak resident memory above "
              "the data and the imported modules; `det` compares two runs with the same "
              "seed (`order only`: same neighbour sets, different order of ties).", ""]
    cols = ["dataset", "library", "params", "build_s", "query_s", "total_s", "total_cpu_s",
            "cold_total_s", "recall", "peak_extra_MiB", "det_2threads", "det_1thread",
            "target_s", "meets"]
    best = best_rows(rows)
    for row in best:
        target = DATASETS[row["dataset"]]["target_s"]
        row["target_s"] = target
        row["meets"] = None if target is None else row["total_s"] <= target
        if row["estimated"]:
            row["params"] += f" (est. from {row['n_queried']} queries)"
    lines += table(best, cols)
    for row in best:
        for key in ("target_s", "meets"):
            row.pop(key)
        row["params"] = row["params"].split(" (est.")[0]
    lines += ["", "## All configurations", ""]
    cols = ["dataset", "library", "params", "build_s", "query_s", "total_s", "total_min_s",
            "total_max_s", "total_cpu_s", "first_call_s", "recall", "id_recall",
            "peak_extra_MiB", "det_2threads", "det_1thread", "total_1thread_s", "runs"]
    for name, meta in DATASETS.items():
        sub = [r for r in rows if r["dataset"] == name]
        if not sub:
            continue
        lines += ["", f"### {name}: {meta['title']}, k = {meta['k']}", ""]
        shown = []
        for r in sub:
            r = dict(r)
            if r["estimated"]:
                r["params"] += f" (est. from {r['n_queried']} queries)"
            shown.append(r)
        lines += table(shown, cols)
    lines += ["", "## Notes", ""]
    lines += [f"- {note}" for note in payload["notes"]]
    cold = payload.get("numba_first_call")
    if cold:
        lines.append(
            "- pynndescent first call in a fresh process (numba compilation, gauss1e5): "
            f"{cold['empty_cache']['first_call_s']:.1f} s with an empty numba cache "
            "(first use after installing, or a read-only site-packages), "
            f"{cold['installed_cache']['first_call_s']:.1f} s with the installed cache; "
            f"import {cold['empty_cache']['import_s']:.1f} / "
            f"{cold['installed_cache']['import_s']:.1f} s.")
    lines += ["- How each library's seed is set: "
              + "; ".join(f"{lib}: {note}" for lib, note in SEED_NOTES.items()) + "."]
    lines += ["", f"Machine: {env['cpu']}, {env['cores']} cores; Python {env['python']}; "
              f"{env['date']}.",
              "Versions: " + ", ".join(f"{k} {v}" for k, v in
                                       {**env["versions"], **payload["ann_versions"]}.items()
                                       if v)]
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{NAME}.md").write_text(text)
    print(text)


CONCLUSION = []


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="one setting per library, one run")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--numba", action="store_true", help="also time numba's cold start")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "psdlearn_ann"))
    ap.add_argument("--report-only", action="store_true", help="rewrite the markdown only")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        run_worker(json.loads(Path(args.worker).read_text()))
        return
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    json_path = RESULTS / f"{NAME}.json"
    payload = json.loads(json_path.read_text()) if json_path.exists() else {"rows": []}
    if not args.report_only:
        from _common import load_note

        start_load = os.getloadavg()[0]
        datasets = args.datasets.split(",")
        libs = args.libs.split(",")
        new = []
        for name in datasets:
            print(f"== {name}", flush=True)
            new += measure(name, cache, libs, args.quick)
        keys = {(r["dataset"], r["library"], r["params"]) for r in new}
        payload["rows"] = [r for r in payload["rows"]
                           if (r["dataset"], r["library"], r["params"]) not in keys] + new
        order = {name: i for i, name in enumerate(DATASETS)}
        payload["rows"].sort(key=lambda r: (order[r["dataset"]], LIBS.index(r["library"])))
        if args.numba:
            payload["numba_first_call"] = numba_cold(cache)
        notes = payload.setdefault("load_notes", {})
        for name in datasets:
            notes[name] = load_note(start_load)
    payload["notes"] = [
        "All-points kNN graph: every point queried for k + 1 neighbours against an index of "
        "all points, the point itself dropped. recall = tie-aware recall@k on 1,000 points "
        "sampled with default_rng(1) (exact neighbours by float64 brute force on them).",
        "Data as float32 (the ANN libraries need dense float32; a9a is densified). "
        "faiss_ivf: nlist = round(sqrt(n)), k-means trained on all points (faiss samples "
        "256 nlist of them). pynndescent: the graph is NNDescent.neighbor_graph (no query "
        "step), truncated to k + 1 columns. hnswlib / faiss_hnsw: efc = ef_construction, "
        "ef = search ef (at least k + 1).",
        "Rows marked `est.`: the index built on all points, the queries timed on a subset "
        "of the points (the 1,000 recall points and the first other rows) and extrapolated "
        "linearly to all n queries.",
        "Peak memory: each build setting's peak resident memory (VmHWM of /proc/self/status, "
        "reset with /proc/self/clear_refs before the build) minus the resident memory just "
        "before it (imports, a first call on 2,000 points and the data already there); it "
        "includes the index and the returned (n, k + 1) neighbour arrays. ru_maxrss of the "
        "child (RUSAGE_CHILDREN or os.wait4) is not usable here: Linux keeps, across exec, "
        "the resident size the forked child inherited from the parent (about 200 MiB for "
        "every child, whatever it did).",
    ] + [f"{name}: {note}" for name, note in payload.get("load_notes", {}).items()]
    write_report(payload, CONCLUSION)


if __name__ == "__main__":
    main()
