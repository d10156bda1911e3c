"""Shared helpers of the benchmark scripts.

Convention: each ``bench_*.py`` script measures with public tools only (``time.perf_counter``,
``tracemalloc``), repeats every measurement and reports the median, and writes
``results/<name>.md`` (a markdown table) and ``results/<name>.json`` (the rows plus the
environment: package versions, CPU, cores, date) through :func:`write_results`.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import time
import tracemalloc
from importlib import metadata
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
PACKAGES = ("psdlearn", "numpy", "scipy", "scikit-learn", "numba", "highspy", "cvxpy")


def environment():
    """Versions, CPU and date of this run."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "versions": versions,
    }


def median_time(fn, repeats=5):
    """Median wall time of ``fn()`` over ``repeats`` calls, and all the times."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def peak_memory(fn):
    """Peak bytes allocated through Python/NumPy during ``fn()`` (tracemalloc)."""
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def scaling_exponent(ns, values):
    """Least-squares slope of ``log(values)`` against ``log(ns)``."""
    slope, _ = np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(values, float)), 1)
    return float(slope)


def write_results(name, columns, rows, notes=()):
    """Write ``results/<name>.md`` and ``results/<name>.json``.

    Parameters
    ----------
    name : str
    columns : list of str
        Keys of each row, in table order.
    rows : list of dict
    notes : iterable of str
        Lines printed under the table (e.g. fitted exponents).
    """
    RESULTS.mkdir(exist_ok=True)
    env = environment()
    (RESULTS / f"{name}.json").write_text(
        json.dumps({"name": name, "environment": env, "rows": rows, "notes": list(notes)},
                   indent=2)
    )

    def fmt(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    lines = [f"# {name}", "", "| " + " | ".join(columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in columns) + " |" for r in rows]
    lines += [""] + [f"- {note}" for note in notes]
    lines += ["", f"Machine: {env['cpu']}, {env['cores']} cores; Python {env['python']}; "
              f"{env['date']}.",
              "Versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items() if v)]
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{name}.md").write_text(text)
    print(text)
