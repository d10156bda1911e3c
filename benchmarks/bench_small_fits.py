"""The fixed costs of a small fit: this checkout against an earlier tree, fit for fit.

Run: ``python benchmarks/bench_small_fits.py [--before REF] [--sets ...] [--seeds S]
[--repeats R] [--rounds P] [--name NAME]``. Writes ``benchmarks/results/<NAME>.{md,json}`` (default
``small_fits``).

The fits of the task benchmarks at 100 pairs take 10-40 ms, and the solver's sweeps are a
third to a half of that; the rest is the graph, ``gamma_0``, the reading of the side
information and scikit-learn's machinery. This script times those fits in the tree before
a change (``--before``, extracted with ``git archive``) and in this checkout, each version
in its own process (one BLAS, OpenMP and numba thread), the versions alternating from set
to set, several processes each (``--rounds``: one process's time varies by 10-30% from
the next one's, more than the changes measured here):

- ``pairs``: ``PairsClassifier(NPKL(certificate_tol=None, tol=1e-3, random_state=s),
  preprocessor=X_train).fit(fit_pairs, fit_y)`` on the split of seed ``s`` of
  ``bench_pair_verification.py`` (100 pairs, a quarter held out);
- ``cluster``: ``ConstrainedClustering(n_clusters=k, random_state=s).fit(X, C)`` on the
  100 pairs of seed ``s`` of ``bench_constrained_clustering.py``.

Each process fits every seed once untimed (numba compilation, caches), then ``--repeats``
times in turn; a seed's time is the median over the processes of the median of its
repeats, and the table gives the median over the seeds (milliseconds of wall time) and
the ratio after / before. ``same`` counts
the seeds whose result is the same in both trees to the bit (the decision values of the
test pairs; the cluster labels and the embedding).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import load_note, write_results
from bench_defaults_cost import THREAD_VARIABLES, _extract, short_ref

REPO = Path(__file__).resolve().parent.parent
SETS = ("iris", "wine", "glass", "heart", "sonar", "double-spiral", "chessboard")
TASKS = ("pairs", "cluster")
COLUMNS = ["task", "set", "n", "seeds", "before_ms", "after_ms", "ratio", "same",
           "before_processes", "after_processes"]


def _fingerprint(*arrays):
    digest = hashlib.sha256()
    for a in arrays:
        digest.update(np.ascontiguousarray(a).tobytes())
    return digest.hexdigest()[:16]


def _worker(task, set_name, seeds, repeats):
    """Time ``task`` on ``set_name`` with the psdlearn found on ``sys.path``; print JSON."""
    import warnings

    import psdlearn as pl

    warnings.simplefilter("ignore")
    if task == "pairs":
        from bench_pair_verification import load_set, split

        X, y = load_set(set_name)
        tasks = [split(X, y, 100, s) for s in range(seeds)]

        def fit(s):
            t = tasks[s]
            model = pl.PairsClassifier(
                pl.NPKL(certificate_tol=None, tol=1e-3, random_state=s),
                preprocessor=t["X"])
            start = time.perf_counter()
            model.fit(t["fit_pairs"], t["fit_y"])
            return time.perf_counter() - start, model.decision_function(t["test_points"])
    else:
        from _peers_client import load_set
        from bench_constrained_clustering import side_information

        X, y = load_set(set_name)
        k = len(np.unique(y))
        pairs = [side_information(y, 100, s) for s in range(seeds)]

        def fit(s):
            p, signs = pairs[s][0], pairs[s][1]
            C = pl.PairwiseConstraints(p, signs, n_samples=len(X))
            model = pl.ConstrainedClustering(n_clusters=k, random_state=s)
            start = time.perf_counter()
            model.fit(X, C)
            return time.perf_counter() - start, (model.labels_, model.embedding_)

    results = [fit(s)[1] for s in range(seeds)]  # untimed: compilation and caches
    times = [[] for _ in range(seeds)]
    for _ in range(repeats):
        for s in range(seeds):
            times[s].append(fit(s)[0])
    out = {"n": len(X), "ms": [1e3 * statistics.median(t) for t in times],
           "fingerprints": [_fingerprint(*(r if isinstance(r, tuple) else (r,)))
                            for r in results]}
    print(json.dumps(out))


def _run(src, task, set_name, seeds, repeats):
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{REPO / 'benchmarks'}"}
    env.update({k: "1" for k in THREAD_VARIABLES})
    out = subprocess.run([sys.executable, __file__, "--worker", task, set_name, str(seeds),
                          str(repeats)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--before", default="main")
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3,
                    help="processes per version and row, alternating with the other's")
    ap.add_argument("--name", default="small_fits")
    args = ap.parse_args()
    if args.worker:
        task, set_name, seeds, repeats = args.worker
        _worker(task, set_name, int(seeds), int(repeats))
        return
    start_load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": _extract(args.before, tmp), "after": REPO / "src"}
        turn = 0
        for task in args.tasks:
            for set_name in args.sets:
                recs = {"before": [], "after": []}
                for _ in range(args.rounds):
                    order = ("before", "after") if turn % 2 == 0 else ("after", "before")
                    turn += 1
                    for version in order:
                        recs[version].append(_run(trees[version], task, set_name,
                                                  args.seeds, args.repeats))
                # a seed's time: the median over the rounds of its processes' medians
                before, after = (statistics.median(
                    statistics.median(r["ms"][s] for r in recs[v]) for s in range(args.seeds))
                    for v in ("before", "after"))
                runs = {v: [round(statistics.median(r["ms"]), 2) for r in recs[v]]
                        for v in recs}
                recs = {v: recs[v][0] for v in recs}
                same = sum(a == b for a, b in zip(recs["before"]["fingerprints"],
                                                  recs["after"]["fingerprints"],
                                                  strict=True))
                rows.append({"task": task, "set": set_name, "n": recs["after"]["n"],
                             "seeds": args.seeds, "before_ms": round(before, 2),
                             "after_ms": round(after, 2), "ratio": round(after / before, 2),
                             "same": f"{same}/{args.seeds}",
                             "before_processes": runs["before"],
                             "after_processes": runs["after"]})
                print(rows[-1], flush=True)
    ref = short_ref(args.before)
    notes = [f"before = {ref} ({args.before}), after = this checkout; each in its own "
             "process, one BLAS, OpenMP and numba thread; the two alternate from row to "
             "row.",
             f"Per seed and process the median of {args.repeats} timed fits (after one "
             f"untimed fit of every seed); {args.rounds} processes per version and row, "
             "alternating; a seed's time is the median over its processes; before_ms / "
             "after_ms: the median over the seeds, wall milliseconds of fit; ratio = "
             "after / before.",
             "same: seeds whose result is identical to the bit in both trees (pairs: the "
             "decision values of the test pairs; cluster: the labels and the embedding).",
             "before_processes / after_processes: each process's median over the seeds, "
             "in the order they ran.",
             load_note(start_load)]
    write_results(args.name, COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
