"""NPKL-ADMM (seed 001) fit time: adult a1a and a6a at the paper's settings, scaling in n.

Run: ``python benchmarks/bench_npkl_admm.py [--quick] [--max-n N]``. Writes
``benchmarks/results/npkl_admm.{md,json}``.

- a1a and a6a: seed 001 section 4 (k = 50, 0.6n + 0.6n pairs plus the n diagonal pairs of
  the pcp loss, rank by the r(r+1)/2 <= |T| rule: 103 and 275, gamma = 1, rho0 = 100,
  exactly 100 iterations), against the paper's 54.99 s and 7,661.7 s (MATLAB, i7-3370).
  Also a6a without the reverse Cuthill-McKee renumbering, to measure what it buys.
- 10-d Gaussians N(+1, I) / N(-1, I), n = 1e4 ... 1e5 (k = 5, 1000 pairs + diagonal,
  rank 44, 50 iterations): time per iteration and its exponent in n.

Times are wall-clock seconds of ``NPKL.fit`` on a precomputed Laplacian (graph excluded),
median of repeated fits after a warm-up fit that loads the compiled kernels.
"""

from __future__ import annotations

import argparse
import warnings

from _common import median_time, peak_memory, scaling_exponent, write_results

import psdlearn as pl
from psdlearn.graph import knn_laplacian
from psdlearn.npkl.admm import solve_admm
from psdlearn.npkl.bcd import initial_embedding
from psdlearn.npkl.problem import NPKLProblem

PAPER_S = {"a1a": 54.99, "a6a": 7661.7}


def fit(L, C, max_iter, rank="auto"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pl.NPKL(loss="pcp", solver="admm", graph="precomputed", rank=rank,
                       max_iter=max_iter, tol=0.0, random_state=0).fit(L, C)


def timed(L, C, max_iter, repeats, rank="auto"):
    models = []
    t, times = median_time(lambda: models.append(fit(L, C, max_iter, rank)), repeats=repeats)
    peak = peak_memory(lambda: fit(L, C, 5, rank)) / 2**20
    return t, times, models[-1], peak


COLUMNS = ["data", "n", "k", "|T|", "rank", "iters", "fit_s", "min_s", "s_per_iter",
           "paper_s", "speedup", "peak_MiB", "repeats"]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="a1a and n <= 3e4 only")
    ap.add_argument("--max-n", type=int, default=100_000)
    args = ap.parse_args()
    X, y = pl.datasets.make_two_gaussians(300, random_state=0)
    fit(knn_laplacian(X), pl.PairwiseConstraints.from_labels(y, random_state=0), 3)
    rows, notes = [], []
    for name, repeats in (("a1a", 5), ("a6a", 3)):
        if args.quick and name == "a6a":
            continue
        try:
            X, y = pl.datasets.load(name)
        except FileNotFoundError:
            notes.append(f"{name}: data file not found, skipped.")
            continue
        L = knn_laplacian(X, n_neighbors=50)
        C = pl.PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=0)
        t, times, model, peak = timed(L, C, 100, repeats)
        rows.append({"data": name, "n": len(y), "k": 50, "|T|": 2 * C.n_pairs + len(y),
                     "rank": model.rank_, "iters": model.n_iter_, "fit_s": t,
                     "min_s": min(times), "s_per_iter": t / model.n_iter_,
                     "paper_s": PAPER_S[name], "speedup": PAPER_S[name] / t,
                     "peak_MiB": peak, "repeats": repeats})
        print(rows[-1])
        if name == "a6a":
            plain = _without_renumbering(L, C, model.rank_, repeats)
            notes.append(f"a6a without the RCM renumbering: {plain:.2f} s for 100 iterations "
                         f"(x{plain / t:.2f} the time with it).")
    ns = [n for n in (10_000, 30_000, 100_000, 300_000) if n <= args.max_n]
    if args.quick:
        ns = [n for n in ns if n <= 30_000]
    per_iter = []
    for n in ns:
        X, y = pl.datasets.make_two_gaussians(n, random_state=0)
        L = knn_laplacian(X, n_neighbors=5)
        C = pl.PairwiseConstraints.from_labels(y, n_must=500, n_cannot=500, random_state=0)
        t, times, model, peak = timed(L, C, 50, 3, rank=44)
        per_iter.append(t / model.n_iter_)
        rows.append({"data": "gauss10", "n": n, "k": 5, "|T|": 2 * C.n_pairs + n, "rank": 44,
                     "iters": model.n_iter_, "fit_s": t, "min_s": min(times),
                     "s_per_iter": per_iter[-1], "paper_s": "-", "speedup": "-",
                     "peak_MiB": peak, "repeats": 3})
        print(rows[-1])
    if len(ns) > 1:
        notes.append(f"time per iteration, exponent in n over {ns}: "
                     f"{scaling_exponent(ns, per_iter):.2f}")
    notes.append("fit_s: median wall seconds of NPKL(solver='admm', loss='pcp').fit on a "
                 "precomputed Laplacian, tol = 0 so that exactly 'iters' iterations run; "
                 "peak_MiB: tracemalloc peak of a 5-iteration fit (Python/NumPy allocations).")
    notes.append(f"numba threads: {_threads()}.")
    write_results("npkl_admm", COLUMNS, rows, notes)


def _without_renumbering(L, C, rank, repeats):
    """Median seconds of 100 ADMM iterations with ``reorder=False``."""
    problem = NPKLProblem(L, C.pairs, C.signs.astype(float), "pcp", 1.0)
    V0 = initial_embedding(L.shape[0], rank, 0)
    t, _ = median_time(lambda: solve_admm(problem, V0, max_iter=100, tol=0.0, reorder=False),
                       repeats=repeats)
    return t


def _threads():
    import numba

    return numba.get_num_threads()


if __name__ == "__main__":
    main()
