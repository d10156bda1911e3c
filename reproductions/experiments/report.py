"""Writing results: a markdown table and a JSON file with the run's environment.

Used by the reproductions (``python -m reproductions``) and by the scripts in ``benchmarks/``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from importlib import metadata
from pathlib import Path

import numpy as np

__all__ = ["environment", "scaling_exponent", "write_results"]

PACKAGES = ("psdlearn", "numpy", "scipy", "scikit-learn", "numba", "highspy", "cvxpy",
            "clarabel")


def environment():
    """Versions, CPU, cores and date of this run, as a dict."""
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


def scaling_exponent(ns, values):
    """Least-squares slope of ``log(values)`` against ``log(ns)``."""
    slope, _ = np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(values, float)), 1)
    return float(slope)


def _fmt(value):
    if isinstance(value, float):
        return "n/a" if not np.isfinite(value) else f"{value:.4g}"
    return "" if value is None else str(value)


def write_results(out_dir, name, columns, rows, notes=(), title=None, extra=None):
    """Write ``<out_dir>/<name>.md`` and ``<out_dir>/<name>.json`` and return the markdown.

    Parameters
    ----------
    out_dir : path-like
    name : str
    columns : list of str
        Row keys in table order.
    rows : list of dict
    notes : iterable of str
        Bullet lines under the table.
    title : str, optional
    extra : dict, optional
        More JSON fields (e.g. raw per-repetition values).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = environment()
    payload = {"name": name, "environment": env, "columns": list(columns), "rows": rows,
               "notes": list(notes)}
    payload.update(extra or {})
    (out_dir / f"{name}.json").write_text(json.dumps(payload, indent=2, default=float))
    lines = [f"# {title or name}", "", "| " + " | ".join(columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in columns) + " |" for r in rows]
    if notes:
        lines += [""] + [f"- {note}" for note in notes]
    lines += ["", f"Machine: {env['cpu']}, {env['cores']} cores; Python {env['python']}; "
              f"{env['date']}.",
              "Versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items() if v)]
    text = "\n".join(lines) + "\n"
    (out_dir / f"{name}.md").write_text(text)
    return text
