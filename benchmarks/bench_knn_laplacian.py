"""Time and peak memory of ``knn_laplacian`` for n = 1e3 ... 1e5 (10-d Gaussians).

Run: ``python benchmarks/bench_knn_laplacian.py [--quick]``. Writes
``benchmarks/results/knn_laplacian.{md,json}``.
"""

from __future__ import annotations

import argparse

from _common import median_time, peak_memory, scaling_exponent, write_results

from psdlearn.datasets import make_two_gaussians
from psdlearn.graph import knn_laplacian


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="n up to 1e4, 2 repeats")
    args = ap.parse_args()
    ns = [1_000, 3_000, 10_000] if args.quick else [1_000, 3_000, 10_000, 30_000, 100_000]
    repeats = 2 if args.quick else 5
    rows = []
    for n in ns:
        X, _ = make_two_gaussians(n, n_features=10, random_state=0)
        t, times = median_time(lambda X=X: knn_laplacian(X, n_neighbors=10), repeats=repeats)
        peak = peak_memory(lambda X=X: knn_laplacian(X, n_neighbors=10))
        nnz = knn_laplacian(X, n_neighbors=10).nnz
        rows.append({"n": n, "k": 10, "median_s": t, "min_s": min(times), "max_s": max(times),
                     "peak_MiB": peak / 2**20, "nnz": nnz, "repeats": repeats})
    ns_ = [r["n"] for r in rows]
    notes = [
        f"time scaling exponent over n: {scaling_exponent(ns_, [r['median_s'] for r in rows]):.2f}",
        f"peak-memory scaling exponent: {scaling_exponent(ns_, [r['peak_MiB'] for r in rows]):.2f}",
        "10-d N(+1, I) / N(-1, I), k = 10, sigma rule of seed 001; exact kNN (scikit-learn).",
    ]
    write_results("knn_laplacian", ["n", "k", "median_s", "min_s", "max_s", "peak_MiB", "nnz",
                                    "repeats"], rows, notes)


if __name__ == "__main__":
    main()
