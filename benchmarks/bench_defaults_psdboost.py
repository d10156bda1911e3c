"""PSDBoost with its defaults against the baseline it extends: 3-NN in the learned metric
versus 3-NN in the Euclidean metric, on held-out points.

Run: ``python benchmarks/bench_defaults_psdboost.py [--quick]``. Writes
``benchmarks/results/defaults_psdboost.{md,json}``.

Protocol. Each set is split into train / test (stratified, 70 / 30, one split per seed;
seeds 0-4, 0-2 with ``--quick``). ``PSDBoost()`` (defaults, ``random_state=seed``) is fitted
with ``fit(X_train, y_train)``: the labels of the training points give the triplets of
Shen, Welsh & Wang (2008, section 6), the nearest same-class and the nearest other-class
neighbour of each point. The score is the accuracy of a 3-NN classifier trained on the
training points and applied to the test points, in ``transform`` space against the raw
features. The test labels are only used for the score. Target (issue 22, item 8): PSDBoost
3-NN >= Euclidean 3-NN - 1 point, per set, in the mean over seeds.

Sets. Standard sklearn sets (iris, wine and breast_cancer as loaded; digits projected on
its 20 leading principal components, fitted on the training split without labels, for
both metrics: at 64-d one fit takes minutes, see ``results/psdboost.md``); the two
protocol sets of the PSDBoost reproductions (Pendigits digits 1/5/7/9 with 80 training and
500 test points per digit, as in ``psdlearn reproduce psdboost-pendigits``, and the
600 x 24 synthetic set of the paper's Fig. 1); and the bundled UCI sets of the other
estimators' protocols (glass, heart, sonar, soybean) and segment, with psdlearn's
documented scaling (``psdlearn.datasets.load``).

Sensitivity (not the defaults, full run only): on each set where the defaults lose by more
than one point, ``C = 1 / (nu t)`` with ``nu`` = 0.02 and 0.3 beside the default 0.1, and
four times as many triplets, ``(i, j, k)`` for the 2 nearest same-class ``j`` and the 2
nearest other-class ``k`` of each training point (passed as :class:`psdlearn.Triplets`).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _common import RESULTS, load_note
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors

import psdlearn as pl
from psdlearn.experiments._report import write_results
from psdlearn.experiments.psdboost_pendigits import _draw

COLUMNS = ["set", "n_train", "D", "triplets", "euclid_violated_%", "euclidean_3nn",
           "psdboost_3nn", "difference", "std_diff", "target_met", "rank_1e-3", "fit_s",
           "iterations", "converged", "seeds"]
QUICK_SETS = ["iris", "wine", "breast_cancer", "digits-pca20", "pendigits-1579"]
FULL_SETS = [*QUICK_SETS, "triplet-synthetic", "glass", "heart", "sonar", "soybean",
             "segment"]
SENSITIVITY_NU = (0.02, 0.3)


def split(name, seed):
    """``(X_train, y_train, X_test, y_test)`` of ``name`` for one seed."""
    if name == "pendigits-1579":
        X, y = pl.datasets.load("pendigits", split="all")
        tr, te = _draw(X, y, np.random.default_rng(seed))
        return X[tr], y[tr], X[te], y[te]
    if name == "iris":
        X, y = pl.datasets.load("iris")
    elif name == "wine":
        X, y = pl.datasets.load("wine")
    elif name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "digits-pca20":
        X, y = load_digits(return_X_y=True)
    elif name == "triplet-synthetic":
        X, y = pl.datasets.make_triplet_synthetic(600, 24, random_state=0)
    else:
        X, y = pl.datasets.load(name)
    Xtr, Xte, ytr, yte = train_test_split(np.asarray(X, dtype=np.float64), y, test_size=0.3,
                                          stratify=y, random_state=seed)
    if name == "digits-pca20":
        pca = PCA(n_components=20, random_state=seed).fit(Xtr)
        Xtr, Xte = pca.transform(Xtr), pca.transform(Xte)
    return Xtr, ytr, Xte, yte


def knn_accuracy(Ztr, ytr, Zte, yte):
    return 100.0 * KNeighborsClassifier(n_neighbors=3).fit(Ztr, ytr).score(Zte, yte)


def violated(X, T):
    """Percentage of the triplets that the Euclidean metric violates (d(i,j) >= d(i,k))."""
    dj = np.sum((X[T[:, 0]] - X[T[:, 1]]) ** 2, axis=1)
    dk = np.sum((X[T[:, 0]] - X[T[:, 2]]) ** 2, axis=1)
    return 100.0 * float(np.mean(dj >= dk))


def fit(Xtr, ytr, seed, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        model = pl.PSDBoost(random_state=seed, **params).fit(Xtr, ytr)
    return model, time.perf_counter() - t0


def run_set(name, seeds):
    per_seed = []
    for seed in seeds:
        Xtr, ytr, Xte, yte = split(name, seed)
        model, seconds = fit(Xtr, ytr, seed)
        eig = np.linalg.eigvalsh(model.metric_)
        per_seed.append({
            "seed": seed, "n_train": len(Xtr), "D": Xtr.shape[1],
            "triplets": len(model.triplets_),
            "violated": violated(Xtr, model.triplets_),
            "euclidean": knn_accuracy(Xtr, ytr, Xte, yte),
            "psdboost": knn_accuracy(model.transform(Xtr), ytr, model.transform(Xte), yte),
            "rank": int(np.sum(eig > 1e-3 * eig[-1])), "fit_s": seconds,
            "iterations": model.n_iter_, "converged": model.converged_,
            "objective": model.objective_,
        })
    diff = np.array([r["psdboost"] - r["euclidean"] for r in per_seed])
    row = {
        "set": name, "n_train": per_seed[0]["n_train"], "D": per_seed[0]["D"],
        "triplets": float(np.mean([r["triplets"] for r in per_seed])),
        "euclid_violated_%": float(np.mean([r["violated"] for r in per_seed])),
        "euclidean_3nn": float(np.mean([r["euclidean"] for r in per_seed])),
        "psdboost_3nn": float(np.mean([r["psdboost"] for r in per_seed])),
        "difference": float(diff.mean()), "std_diff": float(diff.std()),
        "target_met": bool(diff.mean() >= -1.0),
        "rank_1e-3": float(np.mean([r["rank"] for r in per_seed])),
        "fit_s": float(np.median([r["fit_s"] for r in per_seed])),
        "iterations": float(np.mean([r["iterations"] for r in per_seed])),
        "converged": all(r["converged"] for r in per_seed), "seeds": len(per_seed),
    }
    print(row, flush=True)
    return row, per_seed


def neighbour_triplets(X, y, k):
    """``(i, j, l)`` for the ``k`` nearest same-class ``j`` and other-class ``l`` of each i."""
    out = []
    for c in np.unique(y):
        inside, outside = np.flatnonzero(y == c), np.flatnonzero(y != c)
        kk = min(k, len(inside) - 1)
        if kk < 1:
            continue
        same = inside[NearestNeighbors(n_neighbors=kk).fit(X[inside])
                      .kneighbors(return_distance=False)]
        other = outside[NearestNeighbors(n_neighbors=k).fit(X[outside])
                        .kneighbors(X[inside], return_distance=False)]
        for a in range(kk):
            for b in range(k):
                out.append(np.column_stack([inside, same[:, a], other[:, b]]))
    return pl.Triplets(np.concatenate(out), n_samples=len(X))


def sensitivity(name, seeds):
    """Mean 3-NN accuracy difference to Euclidean for each ``SENSITIVITY_NU`` and for the
    triplets of the 2 nearest same-class and other-class neighbours."""
    variants = {f"nu={nu:g}": nu for nu in SENSITIVITY_NU}
    variants["2x2 neighbour triplets"] = None
    out = {}
    for label, nu in variants.items():
        diffs = []
        for seed in seeds:
            Xtr, ytr, Xte, yte = split(name, seed)
            if nu is None:
                y_fit, params = neighbour_triplets(Xtr, ytr, 2), {}
            else:
                y_fit = ytr
                params = {"C": 1.0 / (nu * len(pl.triplets_from_labels(Xtr, ytr)))}
            model, _ = fit(Xtr, y_fit, seed, **params)
            diffs.append(knn_accuracy(model.transform(Xtr), ytr, model.transform(Xte), yte)
                         - knn_accuracy(Xtr, ytr, Xte, yte))
        out[label] = float(np.mean(diffs))
    print(name, out, flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="5 sets, 3 seeds, no sensitivity rows")
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    names = QUICK_SETS if args.quick else FULL_SETS
    seeds = range(3 if args.quick else 5)
    rows, per_set, sens = [], {}, {}
    for name in names:
        row, per_seed = run_set(name, seeds)
        rows.append(row)
        per_set[name] = per_seed
        if not args.quick and not row["target_met"]:
            sens[name] = sensitivity(name, seeds)
    met = [r["set"] for r in rows if r["target_met"]]
    lost = [r["set"] for r in rows if not r["target_met"]]
    notes = [
        "Columns: accuracies in %, means over seeds; difference = PSDBoost - Euclidean "
        "(std over seeds); target_met: difference >= -1; euclid_violated_%: share of the "
        "training triplets (i, j, k) with d(i, j) >= d(i, k) in the Euclidean metric; "
        "rank_1e-3: eigenvalues of metric_ above 1e-3 of the largest; fit_s: median "
        "seconds of fit (triplet search included).",
        f"Target met on {len(met)} of {len(rows)} sets ({', '.join(met)})"
        + (f"; missed on {', '.join(lost)}." if lost else "."),
    ]
    if sens:
        notes.append("Sensitivity (not the defaults), mean difference to Euclidean for "
                     "C = 1 / (nu t) (default nu = 0.1) and for the 2 x 2 nearest-neighbour "
                     "triplets: " + "; ".join(
                         f"{name}: " + ", ".join(f"{label} {d:+.1f}" for label, d in s.items())
                         for name, s in sens.items()) + ".")
    notes.append(
        "Where the target is missed the loss is the method's: with C = 1 / (nu t), problem "
        "(3) maximizes the mean of the nu t smallest triplet margins. Where classes overlap, "
        "a quarter to a third of the nearest-neighbour triplets are violated by the "
        "Euclidean metric (euclid_violated_% on glass and heart); that tail stays negative "
        "in every metric and the optimum puts nearly all of the trace on a few directions "
        "(rank_1e-3), dropping the others, which 3-NN on new points still uses. No nu of "
        "the sensitivity runs, nor four times as many triplets, reaches the target on glass "
        "and heart; on Pendigits 1/5/7/9 the 2 x 2 neighbour triplets do and on sonar "
        "nu = 0.3 does, but each loses elsewhere (glass, pendigits), so the defaults stay "
        "the paper's nearest-neighbour triplets and LPBoost's nu = 0.1.")
    notes.append("fit_s is measured on a shared machine (see the load below); the slow "
                 "sets (digits-pca20, triplet-synthetic) need 137-235 master solves, the "
                 "tail-off of column generation described in results/psdboost.md.")
    notes.append(load_note(start_load))
    extra = {"per_seed": per_set, "sensitivity": sens}
    print(write_results(RESULTS, "defaults_psdboost", COLUMNS, rows, notes,
                        title="PSDBoost defaults: 3-NN accuracy against Euclidean 3-NN",
                        extra=extra))


if __name__ == "__main__":
    main()
