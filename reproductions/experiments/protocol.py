"""The clustering protocol of seeds 000 and 001, shared by the NPKL reproductions.

For each repetition: draw ``0.6 n`` must-link and ``0.6 n`` cannot-link pairs from the true
labels, learn the kernel on the fixed kNN Laplacian (k = 5, 50 for the adult sets), run
kernel k-means with 20 restarts and the true number of clusters, and score the Rand
index. The time reported is the CPU time (``time.process_time``) of the kernel learning
alone, as in the papers (graph construction and clustering excluded).
"""

from __future__ import annotations

import functools
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from psdlearn import datasets
from psdlearn.cluster import kernel_kmeans
from psdlearn.constraints import PairwiseConstraints
from psdlearn.graph import knn_laplacian
from psdlearn.metrics import pairwise_accuracy
from psdlearn.npkl.estimator import NPKL

__all__ = ["SMALL_SETS", "ADULT_SETS", "cvxpy_available", "load_set", "load_set_with_graph",
           "run_repetitions", "sdp_records", "summarize"]

#: The small sets of Hu & Kwok 2015 Table II / Hu & Kwok 2013 Table 1 (protein is unavailable).
SMALL_SETS = ("chessboard", "double-spiral", "glass", "heart", "iris", "sonar", "soybean",
              "wine")
#: The adult sets that exist here (a5a and a7a are unavailable).
ADULT_SETS = ("a1a", "a2a", "a3a", "a4a", "a6a")


def load_set(name):
    """``(X, y, n_neighbors)`` of a protocol data set, or None when its file is absent."""
    try:
        X, y = datasets.load(name)
    except FileNotFoundError:
        return None
    return X, y, (50 if name in ADULT_SETS else 5)


@functools.cache
def load_set_with_graph(name):
    """``(X, y, n_neighbors, L)``: :func:`load_set` and its kNN Laplacian, built once per
    process (the tables, start studies and figures of one run share it); None when absent.
    """
    loaded = load_set(name)
    if loaded is None:
        return None
    X, y, k = loaded
    return X, y, k, knn_laplacian(X, n_neighbors=k)


def run_repetitions(X, y, *, n_neighbors, reps, seed0=0, laplacian=None, **npkl_params):
    """Run the protocol ``reps`` times; return per-repetition records.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    n_neighbors : int
    reps : int
    seed0 : int
        Repetition ``t`` uses seed ``seed0 + t`` for constraints, initialisation and
        k-means.
    laplacian : sparse matrix, optional
        Precomputed Laplacian (built once otherwise).
    **npkl_params
        Passed to :class:`NPKL` (loss, solver, gamma, max_iter, ...). ``gamma`` defaults
        to 1 here, the protocols' choice (the papers do not give it), not the
        estimator's ``"auto"``.

    Returns
    -------
    list of dict with keys rand, cpu_s, wall_s, n_iter, objective, rank, converged,
    certified_gap (``certificate_.relative_gap``, None for solvers without one).
    """
    L = knn_laplacian(X, n_neighbors=n_neighbors) if laplacian is None else laplacian
    n_classes = len(np.unique(y))
    records = []
    for t in range(reps):
        seed = seed0 + t
        C = PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=seed)
        model = NPKL(graph="precomputed", random_state=seed, **{"gamma": 1.0, **npkl_params})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            c0, w0 = time.process_time(), time.perf_counter()
            model.fit(L, C)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        labels = kernel_kmeans(model.embedding_, n_classes, n_init=20, random_state=seed)
        records.append({
            "rand": pairwise_accuracy(y, labels),
            "cpu_s": cpu,
            "wall_s": wall,
            "n_iter": int(model.n_iter_),
            "objective": float(model.objective_history_[-1]),
            "rank": int(model.rank_),
            "converged": not any(issubclass(w.category, ConvergenceWarning) for w in caught),
            # duality bound on (objective - SDP optimum) / |objective| (bcd, admm)
            "certified_gap": (float(model.certificate_.relative_gap)
                              if getattr(model, "certificate_", None) is not None else None),
        })
    return records


def cvxpy_available():
    """Whether the exact SDP reference (extra ``sdp``) can run."""
    try:
        import cvxpy  # noqa: F401
    except ImportError:
        return False
    return True


def sdp_records(y, laplacian, loss, reps):
    """The exact SDP (cvxpy) on the constraint draws of seeds ``0 .. reps - 1``.

    Returns a list of dict with keys rand, cpu_s (the solver's wall seconds), objective.
    """
    out = []
    for seed in range(reps):
        C = PairwiseConstraints.from_labels(y, n_must=0.6, n_cannot=0.6, random_state=seed)
        model = NPKL(loss=loss, solver="sdp", graph="precomputed", gamma=1.0).fit(laplacian, C)
        labels = kernel_kmeans(model.embedding_, len(np.unique(y)), random_state=seed)
        out.append({"rand": pairwise_accuracy(y, labels), "cpu_s": model.fit_time_,
                    "objective": model.objective_history_[-1]})
    return out


def certified_gap_cell(records):
    """Largest certified relative gap over the repetitions, and how many are certified."""
    gaps = [r["certified_gap"] for r in records if r.get("certified_gap") is not None]
    if not gaps:
        return "-"
    return f"{max(gaps):.1e} ({sum(g <= 1e-4 for g in gaps)}/{len(gaps)} <= 1e-4)"


def summarize(records):
    """Mean and standard deviation of the Rand index (in %) and of the CPU time."""
    rand = np.array([r["rand"] for r in records]) * 100
    cpu = np.array([r["cpu_s"] for r in records])
    return {
        "rand_mean": float(rand.mean()),
        "rand_std": float(rand.std()),
        "cpu_mean": float(cpu.mean()),
        "cpu_std": float(cpu.std()),
        "iters_mean": float(np.mean([r.get("n_iter", 1) for r in records])),
        "reps": len(records),
    }
