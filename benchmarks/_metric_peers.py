"""The metric-learning peers of ``bench_metric_learning.py``, run with the peers' interpreter.

metric-learn 0.7 needs scikit-learn < 1.8, so LMNN and ITML run in their own virtual
environment (``/work/venv-peers`` by default), as a child process that reads one JSON
request per line on stdin and answers one JSON line on stdout::

    {"op": "versions"}
    {"op": "fit", "method": "lmnn" | "itml", "X_train": [[...]], "y_train": [...],
     "X_test": [[...]], "seed": 0, "time_limit": 600}

A fit answers ``{"Z_train", "Z_test", "time", "error"}``: the two sets mapped by the learned
transformer (``None`` on failure or past ``time_limit`` seconds, with ``error`` saying why)
and the wall seconds of ``fit``. Both peers run with their defaults: ``LMNN()`` (3 target
neighbours) on the labels, ``ITML_Supervised()`` on the pairs it samples from the labels.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from importlib import metadata

import numpy as np
from _time_limit import time_limit
from metric_learn import LMNN, ITML_Supervised


def versions():
    out = {"python": platform.python_version()}
    for dist in ("numpy", "scipy", "scikit-learn", "metric-learn"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def fit(req):
    Xtr = np.asarray(req["X_train"], dtype=float)
    ytr = np.asarray(req["y_train"])
    Xte = np.asarray(req["X_test"], dtype=float)
    seed = int(req["seed"])
    model = {"lmnn": lambda: LMNN(random_state=seed),
             "itml": lambda: ITML_Supervised(random_state=seed)}[req["method"]]()
    t0 = time.perf_counter()
    try:
        with time_limit(float(req.get("time_limit", 600.0))):
            model.fit(Xtr, ytr)
        elapsed = time.perf_counter() - t0
        return {"Z_train": model.transform(Xtr).tolist(), "Z_test": model.transform(Xte).tolist(),
                "time": elapsed, "error": None}
    except Exception as exc:  # a peer's failure (or time-out) is a result to report
        return {"Z_train": None, "Z_test": None, "time": time.perf_counter() - t0,
                "error": f"{type(exc).__name__}: {exc}"}


def main():
    for line in sys.stdin:
        if line.strip():
            req = json.loads(line)
            out = versions() if req["op"] == "versions" else fit(req)
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
