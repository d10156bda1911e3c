"""Cost of ``NPKL.partial_fit`` (10% more pairs) against a refit on all the pairs.

Run: ``python benchmarks/bench_partial_fit.py [--sizes 10000,100000] [--repeats 3]
[--loss hinge] [--suffix S]``. Writes ``benchmarks/results/partial_fit[_<loss>][_S].{md,json}``
(``--suffix before``: the same protocol run against an older ``psdlearn`` on
``PYTHONPATH``, for a before/after table under the same load).

Data: ``psdlearn.datasets.make_two_gaussians`` (10-d), ``n`` points; ``m`` random pairs
from the labels (half must-link, half cannot-link), then ``m / 10`` more. Per repeat
(a new draw of the pairs each time), NPKL with its defaults is fitted on the ``m`` pairs
(not timed), then timed: ``partial_fit`` with the new pairs, and a refit from scratch on
all of them (``fit`` total, graph included, and its solver part ``fit_time_``) with the
same defaults: ``partial_fit`` chooses ``gamma="auto"`` and ``rank="auto"`` for the union as
that fit does, so both solve one problem. Medians over the repeats; ratio = partial_fit /
refit (goal <= 0.2 at n = 10^5), in wall and in CPU seconds. The certificate of the partial fit is
computed on the first read of ``certificate_`` (``NPKL.partial_fit`` at a fixed rank): that
read is timed apart and the ``with read`` ratios add it. ``objective rel. diff``: the
relative difference of the two final objectives (the same convex problem; both stop at
``tol``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np
from _common import load_note, write_results
from threadpoolctl import threadpool_info

import psdlearn as pl

COLUMNS = ["n", "loss", "rank", "m", "added", "partial_fit s", "refit s", "refit solver s",
           "ratio", "ratio (solver only)", "certificate read s", "ratio with read",
           "partial_fit CPU s", "refit CPU s", "CPU ratio", "CPU ratio with read",
           "sweeps partial", "sweeps refit", "objective rel. diff", "gap partial", "gap refit",
           "repeats"]


def one_repeat(X, y, m, loss, seed):
    C = pl.PairwiseConstraints.from_labels(y, m // 2 + m // 20, m // 2 + m // 20,
                                           random_state=seed)
    perm = np.random.default_rng(seed).permutation(C.n_pairs)
    first = np.sort(perm[:m])
    A = pl.PairwiseConstraints(C.pairs[first], C.signs[first], C.n_samples)
    B = pl.PairwiseConstraints(np.delete(C.pairs, first, 0), np.delete(C.signs, first),
                               C.n_samples)
    params = dict(loss=loss, random_state=seed)
    model = pl.NPKL(**params).fit(X, A)
    t0, c0 = time.perf_counter(), time.process_time()
    model.partial_fit(X, B)
    partial, partial_cpu = time.perf_counter() - t0, time.process_time() - c0
    sweeps_partial = model.n_iter_
    # the certificate of a partial fit is computed on first read: its cost, apart
    t0, c0 = time.perf_counter(), time.process_time()
    cert = model.certificate_
    read, read_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    fresh = pl.NPKL(**params).fit(X, C)
    refit, refit_cpu = time.perf_counter() - t0, time.process_time() - c0
    f_p, f_r = model.objective(), fresh.objective()
    return dict(rank=model.rank_, m=A.n_pairs, added=B.n_pairs, partial=partial, refit=refit,
                refit_solver=fresh.fit_time_, sweeps_partial=sweeps_partial,
                sweeps_refit=fresh.n_iter_, rel=abs(f_p - f_r) / abs(f_r), read=read,
                partial_cpu=partial_cpu, read_cpu=read_cpu, refit_cpu=refit_cpu,
                gap_partial=cert.relative_gap, gap_refit=fresh.certificate_.relative_gap)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--loss", default="hinge")
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--suffix", default="")
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    rows, raw = [], {}
    for n in (int(s) for s in args.sizes.split(",")):
        X, y = pl.datasets.make_two_gaussians(n, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an uncertified or max_iter fit still times
            runs = [one_repeat(X, y, args.pairs, args.loss, seed)
                    for seed in range(args.repeats)]
        raw[n] = runs
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append({"n": n, "loss": args.loss, "rank": int(med["rank"]), "m": int(med["m"]),
                     "added": int(med["added"]), "partial_fit s": round(med["partial"], 2),
                     "refit s": round(med["refit"], 2),
                     "refit solver s": round(med["refit_solver"], 2),
                     "ratio": round(med["partial"] / med["refit"], 3),
                     "ratio (solver only)": round(med["partial"] / med["refit_solver"], 3),
                     "certificate read s": round(med["read"], 2),
                     "ratio with read": round(statistics.median(
                         (r["partial"] + r["read"]) for r in runs) / med["refit"], 3),
                     "partial_fit CPU s": round(med["partial_cpu"], 2),
                     "refit CPU s": round(med["refit_cpu"], 2),
                     "CPU ratio": round(med["partial_cpu"] / med["refit_cpu"], 3),
                     "CPU ratio with read": round(statistics.median(
                         (r["partial_cpu"] + r["read_cpu"]) for r in runs)
                         / med["refit_cpu"], 3),
                     "sweeps partial": int(med["sweeps_partial"]),
                     "sweeps refit": int(med["sweeps_refit"]),
                     "objective rel. diff": f"{med['rel']:.1e}",
                     "gap partial": f"{med['gap_partial']:.1e}",
                     "gap refit": f"{med['gap_refit']:.1e}", "repeats": args.repeats})
        print(rows[-1], flush=True)
    notes = ["Times are medians over the repeats, in seconds; the ratio is of the medians.",
             "objective rel. diff: both fits stop at the default tol=1e-5, each where its "
             "own path ends (the hinge fits are not certified there, gap about 1e-3); "
             "tests/test_npkl_partial_fit.py finds 1e-6 at tol=1e-8.",
             "partial_fit keeps the graph and the neighbour index of the first fit, chooses "
             "gamma='auto' and rank='auto' for the union as the refit does (one gamma_0 "
             "eigen-solve, started from the first fit's vectors since 2026-11-29) and "
             "starts from its embedding; the refit builds the graph again.",
             "At a fixed rank partial_fit leaves its duality certificate to the first read "
             "of certificate_ (the refit computes its own in fit): 'certificate read s' is "
             "that read, timed after the partial fit; the 'with read' ratios add it. CPU: "
             "process time (one thread: the work done, less inflated by other jobs than "
             "the wall time). gap: the certificates' relative duality gaps (medians).",
             "BLAS threads: " + ", ".join(
                 f"{os.path.basename(i['filepath']).split('-')[0]} {i['num_threads']}"
                 for i in threadpool_info() if i["user_api"] == "blas")
             + " (on this shared 2-core machine two BLAS threads made a 1e4 x 44 SVD "
             "20-40x slower under load, which inflated the certificate of both fits; run "
             "with OPENBLAS_NUM_THREADS=1).",
             load_note(start_load)]
    name = "partial_fit" if args.loss == "hinge" else f"partial_fit_{args.loss}"
    name += f"_{args.suffix}" if args.suffix else ""
    write_results(name, COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
