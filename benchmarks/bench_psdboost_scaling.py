"""PSDBoost's default against LMNN and NCA as the number of training points grows.

Run: ``python benchmarks/bench_psdboost_scaling.py [--sizes 2000,10000] [--limit 600]
[--nca-max-n 10000]``.
Writes ``benchmarks/results/psdboost_scaling.{md,json}``.

Protocol: generated data with a known answer, ``make_classification(n, 20,
n_informative=5, n_redundant=0, n_classes=3, class_sep=1.5, random_state=0)`` (5
informative features of 20), split 70 / 30 stratified (seed 0), standardized on the
training split. Fitted with their defaults on the training labels, one thread each:
``PSDBoost(random_state=0)`` (re-selected impostors), scikit-learn's
``NeighborhoodComponentsAnalysis(random_state=0)`` and metric-learn 0.7's
``LMNN(random_state=0)`` (its own interpreter, ``benchmarks/_metric_peers.py``).
NCA forms ``n_train x n_train`` matrices (39 GB at ``n_train = 70,000``): it runs up to
``--nca-max-n`` points only.
PSDBoost and LMNN are stopped after ``--limit`` seconds: PSDBoost by its ``max_time`` (it
then returns its best certified iterate), LMNN by the runner (no result); NCA runs in
this process and is not stopped. Scored by the accuracy of 3-NN on the test points in the
learned space; one fit each.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _common import load_note, write_results
from _peers_client import DEFAULT_PEERS_PYTHON, limit_threads
from bench_metric_learning import Peers, accuracy
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neighbors import NeighborhoodComponentsAnalysis as NCA
from sklearn.preprocessing import StandardScaler

import psdlearn as pl


def data(n):
    X, y = make_classification(n, 20, n_informative=5, n_redundant=0, n_classes=3,
                               class_sep=1.5, random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), ytr, scaler.transform(Xte), yte


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--limit", type=float, default=600.0)
    ap.add_argument("--nca-max-n", type=int, default=10000)
    ap.add_argument("--peers-python", default=DEFAULT_PEERS_PYTHON)
    ap.add_argument("--name", default="psdboost_scaling")
    args = ap.parse_args()
    limit_threads(1)
    load = os.getloadavg()[0]
    peers = Peers(args.peers_python) if os.path.exists(args.peers_python) else None
    rows = []
    for n in map(int, args.sizes.split(",")):
        Xtr, ytr, Xte, yte = data(n)
        rec = {"n": n, "n_train": len(Xtr), "euclidean": accuracy(Xtr, ytr, Xte, yte)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            models = [("psdboost", pl.PSDBoost(random_state=0, max_time=args.limit))]
            if n <= args.nca_max_n:
                models.append(("nca", NCA(random_state=0)))
            for name, model in models:
                t0 = time.perf_counter()
                model.fit(Xtr, ytr)
                rec[f"{name}_s"] = time.perf_counter() - t0
                rec[name] = accuracy(model.transform(Xtr), ytr, model.transform(Xte), yte)
                if name == "psdboost":
                    rec["psdboost_converged"] = bool(model.converged_)
                    rec["psdboost_rounds"] = model.n_rounds_
                    rec["psdboost_rel_gap"] = ((model.upper_bound_ - model.objective_)
                                               / abs(model.upper_bound_))
        if peers is not None:
            out = peers.ask({"op": "fit", "method": "lmnn", "X_train": Xtr.tolist(),
                             "y_train": ytr.tolist(), "X_test": Xte.tolist(), "seed": 0,
                             "time_limit": args.limit})
            rec["lmnn_s"] = out["time"]
            rec["lmnn"] = (None if out["error"] else
                           accuracy(np.array(out["Z_train"]), ytr, np.array(out["Z_test"]), yte))
            rec["lmnn_error"] = out["error"]
        rows.append(rec)
        print(rec, flush=True)
    if peers is not None:
        peers.close()
    write_results(args.name, ["n", "n_train", "euclidean", "psdboost", "nca", "lmnn",
                              "psdboost_s", "nca_s", "lmnn_s", "psdboost_converged",
                              "psdboost_rounds", "psdboost_rel_gap", "lmnn_error"], rows,
                  notes=[f"PSDBoost and LMNN stopped after {args.limit:.0f} s (PSDBoost by "
                         "max_time, then unconverged with its certified gap "
                         "psdboost_rel_gap; LMNN by the runner, then no accuracy); NCA not "
                         f"stopped, and run up to n = {args.nca_max_n} only (its n_train x "
                         "n_train matrices). One fit each, one thread, wall seconds.",
                         f"Peers: {peers.versions if peers else 'not run'}.",
                         load_note(load)])


if __name__ == "__main__":
    main()
