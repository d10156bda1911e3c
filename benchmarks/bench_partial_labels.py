"""NPKL with partial labels (a labelled point has every other labelled point as partner):
this checkout against an earlier tree.

Run: ``python benchmarks/bench_partial_labels.py [--before REF] [--seeds S] [--limit SEC]
[--name NAME]``. Writes ``benchmarks/results/<NAME>.{md,json}`` (default ``partial_labels``).

``l`` labels give each labelled point ``l - 1`` partners and the problem ``l (l - 1) / 2``
pairs. The default ``NPKL(loss=..., random_state=s)`` is fitted on 10-d two Gaussians
(``make_two_gaussians(n, n_features=10, random_state=s)``), or on scikit-learn's digits
(1,797 points, 64 pixels scaled to [0, 1], 10 classes: ``n`` given as ``digits``), with
``l`` of the labels kept at random (seed ``s``) and the rest set to -1, in the tree before
a change (``--before``, extracted with ``git archive``) and in this checkout, each fit in
its own process (the libraries' default threads; a warm-up fit on 300 points compiles
first, untimed). A fit still running after ``--limit`` seconds is stopped and reported as
longer; the other seeds of that row are then not run in that tree.

Columns: the median fit time over the seeds (``fit_s``, wall seconds, certificate
included), the relative objective difference after / before (the certificate's objective,
largest over the seeds), the sweeps, whether the certificate certified the fit, and the
accuracy of 1-nearest-neighbour in the embedding from the labelled to the unlabelled points.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import load_note, write_results
from bench_defaults_cost import _extract, short_ref

REPO = Path(__file__).resolve().parent.parent
#: (n, labels, loss)
CASES = ((3000, 100, "hinge"), (3000, 300, "hinge"), (3000, 300, "squared_hinge"),
         (3000, 1000, "hinge"), (3000, 1000, "squared_hinge"), (20000, 300, "hinge"),
         ("digits", 300, "hinge"), ("digits", 300, "squared_hinge"), ("digits", 1000, "hinge"))
COLUMNS = ["n", "labels", "pairs", "loss", "seeds", "before_fit_s", "after_fit_s", "speedup",
           "objective_rel_diff", "sweeps_before", "sweeps_after", "certified_after",
           "accuracy_before", "accuracy_after"]


def _worker(n, labels, loss, seed):
    """Fit one case with the psdlearn found on ``sys.path``; print JSON."""
    import warnings

    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier

    import psdlearn as pl

    warnings.simplefilter("ignore")

    def data(n_points, n_labels, s):
        if n_points == "digits":
            from sklearn.datasets import load_digits

            X, y = load_digits(return_X_y=True)
            X = X / 16.0
        else:
            X, y = pl.datasets.make_two_gaussians(int(n_points), n_features=10,
                                                  random_state=s)
        n_points = len(X)
        keep = np.random.default_rng(s).choice(n_points, n_labels, replace=False)
        y_partial = np.full(n_points, -1)
        y_partial[keep] = y[keep]
        return X, y, y_partial, keep

    X, _, yp, _ = data(300, 40, 0)
    pl.NPKL(loss=loss, random_state=0).fit(X, yp)  # compilation, untimed
    X, y, yp, keep = data(n, labels, seed)
    start = time.perf_counter()
    model = pl.NPKL(loss=loss, random_state=seed).fit(X, yp)
    fit_s = time.perf_counter() - start
    rest = np.setdiff1d(np.arange(len(X)), keep)
    E = model.embedding_
    knn = KNeighborsClassifier(1).fit(E[keep], y[keep])
    cert = model.certificate_
    print(json.dumps({"fit_s": fit_s, "objective": cert.objective, "sweeps": model.n_iter_,
                      "certified": bool(cert.certified),
                      "accuracy": float(np.mean(knn.predict(E[rest]) == y[rest]))}))


def _run(src, case, seed, limit):
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{REPO / 'benchmarks'}"}
    try:
        out = subprocess.run([sys.executable, __file__, "--worker", *map(str, case), str(seed)],
                             env=env, capture_output=True, text=True, check=True,
                             timeout=limit)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def _row(case, recs, limit, seeds):
    """The table row of ``case`` from its records (``None``: stopped at the limit)."""
    done = {v: [r for r in recs[v] if r is not None] for v in recs}
    fit_s = {v: (f"> {limit:g}" if None in recs[v]
                 else round(statistics.median(r["fit_s"] for r in done[v]), 2))
             for v in recs}
    both = list(zip(done["before"], done["after"], strict=False))
    diff = max((abs(a["objective"] - b["objective"]) / abs(b["objective"]) for b, a in both),
               default=None)

    def field(version, key, digits=None):
        values = [r[key] if digits is None else round(r[key], digits) for r in done[version]]
        return values or "-"

    return {"n": case[0], "labels": case[1], "pairs": case[1] * (case[1] - 1) // 2,
            "loss": case[2], "seeds": seeds, "before_fit_s": fit_s["before"],
            "after_fit_s": fit_s["after"],
            "speedup": (round(fit_s["before"] / fit_s["after"], 1)
                        if isinstance(fit_s["before"], float)
                        else f"> {limit / fit_s['after']:.0f}"),
            "objective_rel_diff": "-" if diff is None else f"{diff:.1e}",
            "sweeps_before": field("before", "sweeps"),
            "sweeps_after": field("after", "sweeps"),
            "certified_after": field("after", "certified"),
            "accuracy_before": field("before", "accuracy", 4),
            "accuracy_after": field("after", "accuracy", 4)}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--before", default="main")
    ap.add_argument("--cases", nargs="+", default=[":".join(map(str, c)) for c in CASES],
                    help="cases as n:labels:loss (n may be 'digits')")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--limit", type=float, default=150.0,
                    help="seconds after which a fit (process) is stopped")
    ap.add_argument("--name", default="partial_labels")
    args = ap.parse_args()
    if args.worker:
        n, labels, loss, seed = args.worker
        _worker(n, int(labels), loss, int(seed))
        return
    start_load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": _extract(args.before, tmp), "after": REPO / "src"}
        for spec in args.cases:
            n, labels, loss = spec.split(":")
            case = (n if n == "digits" else int(n), int(labels), loss)
            recs = {"before": [], "after": []}
            for seed in range(args.seeds):
                for version in ("before", "after"):
                    if None not in recs[version]:
                        recs[version].append(_run(trees[version], case, seed, args.limit))
            rows.append(_row(case, recs, args.limit, args.seeds))
            print(rows[-1], flush=True)
    ref = short_ref(args.before)
    notes = [f"before = {ref} ({args.before}), after = this checkout; each fit in its own "
             "process with the libraries' default threads, before and after alternating "
             "seed by seed.",
             f"A fit stopped at the limit of {args.limit:g} s is shown as '> limit', and the "
             "row's other seeds are not run in that tree; speedup is then a lower bound.",
             "objective_rel_diff: the largest over the seeds run in both trees of |after - "
             "before| / |before| of the certificate's objective.",
             "accuracy: 1-nearest-neighbour in the embedding, labelled -> unlabelled points.",
             load_note(start_load)]
    write_results(args.name, COLUMNS, rows, notes)


if __name__ == "__main__":
    main()
