"""The same data, any container, any row order: what holds, and what the exact re-ranking costs.

Run: ``python benchmarks/bench_invariance.py [--quick] [--repeats R]``. Writes
``benchmarks/results/invariance_{exact,approximate,npkl}.{md,json}`` (summarised in
``invariance.md``).

Three tables, public API only:

- ``invariance_exact``: the exact search (``NeighborIndex("exact")``) against
  scikit-learn's ``NearestNeighbors`` with the same backend (brute force or kd-tree), the
  search psdlearn used before it ranked its candidates by (canonical distance, index).
  Median wall seconds (fit + all-points ``kneighbors``), their ratio, and for each: in how
  many rows the dense and the CSR input give different lists.
- ``invariance_npkl``: ``NPKL(loss="square", n_neighbors=10, random_state=0)`` on a1a, the
  case of issue 38: dense against CSR input (Laplacian entries that differ, ``gamma_``,
  objective), and a row permutation with the constraints relabelled (largest kernel
  entry difference relative to the largest entry). The "sklearn lists" row builds the
  Laplacian from scikit-learn's lists (dense and CSR input), as psdlearn did before.
- ``invariance_approximate``: the HNSW search (``knn_method="approximate"``, one thread,
  seed 0): recall@k against the exact lists (tie-aware: a neighbour counts when it is
  within the exact k-th distance), rows whose lists differ between dense and CSR input,
  and the mean overlap of the lists of the original and of a row-permuted input.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from functools import partial

import numpy as np
import scipy.sparse as sp
from _common import load_note, write_results
from sklearn.neighbors import NearestNeighbors

import psdlearn as pl
from psdlearn.graph import (
    NeighborIndex,
    graph_from_neighbors,
    normalized_laplacian,
    sigma_rule,
)

K = 10
#: Largest n whose CSR copy is searched too (brute force, O(n^2)).
SPARSE_MAX_SAMPLES = 20_000


def _gaussian(n, d, seed):
    return np.random.default_rng(seed).normal(size=(n, d))


def _grid(n, d, seed):
    """Integer coordinates in [0, 8): many ties at the k-th distance."""
    return np.random.default_rng(seed).integers(0, 8, size=(n, d)).astype(np.float64)


def _a_set(name):
    return lambda n, d, seed: pl.datasets.load(name)[0][:n]


def _timed_pair(first, second, X, repeats):
    """Median wall seconds of ``first(X)`` and ``second(X)``, alternating within each
    repeat, and their last outputs."""
    times, out = ([], []), [None, None]
    for _ in range(repeats):
        for slot, fn in enumerate((first, second)):
            t0 = time.perf_counter()
            out[slot] = fn(X)
            times[slot].append(time.perf_counter() - t0)
    return statistics.median(times[0]), statistics.median(times[1]), out


def _sklearn_lists(X, algorithm):
    _, ind = NearestNeighbors(n_neighbors=K, algorithm=algorithm).fit(X).kneighbors()
    return ind


def _former(X, algorithm):
    """The search psdlearn ran before: scikit-learn's lists, queried in blocks of
    ``2e8 / (n max(d, 8))`` rows (64 to 65,536; the kd-tree in blocks of 8,192), each
    point's own index dropped from its ``k + 1`` neighbours."""
    n, d = X.shape
    nn = NearestNeighbors(algorithm=algorithm).fit(X)
    step = 8192 if algorithm == "kd_tree" else int(np.clip(2e8 / (n * max(d, 8)), 64, 65_536))
    out = []
    for start in range(0, n, step):
        _, ind = nn.kneighbors(X[start:start + step], n_neighbors=K + 1)
        rows = np.arange(start, start + len(ind))[:, None]
        keep = ind != rows
        keep[keep.all(axis=1), -1] = False   # own index not listed: drop the farthest
        out.append(ind[keep].reshape(len(ind), K))
    return np.vstack(out)


def _ours(X):
    return NeighborIndex("exact").fit(X).kneighbors(n_neighbors=K)[1]


def exact_rows(cases, repeats):
    rows = []
    for label, make, n, d in cases:
        X = make(n, d, 0)
        n, d = X.shape
        algorithm = "kd_tree" if d <= 6 else "brute"
        t_sk, t_ours, (sk_dense, ours_dense) = _timed_pair(
            partial(_sklearn_lists, algorithm=algorithm), _ours, X, repeats)
        t_former = statistics.median(
            _timed_pair(partial(_former, algorithm=algorithm), _ours, X, 1)[0]
            for _ in range(repeats))
        # the kd-tree takes dense input only; its sparse counterpart is brute force,
        # O(n^2): compared up to SPARSE_MAX_SAMPLES points
        differ = {"sklearn": "", "psdlearn": ""}
        if n <= SPARSE_MAX_SAMPLES:
            for name, fn, dense in (("sklearn", lambda Z: _sklearn_lists(Z, "brute"),
                                     sk_dense), ("psdlearn", _ours, ours_dense)):
                differ[name] = int(np.sum(np.any(dense != fn(sp.csr_matrix(X)), axis=1)))
        rows.append({
            "data": label, "n": n, "d": d, "backend": algorithm,
            "sklearn_s": round(t_sk, 4), "former_s": round(t_former, 4),
            "psdlearn_s": round(t_ours, 4), "psdlearn/sklearn": round(t_ours / t_sk, 3),
            "psdlearn/former": round(t_ours / t_former, 3),
            "sklearn_rows_dense_ne_csr": differ["sklearn"],
            "psdlearn_rows_dense_ne_csr": differ["psdlearn"],
            "repeats": repeats,
        })
    return rows


def _laplacian_from_sklearn(X):
    dist, ind = NearestNeighbors(n_neighbors=K, algorithm="brute").fit(X).kneighbors()
    return normalized_laplacian(graph_from_neighbors(dist, ind, sigma_rule(dist)))


def npkl_rows(n):
    X, y = pl.datasets.load("a1a")
    X, y = X[:n], y[:n]
    L_dense, L_sparse = _laplacian_from_sklearn(X), _laplacian_from_sklearn(sp.csr_matrix(X))
    rows = [{"data": "a1a", "case": "sklearn lists (before)", "n": len(X),
             "laplacian_entries_differ": int((L_dense != L_sparse).nnz),
             "largest_difference": float(abs(L_dense - L_sparse).max()),
             "gamma_a": "", "gamma_b": "", "objective_a": "", "objective_b": "",
             "kernel_rel_diff": ""}]
    rows += _npkl_pair_rows("a1a", X, y)
    # continuous features, no ties: the row order must not matter
    rng = np.random.default_rng(0)
    labels = np.arange(n) % 2
    Z = rng.normal(size=(n, 10)) + 2.0 * np.eye(10)[labels]
    return rows + _npkl_pair_rows("Gaussian blobs, 10-d", Z, labels)


def _npkl_pair_rows(data, X, y):
    C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=0)
    rows = []
    perm = np.random.default_rng(1).permutation(len(X))
    where = np.argsort(perm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = {name: pl.NPKL(loss="square", n_neighbors=K, random_state=0).fit(Z, C)
               for name, Z in (("dense", X), ("csr", sp.csr_matrix(X)))}
        fit["permuted"] = pl.NPKL(loss="square", n_neighbors=K, random_state=0).fit(
            X[perm], pl.PairwiseConstraints(where[C.pairs], C.signs))
    a = fit["dense"]
    K_a = a.embedding_ @ a.embedding_.T
    for name in ("csr", "permuted"):
        b = fit[name]
        back = where if name == "permuted" else np.arange(len(X))
        L_b = b.laplacian_[back][:, back]
        K_b = (b.embedding_ @ b.embedding_.T)[back][:, back]
        rows.append({
            "data": data, "case": f"NPKL dense vs {name}", "n": len(X),
            "laplacian_entries_differ": int((a.laplacian_ != L_b).nnz),
            "largest_difference": float(abs(a.laplacian_ - L_b).max()),
            "gamma_a": round(a.gamma_, 6), "gamma_b": round(b.gamma_, 6),
            "objective_a": round(a.objective(), 6), "objective_b": round(b.objective(), 6),
            "kernel_rel_diff": float(np.abs(K_a - K_b).max() / np.abs(K_a).max()),
        })
    return rows


def _recall(ind, X, exact_d):
    """Tie-aware recall@k: a neighbour counts when within the exact k-th distance."""
    found = 0
    for start in range(0, len(X), 2048):
        part = slice(start, start + 2048)
        diff = X[ind[part]] - X[part][:, None, :]
        dist = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
        found += int(np.sum(dist <= exact_d[part, -1:] * (1 + 1e-9) + 1e-12))
    return found / ind.size


def approximate_rows(cases):
    rows = []
    for label, make, n, d in cases:
        X = make(n, d, 0)
        X = X.astype(np.float32).astype(np.float64)   # HNSW works in float32
        n, d = X.shape

        def search(Z):
            return NeighborIndex("approximate", n_jobs=1, random_state=0).fit(
                Z).kneighbors(n_neighbors=K)[1]

        dense, sparse = search(X), search(sp.csr_matrix(X))
        perm = np.random.default_rng(1).permutation(n)
        where = np.argsort(perm)
        permuted = perm[search(X[perm])][where]
        exact_d, exact_i = NeighborIndex("exact").fit(X).kneighbors(n_neighbors=K)
        overlap = np.mean([len(np.intersect1d(a, b)) / K
                           for a, b in zip(dense, permuted, strict=True)])
        exact_overlap = np.mean([len(np.intersect1d(a, b)) / K
                                 for a, b in zip(dense, exact_i, strict=True)])
        rows.append({
            "data": label, "n": n, "d": d, "recall": round(_recall(dense, X, exact_d), 4),
            "recall_permuted": round(_recall(permuted, X, exact_d), 4),
            "rows_dense_ne_csr": int(np.sum(np.any(dense != sparse, axis=1))),
            "overlap_permuted": round(float(overlap), 4),
            "overlap_exact_lists": round(float(exact_overlap), 4),
        })
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tables", nargs="+", default=["exact", "npkl", "approximate"])
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    if args.quick:
        exact = [("a1a (binary)", _a_set("a1a"), 1605, 123),
                 ("Gaussian", _gaussian, 3000, 20), ("grid (ties)", _grid, 5000, 3)]
        approx = [("Gaussian", _gaussian, 5000, 10), ("a1a (binary)", _a_set("a1a"), 1605, 0)]
    else:
        exact = [("a1a (binary)", _a_set("a1a"), 1605, 123),
                 ("a9a (binary)", _a_set("a9a"), 10_000, 123),
                 ("Gaussian", _gaussian, 10_000, 20), ("Gaussian", _gaussian, 10_000, 3),
                 ("grid (ties)", _grid, 10_000, 3), ("Gaussian", _gaussian, 100_000, 3),
                 ("grid (ties)", _grid, 100_000, 3)]
        approx = [("Gaussian", _gaussian, 20_000, 10), ("a1a (binary)", _a_set("a1a"), 1605, 0),
                  ("a9a (binary)", _a_set("a9a"), 10_000, 0)]
    if "exact" in args.tables:
        write_exact(exact_rows(exact, args.repeats), load_note(start_load))
    if "npkl" in args.tables:
        write_npkl(npkl_rows(400 if args.quick else 1605), load_note(start_load))
    if "approximate" in args.tables:
        write_approximate(approximate_rows(approx), load_note(start_load))


def write_exact(rows, note_load):
    write_results("invariance_exact", list(rows[0]), rows, notes=[
        "sklearn_s / former_s / psdlearn_s: median wall seconds of fit + "
        "kneighbors(n_neighbors=10) of the indexed points: scikit-learn's NearestNeighbors "
        "(same backend) in one call; the same in the query blocks psdlearn's search used "
        "before this change (its former cost); psdlearn's NeighborIndex('exact') now. "
        "*_rows_dense_ne_csr: rows whose lists differ between the dense and the CSR copy "
        "of the same array.",
        note_load])


def write_npkl(rows, note_load):
    write_results("invariance_npkl", list(rows[0]), rows, notes=[
        "NPKL(loss='square', n_neighbors=10, random_state=0) on a1a (binary features, ties "
        "at the 10th distance) and on two Gaussian blobs in 10-d (seed 0, no ties), "
        "constraints from_labels(n_must=0.6, n_cannot=0.6, random_state=0); permuted: rows "
        "in a random order (seed 1), constraints relabelled; kernel_rel_diff: "
        "max |K_a - K_b| / max |K_a| (K = embedding_ @ embedding_.T, rows mapped back).",
        note_load])


def write_approximate(rows, note_load):
    write_results("invariance_approximate", list(rows[0]), rows, notes=[
        "NeighborIndex('approximate', n_jobs=1, random_state=0), k = 10; recall: tie-aware "
        "recall@10 against the exact search, over all points; overlap_permuted: mean "
        "|list(original) & list(permuted input, mapped back)| / 10; overlap_exact_lists: "
        "the same against the exact (distance, index) lists.", note_load])


if __name__ == "__main__":
    main()
