"""NPKLCV (8 gammas x 3 folds + refit) on a1a against a single NPKL fit, in one script.

Run: ``python benchmarks/bench_npklcv.py [--repeats R]``. Writes
``benchmarks/results/npklcv.{md,json}``.

a1a (k = 50), one protocol draw (0.6n + 0.6n pairs, seed 0), precomputed Laplacian:

- ``single``: ``NPKL`` at its default ``gamma="auto"`` (the adult protocol otherwise: BCD
  hinge 800 sweeps, ADMM pcp 100 iterations);
- ``NPKLCV``: the default grid (8 gammas, a tenth to 100 times ``gamma="auto"``), 3 folds,
  fold fits warm-started along the path to ``cv_tol = 1e-3`` (ADMM: ``U``, ``Lambda`` and
  ``rho`` too), refit at the protocol's tol;
- ``cold path``: the same 24 fold fits without warm start (each from a random start, same
  tol), plus the refit: what the warm starts save.

CPU seconds (``time.process_time``; the solvers are single-threaded at this size, so CPU
time is their work even on a loaded machine), medians over ``--repeats``; and sweeps /
iterations, which the load does not touch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

from _common import load_note, write_results

import psdlearn as pl
from psdlearn.model_selection import ConstraintKFold
from reproductions.experiments.protocol import load_set_with_graph

COLUMNS = ["case", "loss / solver", "CPU s", "ratio to single", "sweeps or iterations",
           "sweep ratio", "gamma", "repeats"]


def cpu(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        c0 = time.process_time()
        out = fn()
        times.append(time.process_time() - c0)
    return statistics.median(times), out


def quiet(fn):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    return run


def cold_path(L, C, params, grid, rank, chosen):
    """The fold fits of NPKLCV without warm starts, then the refit: total sweeps."""
    sweeps = 0
    for train, _ in ConstraintKFold(3).split(C):
        Ct = pl.PairwiseConstraints(C.pairs[train], C.signs[train], C.n_samples)
        for g in grid:
            m = pl.NPKL(graph="precomputed", gamma=float(g), rank=rank, random_state=0,
                        **{**params, "tol": 1e-3}).fit(L, Ct)
            sweeps += m.n_iter_
    m = pl.NPKL(graph="precomputed", gamma=chosen, rank=rank, random_state=0,
                **params).fit(L, C)
    return sweeps + m.n_iter_


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    _, y, _, L = load_set_with_graph("a1a")
    C = pl.PairwiseConstraints.from_labels(y, 0.6, 0.6, random_state=0)
    rows = []
    cases = {"hinge / bcd": {"loss": "hinge", "solver": "bcd", "max_iter": 800},
             "pcp / admm": {"loss": "pcp", "solver": "admm", "max_iter": 100}}
    pl.NPKL(graph="precomputed", max_iter=5).fit(L, C)  # numba compilation, not timed
    pl.NPKL(graph="precomputed", loss="pcp", solver="admm", max_iter=5).fit(L, C)
    for label, params in cases.items():
        single_s, single = cpu(quiet(lambda p=params: pl.NPKL(
            graph="precomputed", random_state=0, **p).fit(L, C)), args.repeats)
        cv_s, cv = cpu(quiet(lambda p=params: pl.NPKLCV(
            graph="precomputed", cv=3, random_state=0, **p).fit(L, C)), args.repeats)
        cv_sweeps = int(cv.cv_n_iter_.sum() + cv.n_iter_)
        rows.append({"case": "single fit", "loss / solver": label, "CPU s": f"{single_s:.2f}",
                     "ratio to single": "1", "sweeps or iterations": single.n_iter_,
                     "sweep ratio": "1", "gamma": f"{single.gamma_:.3g}",
                     "repeats": args.repeats})
        rows.append({"case": "NPKLCV 8 x 3 + refit", "loss / solver": label,
                     "CPU s": f"{cv_s:.2f}", "ratio to single": f"{cv_s / single_s:.1f}",
                     "sweeps or iterations": cv_sweeps,
                     "sweep ratio": f"{cv_sweeps / single.n_iter_:.1f}",
                     "gamma": f"{cv.gamma_:.3g}", "repeats": args.repeats})
        print(rows[-2:], flush=True)
        cold_s, cold = cpu(quiet(lambda p=params, g=cv.gammas_, r=cv.rank_,
                                  c=cv.gamma_: cold_path(L, C, p, g, r, c)), 1)
        rows.append({"case": "cold path 8 x 3 + refit", "loss / solver": label,
                     "CPU s": f"{cold_s:.2f}", "ratio to single": f"{cold_s / single_s:.1f}",
                     "sweeps or iterations": cold,
                     "sweep ratio": f"{cold / single.n_iter_:.1f}", "gamma": "-",
                     "repeats": 1})
        print(rows[-1], flush=True)
    write_results("npklcv", COLUMNS, rows, [
        "a1a (n = 1605, k = 50), one draw of 963 + 963 pairs; CPU seconds of fit "
        "(graph built once beforehand, numba compiled beforehand), medians; NPKLCV CPU "
        "includes gamma_0 and the scoring.",
        "Target of issue #17: NPKLCV (8 gammas x 3 folds) <= 10x a single fit.",
        "sweeps or iterations: BCD sweeps (all smoothing stages) or ADMM iterations, summed "
        "over the fold fits and the refit.",
        load_note(start_load),
    ])


if __name__ == "__main__":
    main()
