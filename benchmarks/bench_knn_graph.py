"""The kNN graph against the solve: end-to-end NPKL fits, graph times and approximate quality.

Run: ``python benchmarks/bench_knn_graph.py [--quick] [--max-n N] [--no-quality]
[--only-1e7] [--only-quality] [--only-graph-times]``. Writes
``benchmarks/results/knn_graph.{md,json}`` (``--only-1e7``: ``knn_graph_1e7.{md,json}``;
``--only-quality``: ``knn_graph_quality.{md,json}``; ``--only-graph-times [--repeats R]``:
``knn_graph_times.{md,json}``, medians of R runs).

- 10-d Gaussians N(+1, I) / N(-1, I), n = 1e4, 1e5, 1e6: ``NPKL(loss="square", rank=50)``
  with 500 + 500 pairs, end to end from the features (``knn_method="auto"``, k = 5; the
  sigma rule's search for 10 neighbours is the graph's). ``graph_s`` and ``solve_s`` are
  the estimator's own ``graph_time_`` and ``fit_time_`` of that fit; ``total_s`` is the
  wall time of ``fit``, ``cpu_s`` its process CPU time. ``precomputed_s`` is the wall time
  of the same fit on the precomputed Laplacian of the same graph (``graph="precomputed"``,
  the same default ``gamma="auto"``, whose ``gamma_0`` both fits compute). The target of
  issue 15: ``total_s <= 2 precomputed_s`` at every n (``total/precomputed``).
- mnist (70,000 x 784, k = 10) and a9a (32,561 x 123, k = 50): graph time per method
  (``knn_graph`` with its default ``n_jobs``: every core).
- Quality (``--no-quality`` skips it; ``--only-quality [--quality-sets a9a]
  [--tie-factors 1,2]``): at n = 1e5 and on a9a, the exact and the
  approximate graph, the same constraints, seed and gamma (the exact graph's default
  ``"auto"`` value): objective of the fit and the Rand index of kernel k-means on its
  embedding. a9a is binary, so many neighbours tie at the k-th
  distance and the exact graph itself depends on the row order: a third fit, exact on the
  rows permuted, measures that arbitrariness beside the approximate graph's difference.
- ``--only-1e7``: one end-to-end fit at n = 1e7 (rank 50), time and peak memory
  (``--name`` to write it elsewhere than ``knn_graph_1e7``; ``--certificate``: with the
  duality certificate, its seconds against the solve's).

Peak memory is the process's maximum resident set size (``resource``), which counts the
C++ index and the data; it is monotone over the run, so rows are in increasing n.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import warnings

import numpy as np
from _common import load_note, write_results
from sklearn.metrics import rand_score

import psdlearn as pl
from psdlearn import graph
from psdlearn.graph import knn_graph


def _rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _fit(X, C, certificate=False, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        # the duality certificate (on by default) is not part of the solve this compares,
        # unless asked for (--certificate: its cost against the solve's)
        model = pl.NPKL(loss="square", rank=50, random_state=0,
                        **({} if certificate else {"certificate_tol": None}), **kw).fit(X, C)
        return model, time.perf_counter() - t0


def _cpu_s():
    return time.process_time()


def end_to_end(ns, rows, precomputed=True, verbose=0, dtype="float64", certificate=False):
    dtype = np.dtype(dtype).type
    # compile the numba kernels outside the timings
    X, y = pl.datasets.make_two_gaussians(2000, n_features=10, random_state=1)
    _fit(X, pl.PairwiseConstraints.from_labels(y, n_must=50, n_cannot=50, random_state=0),
         dtype=dtype)
    for n in ns:
        X, y = pl.datasets.make_two_gaussians(n, n_features=10, random_state=0)
        C = pl.PairwiseConstraints.from_labels(y, n_must=500, n_cannot=500, random_state=0)
        cpu0 = _cpu_s()
        model, total = _fit(X, C, verbose=verbose, dtype=dtype, certificate=certificate)
        cpu = _cpu_s() - cpu0
        info = model.graph_info_
        rows.append({"case": "gauss10 end-to-end", "n": n, "d": 10, "k": 5,
                     "method": f"{info['method']} ({info['backend']})",
                     "recall": round(info["recall"], 4), "graph_s": model.graph_time_,
                     "solve_s": model.fit_time_, "total_s": total,
                     "total/solve": total / model.fit_time_, "cpu_s": cpu,
                     "sweeps": model.n_iter_, "peak_MiB": _rss_mib(),
                     "objective": model.objective(),
                     "converged": model.converged_, "dtype": np.dtype(dtype).name,
                     "extrapolation": model.solver_options_.get("extrapolation")})
        cert = model.certificate_ if certificate else None
        if cert is not None:
            cert_s = model.certificate_time_
            rows[-1].update({"solve_s": model.fit_time_ - cert_s, "cert_s": cert_s,
                             "cert/solve": cert_s / (model.fit_time_ - cert_s),
                             "gap": cert.relative_gap, "certified": cert.certified,
                             "cert_note": cert.note})
        if precomputed:
            L = model.laplacian_  # the graph of the end-to-end fit
            del model
            pre, pre_total = _fit(L, C, graph="precomputed")
            rows[-1]["precomputed_s"] = pre_total
            rows[-1]["total/precomputed"] = total / pre_total
        print(rows[-1], flush=True)


def graph_times(rows, quality, repeats=1, exact=True):
    """Graph time of a9a (k = 50) and mnist (k = 10); with ``repeats > 1`` the median wall
    time (min / max beside it) and the median CPU time."""
    for name, k in (("a9a", 50), ("mnist", 10)):
        X, y = pl.datasets.load(name, split="all" if name == "mnist" else "train")
        methods = ("auto", "exact") if exact and (quality or name == "a9a") else ("auto",)
        for method in methods:
            walls, cpus = [], []
            for _ in range(repeats if method == "auto" else 1):
                t0, c0 = time.perf_counter(), _cpu_s()
                _, _, index, info = knn_graph(X, n_neighbors=k, knn_method=method,
                                              random_state=0, return_index=True)
                walls.append(time.perf_counter() - t0)
                cpus.append(_cpu_s() - c0)
            rows.append({"case": f"{name} graph", "n": len(X), "d": X.shape[1], "k": k,
                         "method": f"{info['method']} ({info['backend']})",
                         "recall": round(info["recall"], 4),
                         "graph_s": float(np.median(walls)), "cpu_s": float(np.median(cpus)),
                         "repeats": len(walls), "graph_s_min": min(walls),
                         "graph_s_max": max(walls), "peak_MiB": _rss_mib()})
            print(rows[-1], flush=True)


def _permuted_exact_fit(X, C, k, gamma):
    """The exact graph with another order of tied neighbours: fit on the rows permuted."""
    perm = np.random.default_rng(1).permutation(X.shape[0])
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm))
    Cp = pl.PairwiseConstraints(inv[C.pairs], C.signs, n_samples=X.shape[0])
    model, total = _fit(X[perm], Cp, n_neighbors=k, knn_method="exact", max_iter=800,
                        gamma=gamma)
    return model, total, model.embedding_[inv]


def quality_rows(rows, sets=("gauss10", "a9a"), tie_factors=()):
    cases = []
    if "gauss10" in sets:
        cases.append(("gauss10 1e5", *pl.datasets.make_two_gaussians(
            100_000, n_features=10, random_state=0), 5, 2))
    if "a9a" in sets:
        cases.append(("a9a", *pl.datasets.load("a9a"), 50, 2))
    for name, X, y, k, n_clusters in cases:
        C = pl.PairwiseConstraints.from_labels(y, n_must=0.6 if name == "a9a" else 500,
                                               n_cannot=0.6 if name == "a9a" else 500,
                                               random_state=0)
        out = {}
        # a9a is binary: many neighbours tie at the k-th distance, and which of them the
        # exact search keeps depends on the row order; the permuted exact fit measures
        # that arbitrariness, the yardstick of the approximate graph's difference
        # and the approximate graph with other numbers of candidates per neighbour
        # (graph.HNSW_TIE_FACTOR, HNSW_INTEGER_TIE_FACTOR on integer data)
        methods = ("exact", "approximate") + (("exact, rows permuted",) if name == "a9a"
                                               else ())
        methods += tuple(f"approximate, tie factor {f:g}" for f in tie_factors)
        # one gamma for every graph: the default "auto" of the exact graph. Each graph's own
        # auto value (30 gamma_0, gamma_0 a property of the graph) would move the objective
        # by its own difference, not the graph's
        gamma = "auto"
        for method in methods:
            if method == "exact, rows permuted":
                model, total, E = _permuted_exact_fit(X, C, k, gamma)
            elif method.startswith("approximate, tie factor"):
                # a9a is integer-valued: its searches take HNSW_INTEGER_TIE_FACTOR k candidates
                factor = float(method.split()[-1])
                default = graph.HNSW_TIE_FACTOR, graph.HNSW_INTEGER_TIE_FACTOR
                graph.HNSW_TIE_FACTOR = graph.HNSW_INTEGER_TIE_FACTOR = factor
                model, total = _fit(X, C, n_neighbors=k, knn_method="approximate",
                                    max_iter=800, gamma=gamma)
                graph.HNSW_TIE_FACTOR, graph.HNSW_INTEGER_TIE_FACTOR = default
                E = model.embedding_
            else:
                model, total = _fit(X, C, n_neighbors=k, knn_method=method, max_iter=800,
                                    gamma=gamma)
                E = model.embedding_
            gamma = model.gamma_
            labels = pl.kernel_kmeans(E, n_clusters=n_clusters, n_init=10, random_state=0)
            out[method] = (model.objective(), 100 * rand_score(y, labels))
            rows.append({"case": f"{name} quality", "n": len(X), "d": X.shape[1], "k": k,
                         "method": method, "gamma": model.gamma_,
                         "recall": round(model.graph_info_["recall"], 4),
                         "graph_s": model.graph_time_, "solve_s": model.fit_time_,
                         "total_s": total, "sweeps": model.n_iter_,
                         "converged": model.converged_, "objective": out[method][0],
                         "rand": out[method][1], "peak_MiB": _rss_mib()})
            if method != "exact":
                rel = (out[method][0] - out["exact"][0]) / abs(out["exact"][0])
                rows[-1]["objective_vs_exact_%"] = 100 * rel
                rows[-1]["rand_vs_exact"] = out[method][1] - out["exact"][1]
            print(rows[-1], flush=True)


COLUMNS = ["case", "n", "d", "k", "method", "gamma", "recall", "graph_s", "repeats",
           "graph_s_min", "graph_s_max", "solve_s", "total_s",
           "total/solve", "precomputed_s", "total/precomputed", "cpu_s", "sweeps", "converged",
           "objective", "rand", "objective_vs_exact_%", "rand_vs_exact", "peak_MiB",
           "dtype", "cert_s", "cert/solve", "gap", "certified", "cert_note"]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="n <= 1e5, no mnist/quality")
    ap.add_argument("--max-n", type=int, default=1_000_000)
    ap.add_argument("--no-quality", action="store_true")
    ap.add_argument("--only-1e7", action="store_true")
    ap.add_argument("--only-graph-times", action="store_true",
                    help="the a9a and mnist graphs alone (auto), to results/knn_graph_times")
    ap.add_argument("--repeats", type=int, default=5, help="--only-graph-times: runs each")
    ap.add_argument("--verbose", type=int, default=0,
                    help="the end-to-end fits' verbose (progress on stderr)")
    ap.add_argument("--only-quality", action="store_true",
                    help="the quality rows alone, to results/knn_graph_quality")
    ap.add_argument("--name", default="knn_graph", help="results file name")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"],
                    help="--only-1e7: NPKL's dtype")
    ap.add_argument("--certificate", action="store_true",
                    help="--only-1e7: with the duality certificate (its cost apart)")
    ap.add_argument("--quality-sets", default="gauss10,a9a",
                    help="--only-quality: which of gauss10, a9a")
    ap.add_argument("--tie-factors", default="",
                    help="--only-quality: extra approximate a9a fits at these numbers of "
                         "candidates per neighbour (comma list; e.g. 1,2)")
    args = ap.parse_args()
    start_load = os.getloadavg()[0]
    rows = []
    notes = [f"{os.cpu_count()} cores; the searches use all of them, the BCD solve its own "
             "threads above 2e7 multiply-adds per pass."]
    if args.only_1e7:
        end_to_end([10_000_000], rows, precomputed=False, verbose=args.verbose,
                   dtype=args.dtype, certificate=args.certificate)
        if args.certificate:
            notes.append("With the duality certificate (certificate_tol=1e-4, the default): "
                         "solve_s is the solve alone (fit_time_ - certificate_time_), "
                         "cert_s the certificate's seconds, cert/solve their ratio; gap "
                         "and certified from certificate_, cert_note its note.")
        notes.append(load_note(start_load))
        write_results("knn_graph_1e7" if args.name == "knn_graph" else args.name, COLUMNS,
                      rows, notes)
        return
    if args.only_graph_times:
        graph_times(rows, quality=False, repeats=args.repeats, exact=False)
        notes.append(load_note(start_load))
        write_results("knn_graph_times", COLUMNS, rows, notes)
        return
    if args.only_quality:
        quality_rows(rows, sets=args.quality_sets.split(","),
                     tie_factors=[float(f) for f in args.tie_factors.split(",") if f])
        notes.append(load_note(start_load))
        write_results("knn_graph_quality", COLUMNS, rows, notes)
        return
    ns = [n for n in (10_000, 100_000, 1_000_000) if n <= args.max_n]
    if args.quick:
        ns = [n for n in ns if n <= 100_000]
    end_to_end(ns, rows)
    if not args.quick or args.name != "knn_graph":
        graph_times(rows, quality=not args.no_quality)
        if not args.no_quality:
            quality_rows(rows)
    notes.append(load_note(start_load))
    write_results(args.name, COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
