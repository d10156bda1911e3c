"""Shared helpers of the benchmark scripts.

Convention: each ``bench_*.py`` script measures with public tools only (``time.perf_counter``,
``tracemalloc``), repeats every measurement and reports the median, and writes
``results/<name>.md`` (a markdown table) and ``results/<name>.json`` (rows plus the
environment: package versions, CPU, cores, date).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

# The scripts run as ``python benchmarks/bench_x.py`` from a checkout: the repository root
# goes on the path for the shared report helpers of ``reproductions`` (not installed).
_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:
    sys.path.insert(1, _REPO)

from reproductions.experiments.report import scaling_exponent  # noqa: E402
from reproductions.experiments.report import write_results as _write  # noqa: E402

__all__ = [
    "RESULTS",
    "load_note",
    "defaults_verdict",
    "gamma0_problem",
    "median_cpu",
    "median_time",
    "median_wall_cpu",
    "peak_memory",
    "scaling_exponent",
    "write_results",
]

RESULTS = Path(__file__).resolve().parent / "results"


def load_note(start_load):
    """A note with the 1-minute load average at the start (given) and now, and the cores."""
    return (f"1-minute load average at the start / end of the run: {start_load:.1f} / "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (above about 1, other jobs "
            "shared the machine and the times are inflated).")


def defaults_verdict(diff, target, oracle=None):
    """Verdict of a defaults table (issue 22, item 8) from per-seed differences to the
    baseline: ``"met"`` (mean >= ``target``), ``"below within noise"`` (short of it by at
    most two standard errors over the seeds), else ``"default misses (oracle meets)"`` or
    ``"method loses (oracle also misses)"`` by ``oracle``, the mean difference of the best
    setting of a grid chosen with the test labels (diagnosis only)."""
    mean = float(np.mean(diff))
    if mean >= target:
        return "met"
    if len(diff) > 1 and target - mean <= 2.0 * np.std(diff, ddof=1) / np.sqrt(len(diff)):
        return "below within noise"
    if oracle is None:
        return "default misses"
    if oracle >= target:
        return "default misses (oracle meets)"
    return "method loses (oracle also misses)"


def gamma0_problem(n):
    """The pairs and the Laplacian of the ``gamma_0`` benchmarks: 10-d two Gaussians
    (``make_two_gaussians``), the pairs of 2,000 labelled points (``from_labels``), the
    kNN Laplacian with k = 10 (the approximate search beyond 2e4 points), CSR."""
    import scipy.sparse as sp

    import psdlearn as pl
    from psdlearn.graph import knn_laplacian

    X, y = pl.datasets.make_two_gaussians(n, n_features=10, random_state=0)
    labels = np.full(n, -1)
    chosen = np.random.default_rng(0).choice(n, 2000, replace=False)
    labels[chosen] = y[chosen]
    C = pl.PairwiseConstraints.from_labels(labels, random_state=0)
    L = knn_laplacian(X, n_neighbors=10, random_state=0,
                      knn_method="exact" if n <= 20_000 else "approximate")
    return C, sp.csr_matrix(L)


def median_cpu(repeats, fn, *args):
    """``(median process-CPU seconds of fn(*args) over repeats calls, its last result)``."""
    times, out = [], None
    for _ in range(repeats):
        c0 = time.process_time()
        out = fn(*args)
        times.append(time.process_time() - c0)
    return statistics.median(times), out


def median_time(fn, repeats=5):
    """Median wall time of ``fn()`` over ``repeats`` calls, and all the times."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def median_wall_cpu(fn, repeats=5):
    """Median wall and median process-CPU seconds of ``fn()`` over ``repeats`` calls.

    For single-threaded code the CPU time is the work done, which other jobs on a shared
    machine inflate much less than the wall time.
    """
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def peak_memory(fn):
    """Peak bytes allocated through Python/NumPy during ``fn()`` (tracemalloc)."""
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def write_results(name, columns, rows, notes=()):
    """Write ``results/<name>.{md,json}`` and print the table."""
    print(_write(RESULTS, name, columns, rows, notes))
