"""Ctrl-C latency in each phase of a fit: from the signal to ``fit`` returning or raising.

Run: ``python benchmarks/bench_interrupt_latency.py [--sizes 100000 1000000]
[--graph-cache DIR] [--only PHASE ...] [--table-only]``. Writes the rows of each size to
``benchmarks/results/interrupt_latency_n<n>.json`` and the table of all the sizes measured
so far to ``benchmarks/results/interrupt_latency.{md,json}``.

Problem: 10-d two Gaussians N(+1, I) / N(-1, I) (``make_two_gaussians``), 2,000 labelled
points whose label pairs are the constraints (``PairwiseConstraints.from_labels``), NPKL
with the square loss at rank 20. A timer thread sends SIGINT to the main thread
(``signal.pthread_kill``) at a chosen time after ``fit`` starts, placed inside one phase
by a reference run of the same configuration (the phase times it records, or the phase's
own public function), and the script records the seconds from the signal to the return or
the raise of ``fit``, and what the user got: the ``FitInterruptedWarning`` (the fit kept
its last complete iterate) or the ``KeyboardInterrupt`` message (the estimator unchanged).
The message names the phase the signal landed in, so a row whose phase is not the one
aimed at says so.

Phases and how the signal is placed:

- ``kNN graph``: ``graph="knn"`` (faiss HNSW above 20,000 points), at half the build time
  of the reference fit (at 10^6, where a reference build is long: 20 s into the build);
- ``gamma_0``: ``graph="precomputed"`` (the Laplacian of the kNN graph),
  ``gamma="auto"``, at half the time of ``psdlearn.npkl.gamma.critical_gamma`` on it;
- ``solver``: precomputed graph, the reference ``gamma_``, no certificate, ``tol=0``,
  3.5 sweeps after the solver's set-up (both timed by a 3-sweep reference fit);
- ``certificate``: precomputed graph, the reference ``gamma_``, ``max_iter=5``, the
  certificate, at the solve time plus half the certificate time of the reference;
- ``rank escalation``: ``rank="adaptive"`` from ``rank_init=5``, at the solve time plus
  half the certificate and escalation time of the reference;
- ``solver (ADMM iterations)``: ``solver="admm"`` on 2,000 must-links and 2,000
  cannot-links drawn from the same labels (the all-pairs set gives the labelled rows
  thousands of partners each, whose Woodbury solves make an ADMM iteration take
  minutes), 2.5 iterations after its set-up;
- ``NPKLCV folds``: precomputed graph, 3 folds over 3 gammas (``cv_tol`` 1e-3), at 30 %
  of the reference search (above 2e5 points, where a reference search is long: at the
  solver row's delay, inside the first fold's fit);
- ``GeneralizedNystroem``, ``KernelMetricLearner`` (2,500 landmarks), ``PSDBoost`` with
  ``solver="column-generation"`` (the master LP in HiGHS, the pricing eigen-solves) and
  ``solver="interior-point"``: the same data and labels, after a warm-up fit on 3,000
  points (numba compilation), 5 s into the fit (15 s above 2e5 points); the message
  names the phase the signal landed in.

The graph at 10^6 (``--graph-cache``) is built once with ``psdlearn.graph.knn_laplacian``
with NPKL's defaults and reused by the precomputed phases. Latencies are single runs on a
shared machine: the load is stated under the table.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import RESULTS, load_note, write_results

import psdlearn as pl
from psdlearn.npkl.gamma import critical_gamma

N_LABELLED = 2000
RANK = 20
#: Seconds into the fits of the other estimators at which the signal is sent (three times
#: this above 2e5 points); the message names the phase it landed in.
OTHERS_DELAY = 5.0


def problem(n):
    X, y = pl.datasets.make_two_gaussians(n, n_features=10, random_state=0)
    labels = np.full(n, -1)
    idx = np.random.default_rng(0).choice(n, N_LABELLED, replace=False)
    labels[idx] = y[idx]
    return X, labels, pl.PairwiseConstraints.from_labels(labels, random_state=0)


def interrupted_fit(fit, delay):
    """Run ``fit()`` with SIGINT sent ``delay`` s after its start: (latency, got, sent)."""
    sent = []

    def fire():
        sent.append(time.perf_counter())
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    timer = threading.Timer(delay, fire)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        timer.start()
        try:
            fit()
            end = time.perf_counter()
            kept = [str(w.message) for w in caught
                    if type(w.message).__name__ == "FitInterruptedWarning"]
            got = ("warning: " + kept[0]) if kept else "no interrupt (fit ended first)"
        except KeyboardInterrupt as exc:
            end = time.perf_counter()
            got = f"raised: {exc}"
        finally:
            timer.cancel()
    if not sent:
        return None, got, delay
    return end - sent[0], got, delay


def graph_of(n, X, cache):
    path = None if cache is None else Path(cache) / f"interrupt_gauss10_n{n}.npz"
    if path is not None and path.exists():
        return sp.load_npz(path), None
    start = time.perf_counter()
    L = pl.graph.knn_laplacian(X, n_neighbors=pl.NPKL().n_neighbors, random_state=0)
    seconds = time.perf_counter() - start
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        sp.save_npz(path, L)
    return L, seconds


def run_size(n, cache, only, log, save, given_gamma=None):
    X, labels, C = problem(n)
    rows = []

    def record(phase, fit, delay):
        if only and phase not in only:
            return
        latency, got, delay = interrupted_fit(fit, delay)
        rows.append({"phase": phase, "n": n, "signal_at_s": delay,
                     "latency_s": latency, "user_got": got})
        save(rows)  # row by row: a run stopped early keeps what it measured
        log(f"n={n} {phase}: signal at {delay:.1f} s, latency "
            f"{'-' if latency is None else f'{latency:.2f}'} s | {got}")

    base = {"loss": "square", "rank": RANK, "random_state": 0}
    graph_build = None
    if n <= 200_000:
        ref = pl.NPKL(**base).fit(X, C)
        graph_build, gamma = ref.graph_time_, ref.gamma_
        L = ref.laplacian_
    else:
        L, graph_build_cached = graph_of(n, X, cache)
        gamma = None
    record("kNN graph", lambda: pl.NPKL(**base).fit(X, C),
           0.5 * graph_build if graph_build else 20.0)

    pre = {**base, "graph": "precomputed"}
    if gamma is None and given_gamma is not None:
        gamma = given_gamma
    if gamma is None or not only or "gamma_0" in only:
        start = time.perf_counter()
        gamma0 = critical_gamma(L, C.pairs, C.signs, "square")
        gamma_s = time.perf_counter() - start
        if gamma is None:
            gamma = 30.0 * gamma0  # gamma="auto" of the margin losses
        record("gamma_0", lambda: pl.NPKL(**pre).fit(L, C), 0.5 * gamma_s)

    solver_at = None
    if not only or {"solver (BCD sweeps)", "NPKLCV folds"} & only:
        ref = pl.NPKL(**pre, gamma=gamma, certificate_tol=None, max_iter=3).fit(L, C)
        sweep = float(np.median(np.diff(ref.time_history_)))
        solver_at = ref.graph_time_ + ref.fit_time_ - ref.time_history_[-1] + 3.5 * sweep
        record("solver (BCD sweeps)",
               lambda: pl.NPKL(**pre, gamma=gamma, certificate_tol=None, tol=0.0,
                               max_iter=100_000).fit(L, C), solver_at)

    if not only or "certificate" in only:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = pl.NPKL(**pre, gamma=gamma, max_iter=5).fit(L, C)
        solve = ref.fit_time_ - ref.certificate_time_
        record("certificate", lambda: pl.NPKL(**pre, gamma=gamma, max_iter=5).fit(L, C),
               ref.graph_time_ + solve + 0.5 * ref.certificate_time_)

    if not only or "rank escalation" in only:
        adaptive = {**pre, "gamma": gamma, "rank": "adaptive", "rank_init": 5, "max_iter": 5}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = pl.NPKL(**adaptive).fit(L, C)
        solve = ref.fit_time_ - ref.certificate_time_
        record("rank escalation", lambda: pl.NPKL(**adaptive).fit(L, C),
               ref.graph_time_ + solve + 0.5 * ref.certificate_time_)

    if not only or "solver (ADMM iterations)" in only:
        C_admm = pl.PairwiseConstraints.from_labels(labels, n_must=2000, n_cannot=2000,
                                                    random_state=0)
        admm = {**pre, "gamma": gamma, "solver": "admm", "certificate_tol": None}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = pl.NPKL(**admm, max_iter=2).fit(L, C_admm)
        iteration = float(ref.time_history_[-1] - ref.time_history_[-2])
        record("solver (ADMM iterations)",
               lambda: pl.NPKL(**admm, tol=0.0, max_iter=100_000).fit(L, C_admm),
               ref.graph_time_ + ref.fit_time_ - ref.time_history_[-1] + 2.5 * iteration)

    cv = {**pre, "gammas": gamma * np.array([0.3, 1.0, 3.0]), "cv": 3}
    if not only or "NPKLCV folds" in only:
        if n <= 200_000:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pl.NPKLCV(**cv).fit(L, C)
            cv_delay = 0.3 * (time.perf_counter() - start)
        else:
            cv_delay = solver_at
        record("NPKLCV folds", lambda: pl.NPKLCV(**cv).fit(L, C), cv_delay)

    others = {
        "GeneralizedNystroem": lambda X, y: pl.GeneralizedNystroem(random_state=0).fit(X, y),
        "KernelMetricLearner": lambda X, y: pl.KernelMetricLearner(
            n_landmarks=N_LABELLED + 500, random_state=0).fit(X, y),
        "PSDBoost (column generation)": lambda X, y: pl.PSDBoost(
            solver="column-generation", random_state=0).fit(X, y),
        "PSDBoost (interior point)": lambda X, y: pl.PSDBoost(
            solver="interior-point", random_state=0).fit(X, y),
    }
    X_small, labels_small, _ = problem(N_LABELLED + 1_000)
    for name, fit in others.items():
        if only and name not in only:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit(X_small, labels_small)  # numba compiles on the first fit of a process
        record(name, lambda fit=fit: fit(X, labels),
               OTHERS_DELAY if n <= 200_000 else 3 * OTHERS_DELAY)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--graph-cache", default=None, help="directory for the 10^6 graph")
    ap.add_argument("--only", nargs="*", default=None, help="phases to run")
    ap.add_argument("--gamma", type=float, default=None,
                    help="gamma of the precomputed phases above 2e5 points (default: 30 "
                         "gamma_0, computed)")
    ap.add_argument("--table-only", action="store_true",
                    help="only write the table of the sizes measured so far")
    args = ap.parse_args()
    # a background shell may start Python with SIGINT ignored: make it KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for n in [] if args.table_only else args.sizes:
        load = os.getloadavg()[0]

        def save(rows, n=n, load=load):
            (RESULTS / f"interrupt_latency_n{n}.json").write_text(json.dumps(
                {"rows": rows, "load": load_note(load)}, indent=2, default=float))

        save(run_size(n, args.graph_cache, set(args.only or ()), print, save, args.gamma))
    rows, loads = [], []
    for path in sorted(RESULTS.glob("interrupt_latency_n*.json"),
                       key=lambda p: int(p.stem.rsplit("n", 1)[1])):
        part = json.loads(path.read_text())
        rows += part["rows"]
        loads.append(f"n = {part['rows'][0]['n']}: {part['load']}" if part["rows"] else "")
    notes = [
        "latency_s: from the SIGINT to fit returning (warning: the last complete iterate "
        "kept) or raising (KeyboardInterrupt, estimator unchanged); single runs.",
        "The precomputed phases at 10^6 use the kNN Laplacian built once with "
        "psdlearn.graph.knn_laplacian (NPKL's defaults), not a fresh build per run.",
        "The machine is shared: the load of each size (1-minute load average, which counts "
        "every job on it, the sizes run at the same time in separate processes included) "
        "is on its line below; a loaded machine stretches each compiled call and so each "
        "latency.",
        *loads,
    ]
    write_results("interrupt_latency", ["phase", "n", "signal_at_s", "latency_s", "user_got"],
                  rows, notes)


if __name__ == "__main__":
    main()
