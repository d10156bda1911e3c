"""Peer runner of the task benchmarks: the other libraries' methods, run in their own Python.

metric-learn 0.7 needs scikit-learn < 1.8 and active-semi-supervised-clustering pins
nothing but sets ``np.seterr("raise")`` at import, so the peers run in a virtual
environment of their own (``python -m venv /work/venv-peers``, then ``pip install
"scikit-learn==1.7.*" metric-learn active-semi-supervised-clustering``) and this module is
executed with that environment's interpreter. It imports nothing from psdlearn.

Two ways to call it:

- ``python _peers.py REQUEST.json`` answers one request and prints the answer (JSON);
- ``python _peers.py --serve`` answers one request per line of standard input with one
  line of standard output, so that a benchmark can interleave peers and psdlearn per seed
  without paying the interpreter's start-up once per fit.

Requests (JSON objects; arrays as nested lists):

``{"op": "versions"}``
    The versions of Python, NumPy, SciPy, scikit-learn and the two peer packages.
``{"op": "cluster", "X", "n_clusters", "pairs", "signs", "seed", "methods"}``
    Constrained clustering of ``X`` from index pairs with signs +1 (must-link) and -1
    (cannot-link). Methods: ``"pckmeans"``, ``"mpckmeans"``, ``"copkmeans"``
    (active-semi-supervised-clustering, defaults) and ``"itml_kmeans"`` (metric-learn's
    ``ITML`` with its defaults on the pairs, then scikit-learn's ``KMeans`` with
    ``n_init=10`` on the transformed points). Answer per method: ``labels``, ``time``
    (seconds of the whole fit, retries included), ``attempts``, ``error``.
``{"op": "pairs", "X", "fit_pairs", "fit_y", "val_pairs", "val_y", "test_points", "seed",
"methods"}``
    Pair verification. ``X`` holds the training points (the learner's preprocessor),
    ``fit_pairs``/``val_pairs`` index it, ``test_points`` is an array ``(m, 2, d)`` of pairs
    of points the learner never saw. Methods ``"itml"`` and ``"mmc"`` (metric-learn's
    pairs classifiers with their defaults): fit on the fit pairs,
    ``calibrate_threshold(val_pairs, val_y, strategy="accuracy")``, then
    ``decision_function`` and ``predict`` on the test pairs. Answer per method:
    ``scores``, ``predictions``, ``time`` (fit only), ``error``.

Every fit is stopped after ``time_limit`` seconds (default ``TIME_LIMIT``), which is
then reported as the method's error (``TimeoutError``). With ``"warmup": true`` each
method first fits, untimed, on a few of the pairs (``_warmup.py``; stopped after 2 s,
its errors ignored).

The clustering peers draw from NumPy's global random state, which is seeded with ``seed``
before each fit. PCKMeans and COPKMeans raise ``EmptyClustersException`` (and COPKMeans
``ClusteringNotFoundException``) when a random start goes wrong; as a user would, the fit
is then repeated, up to ``MAX_ATTEMPTS`` times, with the random stream going on. An
``InconsistentConstraintsException`` (a cannot-link inside the transitive closure of the
must-links, which flipped signs make likely) does not depend on the start and is reported
as the method's error.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from importlib import metadata

import numpy as np
from _time_limit import time_limit
from _warmup import WARMUP_TIME_LIMIT, warmup_indices

_DEFAULT_ERR = np.geterr()
from active_semi_clustering.exceptions import (  # noqa: E402
    ClusteringNotFoundException,
    EmptyClustersException,
)
from active_semi_clustering.semi_supervised.pairwise_constraints import (  # noqa: E402
    COPKMeans,
    MPCKMeans,
    PCKMeans,
)
from metric_learn import ITML, MMC  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402

# MPCKMeans' module sets ``np.seterr("raise")`` for the whole process at import; keep that
# for the package's own fits (its intended setting) and NumPy's defaults for the others.
np.seterr(**_DEFAULT_ERR)

MAX_ATTEMPTS = 3
TIME_LIMIT = 30.0
_RETRY = (EmptyClustersException, ClusteringNotFoundException)
_ASSC = {"pckmeans": PCKMeans, "mpckmeans": MPCKMeans, "copkmeans": COPKMeans}
_PAIRS = {"itml": ITML, "mmc": MMC}


def versions():
    """Versions of the interpreter and of every package the peers use."""
    out = {"python": platform.python_version()}
    for dist in ("numpy", "scipy", "scikit-learn", "metric-learn",
                 "active-semi-supervised-clustering"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out



def _fit_assc(name, X, k, ml, cl, seed):
    np.random.seed(seed)  # noqa: NPY002 (the package draws from the global state)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            with np.errstate(all="raise"):
                model = _ASSC[name](n_clusters=k).fit(X, ml=ml, cl=cl)
            return model.labels_, attempt
        except _RETRY:
            if attempt == MAX_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _fit_itml_kmeans(X, k, pairs, signs, seed):
    itml = ITML(preprocessor=X, random_state=seed).fit(pairs, signs)
    labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(itml.transform(X))
    return labels, 1


def _fit_cluster(name, X, k, pairs, signs, seed):
    if name == "itml_kmeans":
        return _fit_itml_kmeans(X, k, pairs, signs, seed)
    ml = [tuple(map(int, p)) for p in pairs[signs > 0]]
    cl = [tuple(map(int, p)) for p in pairs[signs < 0]]
    return _fit_assc(name, X, k, ml, cl, seed)


def _fit_pairs(name, X, fit_pairs, fit_y, seed):
    return _PAIRS[name](preprocessor=X, random_state=seed).fit(fit_pairs, fit_y)


def _untimed(fit, *args):
    """The warm-up fit (module docstring), stopped after ``WARMUP_TIME_LIMIT``; its result
    and errors are dropped."""
    try:
        with time_limit(WARMUP_TIME_LIMIT):
            fit(*args)
    except Exception:  # noqa: S110 (a failed warm-up still warmed the code it ran)
        pass


def cluster(req):
    """Answer a ``"cluster"`` request (see the module docstring)."""
    X = np.asarray(req["X"], dtype=float)
    k = int(req["n_clusters"])
    pairs = np.asarray(req["pairs"], dtype=int).reshape(-1, 2)
    signs = np.asarray(req["signs"], dtype=int)
    seed = int(req["seed"])
    limit = float(req.get("time_limit", TIME_LIMIT))
    w = warmup_indices(signs)
    out = {}
    for name in req["methods"]:
        if req.get("warmup"):
            _untimed(_fit_cluster, name, X, k, pairs[w], signs[w], seed)
        t0 = time.perf_counter()
        try:
            with time_limit(limit):
                labels, attempts = _fit_cluster(name, X, k, pairs, signs, seed)
            res = {"labels": np.asarray(labels).tolist(), "attempts": attempts, "error": None}
        except Exception as exc:  # a peer's failure is a result to report, not a crash
            res = {"labels": None, "attempts": None, "error": f"{type(exc).__name__}: {exc}"}
        res["time"] = time.perf_counter() - t0
        out[name] = res
    return out


def pairs(req):
    """Answer a ``"pairs"`` request (see the module docstring)."""
    X = np.asarray(req["X"], dtype=float)
    fit_pairs = np.asarray(req["fit_pairs"], dtype=int).reshape(-1, 2)
    val_pairs = np.asarray(req["val_pairs"], dtype=int).reshape(-1, 2)
    fit_y = np.asarray(req["fit_y"], dtype=int)
    val_y = np.asarray(req["val_y"], dtype=int)
    test = np.asarray(req["test_points"], dtype=float)
    seed = int(req["seed"])
    limit = float(req.get("time_limit", TIME_LIMIT))
    w = warmup_indices(fit_y)
    out = {}
    for name in req["methods"]:
        if req.get("warmup"):
            _untimed(_fit_pairs, name, X, fit_pairs[w], fit_y[w], seed)
        t0 = time.perf_counter()
        try:
            with time_limit(limit):
                model = _fit_pairs(name, X, fit_pairs, fit_y, seed)
            elapsed = time.perf_counter() - t0
            model.calibrate_threshold(val_pairs, val_y, strategy="accuracy")
            res = {"scores": model.decision_function(test).tolist(),
                   "predictions": model.predict(test).tolist(), "time": elapsed,
                   "error": None}
        except Exception as exc:  # a peer's failure is a result to report, not a crash
            res = {"scores": None, "predictions": None,
                   "time": time.perf_counter() - t0, "error": f"{type(exc).__name__}: {exc}"}
        out[name] = res
    return out


def answer(req):
    """Dispatch one request by its ``"op"``."""
    ops = {"versions": lambda _: versions(), "cluster": cluster, "pairs": pairs}
    return ops[req["op"]](req)


def main(argv):
    if argv[1:] == ["--serve"]:
        for line in sys.stdin:
            if line.strip():
                sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
                sys.stdout.flush()
        return 0
    if len(argv) != 2:
        sys.stderr.write("usage: _peers.py REQUEST.json | --serve\n")
        return 2
    with open(argv[1]) as fh:
        print(json.dumps(answer(json.load(fh))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
